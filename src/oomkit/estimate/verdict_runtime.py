"""Runtime-specific terms of the verdict: what a runtime's own mechanism adds near the edge.

Split out of :mod:`oomkit.estimate.verdict` (pure): transformers' eager attention scores before
4.36, llama.cpp's legacy CUDA pool, vLLM's CUDA graphs captured after the KV cache and the
memory a lowered ``gpu_memory_utilization`` leaves to other processes, the profile sampler's
sort where FlashInfer is missing, V1's penalties and log-probs the profile never samples, and
the runtimes that start with a KV pool shorter than the context (SGLang; vLLM before 0.2.7) and
cap or hang a request instead of refusing to start.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.estimate.hf_kv import regrow_stranded_bytes
from oomkit.estimate.verdict_advice import (
    ALLOCATOR_SPLIT,
    GRAPHS_AFTER_KV,
    OTHER_TENANTS,
    PROMPT_LOGPROBS,
    int_detail,
)
from oomkit.estimate.verdict_summary import free_phrase  # re-exported (it lived here)
from oomkit.estimate.vllm_penalties import WHAT as PENALTIES_WHAT
from oomkit.units import format_bytes

__all__ = [
    "EAGER_SCORES",
    "MXFP4_DEQUANT",
    "ONLINE_FP8_LOAD_CHANGE",
    "ONLINE_FP8_LOAD_RISK",
    "ONLINE_FP8_LOAD_WHAT",
    "POOL_GROWTH",
    "SAMPLER_REQUESTS",
    "SGLANG_OUTSIDE_WHAT",
    "SORT_SAMPLER",
    "VLLM_ASKED_TERMS",
    "free_phrase",
    "online_fp8_load_over",
    "pool_is_a_cap",
    "sglang_cap",
    "sglang_outside_over",
    "tight_overs",
    "transformers_allocator_term",
    "vllm_graph_span",
    "vllm_other_tenants",
]

EAGER_SCORES = (
    "transformers' eager attention scores before 4.36 (B·a·S² and the fp32 softmax): a prompt "
    "near the context length"
)
#: transformers' MXFP4 checkpoints without kernels (:mod:`oomkit.estimate.transformers_mxfp4`)
MXFP4_DEQUANT = (
    "the MXFP4 experts dequantized to bf16 by transformers when the `kernels` package or "
    "Triton >= 3.4 is missing (quantizer_mxfp4.py; `pip install -U kernels 'triton>=3.4'` "
    "keeps them 4-bit)"
)
POOL_GROWTH = (
    "llama.cpp's legacy CUDA pool keeping one FP16 attention buffer per prompt step (batched "
    "GEMM of PR #3749): a prompt near the context length"
)


def transformers_allocator_term(
    est: Estimate, d: DeviceUsage, allocator: Mapping[str, Any] | None
) -> tuple[str, int] | None:
    """PyTorch's caching allocator on a transformers run: what a run needed beyond oomkit's
    total on real ``generate()`` runs, as the smaller of two measured bounds
    (``verdict_band.json`` ``runtimes.transformers.allocator``, written by
    ``benchmarks/verdict_band.py`` from the GPU death boundaries): ``share`` of the bytes the
    run allocates while it runs (activations and the KV cache the layers' ``torch.cat`` makes
    between them; the weights are allocated before, whole) and ``request_ratio`` times the
    prefill's largest single request (:mod:`oomkit.estimate.transformers_requests`): a cached
    segment split by a block that stays cannot serve a request larger than its free piece, and
    under a full card only whole free segments are released (``release_cached_blocks``)."""
    if not allocator or est.runtime != "transformers":
        return None
    req = int_detail(est.runtime_details, "largest_request_bytes")
    # a second prefill (Phi-3's RoPE switch) asks for tensors one token larger than the first
    # one's freed blocks: neither's split segments serve the other, so the bound counts both
    prefills = int_detail(est.runtime_details, "prefills") or 1
    share = float(allocator.get("share", 0.0))
    ratio = float(allocator.get("request_ratio", 0.0))
    during = d.activations_bytes + d.kv_cache_bytes
    if req is None or during <= 0:
        return None
    # the first decode step re-requests every layer's K/V one token larger; the prefill's
    # blocks it frees serve none of those requests and, pinned between blocks that stay, are
    # not released on the OOM retry: at most all of them (oomkit.estimate.hf_kv
    # .decode_regrow_bytes), or the prefill's own stranding (the request bound) plus what the
    # allocator's rules let the freed blocks strand beyond it, 1/2 or 2/3 of them
    # (hf_kv.regrow_stranded_bytes): two bounds of the allocator's rules, the smaller holds
    rd = est.runtime_details
    regrow = min(int_detail(rd, "decode_regrow_bytes") or 0, d.kv_cache_bytes)
    stranded = regrow_stranded_bytes(
        regrow,
        int_detail(rd, "decode_regrow_block_bytes") or 0,
        int_detail(rd, "decode_regrow_grown_bytes") or 0,
        req,
    )
    by_request = int(ratio * req) * prefills
    by_share = int(share * during)
    decode = min(max(by_request, regrow), by_request + stranded)
    b = min(by_share, decode)
    if b <= 0:
        return None
    # each bound names what it multiplies and its size, and that it is the most seen on real
    # runs (verdict_band.json): "4.68 x the largest request" alone did not say which request
    request = f"{ratio:.2f} x the prefill's largest single allocation, {format_bytes(req)}" + (
        f", x {prefills} prefills" if prefills > 1 else ""
    )
    which = (
        f"{share:.0%} of the {format_bytes(during)} of activations + KV cache"
        if by_share <= decode
        else request
        if decode == by_request
        else f"the prefill's {format_bytes(regrow)} of K/V, re-requested one token larger at "
        "the first decode step"
        if decode == regrow
        else f"{request}, + {format_bytes(stranded)} of the prefill's {format_bytes(regrow)} of "
        "K/V left stranded when the first decode step re-requests it one token larger"
    )
    return (f"{ALLOCATOR_SPLIT} (up to {which}, as seen on real generate() runs)", b)


def vllm_graph_span(est: Estimate) -> tuple[str, int] | None:
    """CUDA graphs captured in the ``1 - util`` headroom after the KV cache: the span of a
    capture above the modelled pool (vLLM: "CUDA graphs can take additional 1~3 GiB")."""
    rd = est.runtime_details
    if rd.get("cudagraph_charged") is not False or est.settings.get("enforce_eager"):
        return None
    from oomkit.estimate.vllm_engines import CUDAGRAPH_POOL_MAX

    modelled = int_detail(rd, "cudagraph_bytes") or 0
    # --enable-lora with cudagraph_specialize_lora captures every size twice (PR #25914):
    # twice the graphs, so twice the range a capture can take (oomkit.estimate.vllm_lora)
    sets = int_detail(rd, "cudagraph_sets") or 1
    span = CUDAGRAPH_POOL_MAX * sets - modelled
    if span <= 0:
        return None
    why = "vLLM: 1~3 GiB per GPU" + (f", x {sets} LoRA-specialized sets" if sets > 1 else "")
    return (f"{GRAPHS_AFTER_KV} ({why})", span)


def vllm_other_tenants(est: Estimate, capacity: int) -> tuple[str, int] | None:
    """Generations that charge other processes' memory: what a lowered util leaves to them."""
    rd = est.runtime_details
    util = est.settings.get("gpu_memory_utilization")
    default = rd.get("default_util")
    if rd.get("charges_other_processes") is not True:
        return None
    if not isinstance(util, float) or not isinstance(default, float) or util >= default:
        return None
    label = (
        f"{OTHER_TENANTS}, charged by this vLLM generation (util {util:.2f} "
        f"leaves up to {format_bytes(int((default - util) * capacity))} to them)"
    )
    return label, int((default - util) * capacity)


#: V1 penalties / log-probs a served request can ask for (:mod:`oomkit.estimate.vllm_penalties`)
SAMPLER_REQUESTS = PENALTIES_WHAT
#: vLLM's per-device ``runtime_details`` of sampler tensors only some requests ask for, and
#: their band-term labels
VLLM_ASKED_TERMS = (
    ("prompt_logprobs_bytes", PROMPT_LOGPROBS),
    ("sampler_request_bytes", SAMPLER_REQUESTS),
)

SORT_SAMPLER = (
    "profile sampler sorting [max_num_seqs, vocab] where FlashInfer is not installed "
    "(pip wheel; the vllm-openai image has it)"
)


def pool_is_a_cap(est: Estimate) -> bool:
    """A pool shorter than the context still starts (SGLang; vLLM before 0.2.7; vLLM 0.8-0.9.0
    V1 with sliding-window layers, whose start-up check counts them at their window while the
    pool holds them at full length)."""
    rd = est.runtime_details
    return est.runtime == "sglang" or (
        est.runtime == "vllm"
        and (rd.get("kv_len_check") is False or rd.get("pool_below_request") is not None)
    )


def sglang_cap(est: Estimate) -> str | None:
    """SGLang with a token pool below the context length: the request cap it serves with.

    SGLang does not refuse to start: ``TpModelWorker.__init__`` (python/sglang/srt/managers/
    tp_worker.py, v0.4.6 and the stored newest, commit 0045f98) sets ``max_req_len =
    min(context_len - 1, max_total_num_tokens - 1)`` and asserts only that it is positive
    ("Memory pool size is too small"); ``managers/utils.py validate_input_length`` refuses a
    longer input with HTTP 400 (or truncates it with ``--allow-auto-truncate``). So the run is
    "tight" with that risk named, never "does not fit" on this alone
    (:func:`oomkit.estimate.sglang.pool_below_context_note`).
    """
    if est.runtime == "vllm" and est.runtime_details.get("kv_len_check") is False:
        fits = int_detail(est.runtime_details, "max_model_len_that_fits")
        return (
            f"the KV cache holds {fits} tokens of one request: vLLM before 0.2.7 starts "
            "anyway and a longer request hangs (no start-up check until PR #2163)"
        )
    held = int_detail(est.runtime_details, "pool_below_request")
    if est.runtime == "vllm" and held is not None:
        return (
            f"the KV pool holds {held} tokens of one request: vLLM 0.8-0.9.0 starts (its check "
            "counts sliding-window layers at their window) but allocates those layers at full "
            "length (unify_hybrid_kv_cache_specs), so a longer request waits for blocks"
        )
    if est.runtime != "sglang":
        return None
    tokens = int_detail(est.runtime_details, "max_total_num_tokens")
    ctx = est.settings.get("ctx")
    if tokens is None or tokens <= 0 or not isinstance(ctx, int) or tokens >= ctx:
        return None
    cap = min(ctx - 1, tokens - 1)
    return (
        f"the token pool caps a request at {cap} tokens (SGLang refuses a longer input with "
        "HTTP 400 'Input length ... exceeds the maximum allowed length')"
    )


ONLINE_FP8_LOAD_WHAT = "vLLM online FP8 load peak (0.14 and older)"
ONLINE_FP8_LOAD_RISK = (
    "over the GPU while loading if the checkpoint is bf16 and vLLM quantizes it to FP8 "
    "(--quantization fp8): 0.12 and older load the whole bf16 model first (docs: 'you need "
    "enough memory to load the whole model'); 0.13-0.14 keep every bf16 weight beside its FP8 "
    "copy until the load loop ends (PR #29196; PR #31914, PR #32773)"
)
ONLINE_FP8_LOAD_CHANGE = (
    "a pre-quantized FP8 checkpoint, more GPUs (--tensor-parallel-size), or vLLM 0.15 or newer "
    "(quantizes each layer as it loads, PR #32773)"
)


def online_fp8_load_over(est: Estimate) -> list[tuple[str, int]]:
    """(device, bytes over its capacity) of the online-FP8 load peak
    (``runtime_details["online_fp8_load_peak_bytes"]``, :mod:`oomkit.estimate.vllm_online_fp8`);
    whether the checkpoint is bf16 is unknown, so the verdict makes these "tight"."""
    peaks = est.runtime_details.get("online_fp8_load_peak_bytes")
    if est.runtime != "vllm" or not isinstance(peaks, Mapping):
        return []
    over: list[tuple[str, int]] = []
    for d in est.devices:
        peak = peaks.get(d.device)
        if isinstance(peak, int) and d.capacity_bytes is not None and peak > d.capacity_bytes:
            over.append((d.device, peak - d.capacity_bytes))
    return over


SGLANG_OUTSIDE_WHAT = "SGLang memory outside mem_fraction_static"
SGLANG_OUTSIDE_RISK = (
    "over what 1 - mem_fraction_static leaves after the req_to_token pool: one prefill chunk's "
    "activations and the CUDA-graph decode logits (sglang_outside) do not fit there, so the "
    "first long prefill or the graph capture dies of CUDA OOM"
)


def sglang_outside_over(est: Estimate) -> list[tuple[str, int, str]]:
    """(device, bytes over, safe change) where SGLang's outside-pool need exceeds the rest
    (``runtime_details["outside_pool"]``, :mod:`oomkit.estimate.sglang_outside`)."""
    info = est.runtime_details.get("outside_pool")
    if est.runtime != "sglang" or not isinstance(info, Mapping) or not est.devices:
        return []
    need, rest = int_detail(info, "need_bytes"), int_detail(info, "rest_bytes")
    frac, cap = est.settings.get("mem_fraction_static"), est.devices[0].capacity_bytes
    if need is None or rest is None or need <= rest or not isinstance(frac, float) or not cap:
        return []
    safe = max(0.0, frac - (need - rest) / cap - 0.01)
    change = (
        f"--mem-fraction-static {safe:.2f} or lower, or a smaller --chunked-prefill-size "
        f"(now {info.get('chunk_tokens')}) / --cuda-graph-max-bs, or --disable-cuda-graph"
    )
    return [(est.devices[0].device, need - rest, change)]


def tight_overs(est: Estimate) -> list[tuple[str, int, str, str, str]]:
    """(device, bytes over, what, risk, safe change) of the limits that make a verdict "tight"
    rather than "does not fit": whether they strike depends on an input oomkit is not given
    (the checkpoint's dtype; the longest prompt sent)."""
    out = [
        (dev, over, ONLINE_FP8_LOAD_WHAT, ONLINE_FP8_LOAD_RISK, ONLINE_FP8_LOAD_CHANGE)
        for dev, over in online_fp8_load_over(est)
    ]
    out += [
        (dev, over, SGLANG_OUTSIDE_WHAT, SGLANG_OUTSIDE_RISK, chg)
        for dev, over, chg in sglang_outside_over(est)
    ]
    return out

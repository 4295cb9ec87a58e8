"""The one change a "tight" verdict proposes: what clears the band on the tightest margin.

Split from :mod:`oomkit.estimate.verdict` (which decides the level): this module only words
the fix — vLLM's other tenants, CUDA graphs or prompt log-probs, a lower
``--gpu-memory-utilization`` / ``--mem-fraction-static``, a shorter context (the KV cache is
linear in it; llama.cpp's sliding-window and recurrent caches keep their size; a transformers
prompt frees its activations and the allocator's share too), a q8_0 KV
cache or fewer GPU layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.estimate.vllm_compiled_pooling import CHANGE as POOLING_CHANGE
from oomkit.estimate.vllm_compiled_pooling import LABEL as POOLING_LABEL
from oomkit.units import format_bytes

if TYPE_CHECKING:
    from oomkit.estimate.verdict_types import DeviceMargin

__all__ = [
    "GRAPHS_AFTER_KV",
    "OTHER_TENANTS",
    "PROMPT_LOGPROBS",
    "allocator_split_decides",
    "int_detail",
    "safe_change",
]

#: band-term labels the verdict writes and the advice reads back
GRAPHS_AFTER_KV = "CUDA graphs captured after the KV cache"
#: the transformers allocator term's label (oomkit.estimate.verdict_runtime)
ALLOCATOR_SPLIT = "PyTorch's caching allocator beyond allocated"
OTHER_TENANTS = "other processes' memory"
PROMPT_LOGPROBS = (
    "vLLM prompt log-probs: the sampler's fp32 [prompt tokens, vocab] rows of one step, outside "
    "the profiled budget (a prompt near max_model_len)"
)


def int_detail(details: Mapping[str, object], key: str) -> int | None:
    """``details[key]`` when it is an int (not a bool), else None."""
    v = details.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _ctx_flag(runtime: str) -> str:
    return {
        "llama.cpp": "--ctx",
        "ollama": "num_ctx",
        "vllm": "--max-model-len",
        "sglang": "--context-length",
        "transformers": "the prompt length",
    }.get(runtime, "--ctx")


def _ctx_scaled_fraction(est: Estimate) -> float:
    """The share of the KV bytes that shrinks with the context: llama.cpp's full-attention
    cache (``kv``); the sliding-window cache (``kv_swa``: window + ubatch cells) and recurrent
    state (``rs``) keep their size when the context drops. 1.0 when the estimate does not say.
    """
    caches = est.runtime_details.get("caches")
    if not isinstance(caches, list) or not caches:
        return 1.0
    total = scaled = 0
    for c in caches:
        if not isinstance(c, dict):
            return 1.0
        n = int(c.get("k_bytes") or 0) + int(c.get("v_bytes") or 0)
        total += n
        if c.get("label") == "kv":
            scaled += n
    return scaled / total if total else 1.0


def allocator_split_decides(est: Estimate, m: DeviceMargin) -> int | None:
    """The bytes of the transformers allocator's split-segment term when it is the largest
    band term and alone covers what the run lacks to clear the band (None otherwise): what
    ``expandable_segments:True`` would remove, unmeasured for ``generate()``."""
    need = m.band_bytes - m.free_bytes
    if est.runtime != "transformers" or need <= 0 or not m.terms:
        return None
    label, b = m.terms[0]
    return b if label.startswith(ALLOCATOR_SPLIT) and need <= b else None


def safe_change(est: Estimate, m: DeviceMargin) -> str | None:
    """The one change that clears the band on the tightest margin (KV is linear in context)."""
    need = m.band_bytes - m.free_bytes
    ctx = est.settings.get("ctx")
    if need <= 0 or not isinstance(ctx, int) or ctx <= 0:
        return None
    top = m.terms[0][0] if m.terms else ""
    fix = est.runtime_details.get("other_processes_fix")
    if est.runtime == "vllm" and top.startswith(OTHER_TENANTS) and isinstance(fix, str) and fix:
        return fix
    if est.runtime == "vllm" and top.startswith(GRAPHS_AFTER_KV):
        env = est.runtime_details.get("graph_estimate_env")
        if isinstance(env, str):  # 0.18+: what vLLM's own start-up line suggests
            return (
                f"{env} (vLLM takes its CUDA-graph estimate out of the KV cache instead of "
                "capturing in the headroom) or --enforce-eager"
            )
        return "--enforce-eager (no CUDA graphs to capture in the headroom)"
    if est.runtime == "vllm" and top == POOLING_LABEL:  # vllm_compiled_pooling
        return POOLING_CHANGE
    if est.runtime == "vllm" and top == PROMPT_LOGPROBS:
        return _fewer_logprob_rows(est, m)
    # No expandable_segments here although it removes the allocator's split-segment term
    # (c10/cuda/CUDACachingAllocator.cpp, ExpandableSegment: one growing mapping per stream,
    # freed pages unmapped): no band of generate() runs with it is measured, so "clear of the
    # band" could not be checked, and PyTorch ignores it on Windows (c10/cuda/CMakeLists.txt
    # defines PYTORCH_C10_DRIVER_API_SUPPORTED only if(NOT WIN32)). The safe change is one the
    # estimator re-prices (a shorter prompt below); the planner names the variable as an
    # unmeasured note (oomkit.planner.transformers_moves.allocator_note).
    d = next((x for x in est.devices if x.device == m.device), None)
    if d is None:
        return None
    if est.runtime in ("vllm", "sglang") and m.what == "device memory":
        util = est.settings.get("gpu_memory_utilization") or est.settings.get("mem_fraction_static")
        if isinstance(util, float) and d.capacity_bytes:
            new = util - need / d.capacity_bytes
            flag = "--gpu-memory-utilization" if est.runtime == "vllm" else "--mem-fraction-static"
            return f"{flag} {max(0.05, new - 0.005):.2f} (frees {format_bytes(need)})"
        return None
    if est.runtime in ("vllm", "sglang"):
        per_tok = int_detail(est.runtime_details, "kv_bytes_per_token_per_rank") or int_detail(
            est.runtime_details, "cell_size_bytes"
        )
        if not per_tok:
            return None
        cut = -(-need // per_tok)
        new_ctx = (ctx - cut) // 1024 * 1024
        if new_ctx < 1024:
            return None
        return f"{_ctx_flag(est.runtime)} {new_ctx} (the pool then holds a full request)"
    if est.runtime == "transformers":
        return _shorter_prompt(est, m, d, need, ctx)
    kv = d.kv_cache_bytes * _ctx_scaled_fraction(est)
    if kv <= 0:
        return None
    step = 256
    new_ctx = int(ctx * (kv - need) / kv) // step * step
    if new_ctx >= min(2048, ctx // 2):
        freed = int(kv - kv * new_ctx / ctx)
        return f"{_ctx_flag(est.runtime)} {new_ctx} (frees about {format_bytes(freed)} of KV)"
    if est.runtime in ("llama.cpp", "ollama") and kv // 2 >= need:
        return "a q8_0 KV cache (-ctk q8_0 -ctv q8_0 with flash attention) halves the KV"
    if est.runtime in ("llama.cpp", "ollama"):
        flag = "num_gpu" if est.runtime == "ollama" else "-ngl"
        return f"put fewer layers on the GPU ({flag}) to free {format_bytes(need)}"
    return None


def _shorter_prompt(
    est: Estimate, m: DeviceMargin, d: DeviceUsage, need: int, ctx: int
) -> str | None:
    """A transformers prompt short enough to clear the band. A ``generate()`` prefill's
    activations (sdpa: linear in the prompt; eager: quadratic, so faster) and the prompt's KV
    cache (not the ``max_new_tokens`` after it) shrink with the prompt, and so does the
    allocator's term (a share of those bytes or a multiple of the prefill's largest request,
    both proportional to the prompt): counting only the KV, as a llama.cpp context does, leaves
    most "tight" runs without a change. Linear in the prompt, so never more than it frees."""
    new_tokens = est.settings.get("max_new_tokens")
    gen = new_tokens if isinstance(new_tokens, int) and new_tokens > 0 else 0
    freed_whole = d.kv_cache_bytes * ctx / (ctx + gen) + d.activations_bytes
    shrinks = freed_whole + sum(b for label, b in m.terms if label.startswith(ALLOCATOR_SPLIT))
    if shrinks <= need:
        return None
    step = 256
    new_ctx = int(ctx * (1 - need / shrinks)) // step * step
    switch = int_detail(est.runtime_details, "rope_switch_tokens")
    if switch is not None and new_ctx <= switch < new_ctx + gen:
        # a Phi-3-family sequence crossing its RoPE switch re-prefills beside its old cache:
        # more memory, not less; a prompt that ends its generation before the switch frees
        # at least what the linear cut assumes
        new_ctx = (switch - gen) // step * step
    if new_ctx < min(256, ctx // 2):
        return None
    freed = int(freed_whole * (ctx - new_ctx) / ctx)
    return (
        f"a prompt of at most {new_ctx} tokens (asked {ctx}; frees about "
        f"{format_bytes(freed)} of KV cache and activations, and the allocator's share with them)"
    )


def _fewer_logprob_rows(est: Estimate, m: DeviceMargin) -> str | None:
    """Fewer prompt tokens per step, so that the prompt log-probs fit the rest of the band:
    V1 samples one request's scheduled tokens at a time (``--max-num-batched-tokens``); V0
    without chunked prefill batches up to ``max(max_model_len, 2048)`` (``--max-model-len``)."""
    per_row = int_detail(est.runtime_details, "prompt_logprobs_row_bytes")
    rows = int_detail(est.runtime_details, "prompt_logprobs_rows")
    if not per_row or not rows:
        return None
    other = m.band_bytes - m.terms[0][1]
    ok = (m.free_bytes - other) // per_row // 256 * 256
    if ok < 256 or ok >= rows:
        return None
    engine = str(est.runtime_details.get("engine") or "")
    ctx = est.settings.get("ctx")
    unchunked = engine.startswith("v0") and isinstance(ctx, int) and rows >= ctx
    flag = "--max-model-len" if unchunked else "--max-num-batched-tokens"
    return f"{flag} {ok} (at most {ok} prompt tokens of log-probs per step)"

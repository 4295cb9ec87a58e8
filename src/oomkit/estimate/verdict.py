"""The verdict: fits / tight / does_not_fit / unknown, from an Estimate and platform facts (pure).

A bare "fits" with 0.9 GiB to spare is not what a careful engineer would say: real runs sit
some distance from oomkit's numbers, and the platform takes memory no buffer log shows. Per
device::

    free = capacity - estimate total - reservations
    band = sum(category bytes x measured under-prediction of that category) + platform spread

``does_not_fit`` when any device has ``free < 0`` or the estimate has blockers; ``tight`` when
``0 <= free < band`` on some device (or a runtime's own margin, see below, is inside its band);
``fits`` otherwise; ``unknown`` when a capacity is unknown.

The band fractions come from measured variance, not a guess: ``src/oomkit/data/
verdict_band.json``, written by ``python benchmarks/verdict_band.py`` from the accuracy
harness's results (largest under-prediction per runtime family and category). Training
estimates (runtime ``training``) take theirs from real training steps instead, the caching
allocator's measured spread included (:mod:`oomkit.estimate.training_band`). Both are read by
:mod:`oomkit.estimate.verdict_band`.

Platform terms (``PLATFORM_TERMS``: the CUDA context spread, a display, WDDM, the Metal and
MPS working sets, AMD APUs, the Windows commit limit) and their sources are in
:mod:`oomkit.estimate.verdict_platform`. Ollama: its scheduler keeps
``GpuInfo.MinimumMemory`` (457 MiB CUDA/ROCm, 512 MiB Metal) plus ``OLLAMA_GPU_OVERHEAD``
(envconfig, default 0) free per GPU: inside that, Ollama does not die but puts fewer layers on
the GPU, so it counts toward "tight". The one-line wording of a verdict is
:mod:`oomkit.estimate.verdict_summary`.

Runtime margins: vLLM and SGLang size their KV pool to the budget, so the device total always
"fits"; their risk is the pool holding one ``max_model_len`` request. That margin (pool tokens
minus one request, in bytes) is compared with the band of what sizes the pool (weights,
activation peak, non-torch). vLLM refuses to start below it; SGLang does not (it caps a
request at the pool, ``tp_worker.py max_req_len``): a negative SGLang pool margin is "tight"
with that cap named (:func:`oomkit.estimate.verdict_runtime.sglang_cap`).

vLLM terms that come from how a generation allocates (``oomkit.estimate.vllm_engines``):

* CUDA graphs captured after the KV cache (every generation before 0.21.0 made the CUDA-graph
  estimate of PR #30515 the default) must fit in the ``1 - gpu_memory_utilization``
  headroom; vLLM's own warning puts a capture at "1~3 GiB memory per GPU": the span above
  the modelled pool is in the device band (``CUDAGRAPH_POOL_MAX``). With ``--enforce-eager``
  there is none.
* Generations that charge the memory of other processes to the budget (0.2.5-0.3.0, PR #2031
  until PR #2863; 0.6.4, PR #9352 until PR #10511; V1 0.8.0-0.9.0 until PR #18974): a
  ``gpu_memory_utilization`` below the default says the GPU is
  shared, and what the user leaves to the other tenants, ``(default - util) x total``, may be
  charged to this instance's pool: it is in the pool margin's band.

llama.cpp (and Ollama's llama runner) builds between PR #3749 (Oct 2023) and the VMM pool:
the batched attention GEMM leaves one FP16 buffer per prompt step in the legacy CUDA pool
(``runtime_details["cuda_pool_growth_bytes"]``, :mod:`oomkit.estimate.llamacpp_pool`); how
much depends on the longest prompt actually sent, so it is a band term (a prompt near the
context length), not part of the device total. vLLM with prompt log-probs
(``--prompt-logprobs``): the sampler's vocabulary-wide fp32 rows for a step of prompt tokens,
which the profile run never allocates (``runtime_details["prompt_logprobs_bytes"]``,
:mod:`oomkit.estimate.vllm_logprobs`), are a band term for the same reason, as are V1's penalty
counts and log-probs the dummy sampler skips (:mod:`oomkit.estimate.vllm_penalties`). transformers
before 4.36 (no SDPA, PR #26572): the eager attention's ``B x a x S x S`` scores and their
fp32 softmax at prefill (``runtime_details["eager_scores_bytes"]``), quadratic in the prompt
actually sent, likewise. transformers with an MXFP4 checkpoint (gpt-oss): the bytes the experts
grow by when the quantizer dequantizes them to bf16 for want of ``kernels``/Triton >= 3.4
(``runtime_details["mxfp4_dequant_bytes"]``, :mod:`oomkit.estimate.transformers_mxfp4`): the
environment oomkit cannot see.
"""

from __future__ import annotations

from collections.abc import Mapping

from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.estimate.llamacpp_fit import FIT_DETAIL
from oomkit.estimate.verdict_advice import int_detail, safe_change
from oomkit.estimate.verdict_band import band_allocator, band_doc, band_fractions
from oomkit.estimate.verdict_mps import MPS_OVER, within_mps_limit
from oomkit.estimate.verdict_ollama_apu import ollama_uma_overs
from oomkit.estimate.verdict_platform import (
    APU_SHARE,
    APU_UNREACHABLE_FRACTION,
    DISPLAY_SEGMENTS,
    METAL_NEWEST_DEFAULT_FRACTION,
    METAL_OVER,
    PLATFORM_TERMS,
    WDDM_OS,
    Platform,
    device_segment,
    device_unified_bytes,
    platform_term,
    segment_at,
    unified_at,
)
from oomkit.estimate.verdict_runtime import (
    EAGER_SCORES,
    MXFP4_DEQUANT,
    POOL_GROWTH,
    SORT_SAMPLER,
    VLLM_ASKED_TERMS,
    pool_is_a_cap,
    sglang_cap,
    tight_overs,
    transformers_allocator_term,
    vllm_graph_span,
    vllm_other_tenants,
)
from oomkit.estimate.verdict_types import LEVELS, DeviceMargin, Verdict
from oomkit.estimate.verdict_windows import (
    SYSMEM_OVER,
    wddm_commit_over,
    wddm_commit_risk,
    windows_hip_apu_overs,
    within_sysmem_fallback,
)
from oomkit.estimate.vllm_compiled_pooling import pool_terms
from oomkit.units import format_bytes

__all__ = [
    "APU_UNREACHABLE_FRACTION",
    "LEVELS",
    "METAL_NEWEST_DEFAULT_FRACTION",
    "PLATFORM_TERMS",
    "WDDM_COMMIT_WHAT",
    "DeviceMargin",
    "Platform",
    "Verdict",
    "band_allocator",
    "band_fractions",
    "device_segment",
    "device_unified_bytes",
    "verdict",
]

#: the margin of :mod:`oomkit.estimate.verdict_windows` (device "host")
WDDM_COMMIT_WHAT = "Windows commit limit (RAM + page file) vs GPU allocations"
#: runtimes whose Metal buffers are ggml-metal's
_GGML_RUNTIMES = frozenset({"llama.cpp", "ollama"})
_CATEGORY_LABELS = {
    "weights": "weights",
    "kv_cache": "KV cache",
    "activations": "compute/activation buffers",
    "overhead": "runtime non-torch/overhead",
}


def _device_margin(
    est: Estimate, d: DeviceUsage, index: int, platform: Platform, fracs: Mapping[str, float]
) -> DeviceMargin:
    assert d.capacity_bytes is not None
    terms: list[tuple[str, int]] = []
    if est.runtime == "training":  # measured steps (oomkit.estimate.training_band)
        from oomkit.estimate.training_band import band_terms

        fracs = {}
        terms.extend(band_terms(est, d))
    for cat, frac in fracs.items():
        b = int(d.category_bytes(cat) * frac)
        if b > 0:
            terms.append((f"{_CATEGORY_LABELS.get(cat, cat)} (+{frac:.1%} seen)", b))
    reservations: list[tuple[str, int]] = []
    gpu = d.device != "cpu"
    seg = segment_at(platform, index)
    if gpu:
        terms.append(platform_term("cuda_context_spread"))
        if platform.display:
            reservations.append(platform_term("display"))
        elif platform.display is None and (seg is None or seg in DISPLAY_SEGMENTS):
            terms.append(platform_term("display"))
        if (platform.os or "").lower() in WDDM_OS:
            reservations.append(platform_term("windows_wddm"))
        if est.runtime == "ollama":
            reserve = _ollama_reserve(est, d.device) + platform.ollama_gpu_overhead_bytes
            if reserve:
                terms.append(("Ollama's minimum free memory (fewer layers on the GPU)", reserve))
        if est.runtime == "vllm":
            graphs = vllm_graph_span(est)
            if graphs:
                terms.append(graphs)
        growth = est.runtime_details.get("cuda_pool_growth_bytes")
        if isinstance(growth, Mapping) and isinstance(growth.get(d.device), int):
            terms.append((POOL_GROWTH, int(growth[d.device])))
        scores = est.runtime_details.get("eager_scores_bytes")
        if isinstance(scores, Mapping) and isinstance(scores.get(d.device), int):
            terms.append((EAGER_SCORES, int(scores[d.device])))
        if seg != "apple":  # CUDA/HIP caching allocator (MPS has its own: verdict_mps)
            alloc = transformers_allocator_term(est, d, band_allocator(est.runtime))
            if alloc is not None:
                terms.append(alloc)
        mx = est.runtime_details.get("mxfp4_dequant_bytes")
        if isinstance(mx, Mapping) and isinstance(mx.get(d.device), int) and mx[d.device]:
            terms.append((MXFP4_DEQUANT, int(mx[d.device])))
        for key, label in VLLM_ASKED_TERMS:  # vLLM sampler tensors only some requests ask for
            asked = est.runtime_details.get(key)
            if isinstance(asked, Mapping) and isinstance(asked.get(d.device), int):
                terms.append((label, int(asked[d.device])))
    unified = unified_at(platform, index) if gpu else None
    if unified is not None and seg != "apple":
        terms.append((APU_SHARE, int(unified * APU_UNREACHABLE_FRACTION)))
    free = d.capacity_bytes - d.total_bytes - sum(b for _, b in reservations)
    band = sum(b for _, b in terms)
    level = _level(free, band)
    if level == "tight" and gpu and est.runtime_details.get(FIT_DETAIL):
        level = "fits"  # --fit sized -c/-ngl from its own measurement (llamacpp_fit)
    if (
        level == "does_not_fit"
        and unified is not None
        and seg == "apple"
        and est.runtime in _GGML_RUNTIMES
        and d.capacity_bytes - free <= int(unified * METAL_NEWEST_DEFAULT_FRACTION)
    ):
        # over the older working set, within what newer macOS allows: the limit is uncertain
        # (named as a risk by verdict(), not a band term: the band stays the measured one)
        level = "tight"
    if (
        level == "does_not_fit"
        and unified is not None
        and seg == "apple"
        and est.runtime == "transformers"
        and within_mps_limit(
            d.capacity_bytes - free, d.capacity_bytes, platform.mps_high_watermark_ratio
        )
    ):
        level = "tight"
    if level == "does_not_fit" and within_sysmem_fallback(est, d, platform.os, -free):
        level = "tight"  # Windows: spills to shared system memory (verdict_windows)
    terms.sort(key=lambda t: -t[1])
    return DeviceMargin(
        device=d.device,
        what="device memory",
        free_bytes=free,
        band_bytes=band,
        terms=tuple(terms),
        reservations=tuple(reservations),
        level=level,
    )


def _ollama_reserve(est: Estimate, device: str) -> int:
    info = est.runtime_details.get("ollama")
    if not isinstance(info, Mapping):
        return 0
    reserve = info.get("reserve_bytes")
    if not isinstance(reserve, Mapping):
        return 0
    value = reserve.get(device, 0)
    return value if isinstance(value, int) else 0


def _level(free: int, band: int) -> str:
    if free < 0:
        return "does_not_fit"
    return "tight" if free < band else "fits"


def _pool_margin(est: Estimate, fracs: Mapping[str, float]) -> DeviceMargin | None:
    """vLLM/SGLang: the KV pool against one request of the context length."""
    rd = est.runtime_details
    if est.runtime == "vllm":
        tokens, need = int_detail(rd, "kv_cache_tokens"), int_detail(rd, "max_model_len")
        per_tok = int_detail(rd, "kv_bytes_per_token_per_rank")
    elif est.runtime == "sglang":
        tokens, per_tok = int_detail(rd, "max_total_num_tokens"), int_detail(rd, "cell_size_bytes")
        ctx = est.settings.get("ctx")
        need = ctx if isinstance(ctx, int) else None
    else:
        return None
    if tokens is None or need is None or not per_tok or not est.devices:
        return None
    blocks, block = int_detail(rd, "num_gpu_blocks"), int_detail(rd, "block_size")
    if est.runtime == "vllm" and blocks is not None and block:
        # the pool's own tokens, not the logged figure: vLLM 0.21+ logs max_concurrency x
        # max_model_len (vllm_blocks._logged_tokens), a few tokens short of the pool on a
        # max_model_len that is not a multiple of the block
        tokens = blocks * block if (int_detail(rd, "kv_cache_groups") or 1) == 1 else tokens
    d = est.devices[0]
    # what sizes the pool: weights, the profile peak and the non-torch memory vLLM measures
    # (not the CUDA-graph pool or the context, which are outside the measured non-torch rows)
    non_torch = int_detail(rd, "non_torch_bytes")
    terms = [
        (f"{_CATEGORY_LABELS[c]} (+{fracs.get(c, 0.0):.1%} seen)", int(b * fracs.get(c, 0.0)))
        for c, b in (
            ("weights", d.weights_bytes),
            ("activations", d.activations_bytes),
            ("overhead", d.overhead_bytes if non_torch is None else non_torch),
        )
    ]
    if est.runtime == "vllm" and d.capacity_bytes:
        tenants = vllm_other_tenants(est, d.capacity_bytes)
        if tenants is not None:
            terms.append(tenants)
    sort_extra = int_detail(rd, "sampler_sort_extra_bytes") if est.runtime == "vllm" else None
    if sort_extra:  # 0.9.1-0.11.0: FlashInfer's sampler only where installed (vllm_sampler)
        terms.append((SORT_SAMPLER, sort_extra))
    terms = sorted((t for t in terms if t[1] > 0), key=lambda t: -t[1])
    free = (tokens - need) * per_tok
    headroom = int_detail(rd, "kv_pool_headroom_bytes")
    groups = int_detail(rd, "kv_cache_groups") or 1
    if est.runtime == "vllm" and groups > 1 and headroom is not None:
        # hybrid (full + sliding-window) KV groups: kv_cache_tokens is one group's share, and
        # a request's sliding layers need only their window; V1 checks bytes
        # (check_enough_kv_cache_memory: max_memory_usage_bytes summed over the layers)
        free = headroom
    terms = pool_terms(est, terms, free)  # vLLM 0.25+: a compiled pooling model
    band = sum(b for _, b in terms)
    level = _level(free, band)
    if level == "does_not_fit" and tokens > 0 and pool_is_a_cap(est):
        # SGLang loads and caps a request at the pool (verdict_runtime.sglang_cap); vLLM
        # before 0.2.7 starts and hangs on a longer request (PR #2163): a limit, not a death
        level = "tight"
    return DeviceMargin(
        device=d.device,
        what=_POOL_WHAT,
        free_bytes=free,
        band_bytes=band,
        terms=tuple(terms),
        reservations=(),
        level=level,
        spare_tokens=tokens - need if groups == 1 else None,
    )


_POOL_WHAT = "KV pool vs one request of the full context"


#: a host RAM need from this size up is named in the verdict when --ram was not given: llama.cpp's
#: own fit target (common_params.fit_params_target, 1 GiB), as the "system memory is not
#: checked" assumption of :mod:`oomkit.estimate.llamacpp_fit`; smaller needs (a token-embedding
#: table, pinned staging) any host has
HOST_UNCHECKED_NOTE_BYTES = 1 << 30


def host_unchecked_bytes(est: Estimate) -> int | None:
    """The host RAM ``est`` needs when its capacity is unknown (no --ram), from 1 GiB up."""
    host = est.host
    if host.capacity_bytes is not None or not est.devices:
        return None
    return host.total_bytes if host.total_bytes >= HOST_UNCHECKED_NOTE_BYTES else None


def verdict(est: Estimate, platform: Platform | None = None) -> Verdict:
    """Three-level verdict for ``est`` on ``platform`` (pure; see the module docstring)."""
    plat = platform or Platform()
    fracs = band_fractions(est.runtime)
    source = str(band_doc().get("_source", "verdict_band.json"))
    if est.runtime == "training":
        from oomkit.estimate.training_band import band_source

        source = band_source()
    notes: list[str] = []
    if (plat.os or "").lower() == "windows":
        notes.append(
            "Windows: CUDA may spill to shared system memory (driver 536.40+) instead of "
            "failing: past the limit the run slows down sharply rather than dying"
        )
    if est.fits is None or any(d.capacity_bytes is None for d in est.devices):
        return Verdict(level="unknown", margins=(), band_source=source, notes=tuple(notes))
    # SGLang's device total is the whole GPU by construction (the static fraction plus "the
    # rest" for activations and graphs): only its pool margin says something
    margins = [
        _device_margin(est, d, i, plat, fracs)
        for i, d in enumerate(est.devices)
        if d.capacity_bytes is not None and est.runtime != "sglang"
    ]
    pool = _pool_margin(est, fracs)
    if pool is not None:
        margins.append(pool)
    # a device over its capacity is a death unless its margin says the limit is uncertain
    # (Apple: over the older working set, within newer macOS's): then it is "tight"
    soft = {m.device for m in margins if m.what == "device memory" and m.level == "tight"}
    hard = (
        bool(est.blockers)
        or est.host.fits is False
        or any(d.fits is False and d.device not in soft for d in est.devices)
    )
    if (est.fits is False and hard) or any(m.level == "does_not_fit" for m in margins):
        return Verdict(
            level="does_not_fit",
            margins=tuple(margins),
            band_source=source,
            notes=tuple(notes),
        )
    over = wddm_commit_over(est, plat.os)
    if over is not None:  # Windows: GPU allocations above the RAM need the page file
        margins.append(
            DeviceMargin(
                device="host",
                what=WDDM_COMMIT_WHAT,
                free_bytes=-over,
                band_bytes=0,
                terms=(),
                reservations=(),
                level="tight",
            )
        )
    # vLLM 0.13-0.14 online FP8 (if the checkpoint is bf16); SGLang outside its static fraction
    overs = [*tight_overs(est), *windows_hip_apu_overs(est, plat.os, plat.unified_bytes)]
    overs += ollama_uma_overs(est, plat.os, plat.unified_bytes)  # Linux APU: verdict_ollama_apu
    soft_overs = {(dev, what): (risk, chg) for dev, _, what, risk, chg in overs}
    for dev, over_b, what, _, _ in overs:
        margins.append(
            DeviceMargin(
                device=dev,
                what=what,
                free_bytes=-over_b,
                band_bytes=0,
                terms=(),
                reservations=(),
                level="tight",
            )
        )
    unchecked = host_unchecked_bytes(est)
    tight = [m for m in margins if m.level == "tight"]
    if not tight:
        return Verdict(
            level="fits",
            margins=tuple(margins),
            band_source=source,
            host_unchecked_bytes=unchecked,
        )
    worst = min(tight, key=lambda m: m.free_bytes - m.band_bytes)
    risks = tuple(f"{label} {format_bytes(b)}" for label, b in worst.terms[:3])
    cap = sglang_cap(est)
    change = safe_change(est, worst)
    if cap is not None and worst.what == _POOL_WHAT:
        risks = (cap, *risks)
    elif (worst.device, worst.what) in soft_overs:
        risk, change = soft_overs[(worst.device, worst.what)]
        risks = (f"{format_bytes(-worst.free_bytes)} {risk}",)
    elif worst.what == WDDM_COMMIT_WHAT and over is not None:
        risks = (wddm_commit_risk(over),)
        change = f"a page file of at least {format_bytes(over)} beyond what Windows already commits"
    elif worst.what == "device memory" and worst.free_bytes < 0:  # Apple, Windows: _device_margin
        over_text = MPS_OVER if est.runtime == "transformers" else METAL_OVER
        if worst.device.startswith("cuda:"):  # Windows' System Memory Fallback
            over_text = SYSMEM_OVER
        risks = (f"{format_bytes(-worst.free_bytes)} {over_text}", *risks)
    if over is not None and worst.what != WDDM_COMMIT_WHAT:
        risks = (*risks, wddm_commit_risk(over))
    return Verdict(
        level="tight",
        margins=tuple(margins),
        band_source=source,
        risks=risks,
        safe_change=change,
        notes=tuple(notes),
        host_unchecked_bytes=unchecked,
    )

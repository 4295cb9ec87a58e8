"""Diagnosis of the families added for issue 9: FlashInfer workspace, transformers/bitsandbytes
dispatch, SGLang memory pool, Vulkan/TVM, ROCm driver, the generic fallback, and the cross-event
growth check (leak/accumulation) that applies to every runtime.

SGLang sizes its static pool as ``total x mem_fraction_static`` (weights + KV); the KV token
budget is ``(avail_after_weights - total x (1 - mem_fraction_static)) / bytes_per_token``
(``model_runner.py`` ``profile_max_num_token``). A budget <= 0 therefore means the weights alone
take more than ``mem_fraction_static`` of the card; docs/doctor-causes.md gives the order in which
causes win.
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text

__all__ = ["analyze_extra", "growth_across_events"]

_MAX_MFS = 0.95
# the runtime share SGLang needs outside the static pool (activations, CUDA graphs) is ~10-15%
_SGL_MIN_DYNAMIC = 0.10


def _fb(n: int | None) -> str:
    return size_text(n)


def _flashinfer(e: OomEvent, ctx: LogContext) -> Analysis:
    x, avail = e.requested_bytes, e.free_bytes
    expl = (
        f"FlashInfer's attention workspace could not hold {e.detail} ({_fb(x)}"
        + (f"; the workspace has {_fb(avail)}" if avail is not None else "")
        + "). The workspace is a fixed buffer the engine allocates once; its scratch tensors grow "
        "with the tokens of one prefill batch (chunked-prefill size x running requests), so the "
        "batch is too large for it — GPU memory as a whole is not what ran out."
    )
    grow = None
    if x is not None:
        size = 1 << max(27, (x - 1).bit_length())  # next power of two >= the request
        grow = Fix(
            title=f"Enlarge the FlashInfer workspace to {_fb(size)}",
            why=f"the workspace must hold the {_fb(x)} scratch tensor; the next power of two is "
            f"{_fb(size)} (the extra comes out of the memory left for the KV cache).",
            commands=(f"SGLANG_FLASHINFER_WORKSPACE_SIZE={size}   # SGLang, bytes",),
            expected_saving_bytes=None,
        )
    fixes = [
        generic(
            "Prefill fewer tokens per batch",
            "the workspace scratch is linear in the tokens of one prefill batch.",
            (
                "--chunked-prefill-size 4096   # SGLang",
                "--max-num-batched-tokens 4096   # vLLM",
                "--max-running-requests 32   # SGLang",
            ),
        ),
        *((grow,) if grow is not None else ()),
        generic(
            "Use another attention backend",
            "other backends do not use FlashInfer's fixed workspace.",
            ("--attention-backend triton   # SGLang", "VLLM_ATTENTION_BACKEND=FLASH_ATTN"),
        ),
    ]
    return Analysis(
        cause="batch_or_activations", confidence=0.6, explanation=expl, fixes=tuple(fixes)
    )


def _dispatch(e: OomEvent, ctx: LogContext) -> Analysis:
    return Analysis(
        cause="model_too_large",
        confidence=0.7,
        explanation="transformers placed part of the quantized model on the CPU or disk "
        "(device_map='auto' found the GPU too small for all weights) and bitsandbytes refuses "
        "to run quantized layers there: the quantized weights do not fit in the GPU memory "
        "that is free at load. If the same model fitted before, memory held by an earlier "
        "model in this process (restart it) or another process is the cause instead.",
        fixes=(
            generic(
                "Load with a smaller quantization (4-bit instead of 8-bit)",
                "4-bit weights take about half of 8-bit ones.",
                (
                    "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4')",
                    "restart the process so the new quantization config is used",
                ),
            ),
            generic(
                "Allow CPU offload of the modules that do not fit",
                "keeps those modules in fp32 on the CPU (slow).",
                (
                    "BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True)",
                    "from_pretrained(..., device_map='auto', max_memory={0: '10GiB', "
                    "'cpu': '30GiB'})",
                ),
            ),
        ),
    )


def _mfs_fix(mfs: float | None, need: float | None, why: str) -> Fix:
    if need is not None:
        new = min(_MAX_MFS, round(need + 0.005, 2))
        return Fix(
            title=f"Raise --mem-fraction-static to {new:.2f}",
            why=why,
            commands=(f"--mem-fraction-static {new:.2f}",),
            expected_saving_bytes=None,
        )
    new = min(_MAX_MFS, (mfs or 0.85) + 0.05)
    return generic(
        f"Raise --mem-fraction-static to {new:.2f}",
        "the static pool (weights + KV) is total x mem_fraction_static; a larger fraction leaves "
        "room for KV tokens after the weights (but less for activations/CUDA graphs).",
        (f"--mem-fraction-static {new:.2f}",),
    )


def _sglang_pool(e: OomEvent, ctx: LogContext) -> Analysis:
    w, avail, mfs = ctx.weights_bytes, ctx.avail_after_weights_bytes, e.mem_fraction_static
    mfs = mfs or ctx.mem_fraction_static
    tokens = e.kv_capacity_tokens
    total = (w + avail) if w is not None and avail is not None else None
    share = avail / total if avail is not None and total else None
    expl = "SGLang could not build its KV pool"
    if tokens is not None:
        expl += f" (profiled KV budget {tokens} tokens)"
    expl += ": after the weights, total x mem_fraction_static leaves no room for KV tokens."
    if w is not None and avail is not None and share is not None:
        expl += (
            f" The weights take {_fb(w)} per GPU and leave {_fb(avail)} ({share:.0%} of the card)."
        )
    need = None if share is None else 1 - share + 0.02
    weights_full = share is not None and share < _SGL_MIN_DYNAMIC + 0.05
    if weights_full or (tokens is not None and tokens < 0 and share is None):
        expl += (
            " The weights leave too little for any KV pool plus SGLang's runtime share "
            "(~10-15%): raising mem_fraction_static cannot fix it; the weights must shrink."
        )
        return Analysis(
            cause="model_too_large",
            confidence=0.65 if weights_full else 0.5,
            explanation=expl,
            fixes=(
                generic(
                    "Load the weights quantized (fp8 / AWQ / GPTQ)",
                    "fp8 weights take half of bf16 ones.",
                    ("--quantization fp8", "pick an AWQ/GPTQ checkpoint"),
                ),
                generic(
                    "Shard over more GPUs: --tp 2x current",
                    "each GPU holds 1/tp of the weights.",
                    ("--tp <2x current>",),
                ),
            ),
        )
    fixes = [
        _mfs_fix(
            mfs,
            need if need is not None and need <= _MAX_MFS else None,
            f"the weights leave {share:.0%} of the card, so the static pool needs more than "
            f"{1 - share:.2f} of it to hold any KV token."
            if share is not None
            else "",
        ),
        generic(
            "Cap the context and the running requests",
            "a smaller pool suffices for fewer/shorter requests.",
            ("--context-length 32768", "--max-running-requests 64"),
        ),
        generic(
            "Store the KV cache in fp8",
            "fp8 halves the bytes per KV token.",
            ("--kv-cache-dtype fp8_e5m2",),
        ),
    ]
    return Analysis(
        cause="kv_cache_or_context", confidence=0.55, explanation=expl, fixes=tuple(fixes)
    )


def _sglang_runtime(e: OomEvent, ctx: LogContext) -> Analysis:
    phase = "prefill" if "prefill" in (e.format or "") else "decode"
    tok = e.prefill_tokens
    expl = (
        f"SGLang's KV pool ran out during {phase}"
        + (f" (it needed {tok} more tokens)" if tok else "")
        + ": the running requests' KV tokens fill the pool the server sized at startup."
    )
    fixes = [
        generic(
            "Fewer running requests",
            "each running request holds its KV tokens in the pool.",
            ("--max-running-requests 32",),
        ),
        generic(
            "Smaller prefill chunks",
            "a prefill chunk reserves KV for all its tokens at once.",
            (f"--chunked-prefill-size {max(512, (tok or 8192) // 2)}",),
        ),
        generic(
            "Lower --mem-fraction-static only if CUDA OOMs appear too; raise it otherwise",
            "the pool is total x mem_fraction_static minus the weights.",
            ("--mem-fraction-static 0.9",),
        ),
    ]
    return Analysis(
        cause="kv_cache_or_context", confidence=0.6, explanation=expl, fixes=tuple(fixes)
    )


def _driver(e: OomEvent, ctx: LogContext) -> Analysis:
    who = "Vulkan" if e.runtime == "vulkan" else "The GPU driver"
    return Analysis(
        cause="unknown",
        confidence=0.25,
        explanation=f"{who} reported out of device memory; the message carries no sizes, so "
        "whether the weights, the context or another process filled the GPU cannot be told "
        "from it. The free memory before the load (run `oomkit gpus`) and the model size decide.",
        fixes=(
            generic(
                "Check what holds the GPU, then use a smaller model/quantization or context",
                "the driver ran out of device memory.",
                ("oomkit gpus", "nvidia-smi / rocm-smi / vulkaninfo --summary"),
            ),
        ),
    )


def _generic(e: OomEvent, ctx: LogContext) -> Analysis:
    x = e.requested_bytes
    phase = ctx.frame_phase
    cause, conf = "unknown", 0.15
    why = " No parser knows this message's format, so only its wording is read."
    if phase == "model_load":
        cause, conf = "model_too_large", 0.35
        why += f" The traceback is in model loading ({ctx.frame_text})."
    elif phase in {"forward", "backward", "cuda_graph_capture"}:
        cause, conf = "batch_or_activations", 0.35
        why += f" The traceback is in the {phase} pass ({ctx.frame_text})."
    else:
        why += " The phase (loading vs running) and the free memory would decide the cause."
    return Analysis(
        cause=cause,
        confidence=conf,
        explanation=f"An out-of-memory error ('{e.detail}')"
        + (f" for {_fb(x)}" if x is not None else "")
        + "."
        + why,
        fixes=(
            generic(
                "Check free memory and other processes",
                "the message does not state sizes; the device's state decides the cause.",
                ("oomkit gpus", "nvidia-smi", "free -h"),
            ),
            generic(
                "Shrink the batch/context, or load a smaller/quantized model",
                "the two levers that cover most out-of-memory failures.",
                ("batch_size //= 2", "-c / --max-model-len smaller", "4-bit quantization"),
            ),
        ),
    )


def analyze_extra(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the families of this module, or ``None`` when ``e`` is not one of them."""
    if e.runtime == "flashinfer":
        return _flashinfer(e, ctx)
    if e.runtime == "transformers" and e.kind == "dispatch_offload":
        return _dispatch(e, ctx)
    if e.runtime == "sglang" and e.kind in {"kv_pool_profiled", "no_kv_pool"}:
        return _sglang_pool(e, ctx)
    if e.runtime == "sglang" and e.kind == "kv_pool_full":
        return _sglang_runtime(e, ctx)
    if e.runtime in {"vulkan", "rocm"}:
        return _driver(e, ctx)
    if e.runtime == "generic":
        return _generic(e, ctx)
    return None


def growth_across_events(events: Sequence[OomEvent]) -> str | None:
    """Text when one process hit OOM repeatedly while its allocated memory grew, else ``None``.

    Several allocator events of one device in one log, with ``allocated`` (or the process's
    use) rising from the first to the last by at least 5%, mean memory accumulates across
    iterations/calls: tensors kept alive between steps, a growing cache, or a model reloaded
    without freeing the previous one.
    """
    by_dev: dict[int | None, list[int]] = {}
    for e in events:
        v = e.allocated_bytes if e.allocated_bytes is not None else e.process_in_use_bytes
        if v is None or e.kind not in {"cuda_oom", "hip_oom", "xpu_oom", "mps_oom"}:
            continue
        by_dev.setdefault(e.device, []).append(v)
    for dev, vals in by_dev.items():
        if len(vals) >= 2 and vals[-1] > vals[0] * 1.05 and vals[-1] - vals[0] >= 64 << 20:
            return (
                f" {len(vals)} out-of-memory errors on device {dev} in one log, with allocated "
                f"memory growing from {_fb(vals[0])} to {_fb(vals[-1])}: memory accumulates "
                "across calls (tensors kept alive between steps, a growing cache, or a model "
                "loaded again without freeing the previous one)."
            )
    return None

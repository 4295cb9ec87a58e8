"""Diagnosis of the families of :mod:`oomkit.diagnose.parse_families`, and the log facts that
override a single message's reading (docs/doctor-causes.md, sections 1 and 4).

* A serving engine's KV-pool message (``Not enough memory for KV cache, try reducing
  --num-pages``): the pool is sized from the tokens/pages asked for -> ``kv_cache_or_context``.
* MLC's static memory plan exceeded: the buffers were planned at compile time for the configured
  context window / prefill chunk; the input needs more than planned -> ``kv_cache_or_context``
  (device memory is not what ran out; the input length is the lever).
* LM Studio's guardrail: its estimate for the model at the current settings exceeds what is free
  *now* (models it keeps loaded and other apps count against it). With no figure stated, what
  decides is whether anything else is loaded; an estimate of NaN is the estimator failing.
* cuBLAS handle creation outside PyTorch: the same reading as PyTorch's ``*_ALLOC_FAILED``.
* CUDA context creation failing with out-of-memory: context creation is this process's first
  allocation on the device, so nothing of this process is there yet -> other processes (or a
  MIG slice / a card already full) hold the memory.
* Ollama's own placement (``offload to cuda ... memory.available ... memory.required``) followed
  by a CUDA out-of-memory: Ollama put as many layers on the GPU as its estimate allowed and the
  estimate was short -> ``model_too_large`` (too many layers for the card), fix ``num_gpu``.
* llama.cpp's host buffer failure followed by the KV-cache init failure: the KV cache (the
  context) is what failed, host RAM only where it was placed -> ``kv_cache_or_context``.
* Other frameworks' allocators (PaddlePaddle, CuPy, ONNX Runtime) read like PyTorch's: the
  request's share of what is held plus free decides activation vs resident state.
* Per-buffer limits (MLX ``maximum allowed buffer size``, MPS ``Invalid buffer size``, a
  ggml-metal buffer within the working set), MLX's live-buffer count and XLA:TPU VMEM are not
  capacity -> ``unknown`` with the fixes that avoid them.
* Messages without a phase (CTranslate2, TVM's device API, a 2023 ggml CUDA check with no load
  lines) -> ``unknown`` with the facts that would decide.

Log facts (:func:`decide_by_log_facts`): PyTorch DataParallel's ``There is an imbalance between
your GPUs`` warning makes the OOM ``multi_gpu_imbalance`` (the weaker GPU gets the same share);
a driver's per-allocation limit (``Requested buffer size exceeds device memory allocation
limit``) makes it ``unknown`` (not capacity: one buffer is larger than the driver allows);
completed training steps before an OOM the single message reads as the resident model make it
``leak_or_accumulation`` (what is resident fitted for those steps).
"""

from __future__ import annotations

import re
from dataclasses import replace

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text
from oomkit.diagnose.rules_limits import analyze_limits
from oomkit.diagnose.rules_tpu import tpu_smem

__all__ = ["analyze_families", "decide_by_log_facts"]

_BIG_SHARE = 0.10  # the request share that marks one activation (as T-rules, doctor-causes.md)
_BIG_TENSOR = 2 << 30  # a single tensor above the largest weight tensors of common models


def _fb(n: int | None) -> str:
    return size_text(n)


def _kv_pool(e: OomEvent) -> Analysis:
    flags = f" (the message points at {e.detail})" if e.detail else ""
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.6,
        explanation="The serving engine could not allocate its KV-cache pool" + flags + ": the "
        "pool is sized from the pages/tokens (context x concurrent sequences) it was asked to "
        "hold, and that many do not fit beside the weights. If it still fails with a small "
        "pool, the weights are the cause instead.",
        fixes=(
            generic(
                "Ask for a smaller KV pool",
                "the pool is linear in the tokens it holds (pages x page size).",
                (
                    "--num-pages <half>   /   --num-tokens 4096",
                    "--max-total-tokens 8192   # SGLang",
                    "--context-length 8192 / --max-model-len 8192",
                ),
            ),
            generic(
                "Quantize the KV cache",
                "fp8 KV takes half of fp16.",
                ("--kv-cache-dtype fp8_e5m2   # SGLang", "--kv-cache-dtype fp8   # vLLM"),
            ),
        ),
    )


def _mlc_plan(e: OomEvent) -> Analysis:
    x, r = e.requested_bytes, e.total_bytes
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.55,
        explanation=f"MLC's static memory plan was exceeded: the input needs {_fb(x)} in a region "
        f"planned at {_fb(r)}. MLC plans these buffers when the model is compiled, for the "
        "configured context window / prefill chunk, so an input longer than that fails even "
        "with free GPU memory: the input length is the lever, not the device. If it still fails "
        "with a short prompt, the plan itself (a bug) is the cause instead.",
        fixes=(
            generic(
                "Keep prompts within the compiled length, or compile for a longer one",
                "the planned region covers context_window_size / prefill_chunk_size tokens.",
                (
                    "mlc_llm gen_config ... --context-window-size 8192 --prefill-chunk-size 4096",
                    "shorten the prompt / --eval-prompt-len below the compiled length",
                ),
            ),
        ),
    )


def _guardrail(e: OomEvent) -> Analysis:
    fix_unload = generic(
        "Unload the models LM Studio keeps loaded, then load again",
        "the guardrail compares its estimate with the memory free right now.",
        ("lms ps", "lms unload --all"),
    )
    fix_ctx = generic(
        "Load with a shorter context length (or a smaller quant)",
        "the estimate covers the weights plus the KV cache for the context length.",
        ("lms load <model> --context-length 8192", "pick a Q4_K_M quant"),
    )
    fix_guard = generic(
        "Relax the model-loading guardrail",
        "only when the estimate is wrong: the system may freeze if it is right.",
        ("Settings > Model loading guardrails: Relaxed / Off",),
    )
    if e.detail == "estimate NaN":
        return Analysis(
            cause="unknown",
            confidence=0.5,
            explanation="LM Studio's load guardrail estimated NaN bytes for this model: its "
            "estimator failed (an architecture it does not size), not the memory. Relaxing the "
            "guardrail or updating LM Studio would confirm it.",
            fixes=(fix_guard, fix_unload),
        )
    if e.requested_bytes is not None:
        return Analysis(
            cause="model_too_large",
            confidence=0.45,
            explanation=f"LM Studio's load guardrail estimates {_fb(e.requested_bytes)} for this "
            "model at the current settings (weights plus the KV cache of the context length) "
            "and that exceeds the memory free now. A shorter context length would decide "
            "between the weights and the context.",
            fixes=(fix_ctx, fix_unload, fix_guard),
        )
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.4,
        explanation="LM Studio's load guardrail refused the model: its estimate for the model at "
        "these settings exceeds the RAM/VRAM free right now, and models LM Studio keeps "
        "loaded (and other apps) count against it. What would decide: `lms ps` — if it still "
        "refuses with nothing else loaded, the model or its context length is too large instead.",
        fixes=(fix_unload, fix_ctx, fix_guard),
    )


def _context_create(e: OomEvent) -> Analysis:
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.55,
        explanation="Creating the CUDA context ran out of memory. The context is this process's "
        "first allocation on the device, so none of the device's memory is this process's yet: "
        "other processes (another job, another user on a shared machine) hold it, or the device "
        "is a small MIG slice. Run `oomkit gpus` (or nvidia-smi) to see who holds it.",
        fixes=(
            generic(
                "Find and stop what else holds the GPU",
                "the memory was taken before this process allocated anything.",
                (
                    "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                    "kill <pid>   # a stale job of yours",
                ),
            ),
        ),
    )


def _ollama_overcommit(e: OomEvent, ctx: LogContext) -> Analysis:
    avail = sum(ctx.ollama_available_bytes)
    need = ctx.ollama_required_partial_bytes or ctx.ollama_required_full_bytes
    layers, total = ctx.ollama_layers_offload, ctx.ollama_layers_model
    margin = avail - need if need is not None else None
    expl = (
        f"Ollama placed {layers}"
        + (f" of {total}" if total else "")
        + f" layers on the GPU from its own estimate ({_fb(need)} needed of {_fb(avail)} "
        f"available"
        + (f", {_fb(margin)} to spare" if margin is not None else "")
        + "), then the GPU ran out of memory: the estimate was short, so more layers went to "
        "the GPU than fit. If it still fails with fewer layers, the context (KV) is the cause "
        "instead."
    )
    fixes: list[Fix] = []
    if layers and layers > 1:
        fixes.append(
            Fix(
                title=f"Put fewer layers on the GPU: num_gpu {layers - 1}",
                why=f"one layer fewer than Ollama's {layers} leaves one layer's weights of "
                "headroom for the estimate's error.",
                commands=(f"/set parameter num_gpu {layers - 1}", f'"num_gpu": {layers - 1}'),
                expected_saving_bytes=None,
            )
        )
    fixes.append(
        generic(
            "Reserve headroom for the estimate's error",
            "OLLAMA_GPU_OVERHEAD (bytes) makes the scheduler leave memory free per GPU.",
            ("OLLAMA_GPU_OVERHEAD=1073741824 ollama serve",),
        )
    )
    return Analysis(cause="model_too_large", confidence=0.55, explanation=expl, fixes=tuple(fixes))


def _host_kv(e: OomEvent, ctx: LogContext) -> Analysis:
    from oomkit.diagnose.rules_llamacpp import kv_fixes

    ctx_text = f" at n_ctx={ctx.n_ctx}" if ctx.n_ctx else ""
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.7,
        explanation=f"llama.cpp could not allocate the {_fb(e.requested_bytes)} KV cache"
        f"{ctx_text} in host RAM (the next line names the KV cache): the KV cache is linear "
        "in the context, so the context length is the lever; host RAM is only where it "
        "was placed.",
        fixes=(
            *kv_fixes(ctx, e.requested_bytes, None),
            Fix(
                title="Free host RAM",
                why=f"the failing host KV buffer is {_fb(e.requested_bytes)}.",
                commands=("free -h",),
                expected_saving_bytes=None,
            ),
        ),
    )


def _framework_alloc(e: OomEvent) -> Analysis:
    """Paddle / CuPy / ONNX Runtime: the request against what the framework holds and what is
    free, read like PyTorch's allocator (a big request is an activation; a small one with most
    of the device held is the resident state)."""
    x, a, f = e.requested_bytes, e.allocated_bytes, e.free_bytes
    name = {"paddle": "PaddlePaddle", "cupy": "CuPy", "onnxruntime": "ONNX Runtime"}.get(
        e.runtime, e.runtime
    )
    # (a paste may elide the size: "... smaller than requested bytes ...")
    # (Paddle names its other places in that sentence: XPU, NPU, a custom device)
    place = e.detail if e.runtime == "paddle" and e.detail else "GPU"
    expl = f"{name} could not allocate {_fb(x) if x is not None else 'a buffer'} on the {place}"
    if a is not None:
        expl += f"; it already holds {_fb(a)}" if a else "; it holds nothing yet"
    if f is not None:
        expl += f" and {_fb(f)} is free"
    expl += "."
    batch = generic(
        "Halve the batch (or the input size)",
        "activations are linear in the batch; the failing request shrinks with it.",
        ("batch_size //= 2",),
    )
    held = (a or 0) + (f or 0)
    # a share of the device needs what the framework holds: with the free memory alone (Paddle
    # 1.x states no allocated size) only a request larger than any weight tensor is an activation
    share = a is not None and x is not None and x >= _BIG_SHARE * held
    if x is not None and held and (share or x >= _BIG_TENSOR):
        return Analysis(
            cause="batch_or_activations",
            confidence=0.5,
            explanation=expl + f" One request of {_fb(x)} ({100 * x // held}% of what is held "
            "plus free) is an activation, not a weight tensor. If it still fails at batch 1, "
            "the resident model is the cause instead.",
            fixes=(batch,),
        )
    if x is not None and a:  # (holding nothing, the framework cannot be what fills the device)
        return Analysis(
            cause="model_too_large",
            confidence=0.4,
            open_question=True,  # resident weights or the step's activations: not decided
            explanation=expl + " The request is small while the framework holds most of the "
            "device: what stays resident fills it. A traceback in the training/inference step "
            "(activations) or other processes in `oomkit gpus` would decide otherwise.",
            fixes=(
                generic(
                    "Use a smaller or quantized model, or fp16 weights",
                    "the resident weights fill the GPU before this step.",
                    ("model.half() / paddle.amp / a smaller checkpoint",),
                ),
                batch,
            ),
        )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=expl + " The message does not say what the device holds: the free memory "
        "and other processes (`oomkit gpus`) and the batch size would decide the cause.",
        fixes=(
            batch,
            generic(
                "Cap the arena and let it grow by the request only",
                "ONNX Runtime's arena doubles by default; kSameAsRequested grows it exactly.",
                (
                    "providers=[('CUDAExecutionProvider', {'arena_extend_strategy': "
                    "'kSameAsRequested', 'gpu_mem_limit': <bytes>})]",
                ),
            ),
        ),
    )


def _buffer_limit(e: OomEvent) -> Analysis:
    """One buffer above the per-buffer limit: ``unknown`` (a limit, not capacity), except
    PyTorch's MPS ``Invalid buffer size``.

    PyTorch's MPS allocator backs every tensor with its own ``MTLBuffer`` and refuses a size
    above the device's ``maxBufferLength`` (aten/src/ATen/mps/MPSAllocator.mm, "Invalid buffer
    size"); model weights are stored tensor by tensor, each well under a GB, so a buffer of tens
    of GB there is one activation (attention scores at a high resolution, a video's frames at
    once): ``batch_or_activations`` at 0.5 (doccause7, as the MLX "Attempting to allocate"
    rule reads it), lever the resolution, the frames or the batch.
    """
    limit = f" (the limit is {_fb(e.allowed_bytes)})" if e.allowed_bytes else ""
    mps = e.runtime == "pytorch-mps"
    return Analysis(
        cause="batch_or_activations" if mps else "unknown",
        confidence=0.5 if mps else 0.55,
        explanation=f"One buffer of {_fb(e.requested_bytes)} is larger than Metal allows in a "
        f"single allocation{limit}: a per-buffer limit (maxBufferLength), not the total "
        "memory. One tensor that large is an activation or a batch of data; making it smaller "
        "avoids the limit.",
        fixes=(
            generic(
                "Make the single tensor smaller",
                "the limit is per buffer: a smaller batch, sequence or resolution shrinks it.",
                ("batch_size //= 2", "process the input in chunks / tiles"),
            ),
        ),
    )


def _ctranslate2() -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.25,
        explanation="CTranslate2 (faster-whisper / whisperX) ran out of GPU memory; the message "
        "carries no sizes. The model size and compute type (weights) or the beam size and batch "
        "size (decoding) decide which: a smaller beam/batch that still fails means the model.",
        fixes=(
            generic(
                "Load the model in int8",
                "int8_float16 weights take about half of float16.",
                ("WhisperModel(name, compute_type='int8_float16')",),
            ),
            generic(
                "Decode with a smaller beam and batch",
                "decoding memory is linear in beam_size x batch_size.",
                ("beam_size=1, best_of=1", "batch_size=4"),
            ),
        ),
    )


def _metal_buffer(e: OomEvent, ctx: LogContext) -> Analysis:
    x, ws = e.requested_bytes, ctx.metal_working_set_bytes
    what = "weights" if e.detail == "data" else f"'{e.detail}'"
    base = f"ggml-metal could not allocate the {_fb(x)} {what} buffer"
    if x is not None and ws is not None and x <= ws:
        return Analysis(
            cause="unknown",
            confidence=0.55,
            explanation=base + f", which is within the {_fb(ws)} recommended working set: one "
            "Metal buffer is capped (maxBufferLength) below the working set, so a single buffer "
            "that large fails although the total would fit. Not a lack of memory.",
            fixes=(
                generic(
                    "Update llama.cpp (it splits the weights into several Metal buffers)",
                    "newer builds allocate views under maxBufferLength.",
                    ("git pull && make", "pip install -U llama-cpp-python"),
                ),
            ),
        )
    over = f" and more than the {_fb(ws)} working set" if ws is not None else ""
    return Analysis(
        cause="model_too_large" if e.detail == "data" else "unknown",
        confidence=0.6 if ws is not None else 0.4,
        explanation=base + over + ". The working set (`recommendedMaxWorkingSetSize`) against "
        "the buffer would decide whether this is the model or a per-buffer limit.",
        fixes=(
            generic(
                "Use a smaller quantization",
                "the weights must fit the Mac's GPU working set.",
                ("pick a Q4_K_M GGUF",),
            ),
        ),
    )


def analyze_families(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the families of this module, or ``None`` when ``e`` is not one of them."""
    limits = analyze_limits(e, ctx)  # per-buffer limits, paged KV, Paddle's chunk (parse_limits)
    if limits is not None:
        return limits
    if e.runtime == "serving" and e.kind == "no_kv_pool":
        return _kv_pool(e)
    if e.runtime in {"paddle", "cupy", "onnxruntime"} and e.kind == "gpu_alloc_failed":
        return _framework_alloc(e)
    if e.kind == "buffer_limit":
        return _buffer_limit(e)
    if e.kind == "resource_limit":
        return Analysis(
            cause="unknown",
            confidence=0.45,
            open_question=False,  # a buffer-count limit, not a lack of memory
            explanation="MLX hit Metal's limit on the number of live buffers (not bytes): many "
            "small arrays are alive at once, often arrays kept across steps. If the count "
            "grows step after step, the cause is accumulation; mx.metal.get_active_memory() per "
            "step would decide it.",
            fixes=(
                generic(
                    "Keep fewer arrays alive and evaluate lazily built graphs sooner",
                    "each live array holds one Metal buffer.",
                    ("mx.eval(...) each step", "del intermediate arrays; mx.clear_cache()"),
                ),
            ),
        )
    if e.runtime == "ctranslate2":
        return _ctranslate2()
    if e.runtime == "mlc-llm" and e.kind == "cuda_error_oom":
        return Analysis(
            cause="unknown",
            confidence=0.25,
            explanation=f"TVM's device allocation for MLC-LLM failed ({_fb(e.requested_bytes)}); "
            "the message does not say whether the weights, the KV cache or a temporary buffer "
            "was being allocated. The model size against the GPU (`oomkit estimate MODEL`) and "
            "the free memory (`oomkit gpus`) would decide.",
            fixes=(
                generic(
                    "Use a lower-bit model library or a shorter context window",
                    "weights scale with the quantization, the KV cache with the context window.",
                    ("q4f16_1 / q3f16_1", '--overrides "context_window_size=4096"'),
                ),
            ),
        )
    if e.kind == "metal_buffer_failed":
        return _metal_buffer(e, ctx)
    if e.kind == "xla_smem":
        return tpu_smem(e)
    if e.kind == "xla_vmem":
        return Analysis(
            cause="unknown",
            confidence=0.45,
            open_question=False,  # one kernel's on-core memory, not the device's capacity
            explanation="XLA:TPU ran out of VMEM, the on-core vector memory of one fused kernel, "
            "while compiling: a tiling/fusion limit of the compiler for this op's shapes, not the "
            "device's HBM capacity. A smaller per-device batch or different padding may avoid the "
            "fusion; otherwise it is an XLA bug to report.",
            fixes=(
                generic(
                    "Change the shapes of the failing op",
                    "VMEM use depends on the fused op's tile shapes.",
                    ("smaller per-device batch / sequence", "avoid large padding in the op"),
                ),
            ),
        )
    if (
        e.format == "ggml_cuda_error"
        and not (e.detail or "").startswith("in function")
        and not ctx.buffers
        and ctx.n_ctx is None
        and not ctx.ollama_available_bytes
    ):
        return Analysis(
            cause="unknown",
            confidence=0.25,
            explanation="ggml's CUDA check failed with out of memory without naming the call, "
            "and the log shows no load lines: weights at load, the KV cache, the compute pool "
            "and pinned host buffers all pass through that check, so the phase is unknown. The "
            "lines before it (model/KV/compute buffer sizes, `-ngl`, `-c`) and `oomkit gpus` "
            "would decide the cause.",
            fixes=(
                generic(
                    "Offload fewer layers or shrink the context",
                    "the two levers that cover weights and KV on the GPU.",
                    ("-ngl <fewer>", "-c 4096", "/set parameter num_gpu <fewer>   # Ollama"),
                ),
                generic(
                    "Check free memory and other processes",
                    "what else holds the GPU is the other common reason.",
                    ("oomkit gpus", "nvidia-smi"),
                ),
            ),
        )
    if e.kind == "static_plan_exceeded":
        return _mlc_plan(e)
    if e.kind == "guardrail":
        return _guardrail(e)
    if e.runtime == "llama.cpp" and e.kind == "host_alloc_failed" and e.stage == "kv_cache":
        return _host_kv(e, ctx)
    if e.kind == "cuda_error_oom" and e.stage == "context_create":
        return _context_create(e)
    if e.runtime == "cuda" and e.kind == "library_alloc_failed":
        from oomkit.diagnose.rules_torch import analyze_torch

        return analyze_torch(e, ctx)
    if (
        e.kind == "cuda_error_oom"
        and e.requested_bytes is None
        and ctx.ollama_available_bytes
        and ctx.ollama_layers_offload
    ):
        return _ollama_overcommit(e, ctx)
    return None


_EXCLUDE = re.compile(r"exclude GPU (\d{1,3})")
_LOOP_KINDS = frozenset({"cuda_oom", "hip_oom", "xpu_oom", "mps_oom", "cuda_error_oom"})


def decide_by_log_facts(
    result: Analysis, ctx: LogContext, primary: OomEvent | None = None
) -> Analysis:
    """Log facts that outrank the single message's reading (section 4 of doctor-causes.md)."""
    if result.cause == "host_ram":
        return result
    steps = ctx.completed_steps or 0
    if (
        steps >= 2
        and primary is not None
        and primary.kind in _LOOP_KINDS
        and result.cause in {"model_too_large", "unknown"}
        and ctx.frame_phase not in {"model_load", "kv_cache_alloc"}
    ):
        return Analysis(
            cause="leak_or_accumulation",
            confidence=0.45,
            explanation=result.explanation + f" The log shows {steps} completed steps before "
            "this one, so what stays resident (weights, optimizer states) fit: a later step "
            "failing means memory grew across steps (tensors kept alive, a growing cache) or "
            "this step's input was larger. What would decide: torch.cuda.memory_allocated() "
            "per step — rising means accumulation, flat means a larger input at this step.",
            fixes=(
                generic(
                    "Stop keeping tensors alive across steps",
                    "accumulate Python numbers, detach what you store, free per-step outputs.",
                    ("total_loss += loss.item()", "history.append(out.detach().cpu())"),
                ),
                *result.fixes,
            ),
        )
    if ctx.allocation_limit:
        from oomkit.diagnose.vulkan_limit import allocation_limit_analysis

        return allocation_limit_analysis(result, ctx, primary)
    if ctx.imbalance_warning:
        weak = _EXCLUDE.search(ctx.imbalance_warning)
        gpu = f"GPU {weak.group(1)}" if weak else "the weaker GPU"
        return Analysis(
            cause="multi_gpu_imbalance",
            confidence=0.6,
            explanation=result.explanation + " PyTorch's DataParallel warned that the GPUs are "
            f"unequal ({ctx.imbalance_warning[:120]}): DataParallel gives every GPU the same "
            "share and gathers outputs on GPU 0, so the smaller GPU runs out first.",
            fixes=(
                generic(
                    f"Exclude {gpu} from DataParallel",
                    "DataParallel splits the batch evenly whatever each GPU holds.",
                    (
                        f"CUDA_VISIBLE_DEVICES=<every GPU but {gpu}> python train.py",
                        "DataParallel(model, device_ids=[<the equal GPUs>])",
                    ),
                ),
                *result.fixes,
            ),
        )
    return replace(result)

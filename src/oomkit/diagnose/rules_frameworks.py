"""Causes for the frameworks' own wordings of ``parse_frameworks`` (issue 9, heldout6).

Each rule decides only from what the message states (which allocation failed, its numbers); a
message with no number that decides returns an open ``unknown`` (the base rate,
``oomkit.diagnose.priors``, then guesses), one whose failure is not a lack of device memory
returns a settled ``unknown``. Formats that other rules already read (ONNX Runtime's arena,
Caffe, ggml-cuda's cudaMalloc, PyTorch's cut wordings) return ``None`` here and go on to those.
"""

from __future__ import annotations

from dataclasses import replace

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text

__all__ = ["analyze_frameworks"]

_BIG_SHARE = 0.10  # a request >= 10% of the device is one activation (doctor-causes.md, T-rules)
_BIG_TENSOR = 2 << 30  # a single tensor above the largest weight tensors of common models

_BATCH = generic(
    "Halve the batch (or the input size)",
    "activations are linear in the batch; the failing request shrinks with it.",
    ("batch_size //= 2",),
)
_OTHERS = generic(
    "Check what else holds the GPU",
    "a small allocation fails only when the device is already full; another process or an "
    "earlier model in this one may hold it.",
    ("oomkit gpus", "nvidia-smi"),
)


def _ort_cuda(e: OomEvent) -> Analysis:
    call = e.detail or "a CUDA call"
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=True,
        explanation=f"ONNX Runtime's CUDA provider got out-of-memory from `{call}` on GPU "
        f"{e.device}. That call allocates little (a stream, a handle, a copy): it fails when the "
        "device is already full, and the message does not say what holds it (ONNX Runtime's "
        "own arena, which grows by doubling, or another process).",
        fixes=(
            generic(
                "Cap ONNX Runtime's arena and let it grow by the request only",
                "the CUDA provider's BFC arena doubles by default and keeps what it took.",
                (
                    "providers=[('CUDAExecutionProvider', {'arena_extend_strategy': "
                    "'kSameAsRequested', 'gpu_mem_limit': <bytes>})]",
                ),
            ),
            _OTHERS,
        ),
    )


def _trt_workspace(e: OomEvent) -> Analysis:
    # The rule knows its own deciding fact (doccause21), so the generic "the setting that capped
    # this memory" sentence (rules._with_deciding_fact) is not appended: the workspace pool is
    # "a tactic-selection ceiling, not a preallocation" (IBuilderConfig::setMemoryPoolLimit,
    # MemoryPoolType::kWORKSPACE: "Set to a smaller value to restrict tactics whose workspace
    # usage exceeds the threshold"; the builder's own hint, "Tactic Device request: 4720MB
    # Available: 2387MB ... Try decreasing the workspace size with
    # IBuilderConfig::setMemoryPoolLimit()"), and a tactic's scratch grows with the layer's
    # tensors, which a dynamic-shape build sizes by the optimization profile's max shapes.
    req = f" of {size_text(e.requested_bytes)}" if e.requested_bytes else ""
    return Analysis(
        cause="unknown",
        confidence=0.5,
        open_question=False,
        explanation=f"TensorRT's builder could not allocate a tactic's scratch memory{req} while "
        "timing kernels for the engine: the workspace it may use is capped by the builder's "
        "memory-pool limit, not by the model, and a tactic that does not fit is skipped (the "
        "build goes on unless no tactic fits a layer). A workspace limit below the free memory "
        "avoids it. What would decide: the same build with the workspace limit below the free "
        "memory, or with smaller build shapes (the optimization profile's max batch and "
        "resolution, which size each tactic's scratch), passing: then the cap, not the model, "
        "was what failed.",
        fixes=(
            generic(
                "Lower the builder's workspace limit below the free GPU memory",
                "tactics are timed with up to the workspace limit of scratch memory.",
                (
                    "config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 1 << 30)",
                    "trtexec --memPoolSize=workspace:1024",
                ),
            ),
            _OTHERS,
        ),
    )


def _trt_weights(e: OomEvent) -> Analysis:
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        open_question=False,
        explanation="TensorRT could not allocate memory for the network's weights "
        f"({size_text(e.requested_bytes)}) while building the engine: the builder copies every "
        "weight into memory of its own, and that copy does not fit the memory left.",
        fixes=(
            generic(
                "Build in FP16 / INT8 or on a device with more memory",
                "half-precision weights take half the bytes during the build and in the engine.",
                ("config.set_flag(trt.BuilderFlag.FP16)", "trtexec --fp16"),
            ),
        ),
    )


def _trt_cuda(e: OomEvent) -> Analysis:
    del e
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=True,
        explanation="TensorRT's default allocator got out-of-memory from cudaMalloc; the "
        "message states no size. During a build it serves the tactic workspace (capped by the "
        "memory-pool limit); at run time the engine's activations (its device memory size).",
        fixes=(
            generic(
                "Lower the builder's workspace limit below the free GPU memory",
                "tactics are timed with up to the workspace limit of scratch memory.",
                ("trtexec --memPoolSize=workspace:1024",),
            ),
            _OTHERS,
        ),
    )


def _mxnet(e: OomEvent) -> Analysis:
    retry = (
        " after releasing every cached block of its pool and retrying, so cached memory is not "
        "what is missing"
        if e.detail
        else ""
    )
    what = (
        f"a kernel launch ({e.detail}) on a full device"
        if e.format == "mxnet_mshadow_kernel"
        else "cudaMalloc in its storage manager"
    )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=True,
        explanation=f"MXNet's {what} failed{retry}. The message states no size: the batch "
        "(the data shape bound to the executor), the model, or another process on the GPU "
        "(`oomkit gpus`) would decide.",
        fixes=(
            _BATCH,
            generic(
                "Make MXNet's pool release its cache sooner",
                "below MXNET_GPU_MEM_POOL_RESERVE percent of free memory (default 5) the pool "
                "frees its cached blocks before a new cudaMalloc.",
                ("export MXNET_GPU_MEM_POOL_RESERVE=10",),
            ),
            _OTHERS,
        ),
    )


def _host(e: OomEvent, who: str, what: str, confidence: float) -> Analysis:
    req = f" ({size_text(e.requested_bytes)})" if e.requested_bytes else ""
    return Analysis(
        cause="host_ram",
        confidence=confidence,
        open_question=False,
        explanation=f"{who} could not allocate {what}{req}: host RAM, not GPU memory.",
        fixes=(
            Fix(
                title="Free host RAM or add swap",
                why=f"the failing allocation is host memory{req}.",
                commands=("free -h",),
                expected_saving_bytes=e.requested_bytes,
            ),
            _BATCH,
        ),
    )


def _device_share(e: OomEvent, who: str) -> Analysis:
    """A request against the device's total and what the framework already uses."""
    x, used, total = e.requested_bytes, e.allocated_bytes, e.total_bytes
    expl = (
        f"{who} could not allocate {size_text(x)}: it already uses {size_text(used)} of "
        f"{size_text(total)}."
    )
    if x is not None and total and (x >= _BIG_SHARE * total or x >= _BIG_TENSOR):
        return Analysis(
            cause="batch_or_activations",
            confidence=0.5,
            explanation=expl + f" One request of {size_text(x)} ({100 * x // total}% of the "
            "device) is an activation, not a weight tensor. If it still fails at batch 1, the "
            "resident model is the cause instead.",
            fixes=(_BATCH,),
        )
    return Analysis(
        cause="model_too_large",
        confidence=0.4,
        open_question=True,
        explanation=expl + " The request is small while what is already allocated fills the "
        "device: what stays resident (weights, optimizer states) fills it. A traceback in the "
        "step (activations) would decide otherwise.",
        fixes=(
            generic(
                "Use a smaller or lower-precision model",
                "the resident state fills the device before this step.",
                ("bf16/fp16 weights, or a smaller checkpoint",),
            ),
            _BATCH,
        ),
    )


def _mindspore(e: OomEvent) -> Analysis:
    if e.format == "mindspore_mem_pool":
        return _device_share(e, "MindSpore's memory pool")
    if e.kind == "kernel_output_failed":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.45,
            open_question=False,
            explanation=f"MindSpore could not allocate the output of an operator ({e.detail}) "
            "while running the graph: an activation of the step, sized by the batch and the "
            "input size.",
            fixes=(
                _BATCH,
                generic(
                    "Recompute activations or lower the precision",
                    "recomputed cells keep fewer outputs alive; fp16 halves each.",
                    ("cell.recompute()", "amp_level='O2'"),
                ),
            ),
        )
    if e.kind == "host_alloc_failed":
        return _host(e, f"MindSpore ({e.detail})", "page-locked (pinned) host memory", 0.45)
    return Analysis(
        cause="unknown",
        confidence=0.25,
        open_question=True,
        explanation=f"MindSpore's `{e.detail}` got out-of-memory. The call allocates little: "
        "the device was already full (another process, `oomkit gpus`, or an earlier model).",
        fixes=(_OTHERS,),
    )


def _sophgo(e: OomEvent) -> Analysis:
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        open_question=False,
        explanation=f"Sophgo bmlib could not allocate {size_text(e.requested_bytes)} of device "
        f"memory on device {e.device}: the heap that serves it (for images, usually the VPP "
        "heap) is full. Buffers for frames and tensors are allocated per input stream while "
        "the pipeline runs, so their number scales with the streams (and the batch).",
        fixes=(
            generic(
                "Run fewer input streams (or a smaller batch) per device",
                "each stream allocates its own frame and tensor buffers in device memory.",
                ("fewer video inputs / channels in the pipeline config",),
            ),
            generic(
                "Check which heap is full",
                "bmlib serves images from the VPP heap, tensors from the NPU heap.",
                ("bm-smi", "sudo cat /sys/kernel/debug/ion/bm_vpp_heap_dump/summary"),
            ),
        ),
    )


def _tensorflow(e: OomEvent) -> Analysis:
    if e.requested_bytes == 0:
        return Analysis(
            cause="unknown",
            confidence=0.6,
            open_question=False,
            explanation="TensorFlow reports running out of memory for a request of 0 bytes: "
            "its BFC allocator refuses a zero-byte request (it logs `tried to allocate 0 bytes` "
            "and returns nothing), which the caller reports as an OOM. Not a lack of memory: a "
            "tensor with no elements, usually an empty batch.",
            fixes=(
                generic(
                    "Skip empty inputs",
                    "a zero-size tensor makes the op ask for 0 bytes.",
                    ("check that the batch (and every slice of it) is not empty",),
                ),
            ),
        )
    return Analysis(
        cause="batch_or_activations",
        confidence=0.5,
        explanation=f"TensorFlow could not allocate {size_text(e.requested_bytes)} for an op's "
        "output while running the graph: an activation of the step.",
        fixes=(_BATCH,),
    )


def _ggml_fixed(e: OomEvent) -> Analysis:
    what = {
        "ggml_tallocr_not_enough_space": "the graph allocator's buffer",
        "ggml_alloc_out_of_free_blocks": "the allocator's table of free blocks",
    }.get(e.format or "", "a fixed ggml buffer")
    need = (
        f" (needed {size_text(e.requested_bytes)}, {size_text(e.free_bytes)} available)"
        if e.requested_bytes is not None
        else ""
    )
    return Analysis(
        cause="unknown",
        confidence=0.5,
        open_question=False,
        explanation=f"ggml ran out of space in {what}{need}. That buffer is sized in advance "
        "(measured from the graph, or fixed when the context is created), not by the device's "
        "free memory: a graph that outgrew its measured size, which is a bug of the program or "
        "of an old ggml, not a lack of memory.",
        fixes=(
            generic(
                "Update the program (llama.cpp / koboldcpp / the binding)",
                "newer ggml sizes its buffers from the graph it runs.",
                ("pip install -U llama-cpp-python", "git pull && rebuild"),
            ),
            generic(
                "Use a smaller batch / ubatch or image size",
                "the graph, and what its buffers must hold, grows with them.",
                ("-b 256 -ub 256",),
            ),
        ),
    )


def _sglang_slots() -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.4,
        open_question=False,
        explanation="SGLang's request-slot pool (`req_to_token_pool`, one slot per running "
        "request, `--max-running-requests` slots) had no free slot for the batch it scheduled. "
        "The slots are a count, sized at start-up, not memory that ran out during the run.",
        fixes=(
            generic(
                "Lower --max-running-requests",
                "the scheduler then never admits more requests than there are slots.",
                ("--max-running-requests 32",),
            ),
        ),
    )


def _metal_kv(e: OomEvent) -> Analysis:
    usable, model, over = e.allowed_bytes, e.allocated_bytes, e.reserved_bytes
    expl = (
        f"vllm-metal found no room for the KV cache: of {size_text(usable)} usable Metal memory "
        f"(the limit times the memory fraction), the weights take {size_text(model)} and the "
        f"measured overhead {size_text(over)}, leaving {size_text(e.available_kv_bytes)}."
    )
    frac = generic(
        "Raise the memory fraction",
        "the KV budget is the usable Metal memory minus weights and overhead.",
        ("VLLM_METAL_MEMORY_FRACTION=0.9", "--gpu-memory-utilization 0.9"),
    )
    if usable is None or model is None or over is None:
        return Analysis(
            cause="unknown",
            confidence=0.3,
            open_question=True,
            explanation=expl + " Which term is the larger one decides the cause.",
            fixes=(frac,),
        )
    if over > model:
        return Analysis(
            cause="batch_or_activations",
            confidence=0.45,
            explanation=expl + " The overhead (the peak of the profiling run, sized by "
            "--max-num-batched-tokens) is larger than the weights: it, not the model, leaves no "
            "room. A smaller batched-token budget shrinks it.",
            fixes=(
                Fix(
                    title="Lower --max-num-batched-tokens",
                    why=f"the profiled overhead ({size_text(over)}) grows with the tokens of one "
                    "step.",
                    commands=("--max-num-batched-tokens 2048",),
                    expected_saving_bytes=None,
                ),
                frac,
            ),
        )
    return Analysis(
        cause="model_too_large",
        confidence=0.6 if model >= usable else 0.5,
        explanation=expl + " The weights take most of it: a smaller or more quantized model "
        "leaves room for the cache.",
        fixes=(
            generic(
                "Use a smaller or more quantized model",
                "the weights take most of the usable Metal memory.",
                ("a 4-bit MLX build of the model",),
            ),
            frac,
        ),
    )


def _ollama_server(e: OomEvent) -> Analysis:
    buf = f" ({e.buffer_name} buffer of {size_text(e.requested_bytes)})" if e.buffer_name else ""
    if e.kind == "host_oom":
        return _host(e, f"Ollama's llama-server, starting up{buf},", "a host-RAM buffer", 0.45)
    if e.stage == "kv_cache":
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.45,
            explanation=f"Ollama's llama-server ran out of memory at start-up{buf} while "
            "allocating the KV cache: the weights loaded; the cache is sized by num_ctx x "
            "parallel requests.",
            fixes=(
                generic(
                    "Lower num_ctx (or OLLAMA_NUM_PARALLEL)",
                    "the KV cache is linear in the context length and the parallel slots.",
                    ("OLLAMA_CONTEXT_LENGTH=8192", "OLLAMA_NUM_PARALLEL=1"),
                ),
            ),
        )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=True,
        explanation=f"Ollama's llama-server ran out of memory at start-up{buf}: the weights or "
        "the KV cache (sized by num_ctx) did not fit. The server log (`ollama serve`) names "
        "the buffer that failed.",
        fixes=(
            generic(
                "Lower num_ctx or the GPU layers",
                "the KV cache is linear in num_ctx; fewer GPU layers move weights to RAM.",
                ("OLLAMA_CONTEXT_LENGTH=8192", "/set parameter num_gpu 20"),
            ),
        ),
    )


def _lmstudio(e: OomEvent) -> Analysis:
    what = "RAM" if e.kind == "host_oom" else "GPU memory"
    ctx = f" with {e.detail}" if e.detail else ""
    return Analysis(
        cause="unknown",
        confidence=0.35,
        open_question=True,
        explanation=f"LM Studio failed to load the model{ctx}; its report shows the {what} used "
        f"up ({size_text(e.free_bytes)} unused of {size_text(e.total_bytes)}). Loading places "
        "the weights and allocates the KV cache for the whole context (linear in n_ctx): the "
        "model's size against the memory (`oomkit estimate MODEL`) decides which.",
        fixes=(
            generic(
                "Lower the context length (n_ctx)",
                "the KV cache allocated at load is linear in n_ctx.",
                ("Context Length: 32768 in the load settings",),
            ),
            generic(
                "Use a smaller quantization",
                "the weights must fit the memory beside the KV cache.",
                ("pick a Q4_K_M GGUF",),
            ),
        ),
    )


def _autobatch(e: OomEvent) -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.45,
        open_question=False,
        explanation="Ultralytics AutoBatch ran out of memory while profiling batch sizes (it runs "
        "a few batches to fit the memory curve) and fell back to the default "
        f"{e.detail or 'batch'}. Profiling is meant to find that limit: the training itself "
        "has not failed. If it then runs out of memory, the fallback batch is too large.",
        fixes=(
            generic(
                "Set the batch size explicitly",
                "a fixed batch skips AutoBatch's profiling; halve it if the training OOMs.",
                ("yolo train ... batch=8",),
            ),
        ),
    )


def _absurd(stated: str) -> str:
    """The sentence that names a refused figure (revfix18e); a value near 2**64 is a negative
    size printed unsigned (TensorRT logs the request as a ``size_t``)."""
    wrapped = " (near 2**64: a negative size printed unsigned, an overflow upstream)"
    digits = stated.split(" ", 1)[0]
    near = digits.isdigit() and len(digits) >= 19 and int(digits) > (1 << 63)
    return (
        f" (The log states {stated}{wrapped if near else ''}: not a believable figure, no device "
        "holds it; it is ignored.)"
    )


def analyze_frameworks(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the wordings of ``parse_frameworks``, or ``None`` for other events."""
    del ctx  # these messages are read on their own
    fmt = e.format or ""
    if fmt == "onnxruntime_cuda_failure_oom":
        return _ort_cuda(e)
    if e.runtime == "tensorrt":
        if e.kind == "workspace_alloc_failed":
            a = _trt_workspace(e)
        elif e.kind == "weights_alloc_failed":
            a = _trt_weights(e)
        else:
            return _trt_cuda(e)
        if e.ignored_sizes:  # as rules_engines says of an absurd scratch-space figure
            a = replace(a, explanation=a.explanation + _absurd(e.ignored_sizes))
        return a
    if e.runtime == "mxnet" and fmt.startswith("mxnet_") and fmt != "mxnet_cublas":
        return _mxnet(e)
    if fmt == "paddle_cpu_alloc_failed":
        return _host(e, "PaddlePaddle's CPU allocator", "host memory", 0.6)
    if e.runtime == "mindspore":
        return _mindspore(e)
    if e.runtime == "sophgo":
        return _sophgo(e)
    if fmt in {"tf_eigen_allocator_oom", "tf_ran_out_of_gpu_memory"}:
        return _tensorflow(e)
    if e.kind == "fixed_buffer_full":
        return _ggml_fixed(e)
    if fmt == "vllm_metal_kv_budget":
        return _metal_kv(e)
    if fmt == "ollama_llama_server_startup_oom":
        return _ollama_server(e)
    if fmt == "ultralytics_autobatch_error":
        return _autobatch(e)
    if fmt == "lmstudio_load_failed_memory":
        return _lmstudio(e)
    if fmt == "sglang_alloc_req_slots":
        return _sglang_slots()
    return None

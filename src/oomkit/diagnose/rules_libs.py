"""Causes of the wordings of :mod:`oomkit.diagnose.parse_libs` (its docstring cites the sources).

Which allocation failed decides the cause where the library names it:

* faiss ``TemporaryMemoryBuffer`` (and the 2017 ``StackDeviceMemory`` assertion, and an untyped
  ``cudaMalloc`` of exactly one of faiss's default reservations): the fixed scratch reservation
  faiss makes when it first uses a device, at most 1.5 GiB. It fails only when the GPU is
  already nearly full before faiss's own work, i.e. with memory held by something else: another
  framework's caching allocator in the same process (PyTorch caches freed blocks, TensorFlow maps
  almost the whole GPU at start) or another process. ``FlatData`` / ``IVF*`` / ``Quantizer*``:
  the index's own storage does not fit. ``TemporaryMemoryOverflow``: one search call's scratch
  (queries x k) outgrew the reservation.
* XGBoost / CatBoost / LightGBM (OpenCL) / RAPIDS keep the training or query data on the GPU:
  the data (rows x features x bins, tree depth) is the lever, as the batch is for a network.
* MLX: one buffer above Metal's ``maxBufferLength`` is one tensor too large (the batch, the
  sequence, the image); a small ``malloc`` failing means what stays resident fills unified memory.
* tt-metal: a bank allocation whose total free memory would hold it but whose largest free block
  does not is fragmentation; an L1 buffer is a tensor placed in on-chip SRAM.
* TPU: ``reserve ... at the bottom of memory`` is the compiled program's own HBM (its temporaries,
  sized by the batch); ``allocate`` with a largest free region below the request and enough free
  in total is fragmentation.
* TF.js WebGL texture limits, Metal watchdog errors, GPT4All's "out of VRAM?" guess, tt-metal's
  circular-buffer L1 limit and ggml's fixed-size arenas are not (or not known to be) a lack of
  memory: ``unknown`` with ``open_question=False``.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.parse_libs import FAISS_TEMP_MAX
from oomkit.units import format_bytes, format_bytes_fine

__all__ = ["analyze_libs"]

_INDEX_TYPES = ("FlatData", "IVFLists", "IVFCodes", "Quantizer", "QuantizerPrecomputedCodes")


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    return format_bytes(n) if n >= 1 << 20 else format_bytes_fine(n)


def _faiss_held_elsewhere(e: OomEvent) -> Analysis:
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.5,
        explanation=f"faiss could not reserve its temporary memory ({_size(e.requested_bytes)}, "
        "a fixed scratch buffer of at most 1.5 GiB that StandardGpuResources takes when it first "
        "uses the GPU). That fails only when the GPU is already nearly full before faiss's own "
        "work: another framework in the same process (PyTorch's cache, TensorFlow's up-front "
        "mapping of the GPU) or another process holds it. `oomkit gpus` shows other processes.",
        fixes=(
            generic(
                "Free the other framework's memory before faiss runs",
                "PyTorch keeps freed blocks cached; TensorFlow maps almost the whole GPU unless "
                "memory growth is on.",
                (
                    "torch.cuda.empty_cache()",
                    "tf.config.experimental.set_memory_growth(gpu, True)",
                ),
            ),
            generic(
                "Give faiss a smaller scratch reservation",
                "setTempMemory caps the buffer this allocation is for.",
                ("res = faiss.StandardGpuResources(); res.setTempMemory(256 * 1024 * 1024)",),
            ),
        ),
    )


def _faiss(e: OomEvent) -> Analysis:
    kind = e.detail or ""
    if kind == "TemporaryMemoryBuffer" or (not kind and e.requested_bytes == FAISS_TEMP_MAX):
        return _faiss_held_elsewhere(e)
    if kind.startswith(_INDEX_TYPES):
        return Analysis(
            cause="model_too_large",
            confidence=0.5,
            explanation=f"faiss could not allocate {_size(e.requested_bytes)} for the index's "
            f"own storage ({kind}): the vectors (n x d x 4 bytes for a flat float32 index) do "
            "not fit in what the GPU has free.",
            fixes=(
                generic(
                    "Store the index in float16 or compress it",
                    "float16 halves a flat index; IVF-PQ stores a few bytes per vector.",
                    (
                        "co = faiss.GpuClonerOptions(); co.useFloat16 = True",
                        "faiss.index_factory(d, 'IVF4096,PQ64')",
                    ),
                ),
                generic(
                    "Keep the index on the CPU",
                    "search it with faiss's CPU index; only the queries need the GPU.",
                    ("index = faiss.IndexFlatL2(d)  # no index_cpu_to_gpu",),
                ),
            ),
        )
    if kind == "TemporaryMemoryOverflow":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.5,
            explanation=f"A faiss search needed {_size(e.requested_bytes)} of scratch beyond "
            "its temporary reservation: the distance and top-k buffers grow with the number of "
            "queries per call and k.",
            fixes=(
                generic(
                    "Search in smaller query batches",
                    "the scratch is about queries x (k or list size) x 8 bytes.",
                    ("for i in range(0, len(xq), 4096): index.search(xq[i:i + 4096], k)",),
                ),
            ),
        )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=f"faiss's cudaMalloc of {_size(e.requested_bytes)} failed. The message does "
        "not say which buffer it was (the index, its scratch, or a search); `oomkit gpus` shows "
        "whether other processes hold the GPU.",
        open_question=True,
    )


def _data_on_gpu(
    e: OomEvent, lib: str, levers: tuple[str, ...], why: str, where: str = "on the device"
) -> Analysis:
    sizes = ""
    if e.requested_bytes is not None:
        sizes = f" It asked for {_size(e.requested_bytes)}"
        sizes += f" with {_size(e.free_bytes)} free {where}." if e.free_bytes else "."
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation=f"{lib} ran out of GPU memory while holding its working data.{sizes} "
        + why[:1].upper()
        + why[1:],
        fixes=(generic("Shrink the data the GPU holds at once", why, levers),),
    )


def _xgboost(e: OomEvent) -> Analysis:
    return _data_on_gpu(
        e,
        "XGBoost's GPU tree method",
        (
            "xgb.QuantileDMatrix(X, y, max_bin=128)",
            "params['subsample'] = 0.5; params['sampling_method'] = 'gradient_based'",
        ),
        "it keeps the quantised training matrix (rows x features x bins) and the gradient "
        "histograms on the GPU; fewer bins, sampling or external memory shrink them.",
    )


def _catboost(e: OomEvent) -> Analysis:
    return _data_on_gpu(
        e,
        "CatBoost's GPU memory pool",
        ("depth=6, border_count=64", "max_ctr_complexity=1", "gpu_ram_part=0.95"),
        "the pool (gpu_ram_part of the free memory, reserved at start) holds the dataset and "
        "the histograms, which grow with depth and border_count.",
        where="in its pool",
    )


def _opencl(e: OomEvent) -> Analysis:
    if e.kind == "host_alloc_failed":
        return Analysis(
            cause="host_ram",
            confidence=0.6,
            explanation="The OpenCL runtime could not allocate host memory "
            "(CL_OUT_OF_HOST_MEMORY): system RAM, not the GPU's, ran out.",
            fixes=(
                generic(
                    "Free host RAM or load less data",
                    "`free -h` shows what the process and others hold.",
                    ("free -h",),
                ),
            ),
        )
    return _data_on_gpu(
        e,
        "An OpenCL program (CL_MEM_OBJECT_ALLOCATION_FAILURE; LightGBM's GPU learner)",
        ("max_bin=63", "gpu_use_dp=false", "feature_fraction=0.5"),
        "the device buffers hold the binned features and the histograms; fewer bins and "
        "features shrink them.",
    )


def _rmm(e: OomEvent) -> Analysis:
    pool = e.format == "rmm_pool_limit"
    why = (
        "the RMM pool reached its maximum_pool_size: the data frames and their intermediates "
        "need more than the cap."
        if pool
        else "RMM's device allocation failed: the data frames and their intermediates need "
        "more than the GPU has free."
    )
    return _data_on_gpu(
        e,
        "RAPIDS (RMM)",
        (
            "dask_cudf.read_parquet(path, blocksize='256MiB')",
            "cudf.set_option('spill', True)",
            "rmm.reinitialize(pool_allocator=True, managed_memory=True)",
        ),
        why,
    )


def _paddle_legacy() -> Analysis:
    return Analysis(
        cause="batch_or_activations",
        confidence=0.4,
        explanation="PaddlePaddle's (v2 API) cudaMalloc failed (CUDA error 2). Its layers "
        "allocate their outputs on first use, sized by the batch; the weights of nets of that "
        "era are a small part. If it fails at batch size 1, look at other processes "
        "(`oomkit gpus`).",
        fixes=(generic("Smaller batch", "activations are linear in it.", ("batch_size=8",)),),
    )


def _thrust(e: OomEvent) -> Analysis:
    return _data_on_gpu(
        e,
        f"A Thrust algorithm ({e.detail})",
        ("process the data in chunks",),
        "Thrust allocates temporary storage proportional to the input it sorts or scans.",
    )


def _unknown(explanation: str, fixes: tuple[tuple[str, str, tuple[str, ...]], ...]) -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.6,
        explanation=explanation,
        fixes=tuple(generic(t, w, c) for t, w, c in fixes),
        open_question=False,
    )


def _not_capacity(e: OomEvent) -> Analysis:
    fmt = e.format
    if fmt == "tfjs_texture_size":
        return _unknown(
            f"TensorFlow.js's WebGL back end needs a texture larger than the browser/GPU "
            f"allows ({e.detail or 'over WEBGL_MAX_TEXTURE_SIZE'}): a per-texture size limit, "
            "not a lack of GPU memory. One tensor's 2-D texture layout exceeds it.",
            (
                (
                    "Keep each tensor under the texture limit",
                    "split the tensor (e.g. an embedding table) or use smaller images.",
                    ("tf.split(t, 4)   // TensorFlow.js",),
                ),
                (
                    "Use a back end without the limit",
                    "WASM/CPU (or tfjs-node) have no texture size limit.",
                    ("await tf.setBackend('wasm')   // TensorFlow.js",),
                ),
            ),
        )
    if fmt == "webgl_context_lost":
        return _unknown(
            "TensorFlow.js's WebGL back end lost its context (CONTEXT_LOST_WEBGL, or a shader "
            "that fails to compile after it): the browser dropped the GPU context, which it does "
            "when GPU memory runs out or the GPU resets. Whether memory was the reason is not "
            "in the message: tf.memory().numBytesInGPU before the failure tells.",
            (
                (
                    "Dispose tensors and let tfjs free textures",
                    "undisposed tensors keep their textures; tf.tidy frees intermediates.",
                    (
                        "tf.tidy(() => model.predict(x))   // TensorFlow.js",
                        "tf.env().set('WEBGL_DELETE_TEXTURE_THRESHOLD', 0)   // TensorFlow.js",
                    ),
                ),
            ),
        )
    if fmt == "metal_command_buffer_watchdog":
        return _unknown(
            "A Metal command buffer was stopped by macOS (Impacting Interactivity, a GPU "
            "timeout/hang or an address fault), not for lack of memory (that one reads "
            "'Insufficient Memory ... ErrorOutOfMemory'): the display watchdog ends a command "
            "buffer that keeps the GPU from drawing the screen for too long.",
            (
                (
                    "Submit smaller pieces of GPU work",
                    "a smaller batch/resolution or fewer frames per step shortens each buffer.",
                    ("smaller batch, resolution or frames per step",),
                ),
            ),
        )
    return _unknown(
        "GPT4All's GPU load failed and it fell back to the CPU. 'out of VRAM?' is GPT4All's own "
        "guess: it prints it whenever the GPU load returns false, also for a model or "
        "quantization its GPU back end does not support. Compare the model file plus context "
        "with the card's free VRAM: if it fits, the format is the reason.",
        (
            (
                "Try a smaller or GPU-supported quantization, or a shorter context",
                "the model file size plus the KV cache must fit in free VRAM.",
                ("a Q4_0 model", "Context Length: 2048"),
            ),
        ),
    )


def _mlx(e: OomEvent) -> Analysis:
    if e.format == "mlx_max_buffer_size":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.55,
            explanation=f"MLX was asked for one buffer of {_size(e.requested_bytes)}, above the "
            f"largest buffer Metal allows on this machine ({_size(e.allowed_bytes)}, the "
            "device's maxBufferLength): a per-buffer limit, reached by one tensor -- an "
            "activation that grows with the batch, sequence length or image size.",
            fixes=(
                generic(
                    "Make the largest tensor smaller",
                    "a smaller batch, shorter sequence (prefill in chunks) or smaller image.",
                    ("--batch-size 1", "--prefill-step-size 512"),
                ),
            ),
        )
    if (
        e.format == "mlx_malloc"
        and e.requested_bytes is not None
        and e.requested_bytes < 64 * (1 << 20)
    ):
        return Analysis(
            cause="model_too_large",
            confidence=0.4,
            explanation=f"MLX could not allocate {_size(e.requested_bytes)}: a request this "
            "small fails only when unified memory is already full, so what stays resident (the "
            "weights, then the KV cache) fills it. A smaller quantization is the first lever; a "
            "long prompt's KV cache the second.",
            fixes=(
                generic(
                    "Use a smaller or more quantized model",
                    "the weights are the resident part.",
                    ("mlx_lm.convert --hf-path MODEL -q --q-bits 4",),
                ),
                generic(
                    "Raise the wired memory limit (macOS)",
                    "Metal may use only part of unified memory by default.",
                    ("sudo sysctl iogpu.wired_limit_mb=<MiB>",),
                ),
            ),
        )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=f"MLX ran out of Metal memory ({_size(e.requested_bytes)} requested, no "
        "totals in the message). The weights, the KV cache of a long context and one step's "
        "activations share unified memory; the model size against the machine's RAM decides "
        "(`oomkit estimate MODEL`).",
        open_question=True,
    )


def _tt_metal(e: OomEvent) -> Analysis:
    free, x = e.free_bytes, e.requested_bytes
    if e.buffer_name and e.buffer_name.startswith("L1"):
        return Analysis(
            cause="batch_or_activations",
            confidence=0.45,
            explanation=f"tt-metal could not place a {_size(x) + ' ' if x else ''}buffer in L1 "
            "(each core's "
            f"on-chip SRAM; {e.detail}). Tensors are put in L1 by their memory config; one that "
            "does not fit goes to DRAM, or gets smaller.",
            fixes=(
                generic(
                    "Keep this tensor in DRAM, or shard it over more cores",
                    "L1 is about 1.5 MB per core.",
                    ("memory_config=ttnn.DRAM_MEMORY_CONFIG",),
                ),
                generic("Smaller batch or sequence", "the tensor scales with it.", ("batch=1",)),
            ),
        )
    if free is not None and x is not None and free >= x and e.detail and "largest" in e.detail:
        return Analysis(
            cause="fragmentation",
            confidence=0.6,
            explanation=f"tt-metal's {e.buffer_name} banks have {_size(free)} free in total, "
            f"enough for the {_size(x)} buffer, but not in one block ({e.detail}): the free "
            "space is split between live buffers.",
            fixes=(
                generic(
                    "Free or deallocate earlier tensors before this op",
                    "ttnn.deallocate returns their blocks; allocating large buffers first "
                    "avoids the split.",
                    ("ttnn.deallocate(t)",),
                ),
            ),
        )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=f"tt-metal could not allocate a {_size(x) + ' ' if x else ''}"
        f"{e.buffer_name} buffer "
        f"({e.detail}). Whether the weights or one step's tensors fill the device's DRAM is not "
        "in the message: the phase (model load or a forward pass) decides.",
        fixes=_TT_DRAM_FIXES,
        open_question=True,
    )


# What tt-metal's LLM stacks allocate in DRAM up front, sized by their configured maxima rather
# than by the request: tt_transformers' ModelArgs(max_batch_size, max_seq_len)
# (models/tt_transformers/tt/model_config.py) sizes the unpaged KV cache and the per-user buffers
# (RoPE cos/sin tables padded to max_seq_len), the paged cache holds max_tokens_all_users tokens
# (the vLLM plugin's model hook), and batched prefill pads to all max_batch_size slots.
_TT_DRAM_FIXES = (
    generic(
        "Lower the maximum sequence length or the users' token budget",
        "the KV cache and per-user buffers are allocated in DRAM for the configured maximum.",
        ("--max_model_len 32768", "max_tokens_all_users=32768", "max_seq_len=32768"),
    ),
    generic(
        "Fewer concurrent users per device",
        "per-user buffers and batched prefill are sized for every batch slot.",
        ("max_batch_size=1", "--max_num_seqs 1"),
    ),
)


def _tpu(e: OomEvent) -> Analysis:
    if e.format == "tpu_program_reserve":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.5,
            explanation=f"Loading the compiled XLA program needed {_size(e.requested_bytes)} of "
            f"TPU HBM for its own buffers (temporaries of one step, sized by the batch and "
            f"sequence), with {_size(e.free_bytes)} free ({e.detail}). If the free memory "
            "is held by live arrays of an earlier step, deleting them is the lever instead.",
            fixes=(
                generic(
                    "Smaller per-device batch, or rematerialise activations",
                    "the program's temporaries scale with the batch.",
                    ("per_device_batch_size //= 2", "jax.checkpoint(layer)"),
                ),
            ),
        )
    if e.detail and e.free_bytes is not None and (e.requested_bytes or 0) <= e.free_bytes:
        return Analysis(
            cause="fragmentation",
            confidence=0.55,
            explanation=f"The TPU has {_size(e.free_bytes)} free, enough for the "
            f"{_size(e.requested_bytes)} buffer, but the {e.detail} is smaller: HBM is split "
            "between live buffers.",
            fixes=(
                generic(
                    "Delete arrays you no longer need before the step",
                    "freed buffers merge back into larger regions.",
                    ("del old_state; jax.clear_caches()",),
                ),
            ),
        )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=f"The TPU could not allocate a {_size(e.requested_bytes)} buffer with "
        f"{_size(e.free_bytes)} free. Whether the parameters and optimizer state or one step's "
        "arrays fill HBM is not in the message.",
        open_question=True,
    )


def _sizing_limits(e: OomEvent) -> Analysis:
    if e.format == "tt_metal_circular_buffers":
        return _unknown(
            f"An op's circular buffers do not fit in one core's L1 SRAM ({e.detail}): the "
            "kernel's block sizes and the number of cores it runs on set them, not the device's "
            "DRAM. A different program config (more cores, smaller blocks) or moving sharded "
            "inputs to DRAM avoids it.",
            (
                (
                    "Use a program config with smaller blocks or more cores",
                    "each core's circular buffers scale with the block it processes.",
                    ("memory_config=ttnn.DRAM_MEMORY_CONFIG",),
                ),
            ),
        )
    return _unknown(
        f"ggml overflowed one of its fixed-size arenas ({e.detail}): the size is computed by the "
        "program at start (a context's metadata pool, a graph buffer), so this is a sizing bug or "
        "limit of this build, triggered by the settings, not the GPU running out. A newer build, "
        "or a smaller context/batch, avoids it.",
        (
            (
                "Update the runtime, or lower the context and batch",
                "the arena is sized from them; newer builds size it correctly.",
                ("--ctx-size 4096", "--batch-size 512"),
            ),
        ),
    )


def _omlx_load(e: OomEvent) -> Analysis:
    """oMLX refused to load a model whose estimated weights exceed ``max-model-memory``.

    ``omlx/exceptions.py`` ``ModelTooLargeError``: the engine pool compares the model's size on
    disk (its weights) with the memory it may give models, before any allocation.
    """
    return Analysis(
        cause="model_too_large",
        confidence=0.7,
        explanation=f"oMLX refused to load the model: its weights ({_size(e.requested_bytes)}) "
        f"exceed the memory oMLX may give models (max-model-memory, {_size(e.total_bytes)}). "
        "Nothing was allocated: the model is too large for that budget.",
        fixes=(
            generic(
                "A smaller or more quantized model",
                "the weights alone are above the budget.",
                ("a 4-bit quant of a smaller model",),
            ),
            generic(
                "Raise max-model-memory only if the machine's RAM holds the model",
                "the limit protects the Mac from swapping or freezing.",
                ("omlx serve --max-model-memory <GB>",),
            ),
        ),
    )


def _omlx(e: OomEvent) -> Analysis:
    cur, ceiling, peak = e.allocated_bytes, e.total_bytes, e.requested_bytes
    if cur is None:
        return Analysis(
            cause="unknown",
            confidence=0.3,
            explanation=f"oMLX's prefill guard refused the prompt: the prefill would peak at "
            f"{_size(peak)}, above its memory ceiling ({_size(ceiling)}). This form omits how "
            "much is already resident (weights, cached KV), which decides between the model "
            "and the prompt's length.",
            open_question=True,
        )
    resident_fills = cur is not None and ceiling is not None and cur >= 0.9 * ceiling
    head = (
        f"oMLX's prefill guard refused the prompt: what is resident ({_size(cur)}: weights and "
        f"cached KV) plus this prefill's KV cache and attention scratch ({_size(peak)}) would "
        f"pass its memory ceiling ({_size(ceiling)})."
    )
    if resident_fills:
        return Analysis(
            cause="model_too_large",
            confidence=0.5,
            explanation=head + " What is resident alone is at least 90% of the ceiling: the "
            "model (and caches kept from earlier requests) fill it, so any prompt is refused.",
            fixes=(
                generic(
                    "A smaller or more quantized model, or a higher ceiling",
                    "the resident part is the weights.",
                    ("sudo sysctl iogpu.wired_limit_mb=<MiB>", "a 4-bit model"),
                ),
            ),
        )
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.5,
        explanation=head + " The resident part leaves room; this prompt's KV cache and "
        "attention scratch are what do not fit: a shorter context is the lever.",
        fixes=(
            generic(
                "Shorter prompt / context, or a quantized KV cache",
                "the prefill peak is the new tokens' KV cache plus attention scratch.",
                ("max_context_window = 32768", "kv cache quantization: 8-bit"),
            ),
        ),
    )


def analyze_libs(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the wordings of ``parse_libs``, or ``None`` for other events."""
    del ctx  # these messages are read on their own
    fmt = e.format or ""
    if fmt == "faiss_alloc_fail":
        return _faiss(e)
    if fmt == "xgboost_device_oom":
        return _xgboost(e)
    if fmt == "catboost_pool_oom":
        return _catboost(e)
    if fmt.startswith("opencl_"):
        return _opencl(e)
    if fmt.startswith("rmm_"):
        return _rmm(e)
    if fmt == "paddle_legacy_cuda_oom":
        return _paddle_legacy()
    if fmt == "thrust_oom":
        return _thrust(e)
    if fmt.startswith("mlx_") and e.kind != "resource_limit":
        # MLX's live-buffer count limit is not bytes: rules_families reads it (unknown)
        return _mlx(e)
    if fmt == "tt_metal_bank_oom":
        return _tt_metal(e)
    if fmt.startswith("tpu_"):
        return _tpu(e)
    if fmt == "omlx_prefill_guard":
        return _omlx(e)
    if fmt == "omlx_model_too_large":
        return _omlx_load(e)
    if fmt in {"wgpu_out_of_memory", "opengl_out_of_memory"}:
        return Analysis(
            cause="unknown",
            confidence=0.3,
            explanation=f"The {e.runtime} device could not allocate a buffer or texture (its "
            "OutOfMemory error carries no sizes). The model's weights, the batch's tensors and "
            "other programs share the GPU; `oomkit gpus` and the model size decide which.",
            open_question=True,
        )
    if fmt in {"tt_metal_circular_buffers", "ggml_fixed_pool"}:
        return _sizing_limits(e)
    if fmt in {
        "tfjs_texture_size",
        "webgl_context_lost",
        "metal_command_buffer_watchdog",
        "gpt4all_gpu_load_failed",
    }:
        return _not_capacity(e)
    return None

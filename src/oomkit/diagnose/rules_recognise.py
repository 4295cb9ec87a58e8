"""Diagnosis of the families of :mod:`oomkit.diagnose.parse_recognise`.

Most of these messages carry few numbers, so confidence stays low and the explanation names the
fact that would decide; the cause is the one the runtime's own mechanism points at:

* Ollama's "you may not have enough available memory": its guess when the runner died without a
  message, made for the model it was loading -> ``model_too_large`` (0.35).
* llama.cpp context creation: the weights had loaded; the context's allocations are the KV cache
  and compute buffers, sized by the context length -> ``kv_cache_or_context`` (0.4), as for
  Ollama's ``failed to create context with model``.
* vLLM Mamba cache blocks: one state block per running sequence; the pool holds B, the engine
  was asked for N > B concurrent sequences -> ``batch_or_activations`` (the concurrency), with
  the bound the message states (0.7).
* ComfyUI: its model manager places the weights itself (``comfy/model_management.py``
  ``load_models_gpu`` offloads what does not fit beside the inference memory it reserves), so an
  OOM while a node runs is that node's working set (resolution x frames x batch) ->
  ``batch_or_activations`` (0.45).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text

__all__ = ["analyze_recognised"]

_MAMBA = re.compile(r"max_num_seqs (?P<n>\d{1,9}) > (?P<b>\d{1,12})")


def _fb(n: int | None) -> str:
    return size_text(n)


def _ollama_exit() -> Analysis:
    return Analysis(
        cause="model_too_large",
        confidence=0.35,
        explanation="Ollama's runner died without printing an error, and Ollama (0.1.x) guessed "
        "memory: 'you may not have enough available memory to run this model'. It is a guess, "
        "not a measurement: the server log (`journalctl -u ollama` or ~/.ollama/logs/server.log) "
        "names the allocation that failed, and the model's size against VRAM + free RAM "
        "(`oomkit estimate MODEL`, `free -h`) would decide it.",
        fixes=(
            generic(
                "Pick a smaller model or quantization",
                "the weights are most of what the runner loads.",
                ("ollama pull <model>:<smaller tag, e.g. q4_K_M>",),
            ),
            generic(
                "Put fewer layers on the GPU",
                "num_gpu is the number of layers Ollama offloads; the rest stays in RAM.",
                ("/set parameter num_gpu <fewer>",),
            ),
            generic(
                "Free RAM and VRAM (other models, apps)",
                "the runner needs the memory others hold.",
                ("ollama ps", "ollama stop <other model>"),
            ),
        ),
    )


def _context_failed(e: OomEvent) -> Analysis:
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.4,
        explanation=f"llama.cpp could not create the context ({e.text[:120]}): the weights had "
        "loaded, and creating a context allocates the KV cache and the compute buffers, both "
        "sized by the context length (x parallel sequences). The log's `KV self size` / "
        "`compute buffer size` lines or a run with a shorter context would confirm it.",
        fixes=(
            generic(
                "Create the context with a shorter length",
                "the KV cache is linear in the context length x parallel sequences.",
                ("-c 8192 / --ctx-size 8192", "n_ctx=8192"),
            ),
            generic(
                "Quantize the KV cache",
                "q8_0 KV takes about half of f16.",
                ("--cache-type-k q8_0 --cache-type-v q8_0 -fa",),
            ),
        ),
    )


def _mamba(e: OomEvent) -> Analysis:
    m = _MAMBA.search(e.detail or "")
    n, b = (int(m["n"]), int(m["b"])) if m else (None, None)
    bound = f"--max-num-seqs {b}" if b else "--max-num-seqs <blocks>"
    return Analysis(
        cause="batch_or_activations",
        confidence=0.7,
        explanation=f"vLLM asked for {n or '?'} concurrent sequences (max_num_seqs) but its "
        f"Mamba state pool holds {b or '?'} blocks, one per running sequence (hybrid "
        "Mamba/linear-attention model): the concurrency is the lever, not the context length. "
        "The pool is what gpu_memory_utilization leaves after the weights.",
        fixes=(
            Fix(
                title=f"Run at most {b or 'the pool'} sequences at once",
                why=f"each decode sequence holds one Mamba cache block; {b or '?'} are available "
                "(the bound vLLM states).",
                commands=(bound,),
                expected_saving_bytes=None,
            ),
            generic(
                "Give the cache pool more memory",
                "the state pool grows with the memory budget left after the weights.",
                ("--gpu-memory-utilization 0.95",),
            ),
        ),
    )


def _comfy(e: OomEvent) -> Analysis:
    if e.kind == "vae_tiled_retry":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.4,
            explanation=f"ComfyUI ran out of memory in the {e.detail or 'VAE'} at full size and "
            "retried it tiled: the VAE's activations at this resolution x frames do not fit. The "
            "retry usually succeeds; if the run still failed, the later error is the one to read.",
            fixes=(
                generic(
                    "Decode/encode in tiles from the start",
                    "tiles bound the VAE's activation memory.",
                    ("VAE Decode (Tiled) / VAE Encode (Tiled) node, tile_size 512",),
                ),
                generic(
                    "Lower the resolution or the frame count",
                    "the VAE's activations grow with pixels x frames.",
                    ("width/height //= 2", "fewer frames per batch"),
                ),
            ),
        )
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation="ComfyUI hit a CUDA OOM while a node ran (PyTorch's message is cut at "
        "'Allocation on device'). ComfyUI places the weights itself, offloading what does not "
        "fit beside the memory it reserves for inference, so what overflowed is the node's "
        "working set: resolution x frames x batch. If it fails while a model loads (a custom "
        "node that loads its own weights), the model is the cause instead; the node and "
        "`oomkit gpus` (other processes) would decide.",
        fixes=(
            generic(
                "Lower the resolution, frame count or batch size",
                "a node's activations grow with pixels x frames x batch.",
                ("width/height //= 2", "batch_size 1", "fewer frames"),
            ),
            # the VAE decode is the usual peak of an image/video workflow: ComfyUI's
            # VAEDecodeTiled node (nodes.py, "VAE Decode (Tiled)") bounds it by the tile size
            generic(
                "Decode the VAE in tiles",
                "a tiled decode holds one tile's activations instead of the whole image/clip's.",
                ("VAE Decode (Tiled) node, tile_size 512",),
            ),
            generic(
                "Reserve more VRAM for inference / offload more",
                "ComfyUI then keeps less of the model on the GPU.",
                ("python main.py --reserve-vram 2", "python main.py --lowvram"),
            ),
        ),
    )


def _bfc(e: OomEvent) -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.25,
        explanation="TensorFlow's BFC allocator statistics (printed on an OOM): "
        f"{_fb(e.allocated_bytes)} in use of a {_fb(e.total_bytes)} limit "
        f"({e.detail or 'largest allocation not shown'}). "
        "The paste stops before the 'OOM when allocating tensor with shape' line that names the "
        "tensor: its first dimension (usually the batch) would decide the cause.",
        fixes=(
            generic(
                "Halve the batch size",
                "activations are linear in the batch.",
                ("model.fit(..., batch_size=batch_size // 2)",),
            ),
            generic(
                "Let TensorFlow grow its memory instead of reserving it",
                "other processes then keep what they hold.",
                ("tf.config.experimental.set_memory_growth(gpu, True)",),
            ),
        ),
    )


def _cumem() -> Analysis:
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.4,
        explanation="vLLM's sleep-mode allocator (cumem_allocator.cpp) could not map memory back: "
        "it runs only with enable_sleep_mode, where a co-located trainer (verl, OpenRLHF) uses "
        "the GPU while vLLM sleeps, and wake_up re-maps the weights and KV cache it released. "
        "The memory it gave up is now held by the trainer (its PyTorch cache, optimizer state, "
        "activations). What the trainer holds at wake-up (torch.cuda.memory_reserved() before "
        "wake_up, `oomkit gpus`) would confirm it.",
        fixes=(
            generic(
                "Lower the rollout engine's memory share",
                "wake_up re-maps gpu_memory_utilization x the GPU; less fits beside the trainer.",
                ("actor_rollout_ref.rollout.gpu_memory_utilization=0.4   # verl",),
            ),
            generic(
                "Release the trainer's memory before waking vLLM",
                "offloaded parameters/optimizer and an emptied cache leave room for the re-map.",
                (
                    "actor_rollout_ref.actor.fsdp_config.param_offload=True",
                    "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True",
                    "torch.cuda.empty_cache() before wake_up()",
                ),
            ),
        ),
    )


def _turbomind(e: OomEvent) -> Analysis:
    if e.detail == "memory_utils.cu":
        return _turbomind_weights()
    at = (
        " It failed in create_model_instance, where TurboMind allocates the KV cache "
        "(cache_max_entry_count of the free memory) for the instance."
        if e.detail
        else ""
    )
    return Analysis(
        cause="unknown",
        confidence=0.25,
        explanation="lmdeploy TurboMind's CUDA check reported out of memory (no sizes)."
        + at
        + " Whether the weights, the KV cache or a batch buffer failed decides the fix: the "
        "model's size against the GPU (`oomkit estimate MODEL`) and the step that failed (load, "
        "instance creation, a request) would tell.",
        fixes=(
            generic(
                "Give the KV cache a smaller share of the free memory",
                "the KV cache takes cache_max_entry_count of what is free after the weights.",
                ("TurbomindEngineConfig(cache_max_entry_count=0.5)", "--cache-max-entry-count 0.5"),
            ),
            generic(
                "Shorter sessions / fewer concurrent requests",
                "session_len and max_batch_size size the per-request buffers.",
                ("--session-len 4096", "--max-batch-size 32"),
            ),
        ),
    )


def _fastertransformer(e: OomEvent) -> Analysis:
    """FasterTransformer's ``check_cuda_error`` (``[FT][ERROR] CUDA runtime error: out of
    memory <file>:<line>``). ``memory_utils.cu`` is ``deviceMalloc``: the weights at load
    (``ParallelGptWeight::mallocWeights``) and, in FT 5.x's Triton backend, each request's
    input tensors (``triton_backend/triton_utils.hpp`` ``move_tensor_H2D``); ``allocator.h`` is
    ``Allocator::reMalloc``, which ``ParallelGpt::allocateBuffer`` uses for a request's buffers
    and its KV cache, sized by batch x beam x sequence length. The phase decides."""
    where = {
        "memory_utils.cu": " in memory_utils.cu (deviceMalloc: the weights at load, and in the "
        "Triton backend each request's input tensors)",
        "allocator.h": " in allocator.h (reMalloc: a request's buffers and its KV cache, sized "
        "by batch x beam width x sequence length)",
    }.get(e.detail or "", "")
    return Analysis(
        cause="unknown",
        confidence=0.25,
        open_question=True,
        explanation="FasterTransformer's CUDA check reported out of memory" + where + ". What "
        "would decide: whether it failed while the model loaded (the weights do not fit: "
        "more tensor parallelism or a smaller model) or on a request (its batch size, beam "
        "width and output length).",
        fixes=(
            generic(
                "Send smaller requests",
                "a request's buffers and KV cache grow with batch x beam x sequence length.",
                (
                    "a smaller request batch / max_batch_size in config.pbtxt",
                    "a smaller request_output_len and beam_width",
                ),
            ),
            generic(
                "Split the weights over more GPUs",
                "tensor_para_size places 1/tp of each weight matrix per GPU.",
                ("tensor_para_size: 2 (config.pbtxt parameters / the .ini)",),
            ),
        ),
    )


def _turbomind_weights() -> Analysis:
    """TurboMind's ``deviceMalloc`` (``src/turbomind/utils/memory_utils.cu``) failed: it places
    the weight matrices (``LlamaDecoderLayerWeight::mallocWeights``); the KV cache is allocated
    later, through ``allocator.h``, so ``--cache-max-entry-count`` cannot help here."""
    return Analysis(
        cause="model_too_large",
        confidence=0.55,
        explanation="lmdeploy TurboMind's CUDA check reported out of memory in "
        "memory_utils.cu (deviceMalloc), the call that places the weight matrices; the KV "
        "cache is allocated later, through the allocator, so the weights themselves did not "
        "fit. The model's size against the GPU (`oomkit estimate MODEL`) decides how much to "
        "quantize.",
        fixes=(
            generic(
                "Load a 4-bit (AWQ) or 8-bit build of the model",
                "the weights take a quarter / half of their 16-bit size.",
                ("lmdeploy serve api_server MODEL-AWQ --model-format awq",),
            ),
            generic(
                "Split the weights over more GPUs (tensor parallelism)",
                "tensor parallelism places 1/tp of each matrix per GPU.",
                ("--tp 2",),
            ),
        ),
    )


def _split_attention(e: OomEvent) -> Analysis:
    need, have = e.requested_bytes, e.free_bytes
    lower = generic(
        "Lower the resolution (or the batch)",
        "the attention matrix grows with the square of the latent's pixels.",
        ("width/height //= 2, then upscale", "batch size 1"),
    )
    other = generic(
        "Use a memory-efficient attention",
        "xformers / SDP attention never holds the whole attention matrix.",
        ("--xformers", "--opt-sdp-attention"),
    )
    if have is not None and have < (1 << 30) // 10:
        return Analysis(
            cause="unknown",
            confidence=0.3,
            explanation="Split attention found almost no free memory (Have: "
            f"{_fb(have)}): the GPU was full before the attention ran, so what fills it is the "
            "model, memory kept from earlier generations, or another process. A fresh start "
            "(does the first image fail too?) and `oomkit gpus` would decide.",
            fixes=(
                generic(
                    "Keep less of the model on the GPU",
                    "--medvram / --lowvram move parts of the model to RAM between steps.",
                    ("--medvram", "--lowvram"),
                ),
                other,
                lower,
            ),
            # the message itself rules out the attention's batch (it never got memory), the
            # most common cause of other messages with partial numbers: no base rate applies
            open_question=False,
        )
    return Analysis(
        cause="batch_or_activations",
        confidence=0.6,
        explanation=f"Split attention needs {_fb(need)} free for one of its 64 slices but "
        f"{_fb(have)} is free: the attention matrix at this resolution does not fit even when "
        "sliced the most it can be. The image size (and batch) is the lever.",
        fixes=(lower, other),
    )


def _vk_limit() -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.4,
        open_question=False,  # a per-allocation limit, not a lack of memory
        explanation="One Vulkan buffer was larger than the driver allows in a single allocation "
        "(maxMemoryAllocationSize, often 2-4 GiB): a per-buffer limit, not the total memory. "
        "llama.cpp splits the weights into buffers under that limit, so the buffer that failed "
        "is usually the compute buffer or the KV cache, sized by -ub/-b and -c; `vulkaninfo` "
        "(maxMemoryAllocationSize) and the buffer sizes in the load log would decide.",
        fixes=(
            generic(
                "Make the compute buffer smaller",
                "the compute buffer grows with the micro-batch (-ub) and the context.",
                ("-ub 256 -b 256", "-c 8192"),
            ),
            generic(
                "Split the model across devices differently",
                "fewer layers per device keep each buffer under the per-allocation limit.",
                ("--tensor-split 1,1", "-ngl <fewer>"),
            ),
        ),
    )


def _tf_exhausted() -> Analysis:
    return Analysis(
        cause="batch_or_activations",
        confidence=0.35,
        explanation="TensorFlow raised ResourceExhaustedError: an op could not allocate its "
        "output tensor during a step (TensorFlow's OOM status). The paste lost the 'OOM when "
        "allocating tensor with shape [...]' line, whose first dimension (usually the batch) "
        "would confirm that the step's activations, not the variables, overflowed.",
        fixes=(
            generic(
                "Halve the batch size",
                "a step's activations are linear in the batch.",
                ("model.fit(..., batch_size=batch_size // 2)",),
            ),
            generic(
                "Let TensorFlow grow its memory instead of reserving it",
                "other processes then keep what they hold.",
                ("tf.config.experimental.set_memory_growth(gpu, True)",),
            ),
        ),
    )


def _sycl(e: OomEvent) -> Analysis:
    where = "host RAM" if e.kind == "host_alloc_failed" else "device memory"
    return Analysis(
        cause="host_ram" if e.kind == "host_alloc_failed" else "unknown",
        confidence=0.35 if e.kind == "host_alloc_failed" else 0.2,
        explanation=f"An Intel GPU allocation (SYCL / Level Zero) ran out of {where} "
        f"({e.detail}). The message carries no sizes: the model's size against the device "
        "(`oomkit estimate MODEL`, `xpu-smi` / `sycl-ls`) and what was being loaded would decide "
        "whether the weights or the context/batch is the cause.",
        fixes=(
            generic(
                "Offload fewer layers / a smaller quantization",
                "the weights are usually the largest allocation on the device.",
                ("-ngl <fewer>", "a smaller quantization (Q4_K_M)"),
            ),
            generic(
                "Shorten the context",
                "the KV cache is linear in the context length.",
                ("-c 8192",),
            ),
        ),
    )


def _amdgpu_cs() -> Analysis:
    """The buffers one GPU submission references could not all be made resident.

    ``amdgpu_cs_parser_bos`` validates every buffer of a submission into its allowed domains;
    what does not fit VRAM may be placed in GTT (system RAM the GPU maps, capped by the
    ``amdgpu.gttsize`` / TTM page limit), so ``-ENOMEM`` means GTT was full too (on an APU all
    of it is GTT). RADV therefore returns ``VK_ERROR_OUT_OF_HOST_MEMORY`` for it
    (``radv_amdgpu_cs.c``): host-visible buffers (weights offloaded to host memory, staging
    copies) over the GTT budget are the usual filler.
    """
    return Analysis(
        cause="host_ram",
        confidence=0.4,
        explanation="The amdgpu driver could not place the buffers of a GPU command submission "
        "(Not enough memory for command submission, -ENOMEM): what does not fit VRAM goes to "
        "GTT, system RAM the GPU maps, and that was full as well, which is why RADV reports it "
        "as VK_ERROR_OUT_OF_HOST_MEMORY. Host-visible buffers (weights offloaded to host "
        "memory, pinned staging copies) over the GTT budget are the usual cause; "
        "/sys/class/drm/card*/device/mem_info_gtt_total and mem_info_gtt_used show the budget "
        "and its use.",
        fixes=(
            generic(
                "Keep fewer buffers in host-visible (GTT) memory",
                "weights offloaded to host memory are pinned into GTT, which has a smaller cap "
                "than RAM.",
                ("drop --offload-to-cpu / --no-mmap", "-ngl <fewer> with a smaller model"),
            ),
            generic(
                "Raise the GTT budget",
                "the kernel caps GTT below system RAM by default.",
                ("amdgpu.gttsize=<MiB> ttm.pages_limit=<pages>   # kernel command line",),
            ),
        ),
    )


def _torch_alloc_warning(e: OomEvent) -> Analysis:
    """PyTorch's ``alloc_block`` warning: one ``cudaMalloc`` failed, and the allocator then frees
    its cached blocks and retries (``CUDACachingAllocator.cpp``); a warning alone is not a failed
    run, and the numbers (request against the device's free memory) cannot say what filled it."""
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=False,  # a retried allocation, not necessarily a failure
        explanation=f"PyTorch's caching allocator warned that cudaMalloc of "
        f"{_fb(e.requested_bytes)} failed on GPU {e.device} ({_fb(e.free_bytes)} free of "
        f"{_fb(e.total_bytes)}). It then frees its cached blocks and retries: only when the "
        "retry fails too does it raise torch.OutOfMemoryError, whose message (allocated and "
        "reserved by PyTorch, memory of other processes) would decide the cause. Without that "
        "error the retry succeeded and the run went on.",
        fixes=(
            generic(
                "Find the OutOfMemoryError after this warning",
                "its allocated/reserved numbers tell weights, activations and other processes "
                "apart.",
                ("grep -n 'OutOfMemoryError' <log>",),
            ),
            generic(
                "Leave headroom for the allocator",
                "the warning means the device was nearly full when the request came.",
                ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "a smaller batch"),
            ),
        ),
    )


def _ct2_host() -> Analysis:
    """CTranslate2's CPU allocator (``src/allocator.cc`` MklAllocator / AlignedAllocator) threw:
    ``mkl_malloc`` / ``posix_memalign`` returned NULL, i.e. host RAM ran out."""
    return Analysis(
        cause="host_ram",
        confidence=0.6,
        explanation="CTranslate2's CPU allocator could not get host memory (mkl_malloc / "
        "aligned_alloc returned NULL): system RAM ran out, while loading the model (weights are "
        "read into host memory first, also for device='cuda') or while decoding on the CPU.",
        fixes=(
            generic(
                "Use a smaller model or an 8-bit compute type",
                "the host copy of the weights scales with the model and its precision.",
                ("WhisperModel('medium', compute_type='int8')",),
            ),
            generic(
                "Free host RAM",
                "other processes and earlier models in this process hold it.",
                ("free -h", "del model; gc.collect()"),
            ),
        ),
    )


def analyze_recognised(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the families of ``parse_recognise``, or ``None`` for other events."""
    del ctx  # these messages are read on their own
    fmt = e.format or ""
    if fmt == "ollama_runner_exited_memory":
        return _ollama_exit()
    if fmt == "llama.cpp_context_failed":
        return _context_failed(e)
    if fmt == "vllm_mamba_cache_blocks":
        return _mamba(e)
    if fmt.startswith("comfyui_"):
        return _comfy(e)
    if fmt == "tf_bfc_allocator_stats":
        return _bfc(e)
    if fmt == "vulkan_max_allocation_size":
        return _vk_limit()
    if fmt in {"tf_resource_exhausted_class", "tf_oom_tensor_report"}:
        return _tf_exhausted()
    if fmt == "sd_split_attention":
        return _split_attention(e)
    if fmt == "vllm_cumem_wake_up":
        return _cumem()
    if fmt == "turbomind_cuda_runtime_error":
        return _turbomind(e)
    if fmt == "fastertransformer_cuda_runtime_error":
        return _fastertransformer(e)
    if fmt.startswith("level_zero_"):
        return _sycl(e)
    if fmt == "amdgpu_cs_enomem":
        return _amdgpu_cs()
    if fmt == "torch_alloc_block_warning":
        return _torch_alloc_warning(e)
    if fmt == "ctranslate2_cpu_alloc":
        return _ct2_host()
    return None

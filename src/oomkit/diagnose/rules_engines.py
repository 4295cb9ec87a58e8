"""Causes of three engine-side wordings of ``parse_engines`` (issue 9, after heldout33/34).

* TensorRT's builder when a plugin's scratch need is above the workspace pool (``plugin node <n>
  requires <N> bytes of scratch space, but only <M> is available``): the plugin's workspace
  is sized from the build's maximum shapes (TensorRT-LLM's GPT attention plugin: max batch size x
  max input length), so when the pool is already the device's memory, the lever is the build's
  maximum shapes, not the pool; the cause stays ``unknown`` (no batch ran, nothing was loaded).
* TensorRT-LLM's KV block pool with no free block (``kvCacheManager.cpp``
  ``BlockManager::getFreeBlock``): the in-flight sequences' tokens need more KV blocks than the
  pool has (``kv_cache_free_gpu_mem_fraction`` of what the engine leaves free; an engine built
  for a larger ``max_batch_size`` keeps larger runtime buffers and leaves a smaller pool).
* GPUStack's resource-fit scheduler: no GPU's allocatable VRAM (its total minus what other
  model instances claim) holds the model at the vLLM utilization. A stated allocatable share
  below the share the scheduler needs means the GPU is partly held by something else: another
  instance or process (``other_process_holding_memory``); a stated requirement above the
  allocatable size is the model (``model_too_large``); neither stated stays ``unknown``.
"""

from __future__ import annotations

from dataclasses import replace

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text
from oomkit.diagnose.gpustack_reserve import reserve_only

__all__ = ["analyze_engines"]


def _set_pool(pool: int) -> bool:
    """A pool the user (or the framework) set: a power of two bytes, the idiom of every
    ``setMemoryPoolLimit(1 << N)`` / Paddle's ``workspace_size=1 << 30`` default. TensorRT's own
    default is the device's total global memory (``IBuilderConfig::setMemoryPoolLimit``: "the
    default size of kWORKSPACE is the total global memory of the device"), never a power of two."""
    return pool > 0 and pool & (pool - 1) == 0


def _trt_scratch(e: OomEvent) -> Analysis:
    need, pool = e.requested_bytes, e.allowed_bytes
    shapes = Fix(
        title="Build for smaller maximum shapes",
        why="the plugin's scratch grows with the build's maximum shapes (TensorRT-LLM: "
        "max_batch_size x max_input_len, max_num_tokens; an ONNX model: the optimisation "
        "profile's max shape)"
        + (f"; {size_text(need)} against a {size_text(pool)} pool." if need and pool else "."),
        commands=("trtllm-build --max_batch_size 8 --max_input_len 2048 --max_num_tokens 8192",),
        expected_saving_bytes=None,
    )
    if need is None or pool is None:
        return Analysis(
            cause="unknown",
            confidence=0.5,
            open_question=False,
            explanation="TensorRT's builder needs more scratch space for one plugin than the "
            "workspace pool has. A plugin's workspace is sized from the build's maximum shapes "
            "(TensorRT-LLM's attention plugin: max batch size x max input length).",
            fixes=(
                shapes,
                generic(
                    "Raise the workspace pool only up to the free GPU memory",
                    "the pool cannot be larger than what the device has free while building.",
                    ("config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, <free bytes>)",),
                ),
            ),
        )
    shift = (need - 1).bit_length()
    new = 1 << shift  # the next power of two at or above the need
    raise_pool = Fix(
        title="Raise the workspace pool to the plugin's need",
        why=f"the plugin needs {size_text(need)} and the pool is {size_text(pool)}; "
        f"{size_text(new)} holds it (the pool can grow up to the GPU's free memory).",
        commands=(
            f"config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 1 << {shift})",
            f"config.enable_tensorrt_engine(workspace_size=1 << {shift})  # Paddle Inference",
            f"trtexec --onnx=model.onnx --memPoolSize=workspace:{max(1, new >> 20)}M",
        ),
        expected_saving_bytes=None,  # a larger pool frees nothing: it lets the build proceed
    )
    small = _set_pool(pool)
    if not small:
        # the pool is what the device had: a build-time request for more scratch than the GPU
        # holds. No model ran and nothing stays resident, so no run-time cause applies (the
        # corpus labels, h11-tensorrt-llm-352 and h33-TensorRT-LLM-2688, say unknown too); the
        # lever is the build's maximum shapes, stated with the sizes
        return Analysis(
            cause="unknown",
            confidence=0.5,
            open_question=False,
            explanation=f"TensorRT's builder needs {size_text(need)} of scratch space for one "
            f"plugin but the workspace pool is {size_text(pool)}, about what the GPU had free "
            "(TensorRT's default pool is the device's memory; this one is not a set limit). "
            "The plugin's scratch is sized from the build's maximum shapes (TensorRT-LLM's "
            "attention plugin: max batch size x max input length): the engine's build settings "
            "ask for more than the GPU holds, before any model runs, so none of the run-time "
            "causes applies and a larger pool cannot help; smaller maximum shapes do.",
            fixes=(shapes,),
        )
    return Analysis(
        cause="batch_or_activations",
        confidence=0.6,
        explanation=f"TensorRT's builder needs {size_text(need)} of scratch space for one plugin "
        f"but the workspace pool is {size_text(pool)}. A plugin's workspace is sized from the "
        "build's maximum shapes (its working memory for the largest batch), and a pool of "
        f"exactly {size_text(pool)} is a set limit (TensorRT's default is the device's whole "
        "memory): raise it to the need first.",
        fixes=(raise_pool, shapes),
    )


def _trtllm_blocks(e: OomEvent) -> Analysis:
    """The KV block pool ran dry; sized from the KV manager's start-up lines when the log has them
    (``kvCacheManager.cpp``: the pool is ``free_gpu_memory_fraction`` x the memory available
    after the engine, "Allocated <K> GiB for max tokens in paged KV cache (<N>)"; one sequence
    holds at most pages-per-sequence x tokens-per-block tokens)."""
    pool, free = e.available_kv_bytes, e.free_bytes
    tokens, seq = e.kv_capacity_tokens, e.max_model_len
    fraction = pool / free if pool and free else None
    fixes: list[Fix] = []
    if tokens and seq:
        full = max(1, tokens // seq)
        fixes.append(
            Fix(
                title=f"Cap the sequences in flight at {full}",
                why=f"the pool holds {tokens} tokens; a sequence may grow to {seq} tokens "
                f"({tokens} / {seq} = {full} full-length sequences), and each running sequence "
                "keeps its blocks until it finishes.",
                commands=(f"--max_batch_size {full}",),
                expected_saving_bytes=None,
            )
        )
    else:
        fixes.append(
            generic(
                "Fewer sequences in flight",
                "each running sequence holds its blocks until it finishes.",
                ("--max_batch_size 32",),
            )
        )
    if fraction is not None and free is not None and fraction < 0.94:
        up = 0.95
        fixes.append(
            Fix(
                title=f"Give the KV pool a larger share of free memory ({fraction:.2f} -> {up})",
                why=f"the pool is {fraction:.2f} of the {size_text(free)} the engine leaves "
                f"free; {up} adds {size_text(int((up - fraction) * free))}.",
                commands=(
                    f"kv_cache_config: {{free_gpu_memory_fraction: {up}}}   # LLM API / "
                    "trtllm-serve --extra_llm_api_options",
                    f"--kv_cache_free_gpu_mem_fraction {up}   # examples/run.py",
                ),
                # more pool, not less use: unsized, after the cap that makes it fit
                expected_saving_bytes=None,
            )
        )
    elif fraction is None:
        fixes.append(
            generic(
                "Give the KV pool a larger share of free memory",
                "the pool is that fraction of the memory left after the engine's buffers "
                "(0.9 by default).",
                ("kv_cache_config: {free_gpu_memory_fraction: 0.95}",),
            )
        )
    fixes.append(
        generic(
            "Schedule with GUARANTEED_NO_EVICT",
            "it admits a request only when its full length of blocks can be reserved.",
            ("--capacity_scheduler_policy GUARANTEED_NO_EVICT",),
        )
    )
    sized = (
        f" The pool is {size_text(pool)} ({tokens} tokens), {fraction:.2f} of the "
        f"{size_text(free)} the engine left free"
        + (
            "; that share is already near its ceiling, so fewer or shorter sequences are the lever."
            if fraction >= 0.94
            else "."
        )
        if pool and free and fraction is not None
        else ""
    )
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.7 if sized else 0.6,
        explanation="TensorRT-LLM's paged KV cache had no free block for a running sequence's "
        "next tokens: the sequences in flight hold more tokens than the block pool, which is "
        "kv_cache_free_gpu_mem_fraction of the memory the engine leaves free." + sized,
        fixes=tuple(fixes),
    )


def _pct(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text.split("%")[0].split()[-1])
    except ValueError:
        return None


def _gpustack_big(need: int, avail: int, util: float | None) -> Analysis:
    """The claim is above what the largest worker provides at the utilization: the model.

    GPUStack's vLLM selector (``gpustack/policies/candidate_selectors/
    vllm_resource_fit_selector.py``) states the claim, then ``all GPUs combined need to provide
    at least <claim / gpu_memory_utilization>`` and what the largest worker provides:
    ``allocatable x gpu_memory_utilization x (GPUs that meet the ratio / GPUs)``. So a lower
    utilization raises the need (72.99 -> 82.11 GiB for a 65.69 GiB claim at 0.9 -> 0.8); a
    higher one helps only while the claim fits the worker's whole allocatable VRAM.
    """
    whole = int(avail / util) if util else None  # the worker's allocatable VRAM
    fixes = [
        Fix(
            title="Serve a smaller or quantized model",
            why=f"GPUStack's claim of {size_text(need)} is above the {size_text(avail)} the "
            "largest worker provides; 4-bit (AWQ/GPTQ) weights are about a quarter of bf16's.",
            commands=("pick a 4-bit (AWQ/GPTQ) build of the model, or a smaller model",),
            expected_saving_bytes=None,
        ),
        Fix(
            title="Spread the model over more GPUs or workers",
            why=f"the claim of {size_text(need)} needs GPUs that together provide it at the "
            "utilization; GPUStack tries several workers when distributed inference is on.",
            commands=("enable distributed inference across workers, or add a GPU",),
            expected_saving_bytes=None,
            hardware=True,
        ),
    ]
    if whole is not None and util is not None and need < 0.95 * whole:
        up = min(0.95, need / whole + 0.01)
        fixes.insert(
            0,
            Fix(
                title="Raise --gpu-memory-utilization (never lower it: that raises the need)",
                why=f"GPUStack needs claim / utilization: {size_text(need)} / {up:.2f} fits the "
                f"worker's {size_text(whole)} allocatable VRAM.",
                commands=(f"--gpu-memory-utilization={up:.2f}",),
                expected_saving_bytes=int(whole * up) - avail,
                fits=True,
            ),
        )
    lower = (
        f" Lowering --gpu-memory-utilization raises the need (claim / utilization), and even "
        f"1.0 would give only {size_text(whole)}."
        if whole is not None and need > whole
        else ""
    )
    return Analysis(
        cause="model_too_large",
        confidence=0.8,
        explanation=f"GPUStack estimates the model claims {size_text(need)} of VRAM and the "
        f"largest worker provides {size_text(avail)} at the vLLM utilization (its allocatable "
        "VRAM x --gpu-memory-utilization, over the GPUs that meet that share): the model does "
        f"not fit the GPUs it may use.{lower}",
        fixes=tuple(fixes),
    )


def _gpustack_none(e: OomEvent) -> Analysis:
    """The scheduler counted no allocatable VRAM at all (``0.0 GiB ... across 0 GPUs``): no GPU
    of the worker entered the count (not detected, filtered out by the backend or the GPU
    selector, or every GPU fully claimed), so nothing says the model is too large; GPUStack
    itself guards this diagnostic since (custom_backend_resource_fit_selector.py:303-306: it
    "would report '0.0 GiB across 0 GPUs' and mask the more relevant single-GPU diagnostic")."""
    return Analysis(
        cause="unknown",
        confidence=0.4,
        open_question=True,
        explanation=f"GPUStack's scheduler counted {e.detail}: it compared the model's claim "
        "with no GPU at all, so this is not a measured shortage. Either the worker's GPUs are "
        "not seen (not detected, filtered out by the backend or a manual GPU selection) or other "
        "instances claim all of them; the worker's GPU list in the GPUStack UI tells which.",
        fixes=(
            generic(
                "Check that the worker reports its GPUs",
                "a worker whose GPUs are not detected offers 0 GiB to every model.",
                ("nvidia-smi",),
            ),
            generic(
                "Free the GPU, or pick one no other instance uses",
                "GPUStack subtracts other instances' claims from a GPU's allocatable VRAM.",
                ("stop or move the other model instance", "select the GPU manually"),
            ),
        ),
    )


def _gpustack(e: OomEvent) -> Analysis:
    if e.detail and e.detail.startswith("no allocatable VRAM"):
        return _gpustack_none(e)
    share = _pct(e.detail)
    util = e.gpu_memory_utilization
    need, avail = e.requested_bytes, e.free_bytes
    met = e.detail.split()[0].split("/") if e.detail and "GPUs meet" in e.detail else None
    held = (share is not None and util is not None and share < 100 * util) or (
        met is not None and met[0] != met[1]
    )
    if not held and need is not None and avail is not None and need > avail:
        return _gpustack_big(need, avail, util)
    reserve = reserve_only(avail, share, util)  # the share GPUStack's own reserve takes
    if reserve is not None:
        return reserve
    lower = (
        f"--gpu-memory-utilization={min(share / 100 - 0.02, 0.9):.2f}"
        if share is not None
        else None
    )
    if held:
        why = (
            f"GPUStack's scheduler needs {100 * util:.0f}% of each GPU's VRAM to be allocatable "
            f"(the vLLM --gpu-memory-utilization) and the GPU has only {share:g}%: the rest is "
            "claimed by another model instance or process on it. Run `oomkit gpus` to see who."
            if util is not None and share is not None
            else "GPUStack's scheduler found GPUs whose allocatable share is below the vLLM "
            "--gpu-memory-utilization: another model instance or process holds part of them."
        )
    else:
        why = (
            "GPUStack's scheduler found no GPU whose allocatable VRAM (its total minus what "
            "other instances claim) holds the model at the vLLM utilization; the allocatable "
            "share against --gpu-memory-utilization decides whether another instance holds it."
        )
    free = generic(
        "Free the GPU, or pick one no other instance uses",
        "GPUStack subtracts other instances' claims from a GPU's allocatable VRAM.",
        ("stop or move the other model instance", "select the GPU manually"),
    )
    share_fix = (
        generic(
            "Ask vLLM for a share of the GPU that is still allocatable",
            "the scheduler compares --gpu-memory-utilization with each GPU's allocatable share.",
            (lower,),
        )
        if lower is not None
        else None
    )
    return Analysis(
        cause="other_process_holding_memory" if held else "unknown",
        confidence=0.65 if held else 0.4,
        open_question=not held,
        explanation=why,
        fixes=(share_fix, free) if share_fix is not None else (free,),
    )


def analyze_engines(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the formats in the module docstring, else ``None``."""
    if e.format in ("trt_scratch_space", "trtllm_kv_no_free_blocks"):
        a = _trt_scratch(e) if e.format == "trt_scratch_space" else _trtllm_blocks(e)
        if e.ignored_sizes:  # as rules_torch_allocator says of an absurd PyTorch size
            why = f" (The log states {e.ignored_sizes}: not a believable figure, no runtime "
            a = replace(a, explanation=a.explanation + why + "prints it; it is ignored.)")
        return a
    if e.format == "gpustack_resource_fit":
        return _gpustack(e)
    if e.format == "nccl_cuda_oom":  # NCCL's communicator buffers (rules_nccl)
        from oomkit.diagnose.rules_nccl import analyze_nccl

        return analyze_nccl(e, ctx)
    return None

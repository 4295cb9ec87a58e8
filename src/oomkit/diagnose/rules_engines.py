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

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["analyze_engines"]


def _trt_scratch(e: OomEvent) -> Analysis:
    need = size_text(e.requested_bytes) if e.requested_bytes else "more"
    pool = f" of {size_text(e.allowed_bytes)}" if e.allowed_bytes else ""
    return Analysis(
        cause="unknown",
        confidence=0.5,
        open_question=False,
        explanation=f"TensorRT's builder needs {need} of scratch space for one plugin but the "
        f"workspace pool{pool} has less. A plugin's workspace is sized from the build's maximum "
        "shapes (TensorRT-LLM's attention plugin: max batch size x max input length), so when "
        "the pool already is the GPU's memory the lever is a smaller maximum shape, not a "
        "larger pool.",
        fixes=(
            generic(
                "Build for smaller maximum shapes",
                "the plugin's scratch grows with max_batch_size x max_input_len (max_num_tokens).",
                ("trtllm-build --max_batch_size 8 --max_input_len 2048 --max_num_tokens 8192",),
            ),
            generic(
                "Raise the workspace pool only up to the free GPU memory",
                "the pool cannot be larger than what the device has free while building.",
                ("config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, <free bytes>)",),
            ),
        ),
    )


def _trtllm_blocks() -> Analysis:
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.6,
        explanation="TensorRT-LLM's paged KV cache had no free block for a running sequence's "
        "next tokens: the sequences in flight hold more tokens than the block pool, which is "
        "kv_cache_free_gpu_mem_fraction of the memory the engine leaves free. An engine built "
        "for a larger max_batch_size keeps larger runtime buffers and so leaves a smaller pool.",
        fixes=(
            generic(
                "Fewer sequences in flight, or an engine built for a smaller max batch",
                "each running sequence holds its blocks until it finishes.",
                ("--max_batch_size 32", "trtllm-build --max_batch_size 64 --max_num_tokens 8192"),
            ),
            generic(
                "Give the KV pool a larger share of free memory",
                "the pool is that fraction of the memory left after the engine's buffers.",
                ("kv_cache_free_gpu_mem_fraction: 0.9",),
            ),
            generic(
                "Schedule with GUARANTEED_NO_EVICT",
                "it admits a request only when its full length of blocks can be reserved.",
                ("--capacity_scheduler_policy GUARANTEED_NO_EVICT",),
            ),
        ),
    )


def _pct(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text.split("%")[0].split()[-1])
    except ValueError:
        return None


def _gpustack(e: OomEvent) -> Analysis:
    share = _pct(e.detail)
    util = e.gpu_memory_utilization
    need, avail = e.requested_bytes, e.free_bytes
    lower = (
        f"--gpu-memory-utilization={min(share / 100 - 0.02, 0.9):.2f}"
        if share is not None
        else "--gpu-memory-utilization=0.8"
    )
    held = share is not None and util is not None and share < 100 * util
    big = need is not None and avail is not None and need > avail
    cause = "other_process_holding_memory" if held else "model_too_large" if big else "unknown"
    if held:
        why = (
            f"GPUStack's scheduler needs {100 * util:.0f}% of each GPU's VRAM to be allocatable "
            f"(the vLLM --gpu-memory-utilization) and the GPU has only {share:g}%: the rest is "
            "claimed by another model instance or process on it. Run `oomkit gpus` to see who."
            if util is not None and share is not None
            else ""
        )
    elif big:
        why = (
            f"GPUStack estimates the model needs {size_text(need)} of VRAM and no GPU has more "
            f"than {size_text(avail)} allocatable: the model does not fit the GPUs it may use."
        )
    else:
        why = (
            "GPUStack's scheduler found no GPU whose allocatable VRAM (its total minus what "
            "other instances claim) holds the model at the vLLM utilization; the allocatable "
            "share against --gpu-memory-utilization decides whether another instance holds it."
        )
    return Analysis(
        cause=cause,
        confidence=0.65 if cause != "unknown" else 0.4,
        open_question=cause == "unknown",
        explanation=why,
        fixes=(
            generic(
                "Ask vLLM for a share of the GPU that is still allocatable",
                "the scheduler compares --gpu-memory-utilization with each GPU's allocatable "
                "share.",
                (lower,),
            ),
            generic(
                "Free the GPU, or pick one no other instance uses",
                "GPUStack subtracts other instances' claims from a GPU's allocatable VRAM.",
                ("stop or move the other model instance", "select the GPU manually"),
            ),
        ),
    )


def analyze_engines(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the formats in the module docstring, else ``None``."""
    del ctx  # these messages carry what decides them
    if e.format == "trt_scratch_space":
        return _trt_scratch(e)
    if e.format == "trtllm_kv_no_free_blocks":
        return _trtllm_blocks()
    if e.format == "gpustack_resource_fit":
        return _gpustack(e)
    return None

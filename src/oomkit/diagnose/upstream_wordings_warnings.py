"""Upstream wordings added by docrec23 (issue 9): runtimes' memory-pressure warnings pasted alone,
two pre-load checks that state a need above the free VRAM, and ExLlamaV2's page shortfall.

Part of :mod:`oomkit.diagnose.upstream_wordings`. Recognised by ``parse_wordings_warnings`` and
read by ``rules_warnings``: the warnings as memory-pressure reports (no allocation failed), the
checks as does-not-fit reports, ExLlamaV2's assert as the KV cache. ``WARNINGS_NEAR_MISSES`` are
the same runtimes' lines where nothing ran short.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["WARNINGS", "WARNINGS_NEAR_MISSES"]

_BFC = (
    "tensorflow/tensorflow:tensorflow/core/common_runtime/bfc_allocator.cc "
    "(BFCAllocator::AllocateRawInternal, LOG(WARNING) when the caller allows a retry)"
)
_TCMALLOC = "gperftools/gperftools:src/tcmalloc.cc (ReportLargeAlloc, a non-null pointer)"
_TF_CPU = "tensorflow/tensorflow:tensorflow/core/framework/cpu_allocator_impl.cc (AllocateRaw)"
_TRT = (
    "NVIDIA TensorRT builder, closed source: logged when tactics need more than the workspace "
    "pool limit (IBuilderConfig::setMemoryPoolLimit(kWORKSPACE))"
)
_EXL = (
    "turboderp/exllamav2:exllamav2/generator/dynamic.py (ExLlamaV2DynamicJob, assert "
    "total_pages <= max_pages before the job is queued)"
)
_JAN = (
    "janhq/jan:src-tauri/plugins/tauri-plugin-llamacpp/src/gguf/commands.rs "
    "(is_model_supported, RESERVE_BYTES = 2288490189)"
)
_FORGE = (
    "lllyasviel/stable-diffusion-webui-forge:backend/memory_management.py (load_models_gpu: "
    "estimated_remaining_memory = current_free_mem - model_require - memory_for_inference)"
)

WARNINGS: tuple[Wording, ...] = (
    _w(
        "tensorflow",
        _BFC,
        "Allocator (%s) ran out of memory trying to allocate %s with freed_by_count=%d. The "
        "caller indicates that this is not a failure, but may mean that there could be "
        "performance gains if more memory were available.",
        "2020-05-18 08:20:15.727714: W tensorflow/core/common_runtime/bfc_allocator.cc:239] "
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.46GiB with "
        "freed_by_count=0. The caller indicates that this is not a failure, but may mean that "
        "there could be performance gains if more memory were available.",
        req=round(3.46 * (1 << 30)),
    ),
    _w(
        "tensorflow",
        _BFC + "; TF 1.0-1.4, no allocator name",
        "Ran out of memory trying to allocate %s. The caller indicates that this is not a "
        "failure, but may mean that there could be performance gains if more memory is "
        "available.",
        "W tensorflow/core/common_runtime/bfc_allocator.cc:217] Ran out of memory trying to "
        "allocate 135.19MiB. The caller indicates that this is not a failure, but may mean that "
        "there could be performance gains if more memory is available.",
        req=round(135.19 * (1 << 20)),
    ),
    _w(
        "tcmalloc",
        _TCMALLOC,
        "tcmalloc: large alloc %zu bytes == %p @ ",
        "tcmalloc: large alloc 12884901888 bytes == 0x7f8880000000 @  0x7f94b4551001 "
        "0x7f94aba49765",
        req=12884901888,
    ),
    _w(
        "tensorflow",
        _TF_CPU,
        "Allocation of %d exceeds %d%% of [free] system memory.",
        "W tensorflow/core/framework/cpu_allocator_impl.cc:81] Allocation of 6645350400 exceeds "
        "10% of system memory.",
        req=6645350400,
    ),
    _w(
        "tensorrt",
        _TRT,
        "Some tactics do not have sufficient workspace memory to run. Increasing workspace size "
        "may increase performance, please check verbose output.",
        "[W] [TRT] Some tactics do not have sufficient workspace memory to run. Increasing "
        "workspace size may increase performance, please check verbose output.",
    ),
    _w(
        "exllamav2",
        _EXL,
        "Job requires {total_pages} pages (only {max_pages} available) and cannot be enqueued. "
        "Total cache allocated is {max_pages} * {page_size} = {max_total_tokens} tokens",
        "AssertionError: Job requires 33 pages (only 32 available) and cannot be enqueued. Total "
        "cache allocated is 32 * 256 = 8192 tokens",
    ),
    _w(
        "jan",
        _JAN,
        "isModelSupported: Total memory requirement: {} for {}; Got kvCacheSize: {} from BE\n"
        "Total VRAM reported/calculated (in bytes): {}",
        "[INFO] isModelSupported: Total memory requirement: 9663676416 for model.gguf; Got "
        "kvCacheSize: 1207959552 from BE\n[INFO] Total VRAM reported/calculated (in bytes): "
        "8589934592",
        req=9663676416,
    ),
    _w(
        "forge",
        _FORGE,
        "[Memory Management] Target: %s, Free GPU: %.2f MB, Model Require: %.2f MB, Previously "
        "Loaded: %.2f MB, Inference Require: %.2f MB, Remaining: %.2f MB, ",
        "[Memory Management] Target: KModel, Free GPU: 7160.79 MB, Model Require: 22706.06 MB, "
        "Previously Loaded: 0.00 MB, Inference Require: 1419.20 MB, Remaining: -16964.47 MB, "
        "CPU Swap Loaded (blocked method): 22694.25 MB, GPU Loaded: 11.77 MB",
        req=round((22706.06 + 1419.20) * (1 << 20)),
    ),
)

WARNINGS_NEAR_MISSES: tuple[str, ...] = (
    # Forge's plan with room left: the model is loaded whole
    "[Memory Management] Target: IntegratedAutoencoderKL, Free GPU: 8238.74 MB, Model Require: "
    "159.87 MB, Previously Loaded: 0.00 MB, Inference Require: 2038.40 MB, Remaining: 6040.47 "
    "MB, Moving model(s) has taken 0.36 seconds",
    # Jan's check where the model fits the VRAM less the reserve
    "[INFO] isModelSupported: Total memory requirement: 4207141728 for model.gguf; Got "
    "kvCacheSize: 1207959552 from BE\n[INFO] Total VRAM reported/calculated (in bytes): "
    "25769803776",
    # ExLlamaV2's other assert: the batch, not the cache
    "AssertionError: Job requires a minimum batch size of 2 and cannot be enqueued",
)

"""Upstream wordings of per-buffer limits, KV-slot exhaustion, Paddle's allocator and schedulers.

Part of :mod:`oomkit.diagnose.upstream_wordings` (issue 9); recognised by
:mod:`oomkit.diagnose.parse_limits`, ``parse_extra`` (llama_decode's return 1), ``parse_other``
(bash's translated ``line`` prefix) and ``parse_hosts`` (HTCondor, LSF). ``LIMITS`` are
allocation failures; ``LIMITS_NOT_CAPACITY`` are a single buffer above the API's per-allocation
limit: recognised, cause ``unknown`` (free memory does not help).
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB as _GIB
from oomkit.diagnose.upstream_wordings_base import MIB as _MIB
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["LIMITS", "LIMITS_NEAR_MISSES", "LIMITS_NOT_CAPACITY"]

_TVM_KV = "apache/tvm:src/runtime/relax_vm/paged_kv_cache.cc (GetFreePage)"

LIMITS: tuple[Wording, ...] = (
    _w(
        "llama.cpp",
        "ggml-org/llama.cpp:src/llama-context.cpp (llama_decode; return 1 = 'could not find a KV "
        "slot for the batch', include/llama.h)",
        "%s: failed to decode, ret = %d",
        "llama_decode: failed to decode, ret = 1",
    ),
    _w(
        "llama.cpp",
        "abetlen/llama-cpp-python:llama_cpp/llama.py (Llama.eval)",
        'f"llama_decode returned {return_code}"',
        "RuntimeError: llama_decode returned 1",
    ),
    _w(
        "llama.cpp",
        "SciSharp/LLamaSharp:LLama/Exceptions/RuntimeError.cs (LLamaDecodeError; "
        "DecodeResult.NoKvSlot = 1)",
        "llama_decode failed: '%s'",
        "Unhandled exception. LLama.Exceptions.LLamaDecodeError: llama_decode failed: 'NoKvSlot'",
    ),
    _w(
        "mlc-llm",
        _TVM_KV,
        'CHECK(!free_page_ids_.empty()) << "The KV cache is full. No page can be allocated."',
        "TVMError: Check failed: (!free_page_ids_.empty()) is false: The KV cache is full. No "
        "page can be allocated.",
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/fluid/memory/allocation/allocator.h (class BadAlloc, thrown "
        "by every failed Alloc)",
        "terminate called after throwing an instance of 'paddle::memory::allocation::BadAlloc'",
        "terminate called after throwing an instance of 'paddle::memory::allocation::BadAlloc'\n"
        "  what():",
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/fluid/platform/gpu_info.cc (GpuMaxChunkSize, Paddle 1.x)",
        "enforce allocating <= available failed, %d > %d",
        "paddle.fluid.core.EnforceNotMet: enforce allocating <= available failed, 10238983668 > "
        "9509207808\n at [/paddle/paddle/fluid/platform/gpu_info.cc:119]",
        req=10238983668,
    ),
    _w(
        "linux",
        "bminor/bash:error.c + po/it.po (the translated 'line %d' prefix of a job report)",
        "%s: riga %d: %5d Killed  %s",
        "./invoke.sh: riga 24:  8612 Killed                  .venv/bin/python invoke.py --web",
    ),
    _w(
        "linux",
        "bminor/bash:error.c + po/de.po",
        "%s: Zeile %d: %5d Killed  %s",
        "./train.sh: Zeile 7:  40211 Killed                  python train.py",
    ),
    _w(
        "htcondor",
        "htcondor/htcondor:src/condor_starter.V6.1/vanilla_proc.cpp (outOfMemoryEvent)",
        "Job has gone over memory limit of %d megabytes. Peak usage: %d megabytes.",
        "Hold reason: Error from slot1_4@e2353.chtc.wisc.edu: Job has gone over memory limit of "
        "2048 megabytes. Peak usage: 2310 megabytes.",
    ),
    _w(
        "htcondor",
        "htcondor/htcondor:src/condor_starter.V6.1/docker_proc.cpp (container OOMKilled)",
        "Docker job has gone over memory limit of %d Mb",
        "15872426.5184 erees  5/25 14:51 Error from slot1_3@e327.chtc.wisc.edu: Docker job has "
        "gone over memory limit of 16384 Mb",
    ),
    _w(
        "lsf",
        "IBM Spectrum LSF (closed source; exit reason TERM_MEMLIMIT, 'Job exit information')",
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.",
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/core/scheduler.py (Scheduler._schedule_prefills: "
        "AllocStatus.NEVER, the prompt can never fit the KV blocks; the request is ignored)",
        "Input prompt (%d tokens) + lookahead slots (%d) is too long and exceeds the capacity "
        "of block_manager",
        "WARNING 12-19 10:21:05 scheduler.py:161] Input prompt (10854 tokens) is too long and "
        "exceeds the capacity of block_manager",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/core/scheduler.py (Scheduler._swap_out: preemption by swapping "
        "found no free CPU block in the --swap-space pool; raised through the engine, docrec30)",
        "Aborted due to the lack of CPU swap space. Please increase the swap space to avoid "
        "this error.",
        "ValueError: a python exception was caught while processing the async generator: "
        "MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the "
        "original error: RuntimeError('Aborted due to the lack of CPU swap space. Please "
        "increase the swap space to avoid this error.').",
    ),
    _w(
        "kvcached",
        "ovg-project/kvcached:kvcached/kv_cache_manager.py (KVCacheManager.alloc: warns, then "
        "returns None; the elastic KV pool has fewer free blocks than the step needs)",
        'logger.warning("available_size()=%d < need_size=%d", ...)',
        "[kvcached][WARNING][2025-10-25 11:17:27][kv_cache_manager.py:164] available_size()=9 < "
        "need_size=30",
    ),
)

LIMITS_NOT_CAPACITY: tuple[Wording, ...] = (
    _w(
        "wgpu",
        "gfx-rs/wgpu:wgpu-core/src/resource.rs (CreateBufferError::MaxBufferSize)",
        "Buffer size {requested} is greater than the maximum buffer size ({maximum})",
        "wgpu error: Validation Error\n\nCaused by:\n    In Device::create_buffer\n      note: "
        "label = `tensor`\n    Buffer size 1073741824 is greater than the maximum buffer size "
        "(268435456)",
        req=1 << 30,
    ),
    _w(
        "wgpu",
        "gfx-rs/wgpu:wgpu-core/src/binding_model.rs (BindingError buffer range too large)",
        "Buffer binding {binding} range {given} exceeds `max_*_buffer_binding_size` limit {limit}",
        "In Device::create_bind_group, label = 'Bind Group 0'\n    Buffer binding 0 range "
        "268435456 exceeds `max_*_buffer_binding_size` limit 134217728",
        req=256 * _MIB,
    ),
    _w(
        "webgpu",
        "google/dawn:src/dawn/native/Buffer.cpp (ValidateBufferDescriptor; Chrome's WebGPU)",
        "Buffer size (%u) exceeds the max buffer size limit (%u).",
        "Uncaptured WebGPU GPUValidationError: Buffer size (1174405120) exceeds the max buffer "
        "size limit (1073741824).",
        req=1174405120,
    ),
    _w(
        "ggml",
        "ggml-org/llama.cpp:ggml-metal.m (ggml_metal_add_buffer, 2023; copy in "
        "ollama/ollama:llama/ggml-metal.m)",
        "%s: buffer '%s' size %zu is larger than buffer maximum of %zu",
        "ggml_metal_add_buffer: buffer 'data' size 18300780544 is larger than buffer maximum of "
        "17179869184",
        req=18300780544,
    ),
    _w(
        "ggml",
        "ggml-org/llama.cpp:ggml-metal.m (ggml_metal_get_buffer: the buffer that failed to be "
        "added is missing for every kernel)",
        "%s: error: buffer is nil",
        "ggml_metal_get_buffer: error: buffer is nil\nggml_metal_get_buffer: error: buffer is nil",
    ),
    _w(
        "vulkan",
        "KhronosGroup/Vulkan-ValidationLayers:layers/core_checks/cc_buffer.cpp "
        "(VUID-VkBufferCreateInfo-size-06409)",
        "(%u) is larger than the maximum allowed buffer size "
        "VkPhysicalDeviceMaintenance4Properties.maxBufferSize (%u).",
        "vkCreateBuffer(): pCreateInfo->size (3414061312) is larger than the maximum allowed "
        "buffer size VkPhysicalDeviceMaintenance4Properties.maxBufferSize (2147483648).",
        req=3414061312,
    ),
    _w(
        "opencl",
        "apache/tvm:src/runtime/opencl/opencl_device_api.cc (OPENCL_CALL); CL_INVALID_BUFFER_SIZE"
        " (-61) from KhronosGroup/OpenCL-Headers",
        "OpenCL Error, code=%d: %s",
        "InternalError: Check failed: (err_code == CL_SUCCESS) is false: OpenCL Error, code=-61: "
        "CL_INVALID_BUFFER_SIZE",
    ),
    _w(
        "xpu",
        "intel/intel-extension-for-pytorch:csrc/gpu/runtime/CachingDeviceAllocator.cpp (no 2D "
        "block array: Arc A-series, Flex)",
        "Current platform can NOT allocate memory block with size larger than 4GB! Tried to "
        "allocate %s",
        "Current platform can NOT allocate memory block with size larger than 4GB! Tried to "
        "allocate 4.50 GiB",
        req=4 * _GIB + 512 * _MIB,
    ),
    _w(
        "xpu",
        "intel/intel-extension-for-pytorch:csrc/gpu/runtime/CachingDeviceAllocator.cpp (the "
        "whole TORCH_CHECK, with the allocator's numbers)",
        "Current platform can NOT allocate memory block with size larger than 4GB! Tried to "
        "allocate %s (GPU  %d; %s total capacity; %s already allocated; %s reserved in total by "
        "PyTorch)",
        "RuntimeError: Current platform can NOT allocate memory block with size larger than 4GB! "
        "Tried to allocate 4.50 GiB (GPU  0; 15.56 GiB total capacity; 8.01 GiB already "
        "allocated; 8.02 GiB reserved in total by PyTorch)",
        req=4 * _GIB + 512 * _MIB,
    ),
)

#: Same words, no allocation failure: other llama_decode returns, TVM's other checks, Paddle's
#: other enforcements, other scheduler hold reasons, a buffer limit that is not a GPU API's.
LIMITS_NEAR_MISSES: tuple[str, ...] = (
    "llama_decode: failed to decode, ret = -1",
    "RuntimeError: llama_decode returned 2",
    "llama_decode returned 1.5 ms",
    "paddle.fluid.core.EnforceNotMet: enforce x_dims.size() == 2 failed, 3 != 2",
    "Job has gone over disk usage limit",
    "TERM_RUNLIMIT: job killed after reaching LSF run time limit.",
    "ValueError: obj.itemsize * obj.size is larger than the maximum allowed buffer size.",
    "ggml_metal_init: maxBufferLength = 17179.87 MB",
    "CL_DEVICE_MAX_MEM_ALLOC_SIZE: 4294967296",
    "I ran out of memes",
    "./run.sh: riga 3: 4242 Segmentation fault      python x.py",
    "`sliding_window` will be ignored and memory will blow up.",
    "the GPU exploded after the driver update",
    "o.merge: len is greater than the maximum buffer size of 4096 bytes",
    "Warning: Buffer size (0) exceeds nothing",
    "[kvcached][INFO] available_size()=40 >= need_size=30",
    "Input prompt (1217 tokens) is within the capacity of block_manager",
    "INFO 04-08 11:37:49 cache_engine.py:104] CPU swap space: 4.00 GiB, # CPU blocks: 2048",
)

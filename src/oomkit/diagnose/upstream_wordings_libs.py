"""Harvested OOM wordings of GPU data libraries and of browser/Apple/desktop-app GPU back ends
(see :mod:`oomkit.diagnose.upstream_wordings`; parsed by :mod:`oomkit.diagnose.parse_libs`).

``LIBS`` are allocation failures; ``LIBS_NOT_CAPACITY`` are recognised but are not (or are not
known to be) a lack of memory, answered ``unknown`` with the reason.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB as _GIB
from oomkit.diagnose.upstream_wordings_base import MIB as _MIB
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["LIBS", "LIBS_NOT_CAPACITY"]


def decimal_gib(text: str) -> int:
    """A "GB" size oMLX prints (``x / 1024**3``) in bytes."""
    whole, _, frac = text.partition(".")
    return (int(whole) * 100 + int((frac + "00")[:2])) * _GIB // 100


_FAISS = "facebookresearch/faiss:faiss/gpu/StandardGpuResources.cpp (allocMemory)"

LIBS: tuple[Wording, ...] = (
    _w(
        "faiss",
        _FAISS,
        "StandardGpuResources: alloc fail %s (cudaMalloc error %s [%d])  (AllocRequest::toString: "
        "type %s dev %d space %s stream %p size %zu bytes)",
        "RuntimeError: Error in virtual void* faiss::gpu::StandardGpuResourcesImpl::allocMemory("
        "const faiss::gpu::AllocRequest&) at faiss/gpu/StandardGpuResources.cpp:452: Error: "
        "'err == cudaSuccess' failed: StandardGpuResources: alloc fail type "
        "TemporaryMemoryOverflow dev 0 space Device stream 0x7f00 size 4513349632 bytes "
        "(cudaMalloc error out of memory [2])",
        req=4513349632,
    ),
    _w(
        "faiss",
        _FAISS,
        "Failed to cudaMalloc %zu bytes on device %d (error %d %s",
        "Error: 'err == cudaSuccess' failed: Failed to cudaMalloc 805306368 bytes on device 3 "
        "(error 2 out of memory",
        req=768 * _MIB,
    ),
    _w(
        "faiss",
        "facebookresearch/faiss:gpu/utils/MemorySpace.cpp (allocMemorySpaceV, 2017-2019)",
        "failed to cudaMalloc %zu bytes (error %d %s)",
        "Error in void faiss::gpu::allocMemorySpaceV(faiss::gpu::MemorySpace, void**, size_t) at "
        "gpu/utils/MemorySpace.cpp:27: Error: 'err == cudaSuccess' failed: failed to cudaMalloc "
        "2147483648 bytes (error 2 out of memory)",
        req=2 * _GIB,
    ),
    _w(
        "faiss",
        "facebookresearch/faiss:gpu/utils/StackDeviceMemory.cpp (Stack::Stack, 2017)",
        "Faiss assertion 'err == cudaSuccess' failed in faiss::gpu::StackDeviceMemory::Stack::"
        "Stack(int, size_t) at %s:%d",
        "Faiss assertion 'err == cudaSuccess' failed in faiss::gpu::StackDeviceMemory::Stack::"
        "Stack(int, size_t) at gpu/utils/StackDeviceMemory.cpp:28",
    ),
    _w(
        "xgboost",
        "dmlc/xgboost:src/common/device_helpers.cuh (safe_cuda / ThrowOnCudaError)",
        "%s(%d): %s  (thrust::system_error: file(line): cudaGetErrorString)",
        "terminate called after throwing an instance of 'thrust::system::system_error'\n  "
        "what():  /workspace/src/common/device_helpers.cuh(212): out of memory",
    ),
    _w(
        "xgboost",
        "dmlc/xgboost:src/common/device_helpers.cuh (XGBCachingDeviceAllocatorImpl::ThrowOOMError)",
        "Memory allocation error on worker %d: %s\n- Free memory: %zu\n- Requested memory: %zu",
        "xgboost.core.XGBoostError: [10:12:01] ../src/common/device_helpers.cuh:431: Memory "
        "allocation error on worker 1: std::bad_alloc: cudaErrorMemoryAllocation: out of "
        "memory\n- Free memory: 104857600\n- Requested memory: 268435456",
        req=256 * _MIB,
        free=100 * _MIB,
    ),
    _w(
        "thrust",
        "NVIDIA/cccl:thrust/thrust/system/cuda/detail/parallel_for.h (throw_on_error)",
        '%s failed: %s  (cuda_cub::throw_on_error(status, "parallel_for failed"))',
        "what():  parallel_for failed: out of memory",
    ),
    _w(
        "thrust",
        "NVIDIA/cccl:thrust/thrust/system/cuda/detail/sort.h (throw_on_error)",
        "radix_sort: failed on 2nd step: %s",
        "RuntimeError: radix_sort: failed on 2nd step: out of memory",
    ),
    _w(
        "catboost",
        "catboost/catboost:catboost/cuda/cuda_lib/memory_pool/stack_like_memory_pool.h",
        "Error: Out of memory. Requested %f MB; Free %f MB  (MB = 1024.0 * 1024.0)",
        "_catboost.CatBoostError: (NCudaLib::TOutOfMemoryError) catboost/cuda/cuda_lib/"
        "memory_pool/stack_like_memory_pool.h:303: Error: Out of memory. Requested 2048 MB; Free "
        "1500.5 MB",
        req=2 * _GIB,
        free=1573388288,
    ),
    _w(
        "catboost",
        "catboost/catboost:catboost/cuda/cuda_lib/memory_pool/stack_like_memory_pool.h (0.x)",
        "Error: Out of memory. Requested %f; Free %f",
        "Application terminated with error: (NCudaLib::TOutOfMemoryError) catboost/cuda/cuda_lib/"
        "memory_pool/stack_like_memory_pool.h:294: Error: Out of memory. Requested 512.000000; "
        "Free 100.000000",
        req=512 * _MIB,
    ),
    _w(
        "opencl",
        "boostorg/compute:include/boost/compute/exception/opencl_error.hpp (to_string)",
        "Memory Object Allocation Failure  (CL_MEM_OBJECT_ALLOCATION_FAILURE, -4)",
        "terminate called after throwing an instance of 'boost::wrapexcept<boost::compute::"
        "opencl_error>'\n  what():  Memory Object Allocation Failure",
    ),
    _w(
        "opencl",
        "KhronosGroup/OpenCL-Headers:CL/cl.h (CL_MEM_OBJECT_ALLOCATION_FAILURE)",
        "CL_MEM_OBJECT_ALLOCATION_FAILURE",
        "clEnqueueNDRangeKernel returned CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)",
    ),
    _w(
        "opencl",
        "boostorg/compute:include/boost/compute/exception/opencl_error.hpp (to_string)",
        "Out of Host Memory  (CL_OUT_OF_HOST_MEMORY, -6)",
        "lightgbm.basic.LightGBMError: Out of Host Memory",
    ),
    _w(
        "rmm",
        "rapidsai/rmm:include/rmm/mr/device/pool_memory_resource.hpp (RMM_FAIL)",
        "RMM failure at: %s:%d: Maximum pool size exceeded",
        "MemoryError: std::bad_alloc: RMM failure at:/opt/conda/include/rmm/mr/device/"
        "pool_memory_resource.hpp:196: Maximum pool size exceeded",
    ),
    _w(
        "rmm",
        "rapidsai/rmm:include/rmm/detail/error.hpp (RMM_CUDA_TRY_ALLOC, out_of_memory)",
        "out_of_memory: CUDA error at: %s:%d: %s %s",
        "MemoryError: std::bad_alloc: out_of_memory: CUDA error at: /opt/conda/include/rmm/mr/"
        "device/cuda_memory_resource.hpp:60: cudaErrorMemoryAllocation out of memory",
    ),
    _w(
        "rmm",
        "rapidsai/rmm:include/rmm/detail/error.hpp (RMM_CUDA_TRY, before out_of_memory)",
        "CUDA error at: %s:%d: %s %s",
        "MemoryError: std::bad_alloc: CUDA error at: ../include/rmm/mr/device/"
        "cuda_memory_resource.hpp:68: cudaErrorMemoryAllocation out of memory",
    ),
    _w(
        "rmm",
        "rapidsai/rmm:python/rmm/_lib (0.x C API rmmError_t)",
        "RMM_ERROR_OUT_OF_MEMORY",
        "rmm.rmm.RMMError: RMM_ERROR_OUT_OF_MEMORY",
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/cuda/src/hl_cuda_device.cc (v2 API, CHECK_EQ)",
        "Check failed: cudaSuccess == cudaStat (0 vs. %d) Cuda Error: %s",
        "F0101 10:00:00.000000  1234 hl_cuda_device.cc:437] Check failed: cudaSuccess == "
        "cudaStat (0 vs. 2) Cuda Error: out of memory",
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:torch/cuda/__init__.py (OutOfMemoryError = torch._C.OutOfMemoryError)",
        "torch.OutOfMemoryError / torch.cuda.OutOfMemoryError (the class alone, a cut paste)",
        "torch.cuda.OutOfMemoryError: CUD",
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:aten/src/THC/THCGeneral.cpp (THCudaCheck), as issue titles recase it",
        "cuda runtime error (%d) : %s",
        "Cuda Runtime Error: out of memory",
    ),
    _w(
        "tensorflow",
        "tensorflow/tensorflow:tensorflow/python/eager/execute.py (status message + [Op:name])",
        "%s [Op:%s]",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: failed to allocate "
        "memory [Op:Mul]",
    ),
)

LIBS += (
    _w(
        "mlx",
        "ml-explore/mlx:mlx/backend/metal/allocator.cpp (MetalAllocator::malloc)",
        "[malloc] Unable to allocate %zu bytes.  ([malloc_or_wait] before 0.20)",
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: "
        "[malloc_or_wait] Unable to allocate 4194304 bytes.",
        req=4 * _MIB,
    ),
    _w(
        "mlx",
        "ml-explore/mlx:mlx/backend/metal/allocator.cpp (maxBufferLength check)",
        "Attempting to allocate %zu bytes which is greater than the maximum allowed buffer size "
        "of %zu bytes.",
        "RuntimeError: Attempting to allocate 21474836480 bytes which is greater than the "
        "maximum allowed buffer size of 17179869184 bytes.",
        req=20 * _GIB,
    ),
    _w(
        "tt-metal",
        "tenstorrent/tt-metal:tt_metal/impl/allocator/bank_manager.cpp (BankManager::allocate)",
        "Out of Memory: Not enough space to allocate {} B {} buffer across {} banks, where each "
        "bank needs to store {} B[, but bank size is {} B (allocated: {} B, free: {} B, largest "
        "free block: {} B)]",
        "RuntimeError: TT_FATAL @ bank_manager.cpp:423: Out of Memory: Not enough space to "
        "allocate 134217728 B DRAM buffer across 12 banks, where each bank needs to store "
        "11184832 B, but bank size is 1071644672 B (allocated: 1065353216 B, free: 6291456 B, "
        "largest free block: 6291456 B)",
        req=128 * _MIB,
        free=12 * 6291456,
    ),
    _w(
        "tpu",
        "openxla/xla docs/errors (TPU 'Error loading program'; tsl HumanReadableNumBytes)",
        "Attempting to reserve %s at the bottom of memory. That was not possible. There are %s "
        "free, %s reserved, and %s reservable.",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Error loading program 'jit_train_step': "
        "Attempting to reserve 12.50G at the bottom of memory. That was not possible. There "
        "are 9.00G free, 0B reserved, and 9.00G reservable.",
        req=12 * _GIB + _GIB // 2,
        free=9 * _GIB,
    ),
    _w(
        "tpu",
        "openxla/xla (TPU 'Error allocating device buffer'; tsl HumanReadableNumBytes)",
        "Attempting to allocate %s. That was not possible. There are %s free.",
        "RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 256.00M. "
        "That was not possible. There are 100.00M free.; (0x0x0_HBM0)",
        req=256 * _MIB,
        free=100 * _MIB,
    ),
)

LIBS += (
    _w(
        "wgpu",
        "gfx-rs/wgpu:wgpu-core/src/device/mod.rs (DeviceError::OutOfMemory)",
        "Not enough memory left.",
        "wgpu error: Validation Error\n\nCaused by:\n    In Device::create_buffer\n    Not enough "
        "memory left.",
    ),
    _w(
        "opengl",
        "GL_OUT_OF_MEMORY (glGetError; the OpenGL specification's description)",
        "GL_OUT_OF_MEMORY: There is not enough memory left to execute the command.",
        "OpenGL error GL_OUT_OF_MEMORY: There is not enough memory left to execute the command.",
    ),
)

LIBS += (
    _w(
        "omlx",
        "jundot/omlx:omlx/scheduler.py (prefill memory guard, PrefillMemoryExceededError)",
        "Prefill would require ~%s peak (current %s + KV+SDPA %s) but %s ceiling is %s",
        "oMLX prefill memory guard rejected this prompt: Prefill would require ~43.56 GB peak "
        "(current 28.00 GB + KV+SDPA 15.56 GB) but limit is 40.00 GB.",
        req=decimal_gib("15.56"),
    ),
    _w(
        "onnxruntime",
        "microsoft/onnxruntime:onnxruntime/core/providers/cuda/cuda_call.cc (older releases)",
        "%s failure %d: %s ; GPU=%d ; hostname=%s ; expr=%s; %s",
        "CUDA failure 2: out of memory ; GPU=0 ; hostname=learner-0 ; "
        "expr=cudaMalloc((void**)&p, size);",
    ),
    _w(
        "cuda",
        "inducer/pycuda:src/cpp/cuda.hpp (CUDAPP_CALL_GUARDED, pycuda::error, MemoryError)",
        "MemoryError: %s failed: out of memory",
        "pycuda._driver.MemoryError: cuMemAlloc failed: out of memory",
    ),
    _w(
        "ctranslate2",
        "OpenNMT/CTranslate2:src/allocator.cc (MklAllocator::allocate)",
        "mkl_malloc: failed to allocate memory",
        "RuntimeError: mkl_malloc: failed to allocate memory",
    ),
    _w(
        "ctranslate2",
        "OpenNMT/CTranslate2:src/allocator.cc (AlignedAllocator::allocate)",
        "aligned_alloc: failed to allocate memory",
        "RuntimeError: aligned_alloc: failed to allocate memory",
    ),
)

LIBS_NOT_CAPACITY: tuple[Wording, ...] = (
    _w(
        "tt-metal",
        "tenstorrent/tt-metal:tt_metal/impl/program/program.cpp (validate_circular_buffer_region)",
        "Statically allocated circular buffers on core range {} grow to {} B which is beyond "
        "max L1 size of {} B",
        "TT_THROW: Statically allocated circular buffers on core range [(x=0,y=0) - (x=1,y=0)] "
        "grow to 1612800 B which is beyond max L1 size of 1499136 B",
    ),
    _w(
        "ggml",
        "ggml-org/ggml:src/ggml-alloc.c (ggml_tallocr_alloc)",
        "%s: not enough space in the buffer to allocate %s (needed %zu, available %zu)",
        "ggml_tallocr_alloc: not enough space in the buffer to allocate node_12 (needed "
        "26214400, available 20971520)",
    ),
    _w(
        "tfjs",
        "tensorflow/tfjs:tfjs-backend-webgl/src/webgl_util.ts (validateTextureSize)",
        "Requested texture size %s greater than WebGL maximum on this browser / GPU %s.",
        "Error: Requested texture size [20000x2] greater than WebGL maximum on this browser / "
        "GPU [8192x8192].",
    ),
    _w(
        "tfjs",
        "tensorflow/tfjs:tfjs-backend-webgl/src/webgl_util.ts (createFragmentShader); the "
        "browser's WebGL CONTEXT_LOST_WEBGL",
        "Failed to compile fragment shader.  /  WebGL: CONTEXT_LOST_WEBGL: loseContext: context "
        "lost",
        "WebGL: CONTEXT_LOST_WEBGL: loseContext: context lost",
    ),
    _w(
        "metal",
        "ml-explore/mlx:mlx/backend/metal/eval.cpp ([METAL] Command buffer execution failed: + "
        "MTLCommandBuffer error localizedDescription)",
        "[METAL] Command buffer execution failed: %s",
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] "
        "Command buffer execution failed: Caused GPU Timeout Error (00000002:"
        "kIOGPUCommandBufferCallbackErrorTimeout)",
    ),
    _w(
        "gpt4all",
        "nomic-ai/gpt4all:gpt4all-chat/src/chatllm.cpp (fallbackReason)",
        "GPU loading failed (out of VRAM?)",
        "Device: CPU (GPU loading failed (out of VRAM?))",
    ),
)

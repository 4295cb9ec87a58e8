"""Harvested OOM wordings of the device layer: PyTorch's allocators, CUDA / HIP / NCCL / Vulkan /
OpenCL status names, ggml and llama.cpp (see :mod:`oomkit.diagnose.upstream_wordings`)."""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB as _GIB
from oomkit.diagnose.upstream_wordings_base import MIB as _MIB
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["CUDA", "GGML", "TORCH"]

_PT = "pytorch/pytorch:"
_GGML = "ggml-org/llama.cpp:"  # also vendored by ollama/ollama under ml/backend/ggml/ggml/src
TORCH: tuple[Wording, ...] = (
    _w(
        "pytorch",
        _PT + "c10/cuda/CUDACachingAllocator.cpp",
        "CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s "
        "is free. Process %d has %s memory in use. Of the allocated memory %s is allocated by "
        "PyTorch, and %s is reserved by PyTorch but unallocated.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 23.65 GiB of which 1.06 GiB is free. Process 4242 has 22.58 GiB memory in "
        "use. Of the allocated memory 21.90 GiB is allocated by PyTorch, and 201.50 MiB is "
        "reserved by PyTorch but unallocated.",
        req=2 * _GIB,
    ),
    _w(
        "pytorch",
        _PT + "c10/cuda/CUDACachingAllocator.cpp (torch < 2.1)",
        "CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already "
        "allocated; %s free; %s reserved in total by PyTorch)",
        "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 11.77 GiB total "
        "capacity; 10.12 GiB already allocated; 301.44 MiB free; 10.50 GiB reserved in total by "
        "PyTorch)",
        req=512 * _MIB,
    ),
    _w(
        "pytorch",
        _PT + "c10/cuda/CUDACachingAllocator.cpp (alloc_block, LOG(WARNING) before the retry)",
        "memory allocation failed with OOM on device %d while trying to allocate %zu bytes "
        "(free: %zu, total: %zu).",
        "[W830 12:05:56.439466645 CUDACachingAllocator.cpp:3933] memory allocation failed with "
        "OOM on device 1 while trying to allocate 536870912 bytes (free: 125304832, total: "
        "85017624576).",
        req=536870912,
    ),
    _w(
        "pytorch",
        _PT + "c10/cuda/CUDAMallocAsyncAllocator.cpp",
        "Allocation on device %d would exceed allowed memory. (out of memory)",
        "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of "
        "memory)",
    ),
    _w(
        "comfyui",
        _PT + "c10/cuda/CUDAMallocAsyncAllocator.cpp (the device index printed as a char cuts the "
        "text) read through ComfyUI's log endpoint (api_server/routes/internal/internal_routes.py "
        "get_logs joins '<ISO time> - <write>' entries without a newline; docrec30)",
        "Allocation on device %d would exceed allowed memory. (out of memory)",
        "2025-03-24T17:01:07.440479 - Error during inference: Allocation on device "
        "2025-03-24T17:01:07.440479 - ",
    ),
    _w(
        "pytorch",
        _PT + "c10/core/impl/alloc_cpu.cpp",
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate %d bytes. Error code "
        "%d (%s)",
        "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't "
        "allocate memory: you tried to allocate 8589934592 bytes. Error code 12 (Cannot allocate "
        "memory)",
        req=8589934592,
    ),
    _w(
        "pytorch",
        _PT + "c10/core/impl/alloc_cpu.cpp (Windows)",
        "DefaultCPUAllocator: not enough memory: you tried to allocate %d bytes.",
        "RuntimeError: [enforce fail at ..\\c10\\core\\impl\\alloc_cpu.cpp:72] data. "
        "DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes.",
        req=1073741824,
    ),
    _w(
        "pytorch",
        _PT + "aten/src/ATen/mps/MPSAllocator.mm",
        "MPS backend out of memory (MPS allocated: %s, other allocations: %s, max allowed: %s). "
        "Tried to allocate %s on %s pool.",
        "RuntimeError: MPS backend out of memory (MPS allocated: 17.54 GB, other allocations: "
        "1.20 GB, max allowed: 18.13 GB). Tried to allocate 1.00 GB on private pool. Use "
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations "
        "(may cause system failure).",
        req=_GIB,
    ),
    _w(
        "pytorch",
        _PT + "aten/src/ATen/native/mps/OperationUtils.mm",
        "Invalid buffer size: %s",
        "RuntimeError: Invalid buffer size: 28.00 GB",
        req=28 * _GIB,
    ),
    _w(
        "pytorch",
        _PT + "c10/xpu/XPUCachingAllocator.cpp",
        "XPU out of memory. Tried to allocate %s. GPU %d has a total capacity of %s. Of the "
        "allocated memory %s is allocated by PyTorch, and %s is reserved by PyTorch but "
        "unallocated.",
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
        "capacity of 15.11 GiB. Of the allocated memory 13.20 GiB is allocated by PyTorch, and "
        "120.00 MiB is reserved by PyTorch but unallocated. Please use `empty_cache` to release "
        "all unoccupied cached memory.",
        req=3 * _GIB // 2,
    ),
    _w(
        "pytorch",
        _PT + "c10/cuda/CUDACachingAllocator.cpp (hipified for ROCm)",
        "HIP out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s "
        "is free.",
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
        "capacity of 23.98 GiB of which 2.10 GiB is free. Of the allocated memory 20.11 GiB is "
        "allocated by PyTorch, and 1.02 GiB is reserved by PyTorch but unallocated.",
        req=4 * _GIB,
    ),
    _w(
        "pytorch",
        "Ascend/pytorch:torch_npu/csrc/core/npu/NPUCachingAllocator.cpp",
        "NPU out of memory. Tried to allocate %s (NPU %d; %s total capacity; %s already "
        "allocated; %s current active; %s free; %s reserved in total by PyTorch)",
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total "
        "capacity; 58.71 GiB already allocated; 58.71 GiB current active; 1.07 GiB free; 59.19 "
        "GiB reserved in total by PyTorch)",
        req=2 * _GIB,
    ),
    _w(
        "pytorch",
        "Cambricon/torch_mlu:torch_mlu/csrc/framework/core/caching_allocator.cpp (2.x)",
        "MLU out of memory. Tried to allocate %s. MLU %d has a total capacity of %s of which "
        "%sis free.",
        "torch.OutOfMemoryError: MLU out of memory. Tried to allocate 1.00 GiB. MLU 0 has a total "
        "capacity of 47.98 GiB of which 512.00 MiBis free. Of the allocated memory 40.00 GiB is "
        "allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.",
        req=_GIB,
    ),
    _w(
        "pytorch",
        "Cambricon/torch_mlu:torch_mlu/csrc/framework/core/caching_allocator.cpp (1.x)",
        "MLU out of memory. Tried to allocate %s (MLU %d; %s total capacity; %s already "
        "allocated; ...)",
        "RuntimeError: MLU out of memory. Tried to allocate 2.00 GiB (MLU 0; 31.00 GiB total "
        "capacity; 28.10 GiB already allocated; 1.20 GiB free; 29.00 GiB reserved in total by "
        "PyTorch)",
        req=2 * _GIB,
    ),
    _w(
        "pytorch",
        "Habana SynapseAI PyTorch bridge (closed source; Gaudi troubleshooting guide)",
        "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::%d (%d)MB",
        "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for "
        "size::1073741824 (1024)MB",
        req=1073741824,
    ),
    _w(
        "pytorch",
        "Apple MetalPerformanceShaders (closed source; assertion under torch MPS)",
        "failed assertion `Failed to allocate private MTLBuffer for size %lu'",
        "/AppleInternal/Library/BuildRoots/x/Library/Caches/com.apple.xbs/Sources/MetalPerformanc"
        "eShaders/MPSCore/Utility/MPSLibrary.mm:485: failed assertion `Failed to allocate private "
        "MTLBuffer for size 4194304'",
        req=4194304,
    ),
    _w(
        "pytorch",
        "microsoft/DirectML (torch-directml, closed source; message of DmlAllocator)",
        "Could not allocate tensor with %d bytes. There is not enough GPU video memory available!",
        "RuntimeError: Could not allocate tensor with 4915840 bytes. There is not enough GPU video "
        "memory available!",
        req=4915840,
    ),
)

CUDA: tuple[Wording, ...] = (
    _w(
        "cuda",
        _PT + "c10/cuda/CUDAException.h (cudaGetErrorString(cudaErrorMemoryAllocation))",
        "CUDA error: %s",
        "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously "
        "reported at some other API call, so the stacktrace below might be incorrect.",
    ),
    _w(
        "cuda",
        "NVIDIA CUDA driver API (cuGetErrorName), via triton-lang/triton:third_party/nvidia/"
        "backend/driver.c",
        "Triton Error [CUDA]: %s",
        "RuntimeError: Triton Error [CUDA]: out of memory",
    ),
    _w(
        "cuda",
        "NVIDIA CUDA driver API error name, printed by tensorflow/tensorflow:"
        "third_party/xla/xla/stream_executor/cuda/cuda_driver.cc",
        "failed to allocate %s (%d bytes) from device: %s",
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:936] failed to allocate 3.77G "
        "(4046333952 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
        req=4046333952,
    ),
    _w(
        "cuda",
        "NVIDIA CUDA runtime enum name (cudaGetErrorName)",
        "cudaErrorMemoryAllocation",
        "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorMemoryAllocation: out of memory",
    ),
    _w(
        "cuda",
        _PT + "aten/src/ATen/cuda/Exceptions.h (cublasGetStatusString)",
        "CUDA error: %s when calling `%s`",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    ),
    _w(
        "cuda",
        _PT + "aten/src/ATen/cudnn/Exceptions.h (cudnnGetErrorString)",
        "cuDNN error: %s",
        "RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
    ),
    _w(
        "cuda",
        _PT + "aten/src/ATen/native/cuda/linalg/CUDASolver.cpp (cusolverGetErrorMessage)",
        "cusolver error: %s",
        "RuntimeError: cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling "
        "`cusolverDnCreate(handle)`",
    ),
    _w(
        "cuda",
        _PT + "aten/src/ATen/native/cuda/CuFFTUtils.h (_cudaGetErrorEnum)",
        "cuFFT error: %s",
        "RuntimeError: cuFFT error: CUFFT_ALLOC_FAILED",
    ),
    _w(
        "cuda",
        _PT + "aten/src/ATen/cuda/CUDASparse.h (cusparseGetErrorString)",
        "CUDA error: %s when calling `%s`",
        "RuntimeError: CUDA error: insufficient resources when calling `cusparseCreate(handle)`",
    ),
    _w(
        "cuda",
        "NVIDIA cuRAND curandStatus_t name",
        "CURAND_STATUS_ALLOCATION_FAILED",
        "RuntimeError: curand error: CURAND_STATUS_ALLOCATION_FAILED",
    ),
    _w(
        "nccl",
        "NVIDIA/nccl:src/include/checks.h",
        "Cuda failure '%s'",
        "misc/utils.cc:127 NCCL WARN Cuda failure 'out of memory'",
    ),
    _w(
        "nccl",
        "NVIDIA/nccl:src/include/cudawrap.h",
        "Cuda failure %d '%s'",
        "transport/p2p.cc:280 NCCL WARN Cuda failure 2 'out of memory'",
    ),
    _w(
        "nccl",
        "NVIDIA/nccl:src/include/alloc.h",
        "Failed to CUDA calloc %ld bytes",
        "include/alloc.h:48 NCCL WARN Failed to CUDA calloc 6291456 bytes",
        req=6291456,
    ),
    _w(
        "nccl",
        "NVIDIA/nccl:src/include/alloc.h",
        "Failed to CUDA host alloc %ld bytes",
        "include/alloc.h:125 NCCL WARN Failed to CUDA host alloc 4194304 bytes",
        req=4194304,
    ),
    _w(
        "cuda",
        _PT + "aten/src/ATen/cuda/CublasHandlePool.cpp (cublasCreate fails when no memory is "
        "left for the handle's workspace)",
        "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling "
        "`cublasCreate(handle)`",
    ),
    _w(
        "sycl",
        "intel/llvm:sycl/include/sycl/detail/pi_error.def (PI_ERROR_OUT_OF_RESOURCES = -5)",
        "Native API failed. Native API returns: %d (%s)",
        "RuntimeError: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES) -5 "
        "(PI_ERROR_OUT_OF_RESOURCES)",
    ),
    _w(
        "sycl",
        "intel/llvm:sycl/include/sycl/detail/pi_error.def (PI_ERROR_OUT_OF_HOST_MEMORY = -6)",
        "Native API failed. Native API returns: %d (%s)",
        "RuntimeError: Native API failed. Native API returns: -6 (PI_ERROR_OUT_OF_HOST_MEMORY) -6 "
        "(PI_ERROR_OUT_OF_HOST_MEMORY)",
    ),
    _w(
        "wgpu",
        "gfx-rs/wgpu:wgpu-core/src/device/mod.rs (DeviceError::OutOfMemory)",
        "Not enough memory left.",
        "wgpu error: Validation Error\n\nCaused by:\n    In Device::create_buffer\n    Not "
        "enough memory left.",
    ),
    _w(
        "hip",
        "ROCm/HIP hipErrorOutOfMemory name (hipGetErrorName)",
        "hipErrorOutOfMemory",
        "RuntimeError: HIP error: hipErrorOutOfMemory",
    ),
    _w(
        "hip",
        "ROCm/rocBLAS rocblas_status_memory_error",
        "rocblas_status_memory_error",
        "rocBLAS error: rocblas_status_memory_error from hipblasCreate",
    ),
    _w(
        "hip",
        "ROCm/hipBLAS hipblasStatus_t name",
        "HIPBLAS_STATUS_ALLOC_FAILED",
        "RuntimeError: CUDA error: HIPBLAS_STATUS_ALLOC_FAILED when calling "
        "`hipblasCreate(handle)`",
    ),
    _w(
        "hip",
        "ROCm/MIOpen miopenStatus_t name",
        "miopenStatusAllocFailed",
        "RuntimeError: miopenStatusAllocFailed",
    ),
    _w(
        "hip",
        "ROCm/ROCR-Runtime hsa_status_string",
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary "
        "resources.",
        ":0:rocdevice.cpp:2881: Callback: Queue 0x7f aborting with error : "
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary "
        "resources. This error may also occur when the core runtime library needs to spawn "
        "threads. code: 0x1008",
    ),
    _w(
        "vulkan",
        "KhronosGroup/Vulkan-Headers VkResult name (vk::to_string)",
        "ErrorOutOfDeviceMemory",
        "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory",
    ),
    _w(
        "vulkan",
        "mesa/mesa:src/amd/vulkan/winsys/amdgpu/radv_amdgpu_cs.c (submit ioctl -ENOMEM)",
        "radv/amdgpu: Not enough memory for command submission.",
        "radv/amdgpu: Not enough memory for command submission.\n"
        "ggml_vulkan: device lost on Vulkan0",
    ),
    _w(
        "vulkan",
        "torvalds/linux:drivers/gpu/drm/amd/amdgpu/amdgpu_cs.c (amdgpu_cs_ioctl)",
        "Not enough memory for command submission!",
        "[ 8123.456789] [drm:amdgpu_cs_ioctl [amdgpu]] *ERROR* Not enough memory for command "
        "submission!",
    ),
    _w(
        "opencl",
        "KhronosGroup/OpenCL-Headers CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)",
        "CL_MEM_OBJECT_ALLOCATION_FAILURE",
        "clEnqueueNDRangeKernel failed: CL_MEM_OBJECT_ALLOCATION_FAILURE",
    ),
    _w(
        "opencl",
        "KhronosGroup/OpenCL-Headers CL_OUT_OF_RESOURCES (-5)",
        "CL_OUT_OF_RESOURCES",
        "clEnqueueWriteBuffer error: CL_OUT_OF_RESOURCES",
    ),
)

GGML: tuple[Wording, ...] = (
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-alloc.c",
        "%s: failed to allocate %s buffer of size %zu",
        "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 4437573632",
        req=4437573632,
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-alloc.c",
        "%s: not enough space in the buffer to allocate %s (needed %zu, available %zu)",
        "ggml_tallocr_alloc: not enough space in the buffer to allocate blk.0.attn_q.weight "
        "(needed 58982400, available 58720256)",
        req=58982400,
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-backend.cpp",
        "%s: failed to allocate buffer of size %zu",
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 34359738368",
        req=34359738368,
    ),
    _w(
        "ggml",
        _GGML + "ggml-backend.c (2023-24, ggml_backend_cpu_buffer_type_alloc_buffer)",
        'GGML_ASSERT: %s:%d: data != NULL && "failed to allocate buffer"',
        "GGML_ASSERT: D:\\a\\whisper.cpp\\whisper.cpp\\ggml-backend.c:460: data != NULL && "
        '"failed to allocate buffer"',
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-cuda/ggml-cuda.cu",
        "%s: allocating %.2f MiB on device %d: cudaMalloc failed: %s",
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: "
        "cudaMalloc failed: out of memory",
        req=8192 * _MIB,
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-cuda/ggml-cuda.cu (ggml_cuda_error)",
        "CUDA error: %s\n  current device: %d, in function %s at %s:%d",
        "CUDA error: out of memory\n  current device: 0, in function ggml_cuda_pool_malloc at "
        "ggml-cuda.cu:402",
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-metal/ggml-metal-device.m",
        "%s: error: failed to allocate buffer, size = %8.2f MiB",
        "ggml_metal_buffer_type_alloc_buffer: error: failed to allocate buffer, size = "
        "12288.00 MiB",
        req=12288 * _MIB,
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-metal/ggml-metal-context.m",
        "%s: command buffer %d failed with status %lu\nerror: %s",
        "ggml_metal_graph_compute: command buffer 0 failed with status 5\nerror: Insufficient "
        "Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-vulkan/ggml-vulkan.cpp",
        "ggml_vulkan: Device memory allocation of size %zu failed.",
        "ggml_vulkan: Device memory allocation of size 2147483648 failed.",
        req=2147483648,
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml-vulkan/ggml-vulkan.cpp",
        "ggml_vulkan: Memory allocation of size %zu failed.",
        "ggml_vulkan: Memory allocation of size 1073741824 failed.",
        req=1073741824,
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml.c (ggml_aligned_malloc)",
        "%s: %s (attempted to allocate %6.2f MB)",
        "ggml_aligned_malloc: insufficient memory (attempted to allocate 24576.00 MB)",
        req=24576 * _MIB,
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml.c (ggml_new_object)",
        "%s: not enough space in the context's memory pool (needed %zu, available %zu)",
        "ggml_new_object: not enough space in the context's memory pool (needed 1048576, "
        "available 524288)",
        req=1048576,
    ),
    _w(
        "ggml",
        _GGML + "ggml/src/ggml.c",
        "GGML status: error (failed to allocate memory)",
        "GGML status: error (failed to allocate memory)",
    ),
    _w(
        "llama.cpp",
        _GGML + "src/llama-kv-cache.cpp",
        "failed to allocate buffer for kv cache",
        "llama_init_from_model: failed to initialize the context: failed to allocate buffer for "
        "kv cache",
    ),
    _w(
        "llama.cpp",
        _GGML + "src/llama-context.cpp",
        "%s: failed to allocate compute buffers",
        "llama_new_context_with_model: failed to allocate compute buffers",
    ),
    _w(
        "llama.cpp",
        _GGML + "src/llama-context.cpp",
        "failed to allocate compute pp buffers",
        "llama_init_from_model: failed to initialize the context: failed to allocate compute pp "
        "buffers",
    ),
    _w(
        "llama.cpp",
        _GGML + "src/llama-model.cpp",
        "unable to allocate %s buffer",
        "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
    ),
    _w(
        "llama.cpp",
        _GGML + "src/llama-context.cpp",
        "%s: failed to allocate output buffer of size %.2f MiB",
        "llama_output_reserve: failed to allocate output buffer of size 250.12 MiB",
        req=int(250.12 * _MIB),
    ),
    _w(
        "whisper.cpp",
        "ggml-org/whisper.cpp:src/whisper.cpp (whisper_kv_cache_init)",
        "%s: failed to allocate memory for the kv cache",
        "whisper_kv_cache_init: failed to allocate memory for the kv cache\nwhisper_init_state: "
        "whisper_kv_cache_init() failed for self-attention cache",
    ),
    _w(
        "whisper.cpp",
        "ggml-org/whisper.cpp:src/whisper.cpp (whisper_sched_graph_init)",
        "%s: failed to allocate the compute buffer",
        "whisper_sched_graph_init: failed to allocate the compute buffer",
    ),
    _w(
        "ollama",
        "ollama/ollama:ml/device.go (ErrNoMem)",
        "insufficient memory - required allocations: %+v",
        "Error: insufficient memory - required allocations: {InputWeights:417333248A "
        "CPU:{Name:CPU Weights:[0A 0A] Cache:[0A 0A] Graph:0A}}",
    ),
    _w(
        "ollama",
        "ollama/ollama:llm/server.go",
        "model requires more system memory (%s) than is available (%s)",
        "Error: model requires more system memory (12.3 GiB) than is available (7.6 GiB)",
        req=123 * _GIB // 10,
    ),
    _w(
        "node-llama-cpp",
        "withcatai/node-llama-cpp:src/utils/InsufficientMemoryError.ts",
        "InsufficientMemoryError: %s",
        "InsufficientMemoryError: A context size of 8192 is too large for the available VRAM",
    ),
)

"""The out-of-memory wordings that runtimes print, harvested from their own source code (issue 9).

Recognition must hold on messages nobody has shown the doctor yet. Rather than adding a format each
time a corpus record is missed, this table lists, family by family, the string each runtime's own
code emits when an allocation fails, with the file that prints it (``repo:path``; for
closed-source libraries the library and where its wording is documented).
``tests/test_doctor_upstream_wordings.py`` checks that the doctor recognises every entry as an
OOM, and reads the numbers the format carries.

Each :class:`Wording` holds:

* ``wording``: the format string as the source writes it (``%s``, ``{}``, ``<<`` pieces shown as
  ``%...``), for the reader;
* ``example``: a realistic line built from that format with numbers filled in (what a user pastes);
* the bytes the example states (``requested``, ``total``, ``free``, ``allocated``), when the
  format carries them: the test asserts that the doctor reads exactly these.

Deliberate decisions, kept in :data:`NOT_CAPACITY` (recognised, but said not to be a lack of memory,
cause ``unknown``): Triton's ``out of resource: shared memory`` is a per-block limit of on-chip
shared memory (``triton/runtime/errors.py`` ``OutOfResources``), not device memory; lowering the
batch does not help, smaller ``BLOCK``/``num_stages`` does. :data:`NEAR_MISSES` are texts with the
same words that no runtime prints on an allocation failure; the doctor must not call them OOM.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NEAR_MISSES", "NOT_CAPACITY", "WORDINGS", "Wording"]

_GIB = 1 << 30
_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Wording:
    """One upstream OOM wording, where it is printed, and a line built from it."""

    family: str
    source: str
    wording: str
    example: str
    requested: int | None = None
    total: int | None = None
    free: int | None = None
    allocated: int | None = None


def _w(
    family: str,
    source: str,
    wording: str,
    example: str,
    *,
    req: int | None = None,
    total: int | None = None,
    free: int | None = None,
    alloc: int | None = None,
) -> Wording:
    return Wording(family, source, wording, example, req, total, free, alloc)


_PT = "pytorch/pytorch:"
_GGML = "ggml-org/llama.cpp:"  # also vendored by ollama/ollama under ml/backend/ggml/ggml/src
_TORCH: tuple[Wording, ...] = (
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
        _PT + "c10/cuda/CUDAMallocAsyncAllocator.cpp",
        "Allocation on device %d would exceed allowed memory. (out of memory)",
        "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of "
        "memory)",
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
        "microsoft/DirectML (torch-directml, closed source; message of DmlAllocator)",
        "Could not allocate tensor with %d bytes. There is not enough GPU video memory available!",
        "RuntimeError: Could not allocate tensor with 4915840 bytes. There is not enough GPU video "
        "memory available!",
        req=4915840,
    ),
)

_CUDA: tuple[Wording, ...] = (
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

_GGML_W: tuple[Wording, ...] = (
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

_SERVING: tuple[Wording, ...] = (
    _w(
        "vllm",
        "vllm-project/vllm:vllm/worker/worker.py",
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine.",
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/core/kv_cache_utils.py",
        "To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache is "
        "needed, which is larger than the available KV cache memory (%.2f GiB).",
        "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 "
        "GiB KV cache is needed, which is larger than the available KV cache memory (9.20 GiB). "
        "Based on the available memory, the estimated maximum model length is 75360. Try "
        "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
        "engine.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/worker/utils.py (request_memory)",
        "Free memory on device (%.2f/%.2f GiB) on startup is less than desired GPU memory "
        "utilization (%.2f, %.2f GiB).",
        "ValueError: Free memory on device (10.5/23.55 GiB) on startup is less than desired GPU "
        "memory utilization (0.9, 21.19 GiB). Decrease GPU memory utilization or reduce GPU "
        "memory used by other processes.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/engine/llm_engine.py (v0)",
        "The model's max seq len (%d) is larger than the maximum number of tokens that can be "
        "stored in KV cache (%d).",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens "
        "that can be stored in KV cache (20144). Try increasing `gpu_memory_utilization` or "
        "decreasing `max_model_len` when initializing the engine.",
    ),
    _w(
        "sglang",
        "sgl-project/sglang:python/sglang/srt/model_executor/model_runner.py",
        "Not enough memory. Please try to increase --mem-fraction-static.",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ),
    _w(
        "tgi",
        "huggingface/text-generation-inference:server/text_generation_server/models/"
        "flash_causal_lm.py",
        "Not enough memory to handle {num_tokens} prefill tokens. You need to decrease "
        "`--max-batch-prefill-tokens`",
        "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
        "`--max-batch-prefill-tokens`",
    ),
    _w(
        "tgi",
        "huggingface/text-generation-inference:backends/v3/src/lib.rs",
        "Not enough memory to handle `max_total_tokens={0}`",
        "Error: Backend(NotEnoughMemory(4096))\nNot enough memory to handle "
        "`max_total_tokens=4096`",
    ),
    _w(
        "lmdeploy",
        "InternLM/lmdeploy:src/turbomind/utils/cuda_utils.h (check_cuda_error)",
        "[TM][ERROR] CUDA runtime error: %s %s:%d",
        "[TM][ERROR] CUDA runtime error: out of memory "
        "/lmdeploy/src/turbomind/utils/memory_utils.cu:32",
    ),
    _w(
        "tensorrt",
        "NVIDIA TensorRT libnvinfer (closed source; defaultAllocator.cpp as it names itself)",
        "Requested amount of GPU memory (%d bytes) could not be allocated. There may not be "
        "enough free memory for allocation to succeed.",
        "[TRT] [W] Requested amount of GPU memory (2833252352 bytes) could not be allocated. "
        "There may not be enough free memory for allocation to succeed.",
        req=2833252352,
    ),
    _w(
        "tensorrt",
        "NVIDIA TensorRT libnvinfer (closed source; ErrorCode::kOUT_OF_MEMORY = 2)",
        "Error Code 2: OutOfMemory (%s)",
        "[E] [executionContext.cpp::initializeExecutionContext::625] Error Code 2: OutOfMemory "
        "(Requested size was 20132809216 bytes.)",
        req=20132809216,
    ),
    _w(
        "tensorrt",
        "NVIDIA TensorRT libnvinfer (closed source; defaultAllocator.cpp)",
        "Error Code 1: Cuda Runtime (%s)",
        "1: [defaultAllocator.cpp::allocate::19] Error Code 1: Cuda Runtime (out of memory)",
    ),
    _w(
        "tensorrt-llm",
        "NVIDIA/TensorRT-LLM:cpp/include/tensorrt_llm/common/cudaUtils.h (check)",
        "[TensorRT-LLM][ERROR] CUDA runtime error in %s: %s (%s:%d)",
        "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()):"
        " out of memory (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)",
    ),
    _w(
        "ctranslate2",
        "OpenNMT/CTranslate2:src/cuda/utils.h (CUDA_CHECK)",
        "CUDA failed with error %s",
        "RuntimeError: CUDA failed with error out of memory",
    ),
    _w(
        "ctranslate2",
        "OpenNMT/CTranslate2:src/cuda/utils.h (CUBLAS_CHECK)",
        "cuBLAS failed with status %s",
        "RuntimeError: cuBLAS failed with status CUBLAS_STATUS_ALLOC_FAILED",
    ),
    _w(
        "transformers",
        "huggingface/transformers:src/transformers/quantizers/quantizer_bnb_4bit.py",
        "Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to "
        "fit the quantized model.",
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have "
        "enough GPU RAM to fit the quantized model. If you want to dispatch the model on the CPU "
        "or the disk while keeping these modules in 32-bit, you need to set "
        "`llm_int8_enable_fp32_cpu_offload=True`",
    ),
)

_FRAMEWORKS: tuple[Wording, ...] = (
    _w(
        "tensorflow",
        "tensorflow/tensorflow:tensorflow/core/framework/op_kernel.cc",
        "OOM when allocating tensor with shape%s and type %s on %s by allocator %s",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[64,512,56,56] and type float on /job:localhost/replica:0/task:0/"
        "device:GPU:0 by allocator GPU_0_bfc",
    ),
    _w(
        "tensorflow",
        "tensorflow/tensorflow:third_party/xla/xla/tsl/framework/bfc_allocator.cc",
        "Allocator (%s) ran out of memory trying to allocate %s (rounded to %d)requested by op %s",
        "W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate 1.53GiB (rounded to 1638400000)requested by op Conv2D",
        req=1638400000,
    ),
    _w(
        "jax",
        "openxla/xla:xla/stream_executor/stream_executor_memory_allocator.cc",
        "Failed to allocate request for %s (%uB) on device ordinal %d",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request "
        "for 8.00GiB (8589934592B) on device ordinal 0",
        req=8589934592,
    ),
    _w(
        "jax",
        "openxla/xla:xla/pjrt/gpu (BFC allocator via tsl::errors::ResourceExhausted)",
        "Out of memory while trying to allocate %d bytes.",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 "
        "bytes.",
        req=17179869184,
    ),
    _w(
        "jax",
        "openxla/xla TPU compiler (libtpu, closed source)",
        "Ran out of memory in memory space hbm. Used %s of %s hbm. Exceeded hbm capacity by %s.",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
        "in memory space hbm. Used 20.19G of 15.48G hbm. Exceeded hbm capacity by 4.71G.",
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/phi/core/memory/allocation/cuda_allocator.cc",
        "Out of memory error on GPU %d. Cannot allocate %s memory on GPU %d, %s memory has been "
        "allocated and available memory is only %s.",
        "ResourceExhaustedError: \n\nOut of memory error on GPU 0. Cannot allocate 1.953125GB "
        "memory on GPU 0, 14.653931GB memory has been allocated and available memory is only "
        "1.118347GB.",
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/phi/core/memory/allocation/cpu_allocator.cc",
        "(ResourceExhausted) Fail to alloc memory of %d size, error code is %d.",
        "OSError: (ResourceExhausted) Fail to alloc memory of 4294967296 size, error code is 12.",
    ),
    _w(
        "mindspore",
        "mindspore-ai/mindspore:mindspore/ccsrc/runtime/device/memory_manager.cc",
        "Device(id:%d) memory isn't enough and alloc failed, kernel name: %s, alloc size: %dB.",
        "RuntimeError: Device(id:0) memory isn't enough and alloc failed, kernel name: "
        "Default/MatMul-op0, alloc size: 1073741824B.",
        req=1073741824,
    ),
    _w(
        "mindspore",
        "mindspore-ai/mindspore:mindspore/ccsrc/runtime/pynative (MemoryManager)",
        "Out of memory!!! Request memory size: %dB, Memory Statistic:%s",
        "RuntimeError: Out of memory!!! Request memory size: 2147483648B, Memory Statistic:",
        req=2147483648,
    ),
    _w(
        "mindspore",
        "mindspore-ai/mindspore (Ascend device address)",
        "Malloc device memory failed, size[%d]",
        "RuntimeError: Malloc device memory failed, size[536870912]",
        req=536870912,
    ),
    _w(
        "ascend",
        "Ascend CANN runtime (closed source; EL0004 in the CANN error-code table)",
        "EL0004: Failed to allocate memory.",
        "EL0004: [PID: 4242] 2024-06-01-10:00:00.000.000 Failed to allocate memory.\n        "
        "Possible Cause: Available memory is insufficient.",
    ),
    _w(
        "ascend",
        "Ascend CANN runtime acl error code ACL_ERROR_RT_MEMORY_ALLOCATION (207001)",
        "ACL_ERROR_RT_MEMORY_ALLOCATION",
        "RuntimeError: call aclrtMalloc failed, error code: ACL_ERROR_RT_MEMORY_ALLOCATION",
    ),
    _w(
        "onnxruntime",
        "microsoft/onnxruntime:onnxruntime/core/framework/bfc_arena.cc",
        "Failed to allocate memory for requested buffer of size %d",
        "onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested "
        "buffer of size 1073741824",
        req=1073741824,
    ),
    _w(
        "onnxruntime",
        "microsoft/onnxruntime:onnxruntime/core/framework/bfc_arena.cc (Extend)",
        "Available memory of %d is smaller than requested bytes of %d",
        "onnxruntime::BFCArena::Extend Available memory of 0 is smaller than requested bytes of "
        "2147483648",
        req=2147483648,
    ),
    _w(
        "onnxruntime",
        "microsoft/onnxruntime:onnxruntime/core/providers/cuda/cuda_call.cc",
        "CUDA failure %d: %s ; GPU=%d ; hostname=%s ; file=%s ; line=%d ; expr=%s;",
        "CUDA failure 2: out of memory ; GPU=0 ; hostname=box ; file=cuda_allocator.cc ; line=47 ; "
        "expr=cudaMalloc((void**)&p, size);",
    ),
    _w(
        "openvino",
        "openvinotoolkit/openvino:src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp",
        "[GPU] Exceeded max size of memory object allocation: requested %d bytes, but max alloc "
        "size supported by device is %d bytes.",
        "[GPU] Exceeded max size of memory object allocation: requested 4294967296 bytes, but "
        "max alloc size supported by device is 4294959104 bytes.Please try to reduce batch size "
        "or use lower precision.",
        req=4294967296,
    ),
    _w(
        "openvino",
        "openvinotoolkit/openvino:src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp",
        "[GPU] out of GPU resources",
        "RuntimeError: Exception from src/inference/src/cpp/infer_request.cpp:223:\n[GPU] out of "
        "GPU resources",
    ),
    _w(
        "mlx",
        "ml-explore/mlx:mlx/backend/metal/allocator.cpp",
        "[metal::malloc] Attempting to allocate %d bytes which is greater than the maximum "
        "allowed buffer size of %d bytes.",
        "RuntimeError: [metal::malloc] Attempting to allocate 134767706112 bytes which is "
        "greater than the maximum allowed buffer size of 86586540032 bytes.",
        req=134767706112,
    ),
    _w(
        "mlx",
        "ml-explore/mlx:mlx/backend/metal/allocator.cpp",
        "[malloc] Unable to allocate %d bytes.",
        "RuntimeError: [malloc] Unable to allocate 68719476736 bytes.",
        req=68719476736,
    ),
    _w(
        "mlx",
        "ml-explore/mlx:mlx/backend/metal/device.cpp",
        "[METAL] Command buffer execution failed: %s.",
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] "
        "Command buffer execution failed: Insufficient Memory "
        "(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory).",
    ),
    _w(
        "numpy",
        "numpy/numpy:numpy/_core/_exceptions.py (_ArrayMemoryError.__str__)",
        "Unable to allocate %s for an array with shape %s and data type %s",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 74.5 GiB for an array with "
        "shape (100000, 100000) and data type float64",
        req=80000000000,
    ),
    _w(
        "deepspeed",
        "deepspeedai/DeepSpeed:deepspeed/runtime/zero/stage3.py (via torch)",
        "%s out of memory",
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 "
        "has a total capacity of 79.15 GiB of which 1.20 GiB is free.",
        req=int(1.96 * _GIB),
    ),
)

_OS: tuple[Wording, ...] = (
    _w(
        "linux",
        "torvalds/linux:mm/oom_kill.c (__oom_kill_process)",
        "%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, "
        "shmem-rss:%lukB",
        "Out of memory: Killed process 12345 (python3) total-vm:98765432kB, anon-rss:61234567kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:123456kB oom_score_adj:0",
    ),
    _w(
        "linux",
        "torvalds/linux:mm/oom_kill.c (dump_header)",
        "%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd",
        "python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, "
        "oom_score_adj=0",
    ),
    _w(
        "linux",
        "torvalds/linux:mm/memcontrol.c (mem_cgroup_out_of_memory)",
        "Memory cgroup out of memory: Killed process %d (%s)",
        "Memory cgroup out of memory: Killed process 4321 (python) total-vm:20971520kB, "
        "anon-rss:16777216kB, file-rss:0kB, shmem-rss:0kB",
    ),
    _w(
        "linux",
        "python/cpython:Modules/errnomodule.c (ENOMEM strerror)",
        "[Errno 12] Cannot allocate memory",
        "OSError: [Errno 12] Cannot allocate memory",
    ),
    _w(
        "linux",
        "kubernetes/kubernetes:pkg/kubelet (container status reason)",
        "OOMKilled",
        "Last State: Terminated\n  Reason: OOMKilled\n  Exit Code: 137",
    ),
    _w(
        "windows",
        "Windows system error 1455 ERROR_COMMITMENT_LIMIT (FormatMessage)",
        "The paging file is too small for this operation to complete.",
        "OSError: [WinError 1455] The paging file is too small for this operation to complete. "
        'Error loading "C:\\venv\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or '
        "one of its dependencies.",
    ),
    _w(
        "windows",
        "Windows system error 8 ERROR_NOT_ENOUGH_MEMORY (FormatMessage)",
        "Not enough memory resources are available to process this command.",
        "OSError: [WinError 8] Not enough memory resources are available to process this command",
    ),
    _w(
        "windows",
        "Windows system error 14 ERROR_OUTOFMEMORY (FormatMessage)",
        "Not enough storage is available to complete this operation.",
        "OSError: [WinError 14] Not enough storage is available to complete this operation",
    ),
    _w(
        "windows",
        "Windows HRESULT E_OUTOFMEMORY 0x8007000E (FormatMessage)",
        "Not enough memory resources are available to complete this operation.",
        "RuntimeError: D3D12 device error 0x8007000E: Not enough memory resources are available "
        "to complete this operation.",
    ),
    _w(
        "windows",
        "Windows HRESULT name E_OUTOFMEMORY (winerror.h)",
        "E_OUTOFMEMORY",
        "onnxruntime DmlExecutionProvider: HRESULT failed: E_OUTOFMEMORY",
    ),
    _w(
        "node",
        "nodejs/node:deps/v8/src/utils/utils.h (V8::FatalProcessOutOfMemory)",
        "FATAL ERROR: %s Allocation failed - JavaScript heap out of memory",
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
    ),
    _w(
        "go",
        "golang/go:src/runtime/malloc.go (throw)",
        "runtime: out of memory",
        "fatal error: runtime: out of memory",
    ),
    _w(
        "java",
        "openjdk/jdk:src/hotspot/share/memory/universe.cpp",
        "java.lang.OutOfMemoryError: %s",
        'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
    ),
    _w(
        "chinese",
        "chinese UIs' wrappers (e.g. lllyasviel/Fooocus zh locale, ModelScope/FunASR messages)",
        "显存不足",
        "错误：CUDA 显存不足，请减小图片尺寸或批量大小",
    ),
    _w(
        "chinese",
        "chinese UIs' wrappers (system RAM)",
        "内存不足",
        "加载模型失败：内存不足（需要 16.0 GB，可用 7.5 GB）",
    ),
    _w(
        "chinese",
        "chinese UIs' wrappers",
        "显存溢出",
        "推理失败: 显存溢出 (OOM)，请降低分辨率",
    ),
)

#: Every harvested wording, family by family.
WORDINGS: tuple[Wording, ...] = _TORCH + _CUDA + _GGML_W + _SERVING + _FRAMEWORKS + _OS

#: Recognised as the runtime's own message, but not a lack of device memory (cause ``unknown``).
NOT_CAPACITY: tuple[Wording, ...] = (
    _w(
        "triton",
        "triton-lang/triton:python/triton/runtime/errors.py (OutOfResources)",
        "out of resource: %s, Required: %d, Hardware limit: %d. Reducing block sizes or "
        "`num_stages` may help.",
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
        "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.",
    ),
)

#: Texts with the same words that no runtime prints on a failed allocation.
NEAR_MISSES: tuple[str, ...] = (
    "Memory access fault by GPU node-1 (Agent handle: 0x55) on address 0x7f. Reason: Page not "
    "present or supervisor privilege.",
    "CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.",
    "RuntimeError: CUDA error: device-side assert triggered",
    "ggml_vulkan: Found 1 Vulkan devices: allocateMemory supported",
    "INFO: kernel: process 4321 (python) exited normally",
    "显存占用：10.2 GB / 24 GB",
    "内存使用正常",
    "The paging file size is managed automatically",
    "Not enough arguments for format string",
    "CL_DEVICE_MAX_MEM_ALLOC_SIZE: 4294959104",
    "hipMemGetInfo: free 20.1 GiB of 24.0 GiB",
    "Killed 3 zombie workers after timeout",
)

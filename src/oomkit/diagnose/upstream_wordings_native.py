"""Native C++/CUDA libraries' check-macro OOM wordings (parse_native_cuda; docpost23, heldout47).

Each entry is the library's own format with the file that prints it; the near misses name the same
macros without a failure. Checked by ``tests/test_doctor_upstream_wordings.py`` with the rest.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["NATIVE", "NATIVE_NEAR_MISSES"]

NATIVE: tuple[Wording, ...] = (
    _w(
        "open3d",
        "isl-org/Open3D:cpp/open3d/core/CUDAUtils.cpp __OPEN3D_CUDA_CHECK (utility::LogError)",
        "[Open3D Error] (%s) %s:%d: %s:%d CUDA runtime error: %s",
        "RuntimeError: [Open3D Error] (void open3d::core::__OPEN3D_CUDA_CHECK(cudaError_t, const "
        "char*, int)) /root/Open3D/cpp/open3d/core/CUDAUtils.cpp:310: /root/Open3D/cpp/open3d/"
        "core/MemoryManagerCUDA.cpp:25 CUDA runtime error: out of memory",
    ),
    _w(
        "tiny-cuda-nn",
        "NVlabs/tiny-cuda-nn:include/tiny-cuda-nn/gpu_memory.h GPUMemory::resize around "
        "CUDA_CHECK_THROW (common.h: '{}:{} {} failed with error {}')",
        "Could not allocate memory: %s:%d %s failed with error %s",
        "ERROR    Uncaught exception: Could not allocate memory: /src/instant-ngp/dependencies/"
        "tiny-cuda-nn/include/tiny-cuda-nn/gpu_memory.h:112 cudaMalloc(&rawptr, "
        "n_bytes+DEBUG_GUARD_SIZE*2) failed with error out of memory",
    ),
    _w(
        "cuda",
        "CUDA SDK cutil_inline_runtime.h __cudaSafeCall (copied into InfiniTAM "
        "ORUtils/CUDADefines.h)",
        "%s(%i) : cudaSafeCall() Runtime API error : %s.",
        "ORUtils/MemoryBlock.h(217) : cudaSafeCall() Runtime API error : out of memory.",
    ),
    _w(
        "cuda",
        "CUDA SDK cutil_inline_runtime.h __cudaSafeCall (later SDKs)",
        "cudaSafeCall() Runtime API error in file <%s>, line %i : %s.",
        "cudaSafeCall() Runtime API error in file <kernel.cu>, line 88 : out of memory.",
    ),
    _w(
        "torch7",
        "torch/cutorch:lib/THC/generic/THCStorage.cu THError('out of memory') (Torch7's THError "
        "appends ' at <file>:<line>')",
        "out of memory at %s:%d",
        "out of memory at /home/u/torch/extra/cutorch/lib/THC/generic/THCStorage.cu:40",
    ),
    _w(
        "directml",
        "microsoft torch-directml (closed source) torch_directml/csrc/engine/"
        "dml_heap_allocator.cc, quoted in lshqqytiger/stable-diffusion-webui-amdgpu#174",
        "DML allocator out of memory!",
        "[W D:\\a\\_work\\1\\s\\pytorch-directml-plugin\\torch_directml\\csrc\\engine\\"
        "dml_heap_allocator.cc:120] DML allocator out of memory!",
    ),
    _w(
        "thrust",
        "NVIDIA/cccl thrust/system/cuda/detail/util.h throw_on_error (system_error: '<algo> "
        "failed: ' + cuda_category().message: '<cudaGetErrorName>: <cudaGetErrorString>')",
        "%s failed: %s: %s",
        "terminate called after throwing an instance of 'thrust::system::system_error'\n"
        "  what():  parallel_for failed: cudaErrorMemoryAllocation: out of memory",
    ),
    _w(
        "thrust",
        "NVIDIA/cccl thrust/system/cuda/detail/malloc_and_free.h (bad_alloc(cuda_category()"
        ".message(status)); thrust's bad_alloc prefixes 'std::bad_alloc: ')",
        "std::bad_alloc: %s: %s",
        "terminate called after throwing an instance of 'thrust::system::detail::bad_alloc'\n"
        "  what():  std::bad_alloc: cudaErrorMemoryAllocation: out of memory",
    ),
    _w(
        "cupy",
        "cupy/cupy:cupy_backends/cuda/api/runtime.pyx CUDARuntimeError ('%s: %s' of "
        "cudaGetErrorName and cudaGetErrorString)",
        "CUDARuntimeError: %s: %s",
        "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorMemoryAllocation: out of memory",
    ),
)

NATIVE_NEAR_MISSES: tuple[str, ...] = (
    "[Open3D Error] (void open3d::core::__OPEN3D_CUDA_CHECK) CUDAUtils.cpp:310: CUDA runtime "
    "error: invalid device ordinal",
    "cudaSafeCall() Runtime API error : CUDA driver version is insufficient for CUDA runtime "
    "version.",
    "gpu_memory.h:112 cudaMalloc(&rawptr, n) failed with error invalid argument",
    "inconsistent tensor size at /home/u/torch/extra/cutorch/lib/THC/generic/THCTensorCopy.c:18",
    "parallel_for failed: cudaErrorInvalidDeviceFunction: invalid device function",
    "Memory layout of the KV cache follows the model's attention heads.",
)

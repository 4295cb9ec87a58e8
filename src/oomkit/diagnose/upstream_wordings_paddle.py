"""Upstream wordings added by docpost24 (issue 9, heldout48-49): PaddlePaddle's OOM sentence on
its other places (Kunlun XPU, Ascend NPU), the XPU API's workspace status, and faiss 1.x's
``cudaMalloc`` assertion.

Part of :mod:`oomkit.diagnose.upstream_wordings`. Recognised by ``parse_families`` (Paddle's
sentence, sizes in Paddle's 1024-based units), ``parse_accel`` (the XPU status) and
``parse_libs`` (faiss). ``PADDLE_NEAR_MISSES`` are the same names where nothing ran short.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["PADDLE", "PADDLE_NEAR_MISSES"]

_GIB = 1024**3
_MIB = 1024**2

PADDLE: tuple[Wording, ...] = (
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/fluid/memory/allocation/xpu_allocator.cc (XPUAllocator::"
        "AllocateImpl, PADDLE_THROW_BAD_ALLOC)",
        "Out of memory error on XPU %d. Cannot allocate %s memory on XPU %d.",
        "ResourceExhaustedError: \n\nOut of memory error on XPU 0. Cannot allocate 1.500000GB "
        "memory on XPU 0.",
        req=int(1.5 * _GIB),
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/fluid/operators (XPU kernels' XPU_MALLOC, no device index)",
        "Out of memory error on XPU, Cannot allocate %s memory on XPU.",
        "ResourceExhaustedError: Out of memory error on XPU, Cannot allocate 256.000000MB memory "
        "on XPU. Please check whether there is any other process using XPU.",
        req=256 * _MIB,
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/fluid/memory/detail/system_allocator.cc (NPUAllocator::Alloc)",
        "Out of memory error on NPU %d. Cannot allocate %s memory on NPU %d, available memory is "
        "only %s.",
        "ResourceExhaustedError: Out of memory error on NPU 0. Cannot allocate 2.000000GB memory "
        "on NPU 0, available memory is only 1.000000GB.",
        req=2 * _GIB,
        free=_GIB,
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/fluid/platform/xpu/xpu_header.h (XPUAPIErrorMsg, "
        "NO_ENOUGH_WORKSPACE = 3)",
        "XPU %s kernel return wrong value[%d %s]",
        "ExternalError: XPU conv kernel return wrong value[3 xpu api no enough workspace]",
    ),
    _w(
        "faiss",
        "facebookresearch/faiss:gpu/utils/MemorySpace.cpp (1.0-1.3: FAISS_ASSERT_FMT(cudaMalloc(p,"
        " size) == cudaSuccess, ...))",
        "Faiss assertion 'cudaMalloc(p, size) == cudaSuccess' failed in ... details: Failed to "
        "cudaMalloc %zu bytes",
        "Faiss assertion 'cudaMalloc(p, size) == cudaSuccess' failed in void faiss::gpu::"
        "allocMemorySpace(faiss::gpu::MemorySpace, void**, size_t) at utils/MemorySpace.cpp:20; "
        "details: Failed to cudaMalloc 4000000000 bytes\nAborted",
        req=4_000_000_000,
    ),
)

PADDLE_NEAR_MISSES: tuple[str, ...] = (
    # the XPU API's other statuses (xpu_header.h): not memory
    "ExternalError: XPU conv kernel return wrong value[1 xpu api invalid param]",
    "ExternalError: XPU conv kernel return wrong value[2 xpu api runtime error]",
    # faiss's allocation entry point named in a symbol list, and a cudaMalloc that succeeded
    "nm libfaiss.so | grep allocMemorySpace",
    "cudaMalloc(p, size) == cudaSuccess",
)

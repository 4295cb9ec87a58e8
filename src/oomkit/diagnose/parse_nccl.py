"""NCCL's own report of a CUDA allocation that failed (revfix19d).

NCCL wraps every CUDA call in ``CUDACHECK`` (``src/include/checks.h``): on an error it prints
``WARN("Cuda failure %d '%s'", err, cudaGetErrorString(err))`` (releases before 2.19 print
``Cuda failure '%s'`` without the number) and returns ``ncclUnhandledCudaError``, which PyTorch
raises as ``ncclUnhandledCudaError: Call to CUDA function failed. ... Last error: Cuda failure 2
'out of memory'`` (``ProcessGroupNCCL``, ``getNcclErrorDetailStr``). Its allocator
(``src/include/alloc.h``, ``ncclCudaCalloc``) adds ``NCCL WARN Failed to CUDA calloc %ld bytes``
with the size. Real logs: NVIDIA/nccl#1235 (``include/alloc.h:178 NCCL WARN Cuda failure 'out of
memory'`` then ``Failed to CUDA calloc 6291456 bytes``), NVIDIA/TensorRT-LLM#1670 (``enqueue.cc:43
NCCL WARN Cuda failure 'out of memory'``), pytorch/pytorch#152302.

Only ``cudaErrorMemoryAllocation`` is memory: error 2, "out of memory". ``Cuda failure 700 'an
illegal memory access was encountered'``, ``Cuda failure 1 'invalid argument'`` and the rest are
not, and are not read. Every pattern is behind literal needles, bounded (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import on_cleaned, scan_events
from oomkit.diagnose.text import Lines, needles_re
from oomkit.validate import MAX_BYTES

__all__ = ["parse_nccl"]

#: CUDACHECK's line: the error number (2 = cudaErrorMemoryAllocation) is optional (pre-2.19)
_FAILURE = re.compile(r"\bCuda failure (?:(?P<code>\d{1,4}) )?'out of memory'")
#: ncclCudaCalloc's line, with the size it asked for
_CALLOC = re.compile(r"NCCL WARN Failed to CUDA calloc (?P<size>\d{1,20}) bytes")
_NEEDLES = needles_re(("Cuda failure", "Failed to CUDA calloc"))


def _event(line: str, n: int) -> OomEvent | None:
    m = _CALLOC.search(line)
    size = None
    if m is not None:
        size = int(m["size"])
    else:
        m = _FAILURE.search(line)
        if m is None or (m["code"] is not None and m["code"] != "2"):
            return None
    return OomEvent(
        runtime="nccl",
        kind="gpu_alloc_failed",
        format="nccl_cuda_oom",
        line=n,
        text=line[:800],
        detail="ncclCudaCalloc" if m.re is _CALLOC else "CUDACHECK",
        requested_bytes=size if size is not None and 0 < size <= MAX_BYTES else None,
    )


def parse_nccl(lines: Lines) -> list[OomEvent]:
    """NCCL's out-of-memory lines (module docstring), log order; the calloc line (with the size)
    first when both are there."""
    events = scan_events(lines, _NEEDLES, on_cleaned(_event))
    sized = [e for e in events if e.requested_bytes is not None]
    return sized[:1] + [e for e in events if e.requested_bytes is None][:1]

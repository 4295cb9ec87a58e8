"""A full shared-memory tmpfs (``/dev/shm``) as the runtimes report it (issue 9, docrec32).

``/dev/shm`` is RAM-backed and capped (64 MiB in a default Docker container, unless ``--shm-size``
or ``--ipc=host``); a write past the cap fails with ``ENOSPC`` ("No space left on device", errno
28), not with an out-of-memory word. Two runtimes print it in their own words:

* PyTorch's ``MapAllocator`` (``aten/src/ATen/MapAllocator.cpp``), which backs every tensor that
  DataLoader workers or ``torch.multiprocessing`` share: after ``ftruncate`` it writes one byte
  at the end of the segment and reports ``unable to write to file <%s>: %s (%d)`` with
  ``strerror(errno)`` (``unable to resize`` / ``unable to stretch file <%s> to the right size``
  before it). The segment is named ``/torch_<pid>_<random>`` (``torch/multiprocessing/
  reductions.py``); a file elsewhere is a disk (``UntypedStorage.from_file``), not memory.
* NCCL's ``ncclShmOpen`` (``src/misc/shmutils.cc``): ``Error while creating shared memory segment
  %s (size %ld), error: %s (%d)`` for the intra-node transport's ``/dev/shm/nccl-*`` segments,
  and older releases' ``Call to posix_fallocate failed : No space left on device`` before it.

Only ``ENOSPC`` (or ``ENOMEM``) is read: a permission or name error on the same lines is not
memory. Every pattern is behind literal needles and has only bounded quantifiers (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import on_cleaned, scan_events
from oomkit.diagnose.text import Lines, needles_re
from oomkit.validate import MAX_BYTES

__all__ = ["parse_shm"]

_FULL = r"(?:No space left on device|Cannot allocate memory)"
_TORCH = re.compile(
    r"unable to (?:write to|resize|stretch) file <(?P<file>/?(?:dev/shm/)?torch_[\w.-]{1,80})>"
    rf"(?: to the right size)?: {_FULL}"
)
_NCCL = re.compile(
    r"Error while creating shared memory segment (?P<path>\S{1,200}) \(size (?P<size>\d{1,20})\)"
    rf", error: {_FULL}|"
    rf"NCCL WARN Call to posix_fallocate failed ?: {_FULL}"
)
_NEEDLES = needles_re(("No space left on device", "Cannot allocate memory"))


def _event(line: str, n: int) -> OomEvent | None:
    m = _TORCH.search(line)
    detail, size = "pytorch", None
    if m is None:
        m = _NCCL.search(line)
        if m is None:
            return None
        detail, size = "nccl", m["size"]
        if size and int(size) > MAX_BYTES:  # no segment is that large: refuse the figure
            size = None
    return OomEvent(
        runtime="linux",
        kind="host_alloc_failed",
        format="shm_full",
        line=n,
        text=line[:800],
        detail=detail,
        requested_bytes=int(size) if size else None,
    )


def parse_shm(lines: Lines) -> list[OomEvent]:
    """Events of a full ``/dev/shm`` (PyTorch's shared tensors, NCCL's segments), log order."""
    return scan_events(lines, _NEEDLES, on_cleaned(_event))

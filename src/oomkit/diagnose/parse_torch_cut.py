"""The numbers a PyTorch allocator message still carries when the paste cuts it short.

``DeviceCachingAllocator::malloc`` (c10/cuda/CUDACachingAllocator.cpp, PyTorch >= 2.1) writes
its OOM message in one sentence per fact::

    CUDA out of memory. Tried to allocate 196.00 MiB. GPU 0 has a total capacity of 79.11 GiB
    of which 29.56 MiB is free. Including non-PyTorch memory, this process has ... Of the
    allocated memory ...

(2.1 spelled it ``total capacty``, fixed in 2.2; upstream_wordings_history.py). A paste that
stops after the second sentence (an issue's quoted excerpt, a log line cut at the terminal's
width) misses the allocated/reserved figures the full parser needs, and was read as the request
alone. The device's capacity and what was free are still there, and they are what says whether
the request is small (the device was full before it) or large (the request itself does not
fit): the base rate's evidence class (:func:`oomkit.diagnose.priors.evidence_of`) and the
rules read them (doccause17).

>>> ev = partial_event(
...     "CUDA out of memory. Tried to allocate 196.00 MiB. GPU 0 has a total capacty of "
...     "79.11 GiB of which 29.56 MiB is free", 1)
>>> ev.requested_bytes, ev.device, ev.total_bytes, ev.free_bytes
(205520896, 0, 84943715697, 30995907)
>>> partial_event("CUDA out of memory.", 3).total_bytes is None
True
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.text import size_of, sz

__all__ = ["BARE", "partial_event"]

_RT = "pytorch"
#: PyTorch's OOM head, with the request where it follows (a paste may end right after "CUDA out
#: of memory", without the period); parse_torch recognises the cut message by it
BARE = re.compile(
    r"(?P<backend>CUDA|HIP|XPU|MUSA|NPU|MLU) out of memory(?:\.(?: Tried to allocate "
    + sz("req")
    + r")?|\s{0,4}$)"
)
# the second sentence, right after the request; "of which ... is free" may be cut off too
_CAPACITY = re.compile(
    r"\.? GPU (?P<dev>\d{1,3}) has a total capac(?:ity|ty) of "
    + sz("total")
    + r"(?: of which "
    + sz("free")
    + r" is free)?"
)
# no device holds an EiB: larger figures are corrupted text (parse_torch._NO_LIMIT_BYTES)
_MAX_BYTES = 1 << 60


def _bytes(m: re.Match[str] | None, name: str) -> int | None:
    """A size the message printed, or ``None`` when absent or impossible (negative, zero for a
    request or a capacity, above 2^60 bytes)."""
    if m is None:
        return None
    v = size_of(m, name, _RT)
    if v is None or v < 0 or v > _MAX_BYTES or (v == 0 and name != "free"):
        return None
    return v


def partial_event(w: str, line: int) -> OomEvent:
    """The event of a PyTorch OOM message cut short: the request, and the device's capacity and
    free memory where the second sentence survived (free above the capacity is dropped)."""
    m = BARE.search(w)
    start = 0 if m is None else m.start()
    cap = None if m is None or m.group("req") is None else _CAPACITY.match(w, m.end())
    total = _bytes(cap, "total")
    free = _bytes(cap, "free")
    if total is None or (free is not None and free > total):
        free = None
    return OomEvent(
        runtime=_RT,
        kind=(m.group("backend") if m else "CUDA").lower() + "_oom",
        format="pytorch_partial",
        line=line,
        text=w[start : start + 1200],
        device=None if cap is None else int(cap.group("dev")),
        requested_bytes=_bytes(m, "req") if m is not None and m.group("req") else None,
        total_bytes=total,
        free_bytes=free,
    )

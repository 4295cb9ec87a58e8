"""Pre-2020 frameworks' own OOM wordings and a few host guards (issue 9, heldout24).

Read when no richer parser found an event, before the keyword fallback (``parse_generic``), so
that a Theano, darknet or Caffe2 message becomes that framework's event with the numbers it
states instead of a bare keyword hit. Every family is the framework's own message, cited from its
source (the table is :mod:`oomkit.diagnose.upstream_wordings_legacy`):

* Theano's old CUDA backend (``Theano/Theano:theano/sandbox/cuda/cuda_ndarray.cu``,
  ``device_malloc``): ``Error allocating %llu bytes of device memory (%s).`` with ``Driver report
  %llu bytes free and %llu bytes total`` (``cudaMemGetInfo`` after the failed ``cudaMalloc``);
  some builds print the CUDA error string in angle brackets (``< out of memory >``). The request,
  the free and the total memory are read in bytes.
* darknet's ``check_error`` (``pjreddie/darknet:src/cuda.c``; ``AlexeyAB/darknet:src/
  dark_cuda.c``): ``CUDA Error: %s`` and ``CUDA Error Prev: %s`` with ``cudaGetErrorString``;
  ``out of memory`` is ``cudaErrorMemoryAllocation`` from ``cuda_make_array``'s ``cudaMalloc``
  (AlexeyAB's ``check_error_extended`` adds ``CUDA status Error: file: %s() : line: %d``).
* glog / c10 checks of a CUDA call against ``cudaSuccess`` with CUDA error 2
  (``cudaErrorMemoryAllocation``) as the left value: Caffe2's ``CAFFE_ENFORCE_EQ(error,
  cudaSuccess)`` in ``caffe2/core/context_gpu.cu`` (``[enforce fail at context_gpu.cu:N] error ==
  cudaSuccess. 2 vs 0. Error at: ...``), Caffe's ``CHECK_EQ`` (``(2 vs. 0)``) and OneFlow's
  ``Check failed: (...) == (cudaSuccess) (2 vs 0)``, read even where the paste drops the error
  string (titles, a cut line).
* ``[Errno 12]``: ``ENOMEM`` on Linux, macOS and the Windows CRT alike (``errno.h``), whatever
  text follows (pastes cut ``Cannot allocate memory`` short; the full wording stays the keyword
  fallback's).
* gperftools' ``tcmalloc: large alloc %zu bytes == (nil) @`` (``gperftools/gperftools:src/
  tcmalloc.cc`` ``ReportLargeAlloc``, printed with the pointer the allocation returned: ``(nil)``
  is a failed host allocation of that size; a non-null pointer is only a report).
* imageio's host-RAM guard (``imageio/imageio:imageio/core/functions.py`` ``mimread``):
  ``imageio.mimread() has read over %sB of image data.`` / ``Stopped to avoid memory problems.``
* Ollama's KV cache (``ollama/ollama:kvcache/causal.go`` ``ErrKvCacheFull = errors.New("could not
  find a kv cache slot")``): the same full-context condition as llama.cpp's ``llama_decode``
  return 1, read as that event.

Every pattern is behind literal needles and has only bounded quantifiers (linear time).
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import on_cleaned, scan_events
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["parse_legacy"]

_THEANO = re.compile(
    r"Error allocating (?P<req>\d{1,20}) bytes of device memory ?[(<] ?(?P<err>[^)>]{1,60}?) ?[)>]"
    r"(?:\.?\s{0,4}Driver report (?P<free>\d{1,20}) bytes free and (?P<total>\d{1,20}) "
    r"bytes total)?"
)
_DARKNET = re.compile(r"\bCUDA Error(?: Prev)?: out of memory\b")
# the left value of a check against cudaSuccess is CUDA error 2: "(2 vs. 0)", "2 vs 0"
_CHECK_2 = re.compile(r"==\s{0,2}\(?cudaSuccess\)?[.:,]?\s{0,3}\(?2 vs\.? 0\b", re.IGNORECASE)
# the full "[Errno 12] Cannot allocate memory" is the keyword fallback's (it reads the prose
# around it); this is the errno where the paste cut or replaced the strerror text
_ERRNO_12 = re.compile(r"\[Errno 12\](?! ?Cannot allocate memory)")
_TCMALLOC_NIL = re.compile(r"tcmalloc ?: large alloc (?P<req>\d{1,20}) bytes ?={1,2} ?\(nil\)")
_IMAGEIO = re.compile(
    r"imageio\.mimread\(\) has read over (?P<n>\d{1,15}(?:\.\d{1,3})?) ?(?P<u>[KMGT]i?B|B)"
    r"|Stopped to avoid memory problems\. Use imageio\.get_reader\(\)"
)
_OLLAMA_KV = re.compile(r"could not find a kv cache slot", re.IGNORECASE)
_NEEDLES = re.compile(
    needles_re(
        (
            "bytes of device memory",
            "CUDA Error",
            "cudaSuccess",
            "[Errno 12]",
            "large alloc",
            "imageio",
            "Stopped to avoid memory problems",
            "kv cache slot",
        )
    ).pattern,
    re.IGNORECASE,
)
_UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _imageio_bytes(m: re.Match[str]) -> int | None:
    if m["n"] is None:
        return None
    unit = m["u"].upper()
    # imageio < 2.5 prints its fixed limit as "256 MiB" (256 * 1024**2); later releases the
    # limit in bytes, "{}B".format(int(nbyte_limit)) (imageio/core/functions.py mimread)
    if unit == "B":
        return int(float(m["n"]))
    scale = 1024 ** ("KMGT".index(unit[0]) + 1) if "I" in unit else _UNITS[unit]
    return round(float(m["n"]) * scale)


def _event(line: str, n: int) -> OomEvent | None:
    m = _THEANO.search(line)
    if m is not None:
        return _ev(
            "theano",
            "gpu_alloc_failed",
            "theano_device_malloc",
            line,
            n,
            requested_bytes=int(m["req"]),
            free_bytes=int(m["free"]) if m["free"] else None,
            total_bytes=int(m["total"]) if m["total"] else None,
            detail=m["err"].strip(),
        )
    if _DARKNET.search(line):
        return _ev("darknet", "gpu_alloc_failed", "darknet_check_error_oom", line, n)
    if _CHECK_2.search(line):
        low = line.lower()
        if "caffe2" in low or "context_gpu" in low:
            return _ev("caffe2", "gpu_alloc_failed", "caffe2_enforce_cuda_error_2", line, n)
        if "caffe" in low or "syncedmem" in low:
            return _ev("caffe", "gpu_alloc_failed", "caffe_check_cuda_error_2", line, n)
        return _ev("cuda", "cuda_error_oom", "check_cuda_error_2", line, n)
    if _ERRNO_12.search(line):
        return _ev("linux", "host_alloc_failed", "errno_12_enomem", line, n, detail="ENOMEM")
    m2 = _TCMALLOC_NIL.search(line)
    if m2 is not None:
        return _ev(
            "linux",
            "host_alloc_failed",
            "tcmalloc_large_alloc_nil",
            line,
            n,
            requested_bytes=int(m2["req"]),
        )
    m3 = _IMAGEIO.search(line)
    if m3 is not None:
        return _ev(
            "imageio",
            "host_alloc_failed",
            "imageio_mimread_memtest",
            line,
            n,
            allowed_bytes=_imageio_bytes(m3),
        )
    if _OLLAMA_KV.search(line):
        return _ev("llama.cpp", "kv_slots_full", "ollama_kv_cache_slot", line, n, stage="kv_full")
    return None


def parse_legacy(lines: Lines) -> list[OomEvent]:
    """Events of the families above, at most one per line, in log order. Never raises."""
    return scan_events(lines, _NEEDLES, on_cleaned(_event))

"""Libraries' and apps' own memory wordings, read when no parser (not even ``parse_recognise``)
found an event, before the keyword fallback. Each names *which* memory ran out, or says that
what looks like an OOM is not one (sources cited per pattern):

* ComfyUI-VideoHelperSuite ``Memory limit hit after loading N frames`` (``videohelpersuite/
  load_video_nodes.py``): the loader caps the decoded frames at ``(psutil.virtual_memory().
  available + psutil.swap_memory().free - 128 MiB) / (width x height x 3 x 0.1)`` and raises
  when the video has more: host RAM, not VRAM.
* detectron2 ``retry_if_cuda_oom`` (``detectron2/utils/memory.py``, copied by mmcv/mmdet's
  ``AvoidCUDAOOM``): after a CUDA OOM and an ``empty_cache()`` retry it logs ``Attempting to
  copy inputs of <func> to CPU due to CUDA OOM``. It wraps per-image box/mask operations
  (``pairwise_iou`` in the matchers, ``paste_masks_in_image``) whose size is the number of
  proposals x ground-truth instances or masks x image pixels: the input, not the weights.
* lmdeploy TurboMind ``\\`session_len\\` truncated to N due to limited KV cache memory``
  (``src/turbomind/engine/engine.cc``): the block pool left after the weights holds fewer tokens
  than the configured session length.
* Triton ``OutOfResources: out of resource: shared memory, Required: N, Hardware limit: M``
  (``triton/runtime/errors.py``): a kernel's tile needs more per-block on-chip memory than the
  GPU's SM offers; a compile-time limit, not device memory.
* ONNX Runtime ``not enough space: expected N, got M`` (``onnxruntime/core/session/
  onnxruntime_c_api.cc`` ``CreateTensorImpl``, ``ORT_INVALID_ARGUMENT``): the caller's buffer is
  smaller than the tensor shape needs; no allocation failed.

* Caffe's ``CUDA_CHECK`` on a ``cudaMalloc`` (``syncedmem.cpp`` ``SyncedMemory::to_gpu``):
  ``Check failed: error == cudaSuccess (2 vs. 0)  out of memory``. A blob's memory is allocated
  lazily, on its first GPU access, and BVLC Caffe keeps every layer's top/bottom blobs (data and
  diff) for the whole net, so the first Forward/Backward allocates activations sized by the data
  layer's ``batch_size``; the weights of Caffe-era nets are a small part of it.

Every pattern is a literal or a bounded repetition: linear time on any line.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import on_cleaned, scan_events
from oomkit.diagnose.sizes import to_int
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["parse_apps"]

_VHS = re.compile(r"Memory limit hit after loading (?P<n>\d{1,9}) frames")
_D2_RETRY = re.compile(
    r"Attempting to copy inputs of (?:<function )?(?P<fn>[\w.]{1,80})[^>]{0,80}>? to CPU due to "
    r"CUDA OOM"
)
_TM_SESSION = re.compile(
    r"`?session_len`? truncated to (?P<n>\d{1,9}) due to limited KV cache memory"
)
_TRITON = re.compile(
    r"out of resource: (?P<what>[\w ]{1,40}), Required: (?P<req>\d{1,12}), "
    r"Hardware limit: (?P<lim>\d{1,12})"
)
_ORT_SPACE = re.compile(r"not enough space: expected (?P<exp>\d{1,20}), got (?P<got>\d{1,20})")
_CAFFE = re.compile(r"Check failed: error == cudaSuccess \(2 vs\. 0\)\s{0,4}out of memory")
_PREFILTER = needles_re(
    (
        "cudaSuccess (2 vs. 0)",
        "Memory limit hit",
        "to CPU due to CUDA OOM",
        "due to limited KV cache memory",
        "out of resource:",
        "not enough space: expected",
    )
)


def _within_limit(m: re.Match[str]) -> str | None:
    """The contradiction of a Triton ``OutOfResources`` whose requirement is within the limit:
    Triton raises it only above the limit (``triton/compiler/compiler.py``,
    ``if self.metadata.shared > max_shared: raise OutOfResources(...)``)."""
    req, lim = to_int(m["req"]), to_int(m["lim"])
    if req is None or lim is None or req > lim:
        return None
    return (
        f"{m['what'].strip()} required {m['req']} is within the hardware limit {m['lim']} "
        "(Triton raises this error only above the limit)"
    )


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _event(line: str, n: int) -> OomEvent | None:
    m = _VHS.search(line)
    if m is not None:
        return _ev(
            "comfyui",
            "host_alloc_failed",
            "vhs_memory_limit_frames",
            line,
            n,
            detail=f"{m['n']} frames",
        )
    m = _D2_RETRY.search(line)
    if m is not None:
        return _ev(
            "pytorch",
            "cuda_oom",
            "detectron2_retry_on_cpu",
            line,
            n,
            detail=m["fn"],
            stage="runtime",
        )
    m = _TM_SESSION.search(line)
    if m is not None:
        return _ev(
            "lmdeploy",
            "kv_capacity",
            "turbomind_session_len_truncated",
            line,
            n,
            kv_capacity_tokens=to_int(m["n"]),
            stage="startup",
        )
    m = _TRITON.search(line)
    if m is not None:
        return _ev(
            "triton",
            "alloc_limit",
            "triton_out_of_resources",
            line,
            n,
            requested_bytes=to_int(m["req"]) if m["what"].strip() == "shared memory" else None,
            detail=f"{m['what'].strip()}: required {m['req']}, limit {m['lim']}",
            inconsistent=_within_limit(m),
        )
    m = _CAFFE.search(line)
    if m is not None:
        return _ev("caffe", "gpu_alloc_failed", "caffe_check_failed_oom", line, n)
    m = _ORT_SPACE.search(line)
    if m is not None:
        return _ev(
            "onnxruntime",
            "buffer_mismatch",
            "onnxruntime_not_enough_space",
            line,
            n,
            detail=f"expected {m['exp']} bytes, got {m['got']}",
        )
    return None


def parse_apps(lines: Lines) -> list[OomEvent]:
    """Events of the wordings in the module docstring (every match, in log order). Never raises.

    The caller runs this only when no other parser found an event.
    """
    return scan_events(lines, _PREFILTER, on_cleaned(_event))

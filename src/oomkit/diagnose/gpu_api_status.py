"""GPU APIs' own status lines in apps built on ncnn (Vulkan) and on Metal (issue 9, heldout51).

Read only where no other parser found an event (``parse_log``'s fallback chain, before the
keyword fallback), and analysed here too (``rules._analyze``, before ``rules_libs``):

* **ncnn's Vulkan allocator**: ``NCNN_LOGE("vkAllocateMemory failed %d", ret)`` with the
  ``VkResult`` of the call (``Tencent/ncnn:src/allocator.cpp``, ``VkAllocator::
  allocate_memory`` / ``allocate_dedicated_memory``; the same line in the ncnn-vulkan apps,
  e.g. realcugan-ncnn-vulkan). The code decides: ``VK_ERROR_OUT_OF_HOST_MEMORY = -1`` and
  ``VK_ERROR_OUT_OF_DEVICE_MEMORY = -2`` (Khronos ``vulkan_core.h`` ``VkResult``); any other
  code is not a lack of memory and is not read. The word between the call and the code is not
  read (issue titles retype it), the call name and the code are.
* **ncnn's compute submit**: ``NCNN_LOGE("vkQueueSubmit failed %d", ret)``
  (``Tencent/ncnn:src/command.cpp``, ``VkCompute::submit_and_wait``), read only with
  ``VK_ERROR_DEVICE_LOST = -4`` or with no code at all (apps such as chaiNNer print the line
  without it). A lost device is not an allocation failure: Windows' TDR watchdog resets a GPU
  whose dispatch runs past ~2 s, and the ncnn upscalers' dispatch grows with the tile (their
  ``-t tile-size``); the cause stays open and the lever is the tile.
* **Metal's debug layer**: ``-[MTLDebugDevice newBufferWith...:length:options:...]: failed
  assertion `Buffer Validation newBufferWith*:length 0x%x must not exceed %d MB.``
  (Apple's API validation, on with a debug scheme; the limit is the device's
  ``maxBufferLength``): one buffer above the per-buffer limit (``buffer_limit``), the length in
  hexadecimal bytes and the limit in MB (MiB: Metal reports ``maxBufferLength`` in bytes, the
  assertion divides by 1024 * 1024).
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic, size_text
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.sizes import to_hex_int, to_int
from oomkit.diagnose.text import Lines, needles_re
from oomkit.units import MiB

__all__ = ["analyze_gpu_api_status", "parse_gpu_api_status"]

_PREFILTER = needles_re(("vkAllocateMemory", "vkQueueSubmit", "must not exceed"))
# ncnn prints "vkAllocateMemory failed %d": the call, one word, the VkResult
_VK_ALLOC = re.compile(r"\bvkAllocateMemory [A-Za-z]{4,8} (?P<code>-?\d{1,11})\b")
# "vkQueueSubmit failed %d"; chaiNNer's wrapper ends the line after "failed"
_VK_SUBMIT = re.compile(r"\bvkQueueSubmit failed(?: (?P<code>-?\d{1,11})\b|\s*$)")
_MTL_LENGTH = re.compile(
    r"newBufferWith\*?:length (?P<x>0x[0-9A-Fa-f]{1,16}|\d{1,20}) must not exceed "
    r"(?P<m>\d{1,9}) MB"
)
_VK_OUT_OF_HOST = -1
_VK_OUT_OF_DEVICE = -2
_VK_DEVICE_LOST = -4
_HOST_DETAIL = "VK_ERROR_OUT_OF_HOST_MEMORY"


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _event(lines: Lines, i: int) -> OomEvent | None:
    line = lines.cleaned(i)
    n = lines.number[i]
    m = _VK_ALLOC.search(line)
    if m is not None:
        code = to_int(m["code"])
        if code == _VK_OUT_OF_DEVICE:
            return _ev("ncnn", "gpu_alloc_failed", "ncnn_vk_allocate_memory", line, n)
        if code == _VK_OUT_OF_HOST:
            return _ev(
                "ncnn", "gpu_alloc_failed", "ncnn_vk_allocate_memory", line, n, detail=_HOST_DETAIL
            )
        return None
    m = _VK_SUBMIT.search(line)
    if m is not None:
        if m["code"] is None or to_int(m["code"]) == _VK_DEVICE_LOST:
            return _ev("ncnn", "device_lost", "ncnn_vk_queue_submit_lost", line, n)
        return None
    m = _MTL_LENGTH.search(line)
    if m is not None:
        x = m["x"]
        req = to_hex_int(x) if x.startswith("0x") else to_int(x)
        cap = to_int(m["m"])
        return _ev(
            "metal",
            "buffer_limit",
            "metal_debug_buffer_length",
            line,
            n,
            requested_bytes=req,
            allowed_bytes=None if cap is None else cap * MiB,
            detail="Metal's maxBufferLength",
        )
    return None


def parse_gpu_api_status(lines: Lines) -> list[OomEvent]:
    """Events of the status lines in the module docstring (log order; one per failure)."""
    return scan_events(lines, _PREFILTER, _event, repeat=lambda a, b: a.format == b.format)


_TILE = generic(
    "Use a smaller tile size or input resolution",
    "ncnn apps process the image in tiles; each tile's blobs (and its dispatch time) grow with "
    "its area.",
    ("-t 100   # realsr/waifu2x/realcugan-ncnn-vulkan tile size", "a smaller input resolution"),
)


def analyze_gpu_api_status(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis of this module's events, or ``None`` for other events."""
    del ctx  # each line is read on its own
    fmt = e.format or ""
    if fmt == "ncnn_vk_allocate_memory" and e.detail == _HOST_DETAIL:
        return Analysis(
            cause="batch_or_activations",
            confidence=0.35,
            explanation="ncnn's Vulkan allocator got VK_ERROR_OUT_OF_HOST_MEMORY (-1) from "
            "vkAllocateMemory: host-visible memory ran out. ncnn allocates that memory for its "
            "staging buffers (VkStagingAllocator), which carry the input image or tile onto "
            "the GPU and the result back, so they grow with the image and tile size; the "
            "weights are uploaded once at load.",
            fixes=(_TILE,),
        )
    if fmt == "ncnn_vk_allocate_memory":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.4,
            explanation="ncnn's Vulkan allocator got VK_ERROR_OUT_OF_DEVICE_MEMORY (-2) from "
            "vkAllocateMemory: GPU memory ran out. ncnn uploads the weights once at load; the "
            "blob allocator then takes memory for each layer's feature maps of the image or "
            "tile in flight, which is what grows with the input. If it fails at load, the model "
            "itself (or another program's use) is the reason.",
            fixes=(_TILE,),
        )
    if fmt == "ncnn_vk_queue_submit_lost":
        return Analysis(
            cause="unknown",
            confidence=0.4,
            open_question=False,
            explanation="ncnn's vkQueueSubmit failed with the device lost (VK_ERROR_DEVICE_LOST, "
            "-4, or no code printed): not an allocation failure. The driver reset the GPU; on "
            "Windows the TDR watchdog does that to a dispatch running past ~2 s, and a driver "
            "that runs out of video memory mid-dispatch can too. Both shrink with the tile.",
            fixes=(_TILE,),
        )
    if fmt == "metal_debug_buffer_length":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.45,
            explanation=f"Metal's debug layer refused one buffer of "
            f"{size_text(e.requested_bytes)}, above the largest buffer this device allows "
            f"({size_text(e.allowed_bytes)}, its maxBufferLength): a per-buffer limit, not the "
            "total memory. One tensor (or one weight buffer) exceeds it.",
            fixes=(
                generic(
                    "Make the largest buffer smaller",
                    "a smaller image or batch (the activation), or weights split into several "
                    "buffers.",
                    ("a smaller output resolution", "batch 1"),
                ),
            ),
        )
    return None

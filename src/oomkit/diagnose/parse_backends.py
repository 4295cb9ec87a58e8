"""GPU backends' own one-line allocation failures (issue 9, heldout7), read when nothing richer did.

The dispatcher runs this module after ``parse_frameworks`` and before ``parse_apps`` and the
keyword fallback, only when no other parser found an event. Each wording is the backend's own,
and the one number it carries (the size of the buffer that failed) is kept:

* PyTorch DirectML (``torch-directml``, used by the AMD/Intel forks of the Stable Diffusion
  web UIs on Windows): ``Could not allocate tensor with N bytes. There is not enough GPU video
  memory available!``. The plug-in is closed source; the wording is the one ComfyUI's
  ``comfy/model_management.py`` ``is_oom`` and its tests treat as an OOM, and the one quoted
  verbatim in lshqqytiger/stable-diffusion-webui-amdgpu issues 38, 291 and 373.
* ggml's Vulkan backend: ``ggml_vulkan: Memory allocation of size N failed.``, printed by
  ``ggml_vk_create_buffer_check`` (``ggml/src/ggml-vulkan/ggml-vulkan.cpp``) before it rethrows
  the ``vk::SystemError`` (whose text, ``ErrorOutOfDeviceMemory`` or ``ErrorOutOfHostMemory``,
  follows on the next line and is read by the Vulkan parsers when present).

Every pattern is gated on a literal and bounded: linear time on any line.
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.sizes import to_int
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["parse_backends"]

_DML = re.compile(
    r"Could not allocate tensor with (?P<x>\d{1,20}) bytes\. ?"
    r"There is not enough GPU video memory available"
)
_VK = re.compile(r"ggml_vulkan: (?:Device )?[Mm]emory allocation of size (?P<x>\d{1,20}) failed")
_PREFILTER = needles_re(("not enough GPU video memory", "ggml_vulkan: "))


def _event(line: str, n: int) -> OomEvent | None:
    m = _DML.search(line) if "video memory" in line else None
    if m is not None:
        return OomEvent(
            runtime="directml",
            kind="gpu_alloc_failed",
            format="directml_alloc_tensor_failed",
            line=n,
            text=line[:600],
            requested_bytes=to_int(m["x"]),
        )
    m2 = _VK.search(line) if "allocation of size" in line else None
    if m2 is not None:
        return OomEvent(
            runtime="llama.cpp",
            kind="gpu_alloc_failed",
            format="ggml_vulkan_alloc_failed",
            line=n,
            text=line[:600],
            requested_bytes=to_int(m2["x"]),
        )
    return None


def parse_backends(lines: Lines) -> list[OomEvent]:
    """Events of the wordings in the module docstring (every match, in log order). Never raises.

    The caller runs this only when no other parser found an event.
    """
    events: list[OomEvent] = []
    for i, raw in enumerate(lines.text):
        if not _PREFILTER.search(raw):
            continue
        ev = _event(lines.cleaned(i), lines.number[i])
        if ev is not None:
            events.append(ev)
    return events

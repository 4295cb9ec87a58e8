"""Every fix line in the terms of the device the OOM message is on (Apple MPS, Intel XPU; pure).

The fix templates are written for CUDA (``torch.autocast('cuda', ...)``,
``torch.cuda.empty_cache()``, ``PYTORCH_CUDA_ALLOC_CONF``, ``.cuda()``). On another device
those lines do nothing or fail: :func:`on_device` rewrites them for the message's device, drops
a line that device has no form of, and drops a fix left with no line (as
:func:`oomkit.diagnose.runtime_lines.route` does for a runtime).

What each device has, read in PyTorch's own sources:

- MPS: ``torch/mps/__init__.py`` exports ``empty_cache``, ``synchronize``,
  ``set_per_process_memory_fraction``, ``current_allocated_memory`` (tensors),
  ``driver_allocated_memory`` (the pool and MPSGraph's own buffers) and
  ``recommended_max_memory``; there is no peak counter, no ``mem_get_info``, no memory
  snapshot and no ``CUDA_VISIBLE_DEVICES``. Its allocator reads
  ``PYTORCH_MPS_HIGH_WATERMARK_RATIO`` / ``PYTORCH_MPS_LOW_WATERMARK_RATIO``
  (aten/src/ATen/mps/MPSAllocator.mm), never ``PYTORCH_CUDA_ALLOC_CONF``.
  Autocast: ``torch/amp/autocast_mode.py`` ``autocast.__init__`` takes ``device_type='mps'``
  with float16 and bfloat16 (torch 2.5+; torch 2.3's file has no MPS branch), and disables
  itself for bfloat16 below macOS 14 ("In MPS autocast, but the target dtype torch.bfloat16 is
  not supported on macOS versions below 14"): float16 is the form every Mac takes.
- XPU: ``torch/xpu/memory.py`` has ``empty_cache``, ``memory_allocated``,
  ``max_memory_allocated``, ``memory_reserved``, ``max_memory_reserved`` and
  ``reset_peak_memory_stats`` (``torch.xpu`` also ``synchronize``, ``set_device``,
  ``current_device``); ``autocast_mode.py`` takes ``device_type='xpu'`` with bfloat16 and
  float16. Level Zero picks devices with ``ZE_AFFINITY_MASK``.

>>> from oomkit.diagnose.fixes import Fix
>>> line = "with torch.autocast('cuda', dtype=torch.bfloat16): ..."
>>> f = Fix(title="bf16", why="", commands=(line,), expected_saving_bytes=None)
>>> on_device((f,), "mps")[0].commands
("with torch.autocast('mps', dtype=torch.float16): ...   # bf16 needs macOS 14+",)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import Fix

__all__ = ["device_of", "on_device"]

#: the event kinds (``<backend>_oom``, parse_torch) whose device is not CUDA's API
_KINDS = {"mps_oom": "mps", "xpu_oom": "xpu"}

#: ``torch.cuda.<name>`` -> the device's call (None: the device has none; the line is dropped)
_MPS_CALLS: dict[str, str | None] = {
    "empty_cache": "torch.mps.empty_cache",
    "synchronize": "torch.mps.synchronize",
    "set_per_process_memory_fraction": "torch.mps.set_per_process_memory_fraction",
    "memory_allocated": "torch.mps.current_allocated_memory",
    "max_memory_allocated": "torch.mps.current_allocated_memory",
    "memory_reserved": "torch.mps.driver_allocated_memory",
    "max_memory_reserved": "torch.mps.driver_allocated_memory",
}
_XPU_CALLS = frozenset(
    {"empty_cache", "synchronize", "memory_allocated", "max_memory_allocated",
     "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "set_device",
     "current_device"}
)  # fmt: skip
_CALL = re.compile(r"torch\.cuda\.(\w+)(\([^()]*\))?")
_AUTOCAST = re.compile(r"autocast\((['\"])cuda\1(, dtype=torch\.(?:bfloat16|float16))?")
_DEVICE_STR = re.compile(r"(['\"])cuda(?::\d+)?\1")


def device_of(e: OomEvent | None) -> str | None:
    """``mps`` or ``xpu`` when ``e`` is a PyTorch OOM on that device, else None (CUDA, ROCm's
    HIP, which keeps the ``torch.cuda`` API, and every other runtime keep their lines)."""
    return None if e is None else _KINDS.get(e.kind)


def _mps_call(m: re.Match[str]) -> str:
    name, args = m.group(1), m.group(2)
    if name == "OutOfMemoryError":
        return "RuntimeError"  # MPS raises "RuntimeError: MPS backend out of memory"
    call = _MPS_CALLS.get(name)
    if call is None:
        raise KeyError(name)
    keep = name == "set_per_process_memory_fraction" and args
    return call + (args if keep else "()" if args is not None else "")


def _xpu_call(m: re.Match[str]) -> str:
    if m.group(1) == "OutOfMemoryError":
        return "torch.OutOfMemoryError"  # "torch.OutOfMemoryError: XPU out of memory"
    if m.group(1) not in _XPU_CALLS:
        raise KeyError(m.group(1))
    return m.group(0).replace("torch.cuda.", "torch.xpu.", 1)


def _line(line: str, device: str) -> str | None:
    """``line`` for ``device``, or None when the device has no form of it."""
    if "PYTORCH_CUDA_ALLOC_CONF" in line or "CUDA_VISIBLE_DEVICES" in line:
        if device == "xpu" and "CUDA_VISIBLE_DEVICES" in line:
            return line.replace("CUDA_VISIBLE_DEVICES", "ZE_AFFINITY_MASK")
        return None
    if "torch.cuda.memory." in line or "mem_get_info" in line:
        return None  # no memory snapshot / free-memory query on MPS or (older) XPU
    try:
        line = _CALL.sub(_mps_call if device == "mps" else _xpu_call, line)
    except KeyError:
        return None
    if device == "mps":
        line, n = _AUTOCAST.subn("autocast('mps', dtype=torch.float16", line)
        if n and "#" not in line:
            line += "   # bf16 needs macOS 14+"
    else:
        line = _AUTOCAST.sub(lambda m: f"autocast('xpu'{m.group(2) or ''}", line)
    line = _DEVICE_STR.sub(lambda m: f"{m.group(1)}{device}{m.group(1)}", line)
    return line.replace(".cuda()", f".to('{device}')")


def on_device(fixes: Sequence[Fix], device: str | None) -> tuple[Fix, ...]:
    """``fixes`` with every line for ``device`` (module doc); unchanged when it is None."""
    if device is None:
        return tuple(fixes)
    out: list[Fix] = []
    for f in fixes:
        lines = tuple(x for x in (_line(c, device) for c in f.commands) if x is not None)
        if f.commands and not lines:
            continue
        out.append(dataclasses.replace(f, commands=lines) if lines != f.commands else f)
    return tuple(out)

"""Non-PyTorch inference stacks' own status lines, read as one fallback step (issue 9, heldout51).

``parse_log`` runs :func:`parse_stack_status` only where no other parser found an event (before
the keyword fallback), and ``rules._analyze`` asks :func:`analyze_stack_status` first for the
events it made. Each family lives in its own module:

* :mod:`oomkit.diagnose.webgpu_status`: WebGPU / Dawn / WebLLM device loss, DXGI device removal,
  DirectML's ``CreateCommittedResource`` check, WebGPU's buffer-size range error;
* :mod:`oomkit.diagnose.opencl_status`: OpenCL's ``CL_OUT_OF_RESOURCES`` (OpenVINO, oneDNN);
* :mod:`oomkit.diagnose.wasm_heap`: Emscripten's ``Aborted(OOM)`` (ONNX Runtime Web's wasm
  backend, transformers.js).

:mod:`oomkit.diagnose.mlc_memory_plan` (MLC-LLM's memory plan) is parsed later in the chain (a
report, not a failure) and analysed here too.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.mlc_memory_plan import analyze_mlc_memory_plan
from oomkit.diagnose.opencl_status import analyze_opencl_status, parse_opencl_status
from oomkit.diagnose.text import Lines
from oomkit.diagnose.wasm_heap import analyze_wasm_heap, parse_wasm_heap
from oomkit.diagnose.webgpu_status import analyze_webgpu_status, parse_webgpu_status

__all__ = ["analyze_stack_status", "parse_stack_status"]


def parse_stack_status(lines: Lines) -> list[OomEvent]:
    """The events of the three families' lines, in log order."""
    found = parse_webgpu_status(lines) + parse_opencl_status(lines) + parse_wasm_heap(lines)
    return sorted(found, key=lambda e: e.line)


def analyze_stack_status(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis of the families' events, or ``None`` for other events."""
    return (
        analyze_webgpu_status(e, ctx)
        or analyze_opencl_status(e, ctx)
        or analyze_wasm_heap(e, ctx)
        or analyze_mlc_memory_plan(e, ctx)
    )

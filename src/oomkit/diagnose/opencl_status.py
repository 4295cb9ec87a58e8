"""OpenCL's ``CL_OUT_OF_RESOURCES`` (-5), as OpenVINO's GPU plugin and oneDNN print it (issue 9,
heldout11/18/51).

Read only where no other parser found an event (``parse_log``'s fallback chain, before the
keyword fallback) and analysed here (``rules._analyze``).

OpenCL reports a failed *memory object* allocation as ``CL_MEM_OBJECT_ALLOCATION_FAILURE`` (-4,
read by :mod:`oomkit.diagnose.parse_limits`) and host exhaustion as ``CL_OUT_OF_HOST_MEMORY``
(-6). ``CL_OUT_OF_RESOURCES`` (-5) is "a failure to allocate resources required by the OpenCL
implementation on the device" (Khronos OpenCL API spec, error codes), and returned by
``clFinish`` / ``clWaitForEvents`` it reports that an enqueued kernel failed. OpenVINO's GPU
plugin says itself that it cannot tell why: ``openvinotoolkit/openvino:src/plugins/intel_gpu/
src/runtime/ocl/ocl_common.hpp`` (``rethrow``) throws ``[GPU] CL_OUT_OF_RESOURCES exception.``
with "The CL_OUT_OF_RESOURCES error typically occurs in two cases: 1. An actual lack of memory
for the current inference. 2. An out-of-bounds access to GPU memory from a kernel.", and its
comment adds a third, "Device is lost during application run"; its error lines read
``[GPU] clFinish, error code: -5`` (``OCL_ERR_MSG_FMT``). oneDNN prints
``onednn_verbose,...,error,ocl,errcode -5,CL_OUT_OF_RESOURCES,...``.

So the cause is answered ``unknown`` (settled: neither the runtime nor the base rate knows it
was memory; every labelled record of this code in the development corpus is ``unknown``) and
the answer names the fact that decides: whether a smaller input or batch runs, and the kernel
log (an engine reset or GPU hang at the same instant is a lost device, not memory).

Not read: a header or a table that only defines the code (``#define CL_OUT_OF_RESOURCES -5``,
``case CL_OUT_OF_RESOURCES:``).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["analyze_opencl_status", "parse_opencl_status"]

_PREFILTER = needles_re(("CL_OUT_OF_RESOURCES", "error code: -5"))
_NAMED = re.compile(r"\bCL_OUT_OF_RESOURCES\b")
# OCL_ERR_MSG_FMT: "[GPU] " + what() + ", error code: " + err
_GPU_CODE = re.compile(r"\[GPU\] \w{2,40}, error code: -5\b")
# a definition, a switch case or a string table, not a failure
_DEFINES = re.compile(
    r"#\s{0,4}define\s{1,4}CL_OUT_OF_RESOURCES|\bcase\s{1,4}CL_OUT_OF_RESOURCES\b|"
    r"CL_OUT_OF_RESOURCES\s{0,4}(?:=|:)\s{0,4}-?5\b|\"CL_OUT_OF_RESOURCES\"\s{0,4}[,:)]"
)


def _event(lines: Lines, i: int) -> OomEvent | None:
    line = lines.cleaned(i)
    if _DEFINES.search(line):
        return None
    if not (_NAMED.search(line) or _GPU_CODE.search(line)):
        return None
    fmt = "openvino_cl_out_of_resources" if "[GPU]" in line else "opencl_out_of_resources"
    if "onednn_verbose" in line:
        fmt = "onednn_cl_out_of_resources"
    return OomEvent(
        runtime="opencl",
        kind="device_error",
        format=fmt,
        line=lines.number[i],
        text=line[:600],
        detail="CL_OUT_OF_RESOURCES",
    )


def parse_opencl_status(lines: Lines) -> list[OomEvent]:
    """Events of ``CL_OUT_OF_RESOURCES`` lines (log order; a repeated line counts once)."""
    return scan_events(lines, _PREFILTER, _event, repeat=lambda a, b: a.format == b.format)


_FORMATS = frozenset(
    {"openvino_cl_out_of_resources", "opencl_out_of_resources", "onednn_cl_out_of_resources"}
)


def analyze_opencl_status(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis of this module's events, or ``None`` for other events."""
    del ctx  # the line is read on its own
    if e.runtime != "opencl" or (e.format or "") not in _FORMATS:
        return None
    who = "OpenVINO's GPU plugin" if e.format == "openvino_cl_out_of_resources" else "OpenCL"
    if e.format == "onednn_cl_out_of_resources":
        who = "oneDNN's OpenCL kernel"
    return Analysis(
        cause="unknown",
        confidence=0.35,
        open_question=False,
        explanation=f"{who} got CL_OUT_OF_RESOURCES (-5): an enqueued kernel failed, not a "
        "buffer allocation (OpenCL reports those as CL_MEM_OBJECT_ALLOCATION_FAILURE, -4). "
        "OpenVINO's own message names two causes it cannot tell apart, an actual lack of "
        "memory for the inference or an out-of-bounds access by a kernel (a bug), and a lost "
        "device (a GPU hang or engine reset) reports the same code. What would decide: whether "
        "a smaller input, batch or context runs, and the kernel log at that instant "
        "(an engine reset or GPU hang there is a lost device, not memory).",
        fixes=(
            generic(
                "Try a smaller input, batch or context",
                "if that runs, memory was short (OpenVINO: a smaller batch size, lower "
                "inference precision, fewer streams); if it fails the same way, it is a kernel "
                "bug or a driver reset.",
                (
                    "a shorter prompt / max_new_tokens, batch 1",
                    "core.set_property('GPU', {'INFERENCE_PRECISION_HINT': 'f16'})",
                    "core.set_property('GPU', {'NUM_STREAMS': 1})",
                ),
            ),
            generic(
                "Check for a GPU hang and update the driver",
                "a reset at the same instant means the device was lost.",
                (
                    "sudo dmesg | grep -iE 'gpu hang|engine reset|i915|xe '",
                    "update the Intel GPU driver",
                ),
            ),
        ),
    )

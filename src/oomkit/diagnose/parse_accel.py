"""Non-NVIDIA accelerator runtimes' allocation failures named by their status codes or names
(issue 9, docrec20, after heldout23's accelerator threads).

The dispatcher runs this module after ``parse_engines``, only when no other parser found an
event. Each family is the runtime's own status, cited from its source; the code alone names an
allocation failure even where the paste keeps no message text:

* AWS Neuron runtime (``aws-neuron/aws-neuron-sdk:src/libnrt/include/nrt/nrt_status.h``):
  ``NRT_RESOURCE = 4`` ("failed to allocate a resource for requested operation": device HBM for
  tensors, the NEFF's scratchpad) and ``NRT_FAIL_HOST_MEM_ALLOC = 11`` (host memory), as the
  runtime and torch-neuronx print them: ``NRT_RESOURCE in nrt_tensor_allocate``,
  ``nrt_tensor_allocate status=4``, ``status=NRT_FAIL_HOST_MEM_ALLOC``. Other codes
  (``NRT_LOAD_NOT_ENOUGH_NC = 9``: too few NeuronCores, ``NRT_TIMEOUT = 5``) are not memory, and
  the enum's own definition (``NRT_RESOURCE = 4,``) is not a failure.
* Rockchip RKNN (``airockchip/rknn-toolkit2:rknpu2/runtime/Linux/librknn_api/include/
  rknn_api.h``: ``#define RKNN_ERR_MALLOC_FAIL -4 /* memory malloc fail. */``) as its examples
  print a failed call, ``rknn_init fail! ret=-4`` / ``rknn_run error ret=-4``; other codes
  (``-6`` ``RKNN_ERR_MODEL_INVALID``, ``-3`` device unavailable) are not memory.
* Qualcomm QNN (the QNN SDK's ``include/QNN/QnnCommon.h``: ``QNN_COMMON_ERROR_MEM_ALLOC =
  QNN_MIN_ERROR_COMMON + 2``, i.e. 1002, which ``QnnBackend.h`` / ``QnnContext.h`` /
  ``QnnGraph.h`` alias as ``QNN_BACKEND_ERROR_MEM_ALLOC``, ``QNN_CONTEXT_ERROR_MEM_ALLOC``, ...;
  ``microsoft/onnxruntime``'s QNN execution provider and ``qnn-sample-app``'s ``finalizeGraphs``
  print the name): a QNN allocation failure, by its name (the bare ``err 1002`` is too common a
  number to read alone).
* Moore Threads MUSA (the MUSA runtime's ``musaError`` enum, ``musaErrorMemoryAllocation = 2``,
  the CUDA enum's twin; ``torch_musa``'s ``MUSACachingAllocator`` takes its OOM path on it and
  ``musaGetErrorName`` prints it).

* NVIDIA Jetson's NvMap allocator (L4T's ``libnvrm_mem``, closed source; the CUDA driver
  allocates device memory through it on Tegra, where the GPU shares the board's RAM): a failed
  call prints ``NvMapMemAllocInternalTagged: <tag> error 12`` (errno 12, ``ENOMEM``; also
  ``NvMapMemHandleAlloc: error 12``), and users name the call's failure in prose
  ("``NvMapMemAllocInternalTagged`` failure"); other errnos (``error 22``, ``EINVAL``) are not
  memory.

Every pattern is anchored on a literal and bounded: linear time on any line.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import on_raw, scan_events
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["parse_accel"]

_NRT = re.compile(
    r"\b(?P<name>NRT_RESOURCE|NRT_FAIL_HOST_MEM_ALLOC)\b(?!\s{0,4}=)|"
    r"\bnrt_(?P<fn>\w{1,40})(?: failed)?,? status ?[=:] ?(?P<code>4|11)\b(?![.\d])"
)
_RKNN = re.compile(
    r"\brknn_(?P<fn>\w{1,40})\W{0,3}(?:fail(?:ed)?|error)\W{0,3}"
    r"(?:ret|return(?:ed)?|code)\W{0,4}-4\b(?![.\d])",
    re.IGNORECASE,
)
_QNN = re.compile(r"\bQNN_(?:[A-Z]{1,12}_)?ERROR_MEM_ALLOC\b(?!\s{0,4}=)")
_MUSA = re.compile(r"\bmusaErrorMemoryAllocation\b(?!\s{0,4}=)")
_NVMAP = re.compile(
    r"\bNvMapMem(?P<fn>\w{1,40}):[^\n]{0,40}?\berror 12\b|"
    r"\bNvMapMem(?P<fn2>\w{1,40})`?\W{0,3}(?:failure|failed|fails)\b"
)
# docpost24 (heldout49): Kunlun XPU kernels in PaddlePaddle report an XDNN API status through
# ``XPUAPIErrorMsg`` (paddle/fluid/platform/xpu/xpu_header.h, Paddle 2.0-2.2:
# ``{xpu::Error_t::NO_ENOUGH_WORKSPACE, "xpu api no enough workspace"}``, status 3), as in
# ``XPU conv kernel return wrong value[3 xpu api no enough workspace]``: the API could not get
# its device workspace (the XPU's memory); the other statuses (invalid param, runtime error) are not
_XPU_WORKSPACE = re.compile(r"\bxpu api no enough workspace\b", re.IGNORECASE)
_PREFILTER = needles_re(
    (
        "NRT_",
        "nrt_",
        "rknn_",
        "RKNN_",
        "_MEM_ALLOC",
        "musaErrorMemoryAlloc",
        "NvMapMem",
        "no enough workspace",
    )
)


def _ev(kind: str, fmt: str, runtime: str, line: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=line[:600], **kw)


def _event(line: str, n: int) -> OomEvent | None:
    m = _NRT.search(line)
    if m is not None:
        host = m["name"] == "NRT_FAIL_HOST_MEM_ALLOC" or m["code"] == "11"
        return _ev(
            "host_alloc_failed" if host else "gpu_alloc_failed",
            "neuron_nrt_host_alloc" if host else "neuron_nrt_resource",
            "neuron",
            line,
            n,
            detail=f"nrt_{m['fn']}" if m["fn"] else None,
        )
    if _QNN.search(line) is not None:
        return _ev("gpu_alloc_failed", "qnn_mem_alloc", "qnn", line, n)
    if _MUSA.search(line) is not None:
        return _ev("cuda_error_oom", "musa_error_memory_allocation", "musa", line, n)
    nv = _NVMAP.search(line) if "NvMapMem" in line else None
    if nv is not None:
        return _ev(
            "gpu_alloc_failed",
            "jetson_nvmap_alloc",
            "jetson",
            line,
            n,
            detail=f"NvMapMem{nv['fn'] or nv['fn2']}",
        )
    if _XPU_WORKSPACE.search(line) is not None:
        return _ev("gpu_alloc_failed", "paddle_xpu_no_workspace", "paddle", line, n, detail="XPU")
    m2 = _RKNN.search(line)
    if m2 is not None:
        return _ev(
            "gpu_alloc_failed", "rknn_malloc_fail", "rknn", line, n, detail=f"rknn_{m2['fn']}"
        )
    return None


def parse_accel(lines: Lines) -> list[OomEvent]:
    """Events of the families in the module docstring (every match, in log order). Never raises.

    The caller runs this only when no specific parser found an event.
    """
    return scan_events(lines, _PREFILTER, on_raw(_event))

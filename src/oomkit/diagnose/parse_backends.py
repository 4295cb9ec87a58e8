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
* MNN: ``Out of memory when <param> is acquired in <Op>.`` (``MNN_ERROR`` after
  ``backend->onAcquireBuffer(..., Backend::STATIC)`` fails in an op's constructor, e.g.
  ``source/backend/cuda/execution/LayerNormExecution.cu``, ``CPULayerNorm.cpp``,
  ``opencl/.../GroupNormBufExecution.cpp``): a STATIC buffer holds the op's parameters, placed
  when the session is created.
* TensorRT-LLM's ``TLLM_CUDA_CHECK``: ``[TensorRT-LLM][ERROR] CUDA runtime error in <call>:
  out of memory (<file>:<line>)`` (``cpp/include/tensorrt_llm/common/cudaUtils.h`` ``check``:
  ``"CUDA runtime error in %s: %s"`` with ``cudaGetErrorString``); pastes wrap the call, so the
  ``out of memory`` may sit on the next line.
* Huawei CANN (Ascend NPU): ``Memory_Allocation_Failure(EL0004): Failed to allocate memory
  requested by GE module.`` (CANN error code EL0004, raised when ``rtMalloc`` of the Graph
  Engine fails; the size, where logged, is on a ``Call rtMalloc fail, ... size:N`` line).

Every pattern is gated on a literal and bounded: linear time on any line.
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.sizes import to_int
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["parse_backends"]

_DML = re.compile(
    r"Could not allocate tensor with (?P<x>\d{1,20}) bytes\. ?"
    r"There is not enough GPU video memory available"
)
_VK = re.compile(r"ggml_vulkan: (?:Device )?[Mm]emory allocation of size (?P<x>\d{1,20}) failed")
_MNN = re.compile(r"Out of memory when (?P<what>\w{1,40}) is acquired in (?P<op>\w[\w ]{0,60}?)\.")
_TLLM = re.compile(r"CUDA runtime error in (?P<call>:{0,2}\w{1,40})\(")
_TLLM_OOM = re.compile(r"\): out of memory\b")
_EL0004 = re.compile(r"\(EL0004\): Failed to allocate memory")
_RTMALLOC = re.compile(r"rtMalloc fail.{0,80}?size: ?(?P<x>\d{1,20})")
_PREFILTER = needles_re(
    (
        "not enough GPU video memory",
        "ggml_vulkan: ",
        "is acquired in",
        "CUDA runtime error in",
        "EL0004",
    )
)


def _tllm(lines: Lines, i: int, line: str, n: int) -> OomEvent | None:
    m = _TLLM.search(line)
    if m is None:
        return None
    tail = line[m.end() :]
    if not _TLLM_OOM.search(tail) and i + 1 < len(lines.text):
        tail = lines.cleaned(i + 1)[:400]
        if "CUDA runtime error" in tail:
            return None
    if not _TLLM_OOM.search(tail) and "out of memory (" not in tail:
        return None
    call = m["call"].lstrip(":")
    return OomEvent(
        runtime="tensorrt-llm",
        kind="host_oom" if call == "cudaMallocHost" else "gpu_alloc_failed",
        format="trtllm_cuda_runtime_oom",
        line=n,
        text=line[:600],
        detail=call,
    )


def _ascend(lines: Lines, i: int, line: str, n: int) -> OomEvent | None:
    if not _EL0004.search(line):
        return None
    size = None
    for j in range(max(0, i - 3), min(len(lines.text), i + 4)):
        m = _RTMALLOC.search(lines.text[j]) if "rtMalloc" in lines.text[j] else None
        if m is not None:
            size = to_int(m["x"])
            break
    return OomEvent(
        runtime="ascend",
        kind="gpu_alloc_failed",
        format="cann_el0004_alloc_failed",
        line=n,
        text=line[:600],
        requested_bytes=size,
    )


def _event(lines: Lines, i: int, line: str, n: int) -> OomEvent | None:
    if "acquired in" in line:
        m0 = _MNN.search(line)
        if m0 is not None:
            return OomEvent(
                runtime="mnn",
                kind="host_oom" if m0["op"].startswith("CPU") else "gpu_alloc_failed",
                format="mnn_static_acquire_failed",
                line=n,
                text=line[:600],
                detail=f"{m0['what']} in {m0['op']}",
            )
    if "runtime error in" in line:
        return _tllm(lines, i, line, n)
    if "EL0004" in line:
        return _ascend(lines, i, line, n)
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
    return scan_events(lines, _PREFILTER, lambda ls, i: _event(ls, i, ls.cleaned(i), ls.number[i]))

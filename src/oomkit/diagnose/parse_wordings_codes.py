"""Runtime and driver failures that state an allocation failure in a code, not in words (issue 9).

``parse_wordings.harvested_match`` runs these families in the generic fallback (an event only where
no runtime parser found one). Each is a runtime's own text, cited here and in
``oomkit.diagnose.upstream_wordings_codes``:

* **PyTorch's OOM report failing on NVML** (``pytorch/pytorch:c10/cuda/CUDACachingAllocator.cpp``
  ``reportProcessMemoryInfo``): when ``cudaMalloc`` fails, the caching allocator builds its
  ``OutOfMemoryError`` text with the per-process list from NVML,
  ``TORCH_INTERNAL_ASSERT(NVML_SUCCESS == r)`` after ``nvmlDeviceGetComputeRunningProcesses``
  (and ``NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_()`` /
  ``nvmlDeviceGetHandleByPciBusId_v2_`` before it). Where NVML cannot list processes (Jetson /
  Tegra, some containers) the assert fires instead of the OOM message: "RuntimeError:
  NVML_SUCCESS == r INTERNAL ASSERT FAILED at .../CUDACachingAllocator.cpp:838". The function is
  called only on the OOM path, so the assert is a CUDA OOM whose message was lost;
* **the NVIDIA kernel driver's status** ``NV_ERR_NO_MEMORY`` (``NVIDIA/open-gpu-kernel-modules:
  kernel-open/common/inc/nvstatuscodes.h``: ``NV_STATUS_CODE(NV_ERR_NO_MEMORY, 0x00000051, "Out of
  memory")``, mapped to ``-ENOMEM`` by ``nvidia_status_mappings`` in ``kernel-open/nvidia/nv.c``;
  logged as ``NVRM: ... NV_ERR_NO_MEMORY``): the resource manager could not allocate, on a
  unified-memory system (DGX Spark GB10, Jetson) the shared pool was exhausted; not where the
  text says there was none ("no NV_ERR_NO_MEMORY", "zero NV_ERR_NO_MEMORY");
* **Habana's graph workspace** (the SynapseAI PyTorch bridge, closed source; reported in
  ``HabanaAI/Model-References#10``, where the maintainers' answer is to lower the batch): "FATAL
  ERROR :: MODULE:SYNHELPER workspace Allocation of size ::14493510400 failed!", the device
  workspace a compiled graph needs; the size (bytes) is read.

Every pattern is behind a literal needle and has only bounded quantifiers (linear time).
"""

from __future__ import annotations

import re

__all__ = ["code_match"]

_NVML_ASSERT = re.compile(
    r"NVML_SUCCESS ?== ?(?:r|DriverAPI::get\(\)->nvml\w{1,40}\([^)]{0,80}\)) "
    r"INTERNAL ASSERT FAILED"
)
_NV_ERR = re.compile(r"(?<!\bno )(?<!\bzero )(?<!\bwithout )(?<!\bnot )\bNV_ERR_NO_MEMORY\b")
_SYNHELPER = re.compile(
    r"MODULE:SYNHELPER workspace Allocation of size ?:: ?(?P<req_bytes>\d{1,20}) failed"
)


def code_match(line: str, low: str) -> re.Match[str] | None:
    """The first runtime code of an allocation failure in ``line`` (``low`` is its lower case)."""
    if "nvml_success" in low:
        m = _NVML_ASSERT.search(line)
        if m is not None:
            return m
    if "nv_err_no_memory" in low:
        m = _NV_ERR.search(line)
        if m is not None:
            return m
    if "synhelper" in low:
        return _SYNHELPER.search(line)
    return None

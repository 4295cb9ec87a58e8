"""Native C++/CUDA libraries' own check macros that name an out-of-memory (issue 9, heldout47).

3D reconstruction, SLAM and neural-field code calls CUDA from C++ through its own check macro;
the macro prints ``cudaGetErrorString`` ("out of memory" for ``cudaErrorMemoryAllocation``) in
the library's format, which the keyword fallback recognised only as a bare "out of memory" (and
one, Open3D's, as lmdeploy TurboMind's ``CUDA runtime error: out of memory``). Each family is
the library's own format, cited from its source; none carries a size:

* Open3D ``__OPEN3D_CUDA_CHECK`` (``isl-org/Open3D:cpp/open3d/core/CUDAUtils.cpp``), raised
  through ``utility::LogError`` as ``[Open3D Error] (<function>) <file>:<line>: <file>:<line>
  CUDA runtime error: <cudaGetErrorString>`` (``MemoryManagerCUDA.cpp`` is the device
  allocator's ``cudaMalloc``).
* tiny-cuda-nn ``GPUMemory::resize`` (``NVlabs/tiny-cuda-nn:include/tiny-cuda-nn/
  gpu_memory.h``): ``throw std::runtime_error{fmt::format("Could not allocate memory: {}",
  error.what())}`` around ``CUDA_CHECK_THROW``'s ``"{}:{} {} failed with error {}"``
  (``common.h``): ``Could not allocate memory: .../gpu_memory.h:112 cudaMalloc(&rawptr, ...)
  failed with error out of memory`` (instant-ngp, nerfstudio's tcnn fields).
* the CUDA SDK's ``cutilSafeCall`` / ``cudaSafeCall`` (``cutil_inline_runtime.h``, copied into
  InfiniTAM's ``ORUtils/CUDADefines.h`` and many others): ``%s(%i) : cudaSafeCall() Runtime API
  error : %s.`` and ``cudaSafeCall() Runtime API error in file <%s>, line %i : %s.``
* Lua Torch's cutorch (``torch/cutorch:lib/THC/THCGeneral.c`` ``THCudaMalloc`` / the storage
  allocators): ``THError("out of memory")``, which Torch7's ``THError`` prints with `` at
  <file>:<line>`` (``out of memory at .../cutorch/lib/THC/generic/THCStorage.cu:40``).
* PyTorch DirectML's heap allocator (``torch-directml``, closed source; the warning quotes its
  build path ``torch_directml/csrc/engine/dml_heap_allocator.cc``): ``DML allocator out of
  memory!`` (lshqqytiger/stable-diffusion-webui-amdgpu issue 174).

Read after the main parsers and before the runtimes' few-number wordings (``parse_recognise``).
Every pattern is gated on a literal and bounded: linear time on any line.
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["parse_native_cuda"]

_OOM = r"out of memory"
_OPEN3D = re.compile(r"\[Open3D Error\].{0,400}?CUDA runtime error: " + _OOM, re.IGNORECASE)
_TCNN = re.compile(
    r"Could not allocate memory: \S{0,300}?gpu_memory\.h:\d{1,6} \w{1,40}\(.{0,200}?\) "
    r"failed with error " + _OOM
)
_SAFECALL = re.compile(
    r"\b(?:cutil|cuda)SafeCall\(\) Runtime API error(?: \d{1,4})?"
    r"(?: in file <[^>\n]{0,300}>, line \d{1,6})? ?: " + _OOM,
    re.IGNORECASE,
)
_CUTORCH = re.compile(
    r"\b" + _OOM + r" at \S{0,300}?/THC\w{0,3}/\S{0,120}?\.(?:cu|c|cpp|h):\d{1,6}"
)
_DML_HEAP = re.compile(r"\bDML allocator out of memory\b")
_PREFILTER = needles_re(
    (
        "[Open3D Error]",
        "[open3d error]",
        "Could not allocate memory: ",
        "SafeCall() Runtime API error",
        "/THC",
        "DML allocator out of memory",
    )
)


def _ev(runtime: str, fmt: str, line: str, n: int) -> OomEvent:
    return OomEvent(runtime=runtime, kind="gpu_alloc_failed", format=fmt, line=n, text=line[:600])


def _event(line: str, n: int) -> OomEvent | None:
    if _OPEN3D.search(line):
        return _ev("open3d", "open3d_cuda_check_oom", line, n)
    if "gpu_memory.h" in line and _TCNN.search(line):
        return _ev("tiny-cuda-nn", "tcnn_gpu_memory_oom", line, n)
    if "SafeCall" in line and _SAFECALL.search(line):
        return _ev("cuda", "cuda_safecall_oom", line, n)
    if "/THC" in line and _CUTORCH.search(line):
        # cutorch's own tree; PyTorch's THC paths (aten/src/THC) are parse_torch's
        runtime = "torch7" if "cutorch" in line else "pytorch"
        return _ev(runtime, "thc_out_of_memory_at", line, n)
    if _DML_HEAP.search(line):
        return _ev("directml", "directml_heap_allocator_oom", line, n)
    return None


def parse_native_cuda(lines: Lines) -> list[OomEvent]:
    """Events of the check-macro wordings in the module docstring (every match, in log order).

    The caller runs this only when no main parser found an event. Never raises.
    """
    return scan_events(lines, _PREFILTER, lambda ls, i: _event(ls.cleaned(i), ls.number[i]))

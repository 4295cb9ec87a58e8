"""Upstream wordings added by docrec24 (issue 9): allocation failures stated in a code.

Part of :mod:`oomkit.diagnose.upstream_wordings`; recognised by ``parse_wordings_codes``.
``CODES_NEAR_MISSES`` are the same codes where nothing failed.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["CODES", "CODES_NEAR_MISSES"]

_NVML = (
    "pytorch/pytorch:c10/cuda/CUDACachingAllocator.cpp (reportProcessMemoryInfo, called only "
    "while the OutOfMemoryError text is built: TORCH_INTERNAL_ASSERT(NVML_SUCCESS == r) after "
    "nvmlDeviceGetComputeRunningProcesses)"
)
_NVRM = (
    "NVIDIA/open-gpu-kernel-modules:kernel-open/common/inc/nvstatuscodes.h "
    '(NV_STATUS_CODE(NV_ERR_NO_MEMORY, 0x00000051, "Out of memory"); kernel-open/nvidia/nv.c '
    "maps it to -ENOMEM)"
)
_SYNHELPER = (
    "Habana SynapseAI PyTorch bridge (closed source; HabanaAI/Model-References#10, answered "
    "'reduce your batch size')"
)

CODES: tuple[Wording, ...] = (
    _w(
        "pytorch",
        _NVML,
        'NVML_SUCCESS == r INTERNAL ASSERT FAILED at "%s/c10/cuda/CUDACachingAllocator.cpp":%d',
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at\n"/opt/pytorch/pytorch/c10/'
        'cuda/CUDACachingAllocator.cpp":838, please report a bug to PyTorch.',
    ),
    _w(
        "pytorch",
        _NVML + "; the NVML handle lookup before it",
        "NVML_SUCCESS == DriverAPI::get()->nvmlDeviceGetHandleByPciBusId_v2_(pci_id, "
        "&nvml_device) INTERNAL ASSERT FAILED at %s",
        "RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlDeviceGetHandleByPciBusId_v2_( "
        'pci_id, &nvml_device) INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp'
        '":1123, please report a bug to PyTorch.',
    ),
    _w(
        "cuda",
        _NVRM,
        "NVRM: %s: Assertion failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) returned "
        "from %s",
        "[12345.678901] NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory "
        "[NV_ERR_NO_MEMORY] (0x00000051) returned from _memdescAllocInternal(pMemDesc) @ "
        "mem_desc.c:1359",
    ),
    _w(
        "cuda",
        _NVRM + "; a report that names the status alone",
        "... NV_ERR_NO_MEMORY ...",
        "DGX Spark GB10 head hard-resets during a 128K-token prefill after NV_ERR_NO_MEMORY",
    ),
    _w(
        "pytorch",
        _SYNHELPER,
        "FATAL ERROR :: MODULE:SYNHELPER workspace Allocation of size ::%d failed!",
        "RuntimeError: FATAL ERROR :: MODULE:SYNHELPER workspace Allocation of size "
        "::14493510400 failed!",
        req=14493510400,
    ),
)

CODES_NEAR_MISSES: tuple[str, ...] = (
    # the status named as absent from a log
    "Captured boot kernel journals contain no NV_ERR_NO_MEMORY, Xid, or killed-process messages.",
    "The guard turns an opaque failure into a named error: zero NV_ERR_NO_MEMORY since the seal.",
    # NVML's own success code in a check that passed, no assert
    "The helper returns NVML_SUCCESS == r when the query worked.",
    # Habana's other fatal modules: a graph compile failure, not an allocation
    "RuntimeError: synNodeCreateWithId failed for node: batch_gemm with synStatus 26 "
    "[Generic failure].",
)

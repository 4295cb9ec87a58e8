"""llama.cpp's HIP build with ``GGML_CUDA_ENABLE_UNIFIED_MEMORY=1`` on a Linux AMD APU.

``ggml_cuda_device_malloc`` (ggml/src/ggml-cuda/ggml-cuda.cu) allocates every device buffer with
``cudaMallocManaged`` (``hipMallocManaged`` under HIP, then ``hipMemAdviseSetCoarseGrain``)
when ``GGML_CUDA_ENABLE_UNIFIED_MEMORY`` is set, falling back to ``cudaMalloc`` only where
managed memory is unsupported (Windows). On Linux a managed allocation is system memory
(GTT/SVM pages), not the BIOS carve-out: KFD accounts it against the TTM limit, whose default is
half of the RAM the OS sees (``ttm_global_init``: ``num_pages = si.totalram / 2``; raised with
``ttm.pages_limit``). apellegr/Strix-Halo-Models docs/ROCM-MEMORY-LIMIT-INVESTIGATION.md (c97e6cf)
measured that limit on a Ryzen AI Max+ 395 with ROCm 7.1.1: "TTM calculates: pages_limit =
(system_RAM / 2) / 4KB", the carve-out "NOT exposed through the KFD/HSA/HIP path" for such
allocations, and ``GGML_HIP_UMA`` (hipMallocManaged) under "the same ... limit".

HIP reports the carve-out C plus that GTT pool G as the device's total V = C + G with
G = (R - C) / 2 (R the APU's unified memory), so G = R - V: what a managed process can hold is
the unified memory less the HIP-reported total. TOSUKUi/blog evo-x2-hip-environment.md
(7a04244): ROCm 6.4, 'using device ROCm0 ... 98148 MiB free' on a 128 GB EVO-X2 with a 64 GB
carve-out (Vulkan: 65002 MiB), so G = 33146 MiB, and 'allocating 33723.51 MiB on device 0:
cudaMalloc failed: out of memory' for Qwen3-30B-A3B UD-Q8_K_XL; the same file loads without
the variable (Vulkan, TheRock).

Applies only when the device memory is given (``--vram``: the HIP total the runtime printed)
and below the unified memory, on Linux, with the variable set in the environment; a raised
``ttm.pages_limit`` breaks the G = R - V relation (not modelled: the note names it).
"""

from __future__ import annotations

import dataclasses
import os

from oomkit.estimate.breakdown import Estimate
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import format_bytes

__all__ = ["ENV", "estimate_llamacpp_registry", "managed_pool_bytes"]

ENV = "GGML_CUDA_ENABLE_UNIFIED_MEMORY"


def managed_pool_bytes(dev: DeviceTarget, os_name: str | None, unified_bytes: int) -> int | None:
    """The GTT pool a managed HIP process reaches on ``dev`` (None: not this case)."""
    if (os_name or "").lower() != "linux" or dev.backend != "rocm" or not dev.unified_memory:
        return None
    if dev.capacity_bytes is None or not 0 < dev.capacity_bytes < unified_bytes:
        return None
    return unified_bytes - dev.capacity_bytes


def _unified_total(dev: DeviceTarget) -> int | None:
    if dev.key is None:
        return None
    from oomkit.hardware.catalog import find_gpu

    g = find_gpu(dev.key)
    return g.memory_bytes if g.vendor == "amd" else None


def estimate_llamacpp_registry(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware
) -> Estimate:
    """The registry's llama.cpp estimator (:func:`oomkit.estimate.llamacpp_draft.
    estimate_llamacpp_server`) on the managed pool when ``GGML_CUDA_ENABLE_UNIFIED_MEMORY``
    is set for a HIP build on a Linux APU."""
    from oomkit.estimate.llamacpp_draft import estimate_llamacpp_server

    if not os.environ.get(ENV):
        return estimate_llamacpp_server(spec, settings, hardware)
    notes: list[str] = []
    devices: list[DeviceTarget] = []
    for d in hardware.devices:
        unified = _unified_total(d)
        pool = None if unified is None else managed_pool_bytes(d, hardware.os, unified)
        if pool is None or unified is None:
            devices.append(d)
            continue
        devices.append(dataclasses.replace(d, capacity_bytes=pool))
        notes.append(
            f"{ENV}=1 on a Linux APU: llama.cpp's HIP buffers are hipMallocManaged system memory, "
            f"held to the GTT pool (TTM: half the RAM the OS sees) = unified "
            f"{format_bytes(unified)} - HIP total {format_bytes(d.capacity_bytes or 0)} = "
            f"{format_bytes(pool)}, not the carve-out (unset the variable, or raise "
            f"ttm.pages_limit)"
        )
    est = estimate_llamacpp_server(
        spec, settings, dataclasses.replace(hardware, devices=tuple(devices))
    )
    if not notes:
        return est
    return dataclasses.replace(est, assumptions=(*est.assumptions, *notes))

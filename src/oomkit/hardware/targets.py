"""GPU catalog rows -> estimate targets (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oomkit.spec.hardware import DeviceTarget, Hardware

if TYPE_CHECKING:
    from oomkit.hardware.catalog import GpuModel

__all__ = ["device_from_gpu", "hardware_for"]

_BACKEND = {"nvidia": "cuda", "amd": "rocm", "apple": "metal", "intel": "xpu"}


def device_from_gpu(gpu: GpuModel) -> DeviceTarget:
    """A catalog GPU as an estimate target; Apple capacity is the GPU working-set limit."""
    return DeviceTarget(
        name=gpu.name,
        key=gpu.key,
        backend=_BACKEND.get(gpu.vendor, "cuda"),
        capacity_bytes=gpu.effective_memory_bytes,
        architecture=gpu.architecture,
        compute_capability=gpu.compute_capability,
        native_dtypes=gpu.native_dtypes,
        unified_memory=gpu.unified_memory,
    )


def hardware_for(
    gpus: Sequence[GpuModel] = (),
    *,
    vram_bytes: int | None = None,
    host_ram_bytes: int | None = None,
    n_devices: int = 1,
) -> Hardware:
    """Build the target: catalog GPUs, or ``n_devices`` anonymous GPUs of ``vram_bytes`` each.

    With neither, one CUDA device of unknown capacity (``fits`` is then None).
    """
    if gpus:
        devices = tuple(device_from_gpu(g) for g in gpus)
        if vram_bytes is not None:
            devices = tuple(
                DeviceTarget(
                    name=d.name,
                    key=d.key,
                    backend=d.backend,
                    capacity_bytes=vram_bytes,
                    architecture=d.architecture,
                    compute_capability=d.compute_capability,
                    native_dtypes=d.native_dtypes,
                    unified_memory=d.unified_memory,
                )
                for d in devices
            )
    else:
        name = "GPU" if vram_bytes is not None else "GPU (capacity unknown)"
        devices = tuple(
            DeviceTarget(name=name, capacity_bytes=vram_bytes) for _ in range(max(1, n_devices))
        )
    return Hardware(devices=devices, host_ram_bytes=host_ram_bytes)

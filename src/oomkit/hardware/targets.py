"""GPU catalog rows -> estimate targets (pure)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oomkit.spec.hardware import DeviceTarget, Hardware

if TYPE_CHECKING:
    from oomkit.hardware.catalog import GpuModel

__all__ = ["hardware_for"]


def hardware_for(
    gpus: Sequence[GpuModel] = (),
    *,
    vram_bytes: int | None = None,
    host_ram_bytes: int | None = None,
    n_devices: int = 1,
) -> Hardware:
    """Build the target: catalog GPUs (``vram_bytes`` overrides their capacity), or
    ``n_devices`` anonymous GPUs of ``vram_bytes`` each. With neither, one CUDA device of
    unknown capacity (``Estimate.fits`` is then None).
    """
    if gpus:
        devices = tuple(g.to_device_target() for g in gpus)
        if vram_bytes is not None:
            devices = tuple(dataclasses.replace(d, capacity_bytes=vram_bytes) for d in devices)
    else:
        name = "GPU" if vram_bytes is not None else "GPU (capacity unknown)"
        devices = tuple(
            DeviceTarget(name=name, capacity_bytes=vram_bytes) for _ in range(max(1, n_devices))
        )
    return Hardware(devices=devices, host_ram_bytes=host_ram_bytes)

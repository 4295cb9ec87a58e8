"""GPU catalog rows -> estimate targets (pure)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oomkit.errors import InvalidSettingError
from oomkit.spec.hardware import DeviceTarget, Hardware

if TYPE_CHECKING:
    from oomkit.hardware.catalog import GpuModel

__all__ = ["check_memory_sizes", "hardware_for"]


def check_memory_sizes(vram_bytes: int | None, host_ram_bytes: int | None) -> None:
    """Refuse a stated memory size of 0 bytes for a GPU (``--vram``) or the host (``--ram``)."""
    for flag, value in (("--vram", vram_bytes), ("--ram", host_ram_bytes)):
        if value == 0:
            raise InvalidSettingError(
                f"{flag} 0: a GPU or host with no memory runs nothing; give its size with a "
                "unit (24GiB, or 24GB = 24e9 bytes)",
                setting=flag,
                value=0,
            )


def hardware_for(
    gpus: Sequence[GpuModel] = (),
    *,
    vram_bytes: int | None = None,
    host_ram_bytes: int | None = None,
    n_devices: int = 1,
    os: str | None = None,
) -> Hardware:
    """Build the target: catalog GPUs (``vram_bytes`` overrides their capacity), or
    ``n_devices`` anonymous GPUs of ``vram_bytes`` each. With neither, one CUDA device of
    unknown capacity (``Estimate.fits`` is then None).

    A catalog GPU's capacity is what its runtime budgets against on ``os`` (None = unknown):
    :func:`oomkit.hardware.catalog.runtime_capacity_bytes`, the CUDA total on Linux. A
    ``vram_bytes`` the user gives is taken as is.

    Raises:
        InvalidSettingError: ``vram_bytes`` or ``host_ram_bytes`` of 0 (no GPU or host has no
            memory: a size of 0 is a mistyped value, not a target to answer for).
    """
    check_memory_sizes(vram_bytes, host_ram_bytes)
    if gpus:
        devices = tuple(g.to_device_target(os=os) for g in gpus)
        if vram_bytes is not None:
            devices = tuple(dataclasses.replace(d, capacity_bytes=vram_bytes) for d in devices)
    else:
        name = "GPU" if vram_bytes is not None else "GPU (capacity unknown)"
        devices = tuple(
            DeviceTarget(name=name, capacity_bytes=vram_bytes) for _ in range(max(1, n_devices))
        )
    return Hardware(devices=devices, host_ram_bytes=host_ram_bytes, os=os)

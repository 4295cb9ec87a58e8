"""Platform facts of a device target for the verdict: its catalog segment and unified memory."""

from __future__ import annotations

from collections.abc import Iterator

from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.spec.hardware import DeviceTarget

__all__ = ["apu_rocm_devices", "device_segment", "device_unified_bytes"]


def device_segment(d: DeviceTarget) -> str | None:
    """The catalog segment of a target (consumer cards may drive a display; datacenter
    ones do not); None for a GPU outside the catalog."""
    if d.key is None:
        return None
    from oomkit.hardware.catalog import find_gpu

    return find_gpu(d.key).segment


def device_unified_bytes(d: DeviceTarget) -> int | None:
    """The memory a device shares with the CPU, for the verdict's unified-memory terms.

    Apple: the installed RAM, when the capacity is the catalog's Metal working set (a ``--vram``
    the user gives is their own limit, taken as is); AMD APU: the capacity as given (the
    catalog's whole unified memory, or ``--vram``). None for discrete GPUs and other rows.
    """
    if d.key is None or not d.unified_memory:
        return None
    from oomkit.hardware.catalog import find_gpu

    g = find_gpu(d.key)
    if g.vendor == "apple":
        ok = g.usable_memory_bytes is not None and d.capacity_bytes == g.usable_memory_bytes
        return g.memory_bytes if ok else None
    return d.capacity_bytes if g.vendor == "amd" else None


def apu_rocm_devices(est: Estimate, unified_bytes: tuple[int | None, ...]) -> Iterator[DeviceUsage]:
    """The HIP (ROCm) devices of ``est`` that share memory with the CPU (an AMD APU: the
    platform's ``unified_bytes`` entry is set), in device order: what the Windows HIP and the
    Ollama iGPU rules (:mod:`oomkit.estimate.verdict_windows`,
    :mod:`oomkit.estimate.verdict_ollama_apu`) look at."""
    for i, d in enumerate(est.devices):
        unified = unified_bytes[i] if i < len(unified_bytes) else None
        if unified is not None and d.device.startswith("rocm:"):
            yield d

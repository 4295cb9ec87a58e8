"""Platform facts of a device target for the verdict: its catalog segment and unified memory."""

from __future__ import annotations

from oomkit.spec.hardware import DeviceTarget

__all__ = ["device_segment", "device_unified_bytes"]


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

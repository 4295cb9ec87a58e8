"""The hardware an estimate targets: devices with a capacity, and host RAM."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DeviceTarget", "Hardware", "device_label"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceTarget:
    """One accelerator (or the CPU when ``backend == "cpu"``)."""

    name: str  # display name, e.g. "NVIDIA GeForce RTX 4090"
    key: str | None = None  # GPU catalog key when known, e.g. "rtx-4090"
    backend: str = "cuda"  # "cuda" | "rocm" | "metal" | "cpu" | "xpu"
    capacity_bytes: int | None = None  # memory the process may use (driver total or Apple limit)
    architecture: str | None = None
    compute_capability: str | None = None
    native_dtypes: tuple[str, ...] = ()
    unified_memory: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Hardware:
    """Devices in order (cuda:0, cuda:1, ...) plus host RAM (None when unknown)."""

    devices: tuple[DeviceTarget, ...] = ()
    host_ram_bytes: int | None = None

    @property
    def has_gpu(self) -> bool:
        return any(d.backend != "cpu" for d in self.devices)


# backend -> the prefix of oomkit's device ids. AMD is "rocm" (llama.cpp names its buffers
# ROCm0, ROCm1; PyTorch on ROCm reuses the "cuda" device type, which is what misled users),
# Intel "xpu" (PyTorch's device type), Apple "mps" (PyTorch's name for the Metal device).
_DEVICE_PREFIX = {"cuda": "cuda", "rocm": "rocm", "metal": "mps", "xpu": "xpu", "cpu": "cpu"}


def device_label(dev: DeviceTarget, index: int) -> str:
    """oomkit's id for accelerator ``index``: ``cuda:0``, ``rocm:0``, ``mps:0``, ``xpu:0``.

    >>> device_label(DeviceTarget(name="AMD Instinct MI300X", backend="rocm"), 1)
    'rocm:1'
    """
    return f"{_DEVICE_PREFIX.get(dev.backend, dev.backend)}:{index}"

"""The hardware an estimate targets: devices with a capacity, and host RAM."""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.validate import MAX_BYTES, MAX_DEVICES, check_bool, check_choice, check_int, check_str

#: DeviceTarget.backend values
BACKENDS = ("cuda", "rocm", "metal", "cpu", "xpu", "vulkan")

__all__ = ["DeviceTarget", "Hardware", "device_label"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceTarget:
    """One accelerator (or the CPU when ``backend == "cpu"``)."""

    name: str  # display name, e.g. "NVIDIA GeForce RTX 4090"
    key: str | None = None  # GPU catalog key when known, e.g. "rtx-4090"
    backend: str = "cuda"  # "cuda" | "rocm" | "metal" | "cpu" | "xpu" | "vulkan"
    capacity_bytes: int | None = None  # memory the process may use (driver total or Apple limit)
    architecture: str | None = None
    compute_capability: str | None = None
    native_dtypes: tuple[str, ...] = ()
    unified_memory: bool = False
    #: the largest single device buffer the runtime may create (Vulkan: ggml-vulkan's
    #: ``max_memory_allocation_size``, what ``GGML_VK_FORCE_MAX_ALLOCATION_SIZE`` overrides;
    #: SYCL: the device's ``max_mem_alloc_size``);
    #: None = the backend's default (:func:`oomkit.estimate.llamacpp_maxalloc.max_allocation_bytes`)
    max_allocation_bytes: int | None = None

    def __post_init__(self) -> None:
        check_str("device name", self.name, optional=False)
        check_str("device key", self.key)
        check_choice("backend", self.backend, BACKENDS, optional=False)
        check_int("capacity_bytes", self.capacity_bytes, lo=0, hi=MAX_BYTES, optional=True)
        check_str("architecture", self.architecture)
        check_str("compute_capability", self.compute_capability)
        check_bool("unified_memory", self.unified_memory, optional=False)
        check_int(
            "max_allocation_bytes", self.max_allocation_bytes, lo=1, hi=MAX_BYTES, optional=True
        )
        if self.max_allocation_bytes is not None and self.backend not in ("vulkan", "xpu"):
            raise InvalidSettingError(
                f"max_allocation_bytes is the Vulkan per-buffer limit (maxMemoryAllocationSize) "
                f"or SYCL's (max_mem_alloc_size); "
                f"device '{self.name}' uses the {self.backend} backend, which has none",
                setting="max_allocation_bytes",
                value=self.max_allocation_bytes,
            )
        if isinstance(self.native_dtypes, list):
            object.__setattr__(self, "native_dtypes", tuple(self.native_dtypes))
        if not isinstance(self.native_dtypes, tuple) or not all(
            isinstance(d, str) for d in self.native_dtypes
        ):
            raise InvalidSettingError(
                f"native_dtypes must be a tuple of dtype names, got {self.native_dtypes!r}"[:200],
                setting="native_dtypes",
                value=self.native_dtypes,
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Hardware:
    """Devices in order (cuda:0, cuda:1, ...) plus host RAM (None when unknown)."""

    devices: tuple[DeviceTarget, ...] = ()
    host_ram_bytes: int | None = None
    #: the host OS when known ("windows", "linux", "macos"); None = unknown. Read where a
    #: runtime's behaviour differs by OS (Ollama's Windows NVML lookup)
    os: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.devices, list):
            object.__setattr__(self, "devices", tuple(self.devices))
        if not isinstance(self.devices, tuple) or not all(
            isinstance(d, DeviceTarget) for d in self.devices
        ):
            raise InvalidSettingError(
                "devices must be a tuple of DeviceTarget", setting="devices", value=None
            )
        if len(self.devices) > MAX_DEVICES:
            raise InvalidSettingError(
                f"devices must be at most {MAX_DEVICES}, got {len(self.devices)}",
                setting="devices",
                value=len(self.devices),
            )
        check_int("host_ram_bytes", self.host_ram_bytes, lo=0, hi=MAX_BYTES, optional=True)
        check_str("os", self.os)

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

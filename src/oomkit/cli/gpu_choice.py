"""``--gpu`` -> the devices an estimate targets, and what the CLI says about its choice.

The catalog resolves short names to a documented default (``a100`` -> the 80 GB SXM card,
``rtx-4060-ti`` -> the 8 GB card); the CLI never does that silently: text output prints the
chosen card and the other rows the name also fits on stderr, ``--json`` adds a ``hardware``
object with the same facts (additive to the DESIGN.md estimate document).

``--gpu auto`` takes the GPUs in this machine from the live detection ``oomkit gpus`` uses
(NVML, nvidia-smi, rocm-smi, Apple), and plans with each device's *free* memory now, not its
total: what other processes hold is not available to a new one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oomkit.errors import HardwareError, InvalidSettingError
from oomkit.spec.hardware import DeviceTarget, Hardware, device_label
from oomkit.units import format_bytes

if TYPE_CHECKING:
    from oomkit.hardware.catalog import GpuModel
    from oomkit.hardware.live import GpuStatus

__all__ = ["BACKEND_CHOICES", "GpuChoice", "HardwareChoice", "choose_hardware"]

_BACKEND_BY_CLASS = {
    "NvmlBackend": "cuda",
    "NvidiaSmiBackend": "cuda",
    "RocmSmiBackend": "rocm",
    "AppleBackend": "metal",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuChoice:
    """One distinct card a ``--gpu`` part resolved to (``count`` of them)."""

    query: str
    count: int
    key: str | None
    name: str
    capacity_bytes: int | None
    capacity_basis: str
    alternatives: tuple[GpuModel, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "count": self.count,
            "key": self.key,
            "name": self.name,
            "capacity_bytes": self.capacity_bytes,
            "capacity_basis": self.capacity_basis,
            "ambiguous_alternatives": [
                {"key": g.key, "name": g.name, "capacity_bytes": g.effective_memory_bytes}
                for g in self.alternatives
            ],
        }

    def describe(self) -> str:
        """``GPU: 2 x NVIDIA A100-SXM4-80GB (80.00 GiB) — 'a100' also matches ...``."""
        count = f"{self.count} x " if self.count > 1 else ""
        cap = (
            "capacity unknown" if self.capacity_bytes is None else format_bytes(self.capacity_bytes)
        )
        line = f"GPU: {count}{self.name} ({cap}, {self.capacity_basis})"
        if self.alternatives:
            keys = ", ".join(g.key for g in self.alternatives)
            line += f" — '{self.query}' also matches {keys}; pass the full name to choose"
        return line


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareChoice:
    """The estimate target plus how each card was chosen (empty when ``--gpu`` was not given)."""

    hardware: Hardware
    gpus: tuple[GpuChoice, ...] = ()
    source: str = "none"  # "catalog" | "auto" | "cpu" | "none"

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "gpus": [g.to_dict() for g in self.gpus],
            "devices": [
                {
                    "device": device_label(d, i),
                    "name": d.name,
                    "key": d.key,
                    "capacity_bytes": d.capacity_bytes,
                }
                for i, d in enumerate(d for d in self.hardware.devices if d.backend != "cpu")
            ],
        }

    def describe(self) -> list[str]:
        return [g.describe() for g in self.gpus]


def _basis(gpu: GpuModel, os: str | None = None) -> str:
    from oomkit.hardware.catalog import memory_is_nominal, runtime_capacity_bytes

    if gpu.usable_memory_bytes is not None:
        return "Metal working-set limit"
    if runtime_capacity_bytes(gpu, os=os) != gpu.memory_bytes:
        if gpu.cuda_total_bytes is None:  # oomkit.hardware.reserve: no message gives it
            return "modelled CUDA total (Linux): driver total less the smallest measured reserve"
        return "CUDA-reported total (Linux)"
    if memory_is_nominal(gpu):
        shared = ", shared with the CPU" if gpu.unified_memory else ""
        return f"nominal{shared}; driver figure not known"
    return "driver-reported total"


def _catalog_choice(
    text: str, vram_bytes: int | None, os: str | None = None
) -> tuple[tuple[GpuModel, ...], list[GpuChoice]]:
    from oomkit.cli.params import parse_gpu_list, split_gpu_count
    from oomkit.hardware.catalog import find_gpu, gpu_alternatives, runtime_capacity_bytes

    gpus = parse_gpu_list(text)  # validates every part and count first
    choices: list[GpuChoice] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        count, name = split_gpu_count(part)
        gpu = find_gpu(name)
        choices.append(
            GpuChoice(
                query=name.strip(),
                count=count,
                key=gpu.key,
                name=gpu.name,
                capacity_bytes=(
                    runtime_capacity_bytes(gpu, os=os) if vram_bytes is None else vram_bytes
                ),
                capacity_basis=_basis(gpu, os) if vram_bytes is None else "--vram",
                alternatives=gpu_alternatives(name),
            )
        )
    return gpus, choices


def live_targets(statuses: tuple[GpuStatus, ...], backend: str) -> tuple[DeviceTarget, ...]:
    """One target per live device, with its free memory now as capacity.

    A device the catalog knows (by its NVML/driver name and total) carries the row's
    architecture and dtypes; on unified-memory Apple chips the Metal working-set limit caps
    the free figure.
    """
    from oomkit.hardware.catalog import find_gpu_by_nvml_name

    out: list[DeviceTarget] = []
    for s in statuses:
        row = find_gpu_by_nvml_name(s.name, s.memory_total_bytes)
        free = s.memory_free_bytes
        if row is None:
            out.append(DeviceTarget(name=s.name, backend=backend, capacity_bytes=free))
            continue
        target = row.to_device_target()
        cap = min(free, row.effective_memory_bytes) if row.unified_memory else free
        out.append(dataclasses.replace(target, name=s.name, capacity_bytes=cap))
    return tuple(out)


def _auto_choice(vram_bytes: int | None) -> tuple[tuple[DeviceTarget, ...], list[GpuChoice]]:
    from oomkit.cli.gpus import live_snapshot

    try:
        backend, statuses = live_snapshot()
    except HardwareError as exc:
        raise HardwareError(
            "--gpu auto: no GPU is visible on this machine (NVML, nvidia-smi, rocm-smi and "
            "Apple sysctl found none); name a card with --gpu NAME or give --vram SIZE"
        ) from exc
    if not statuses:
        raise HardwareError(
            "--gpu auto: GPU detection found no devices; name a card with --gpu NAME or "
            "give --vram SIZE"
        )
    kind = _BACKEND_BY_CLASS.get(type(backend).__name__, "cuda")
    targets = live_targets(statuses, kind)
    if vram_bytes is not None:
        targets = tuple(dataclasses.replace(t, capacity_bytes=vram_bytes) for t in targets)
    choices = [
        GpuChoice(
            query="auto",
            count=1,
            key=t.key,
            name=f"{device_label(t, i)} {t.name}",
            capacity_bytes=t.capacity_bytes,
            capacity_basis="--vram" if vram_bytes is not None else "free memory now",
        )
        for i, t in enumerate(targets)
    ]
    return targets, choices


def choose_hardware(
    gpu: str | None,
    *,
    vram_bytes: int | None = None,
    host_ram_bytes: int | None = None,
    n_devices: int = 1,
    os: str | None = None,
) -> HardwareChoice:
    """Resolve ``--gpu`` (catalog names, ``2x3090``, ``4090x2``, ``auto``, ``cpu``) to a target.

    A catalog card's capacity is what a runtime budgets against on ``os`` (``--os``; None =
    unknown, taken as Linux): :func:`oomkit.hardware.catalog.runtime_capacity_bytes`.

    Raises:
        UnknownNameError: a name is not in the catalog (``AmbiguousGpuError`` when several
            rows fit it equally and none is the default).
        HardwareError: ``auto`` and no GPU is visible.
    """
    from oomkit.hardware.targets import check_memory_sizes, hardware_for

    check_memory_sizes(vram_bytes, host_ram_bytes)
    if gpu is not None and not gpu.strip():
        # `--gpu "$GPU"` with the variable unset: not "no GPU named" (capacity unknown)
        raise InvalidSettingError(
            f"no GPU named in '{gpu}': name one (rtx-4090, 2x3090, auto, cpu) or leave the "
            "option out",
            setting="--gpu",
            value=gpu,
        )
    if gpu is None:
        return HardwareChoice(
            hardware=hardware_for(
                (), vram_bytes=vram_bytes, host_ram_bytes=host_ram_bytes, n_devices=n_devices
            )
        )
    if gpu.strip().lower() in ("cpu", "none"):
        return HardwareChoice(
            hardware=Hardware(devices=(), host_ram_bytes=host_ram_bytes), source="cpu"
        )
    if gpu.strip().lower() == "auto":
        targets, choices = _auto_choice(vram_bytes)
        return HardwareChoice(
            hardware=Hardware(devices=targets, host_ram_bytes=host_ram_bytes),
            gpus=tuple(choices),
            source="auto",
        )
    rows, choices = _catalog_choice(gpu, vram_bytes, os)
    return HardwareChoice(
        hardware=hardware_for(rows, vram_bytes=vram_bytes, host_ram_bytes=host_ram_bytes, os=os),
        gpus=tuple(choices),
        source="catalog",
    )


#: ``--backend`` values: the ggml backends llama.cpp is built with whose memory oomkit models
#: (buffer names, alignment, context, the Vulkan per-buffer limit); SYCL is not modelled
LLAMACPP_BACKENDS = ("cuda", "rocm", "metal", "vulkan")
#: every ``--backend`` value the CLI takes (``estimate`` and ``plan``; the web API's bodies
#: check against this too): the modelled ones, and ``sycl`` (Intel GPUs' own backend, read as
#: the device's native ``xpu``)
BACKEND_CHOICES = (*LLAMACPP_BACKENDS, "sycl")
#: the backend a detected or catalog device runs natively -> the ``--backend`` values it can
#: take: Vulkan runs on NVIDIA, AMD and Intel GPUs (ggml-vulkan), CUDA only on NVIDIA, HIP only
#: on AMD, Metal only on Apple GPUs (llama.cpp docs/build.md)
_BACKEND_SWITCHES = {
    "cuda": ("cuda", "vulkan"),
    "rocm": ("rocm", "vulkan"),
    "xpu": ("xpu", "vulkan"),
    "metal": ("metal",),
}


def with_backend(
    hardware: Hardware, backend: str | None, runtime: str, *, named: bool = True
) -> Hardware:
    """``--backend``: run the GPUs of ``hardware`` on another ggml backend (llama.cpp only).

    A device named from the catalog or detected keeps its vendor: ``--backend vulkan`` works
    on any of them, ``cuda``/``rocm``/``metal`` only on their own vendor's GPUs. Devices that
    were not ``named`` (``--vram`` alone: no vendor known) take the backend given. CPU devices
    are left alone.

    Raises:
        InvalidSettingError: the runtime is not llama.cpp, or a GPU cannot run that backend.
    """
    from oomkit.errors import InvalidSettingError

    if backend is None:
        return hardware
    backend = shown = backend.strip().lower()
    if backend == "sycl":
        # llama.cpp's SYCL build is the Intel GPU's own backend (oomkit's "xpu", PyTorch's name
        # for the device): on an Intel GPU it changes nothing, elsewhere it cannot run
        backend = "xpu"
    if backend not in (*LLAMACPP_BACKENDS, "xpu"):
        raise InvalidSettingError(
            f"--backend must be one of {', '.join(BACKEND_CHOICES)}, got {shown!r}",
            setting="--backend",
        )
    # --vram alone names no vendor: for Ollama, --backend metal/cuda/rocm says which GPU it is
    # (Ollama's runner then uses that vendor's ggml backend, as it does on a named GPU)
    vendor_named = runtime == "ollama" and not named and backend in ("metal", "cuda", "rocm")
    if runtime != "llama.cpp" and not vendor_named:
        raise InvalidSettingError(
            f"--backend selects llama.cpp's ggml backend; {runtime} runs the backend of the "
            "GPU's vendor (drop --backend, or use --runtime llama.cpp)",
            setting="--backend",
        )
    devices: list[DeviceTarget] = []
    for d in hardware.devices:
        if d.backend == "cpu" or d.backend == backend:
            devices.append(d)
            continue
        if named and backend not in _BACKEND_SWITCHES.get(d.backend, (backend,)):
            raise InvalidSettingError(
                f"--backend {shown}: {d.name} cannot run llama.cpp's {shown} backend "
                f"(it runs {' or '.join(_BACKEND_SWITCHES.get(d.backend, (d.backend,)))})",
                setting="--backend",
            )
        devices.append(dataclasses.replace(d, backend=backend))
    return dataclasses.replace(hardware, devices=tuple(devices))


def with_vulkan_driver(hardware: Hardware, driver: str | None) -> Hardware:
    """``--vulkan-driver``: each Vulkan device's per-buffer limit from its driver (AMDVLK and
    AMD's proprietary driver: 2 GiB; :func:`oomkit.estimate.llamacpp_maxalloc.vulkan_driver_limit`).

    Raises:
        InvalidSettingError: a driver is given but no device runs llama.cpp's Vulkan backend.
    """
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.llamacpp_maxalloc import vulkan_driver_limit

    if driver is None:
        return hardware
    limit = vulkan_driver_limit(driver)
    if not any(d.backend == "vulkan" for d in hardware.devices):
        raise InvalidSettingError(
            f"--vulkan-driver {driver}: no GPU runs llama.cpp's Vulkan backend "
            "(add --backend vulkan)",
            setting="--vulkan-driver",
        )
    return dataclasses.replace(
        hardware,
        devices=tuple(
            dataclasses.replace(d, max_allocation_bytes=limit) if d.backend == "vulkan" else d
            for d in hardware.devices
        ),
    )

"""Command-line fallbacks when NVML is not usable: ``nvidia-smi``, ``rocm-smi``, Apple tools.

Pure ``parse_*`` functions turn captured text into records (tested on outputs posted in public
threads, ``tests/fixtures/nvidia_smi/PROVENANCE.md``); the ``*Backend`` classes run the command
(timeout) through an injectable ``runner`` and implement :class:`~oomkit.hardware.live.GpuBackend`.

Formats:

* ``nvidia-smi --query-gpu=...`` / ``--query-compute-apps=...`` with ``--format=csv`` (header and
  units optional: ``noheader,nounits`` is what we run, but captured files usually have both).
  ``[N/A]``/``[Not Supported]`` cells become ``None``. A process name may hold commas; the free
  text column swallows the extra cells (as nvidia_gpu_exporter does, parsing outside-in).
* ``nvidia-smi -L``: ``GPU 0: NAME (UUID: GPU-...)``, indented ``MIG 1g.10gb Device  0: (...)``.
* the default ``nvidia-smi`` table: GPU rows, the "MIG devices" block and the "Processes" block,
  in both the pre-470 layout (``GPU PID Type Process name``) and the newer one with GI/CI ids
  (parsed in :mod:`oomkit.hardware.smi_table`, re-exported here).
* ``rocm-smi --showproductname --showuse --showmeminfo vram --json``: ``{"card0": {...}}`` with
  ``"VRAM Total Memory (B)"`` and ``"VRAM Total Used Memory (B)"`` as strings of bytes.
* macOS ``sysctl -n hw.memsize`` (bytes) and ``vm_stat`` (pages; page size in the first line).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oomkit.errors import HardwareError
from oomkit.hardware.live import MigSlice, RawDevice, RawProcess
from oomkit.hardware.smi_table import SmiTable, TableGpu, TableProcess, parse_smi_table
from oomkit.units import MiB

__all__ = [
    "NVIDIA_SMI_APPS_QUERY",
    "NVIDIA_SMI_GPU_QUERY",
    "AppleBackend",
    "ListedGpu",
    "ListedMig",
    "NvidiaSmiBackend",
    "RocmSmiBackend",
    "Runner",
    "SmiApp",
    "SmiTable",
    "TableGpu",
    "TableProcess",
    "parse_compute_apps_csv",
    "parse_mig_list",
    "parse_query_gpu_csv",
    "parse_rocm_smi_json",
    "parse_smi_table",
    "parse_sysctl_memsize",
    "parse_vm_stat",
]

#: Runs argv and returns stdout; raises :class:`HardwareError` on failure.
Runner = Callable[[Sequence[str]], str]

_GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "memory.total",
    "memory.used",
    "memory.free",
    "utilization.gpu",
)
_APP_FIELDS = ("pid", "gpu_uuid", "used_memory", "process_name")
NVIDIA_SMI_GPU_QUERY = (
    "nvidia-smi",
    "--query-gpu=" + ",".join(_GPU_FIELDS),
    "--format=csv,noheader,nounits",
)
NVIDIA_SMI_APPS_QUERY = (
    "nvidia-smi",
    "--query-compute-apps=" + ",".join(_APP_FIELDS),
    "--format=csv,noheader,nounits",
)
_TIMEOUT_S = 10.0
# Header names nvidia-smi prints for a query field that differ from the field itself.
_HEADER_ALIASES = {"used_gpu_memory": "used_memory", "name": "name", "gpu_name": "gpu_name"}
_FREE_TEXT = ("process_name", "name")
_UNIT_RE = re.compile(r"\s*\[[^\]]*\]\s*$")


def _missing(cell: str) -> bool:
    value = cell.strip()
    return value == "" or value.startswith("[") or value.upper() == "N/A"


def _to_int(cell: str, suffix: str) -> int | None:
    value = cell.strip()
    if _missing(value):
        return None
    value = value.removesuffix(suffix).strip()
    try:
        number = float(value)
    except ValueError:
        return None
    # nvidia-smi of a broken driver can print inf/nan; a value over 2^60 is no measurement
    if not math.isfinite(number) or not -(1 << 60) < number < 1 << 60:
        return None
    return int(number)


def _csv_rows(text: str, default_fields: Sequence[str]) -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    first = [_UNIT_RE.sub("", cell).strip() for cell in lines[0].split(",")]
    known = set(default_fields) | set(_HEADER_ALIASES) | {"gpu_bus_id", "timestamp", "pci.bus_id"}
    fields: list[str]
    if first and all(cell in known or "." in cell for cell in first) and not first[0].isdigit():
        fields = [_HEADER_ALIASES.get(cell, cell) for cell in first]
        lines = lines[1:]
    else:
        fields = list(default_fields)
    free = next((i for i, f in enumerate(fields) if f in _FREE_TEXT), None)
    rows: list[dict[str, str]] = []
    for line in lines:
        cells = line.split(",")
        extra = len(cells) - len(fields)
        if extra < 0:
            continue
        if extra > 0:
            if free is None:
                continue
            cells[free : free + extra + 1] = [",".join(cells[free : free + extra + 1])]
        rows.append({f: c.strip() for f, c in zip(fields, cells, strict=True)})
    return rows


def parse_query_gpu_csv(text: str) -> tuple[RawDevice, ...]:
    """Parse ``nvidia-smi --query-gpu=index,name,uuid,memory.total,...`` CSV output.

    Rows without an index or total memory are skipped. Memory is MiB in the output.

    >>> parse_query_gpu_csv("0, NVIDIA A10G, GPU-4aa4, 23028, 22403, 215, 97")[0].memory_free_bytes
    225443840
    """
    devices: list[RawDevice] = []
    for row in _csv_rows(text, _GPU_FIELDS):
        index = _to_int(row.get("index", ""), "")
        total = _to_int(row.get("memory.total", ""), "MiB")
        used = _to_int(row.get("memory.used", ""), "MiB")
        if index is None or total is None:
            continue
        free = _to_int(row.get("memory.free", ""), "MiB")
        uuid = row.get("uuid", "")
        devices.append(
            RawDevice(
                index=index,
                name=row.get("name", "") or f"GPU {index}",
                uuid=None if _missing(uuid) else uuid,
                memory_total_bytes=total * MiB,
                memory_used_bytes=(used or 0) * MiB,
                memory_free_bytes=None if free is None else free * MiB,
                utilization_gpu_percent=_to_int(row.get("utilization.gpu", ""), "%"),
            )
        )
    return tuple(devices)


@dataclass(frozen=True, slots=True, kw_only=True)
class SmiApp:
    """One row of ``nvidia-smi --query-compute-apps``."""

    gpu_uuid: str | None
    pid: int | None
    used_bytes: int | None
    name: str | None


def parse_compute_apps_csv(text: str) -> tuple[SmiApp, ...]:
    """Parse ``nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory,process_name`` output.

    >>> parse_compute_apps_csv("44141, GPU-67fc, 74736, /opt/conda/bin/python")[0].used_bytes
    78366375936
    """
    apps: list[SmiApp] = []
    for row in _csv_rows(text, _APP_FIELDS):
        uuid = row.get("gpu_uuid", "")
        name = row.get("process_name", row.get("name", ""))
        used = _to_int(row.get("used_memory", ""), "MiB")
        apps.append(
            SmiApp(
                gpu_uuid=None if _missing(uuid) else uuid,
                pid=_to_int(row.get("pid", ""), ""),
                used_bytes=None if used is None else used * MiB,
                name=None if _missing(name) else name,
            )
        )
    return tuple(apps)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedMig:
    """A MIG device line of ``nvidia-smi -L``."""

    profile: str
    mig_index: int
    uuid: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedGpu:
    """A GPU line of ``nvidia-smi -L`` with its MIG devices."""

    index: int
    name: str
    uuid: str | None
    mig: tuple[ListedMig, ...]


_L_GPU_RE = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: ([^)]+)\))?\s*$")
_L_MIG_RE = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)\s*$")


def parse_mig_list(text: str) -> tuple[ListedGpu, ...]:
    """Parse ``nvidia-smi -L`` (GPUs and their MIG devices)."""
    gpus: list[ListedGpu] = []
    for line in text.splitlines():
        gpu = _L_GPU_RE.match(line)
        mig = _L_MIG_RE.match(line)
        if gpu:
            gpus.append(
                ListedGpu(index=int(gpu.group(1)), name=gpu.group(2), uuid=gpu.group(3), mig=())
            )
        elif mig and gpus:
            last = gpus[-1]
            entry = ListedMig(profile=mig.group(1), mig_index=int(mig.group(2)), uuid=mig.group(3))
            gpus[-1] = ListedGpu(
                index=last.index, name=last.name, uuid=last.uuid, mig=(*last.mig, entry)
            )
    return tuple(gpus)


def parse_rocm_smi_json(text: str) -> tuple[RawDevice, ...]:
    """Parse ``rocm-smi --showproductname --showuse --showmeminfo vram --json``.

    Cards without VRAM totals are skipped; malformed JSON yields ``()``.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return ()
    if not isinstance(data, dict):
        return ()
    devices: list[RawDevice] = []
    for key, card in data.items():
        match = re.fullmatch(r"card(\d+)", str(key))
        if not match or not isinstance(card, dict):
            continue
        total = _to_int(str(card.get("VRAM Total Memory (B)", "")), "")
        used = _to_int(str(card.get("VRAM Total Used Memory (B)", "")), "")
        if total is None:
            continue
        index = int(match.group(1))
        name = str(card.get("Card Series") or card.get("Card SKU") or f"AMD GPU {index}")
        devices.append(
            RawDevice(
                index=index,
                name=name,
                uuid=str(card["Unique ID"]) if "Unique ID" in card else None,
                memory_total_bytes=total,
                memory_used_bytes=used or 0,
                memory_free_bytes=None if used is None else total - used,
                utilization_gpu_percent=_to_int(str(card.get("GPU use (%)", "")), "%"),
            )
        )
    return tuple(sorted(devices, key=lambda d: d.index))


def parse_sysctl_memsize(text: str) -> int | None:
    """Parse ``sysctl hw.memsize`` (``hw.memsize: 17179869184``) or ``sysctl -n`` output.

    >>> parse_sysctl_memsize("hw.memsize: 17179869184")
    17179869184
    """
    value = text.strip().rsplit(":", 1)[-1].strip()
    return int(value) if value.isdigit() else None


def parse_vm_stat(text: str) -> dict[str, int]:
    """Parse macOS ``vm_stat`` into byte counts keyed like ``"pages_free"`` (pages * page size).

    The page size comes from the first line (4096 on Intel, 16384 on Apple silicon).
    """
    lines = text.splitlines()
    size = re.search(r"page size of (\d+) bytes", lines[0]) if lines else None
    page_bytes = int(size.group(1)) if size else 4096
    out: dict[str, int] = {"page_size_bytes": page_bytes}
    for line in lines[1:]:
        name, sep, value = line.rpartition(":")
        digits = value.strip().rstrip(".")
        if sep and digits.isdigit():
            key = re.sub(r"[^a-z]+", "_", name.strip().strip('"').lower()).strip("_")
            out[key] = int(digits) * page_bytes
    return out


def _default_runner(argv: Sequence[str]) -> str:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HardwareError(f"Running '{argv[0]}' failed ({' '.join(argv)}): {exc}.") from exc
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        raise HardwareError(
            f"Running '{argv[0]}' failed (exit {done.returncode}): "
            f"{why[0] if why else 'no output'}. Check the driver with '{argv[0]}' by hand."
        )
    return done.stdout


def _require_tool(name: str, runner: Runner | None) -> Runner:
    if runner is not None:
        return runner
    if shutil.which(name) is None:
        raise HardwareError(f"GPU query failed for '{name}' (PATH): the tool is not installed.")
    return _default_runner


class NvidiaSmiBackend:
    """:class:`GpuBackend` over ``nvidia-smi --query-*`` (used when NVML cannot be loaded).

    Args:
        runner: runs argv and returns stdout; the real ``nvidia-smi`` (10 s timeout) when ``None``.

    Raises:
        HardwareError: ``nvidia-smi`` is not on PATH (only when ``runner`` is ``None``).
    """

    def __init__(self, runner: Runner | None = None) -> None:
        self._run = _require_tool("nvidia-smi", runner)
        self._devices: tuple[RawDevice, ...] | None = None
        self._apps: tuple[SmiApp, ...] | None = None

    def _load(self) -> tuple[RawDevice, ...]:
        if self._devices is None:
            devices = parse_query_gpu_csv(self._run(NVIDIA_SMI_GPU_QUERY))
            try:
                listed = {g.index: g for g in parse_mig_list(self._run(("nvidia-smi", "-L")))}
            except HardwareError:
                listed = {}
            with_mig: list[RawDevice] = []
            for dev in devices:
                entry = listed.get(dev.index)
                slices = tuple(
                    MigSlice(
                        gpu_index=dev.index,
                        mig_index=m.mig_index,
                        gpu_instance_id=None,
                        compute_instance_id=None,
                        name=m.profile,
                        uuid=m.uuid,
                        memory_total_bytes=None,
                        memory_used_bytes=None,
                    )
                    for m in (entry.mig if entry else ())
                )
                with_mig.append(dataclasses.replace(dev, mig_slices=slices))
            self._devices = tuple(with_mig)
        return self._devices

    def device_count(self) -> int:
        """Number of GPUs ``nvidia-smi`` lists."""
        return len(self._load())

    def device(self, index: int) -> RawDevice:
        """The ``index``-th GPU in the query output."""
        return self._load()[index]

    def processes(self, index: int) -> tuple[RawProcess, ...]:
        """Compute processes whose ``gpu_uuid`` is this device's (all of them on one-GPU hosts)."""
        if self._apps is None:
            self._apps = parse_compute_apps_csv(self._run(NVIDIA_SMI_APPS_QUERY))
        dev = self._load()[index]
        single = len(self._load()) == 1
        return tuple(
            RawProcess(pid=a.pid, used_bytes=a.used_bytes, name=a.name)
            for a in self._apps
            if a.pid is not None and (a.gpu_uuid == dev.uuid or (single and a.gpu_uuid is None))
        )


class RocmSmiBackend:
    """:class:`GpuBackend` over ``rocm-smi --json`` (AMD). Per-process data is not read."""

    COMMAND = ("rocm-smi", "--showproductname", "--showuse", "--showmeminfo", "vram", "--json")

    def __init__(self, runner: Runner | None = None) -> None:
        self._run = _require_tool("rocm-smi", runner)
        self._devices: tuple[RawDevice, ...] | None = None

    def _load(self) -> tuple[RawDevice, ...]:
        if self._devices is None:
            self._devices = parse_rocm_smi_json(self._run(self.COMMAND))
        return self._devices

    def device_count(self) -> int:
        """Number of cards with VRAM figures."""
        return len(self._load())

    def device(self, index: int) -> RawDevice:
        """The ``index``-th card (sorted by ``cardN``)."""
        return self._load()[index]

    def processes(self, index: int) -> tuple[RawProcess, ...]:
        """Always empty: rocm-smi's per-process view is not parsed."""
        return ()


class AppleBackend:
    """:class:`GpuBackend` for Apple silicon unified memory (``sysctl`` + ``vm_stat``).

    Used = wired + active + compressor-occupied pages (what Activity Monitor calls memory used,
    less cached files); the GPU shares this pool with the CPU.

    Raises:
        HardwareError: not macOS (only when ``runner`` is ``None``).
    """

    def __init__(self, runner: Runner | None = None) -> None:
        if runner is None and sys.platform != "darwin":
            raise HardwareError(
                f"GPU query failed for 'Apple unified memory' (platform {sys.platform}): not macOS."
            )
        self._run = _require_tool("sysctl", runner)
        self._device: RawDevice | None = None

    def _load(self) -> RawDevice:
        if self._device is None:
            total = parse_sysctl_memsize(self._run(("sysctl", "-n", "hw.memsize")))
            if total is None:
                raise HardwareError(
                    "GPU query failed for 'Apple unified memory' (sysctl hw.memsize): no size."
                )
            try:
                brand = self._run(("sysctl", "-n", "machdep.cpu.brand_string")).strip()
            except HardwareError:
                brand = ""
            stats = parse_vm_stat(self._run(("vm_stat",)))
            used = sum(
                stats.get(k, 0)
                for k in ("pages_wired_down", "pages_active", "pages_occupied_by_compressor")
            )
            self._device = RawDevice(
                index=0,
                name=f"{brand or 'Apple'} (unified memory)",
                uuid=None,
                memory_total_bytes=total,
                memory_used_bytes=used,
                memory_free_bytes=max(0, total - used),
                utilization_gpu_percent=None,
            )
        return self._device

    def device_count(self) -> int:
        """Always 1: one unified memory pool."""
        self._load()
        return 1

    def device(self, index: int) -> RawDevice:
        """The unified memory pool."""
        return self._load()

    def processes(self, index: int) -> tuple[RawProcess, ...]:
        """Always empty: macOS does not attribute GPU memory per process here."""
        return ()

"""What is on the GPUs right now: memory per device, who holds it, and who should not.

:func:`detect_gpus` asks a :class:`GpuBackend` (NVML, ``nvidia-smi``, ``rocm-smi``, Apple
``sysctl``/``vm_stat``, or a fake in tests) for raw device and process records, looks every PID
up in ``/proc`` through a :class:`~oomkit.hardware.procinfo.ProcReader`, and flags stragglers:

* a zombie still charged with GPU memory (only its parent can reap it);
* an orphaned worker whose parent exited (re-parented to PID 1, or the parent is a zombie);
* an idle Jupyter kernel (``ipykernel``) holding memory while doing no GPU work;
* any process with no GPU (SM) activity in the sampling window that has run for a long time.

Each straggler comes with the command that ends it (``kill PID``, with ``sudo`` when it belongs
to another user). The rules mirror what people do by hand in public threads such as
https://github.com/apache/mxnet/issues/4242 (zombie holding memory) and
https://github.com/LISTatSNU/FastMRI_challenge/issues/238 (a leftover process eating the card).
"""

from __future__ import annotations

import dataclasses
import getpass
from dataclasses import dataclass
from typing import Any, Protocol

from oomkit.errors import HardwareError
from oomkit.hardware.procinfo import ProcFs, ProcInfo, ProcReader
from oomkit.units import format_bytes

__all__ = [
    "IDLE_AFTER_S",
    "JUPYTER_IDLE_AFTER_S",
    "GpuBackend",
    "GpuProcess",
    "GpuStatus",
    "MigSlice",
    "RawDevice",
    "RawProcess",
    "classify_process",
    "default_backend",
    "detect_gpus",
]

#: A process with no GPU activity that has run this long is flagged (seconds).
IDLE_AFTER_S = 30 * 60
#: A Jupyter kernel with no GPU activity that has run this long is flagged (seconds).
JUPYTER_IDLE_AFTER_S = 10 * 60

# Command-line markers of a worker process that should die with its parent: Python
# multiprocessing children (spawn/forkserver argv from multiprocessing/spawn.py
# get_command_line), joblib/loky workers, Ray workers, torch DataLoader/elastic workers.
_WORKER_MARKERS = (
    "multiprocessing.spawn",
    "multiprocessing.forkserver",
    "--multiprocessing-fork",
    "from multiprocessing",
    "loky.backend",
    "ray::",
    "torch/distributed/elastic",
    "torch.distributed.elastic",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MigSlice:
    """One MIG device (GPU instance + compute instance) carved out of a physical GPU.

    Memory is ``None`` where the source does not say (``nvidia-smi -L`` lists names only).
    """

    gpu_index: int
    mig_index: int
    gpu_instance_id: int | None
    compute_instance_id: int | None
    name: str | None
    uuid: str | None
    memory_total_bytes: int | None
    memory_used_bytes: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RawDevice:
    """A device as a backend reports it, before process lookup."""

    index: int
    name: str
    uuid: str | None
    memory_total_bytes: int
    memory_used_bytes: int
    memory_free_bytes: int | None
    utilization_gpu_percent: int | None
    mig_slices: tuple[MigSlice, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RawProcess:
    """A process holding memory on one device, as a backend reports it.

    ``sm_utilization_percent`` is the highest SM use NVML sampled for this PID in its window
    (``nvmlDeviceGetProcessUtilization``): ``0`` means no GPU work, ``None`` means unknown.
    """

    pid: int
    used_bytes: int | None
    name: str | None = None
    sm_utilization_percent: int | None = None


class GpuBackend(Protocol):
    """The few calls :func:`detect_gpus` needs; NVML, nvidia-smi and test fakes implement it."""

    def device_count(self) -> int:
        """Number of physical devices."""
        ...  # pragma: no cover

    def device(self, index: int) -> RawDevice:
        """Memory, utilization and MIG slices of device ``index``."""
        ...  # pragma: no cover

    def processes(self, index: int) -> tuple[RawProcess, ...]:
        """Processes holding memory on device ``index``."""
        ...  # pragma: no cover


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProcess:
    """A process holding GPU memory, with what the OS says about it.

    ``alive`` is ``None`` when the PID is not visible here (another PID namespace, e.g. a
    container, or it exited between the two queries); ``zombie`` and ``parent_alive`` are then
    ``None`` too.
    """

    pid: int
    used_bytes: int | None
    user: str | None
    command: str | None
    age_s: float | None
    alive: bool | None
    zombie: bool | None
    parent_alive: bool | None
    sm_utilization_percent: int | None
    straggler_reason: str | None
    kill_command: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuStatus:
    """One physical GPU now."""

    index: int
    name: str
    uuid: str | None
    memory_total_bytes: int
    memory_used_bytes: int
    memory_free_bytes: int
    utilization_gpu_percent: int | None
    mig_slices: tuple[MigSlice, ...]
    processes: tuple[GpuProcess, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (ints for bytes, lists for tuples)."""
        return dataclasses.asdict(self)


def _age_text(age_s: float) -> str:
    if age_s >= 86400:
        return f"{age_s / 86400:.1f} d"
    if age_s >= 3600:
        return f"{age_s / 3600:.1f} h"
    return f"{age_s / 60:.0f} min"


def _kill(pid: int, owner: str | None, current_user: str | None) -> str:
    sudo = (
        "sudo " if owner is not None and current_user is not None and owner != current_user else ""
    )
    return f"{sudo}kill {pid}"


def classify_process(
    raw: RawProcess,
    info: ProcInfo | None,
    *,
    device_utilization_percent: int | None,
    current_user: str | None,
) -> tuple[str | None, str | None]:
    """Decide whether a GPU process is a straggler.

    Args:
        raw: the backend's record (PID, memory in bytes, SM use).
        info: the OS's record, ``None`` when the PID is not visible here.
        device_utilization_percent: whole-GPU utilization, used when per-process SM use is
            unknown.
        current_user: who runs oomkit; another user's process gets ``sudo kill``.

    Returns:
        ``(reason, kill_command)``; both ``None`` for a process that looks fine.
    """
    if info is None:
        return None, None
    held = format_bytes(raw.used_bytes) if raw.used_bytes is not None else "GPU memory"
    if info.zombie:
        if info.ppid > 1 and info.parent_alive:
            return (
                f"zombie process still charged {held}; only its parent (PID {info.ppid}) can "
                "reap it",
                _kill(info.ppid, None, None),
            )
        return (
            f"zombie process still charged {held} with no live parent to reap it; if the memory "
            "is not released, reset the GPU (nvidia-smi --gpu-reset) or reboot",
            None,
        )
    command = info.command or ""
    is_worker = any(marker in command for marker in _WORKER_MARKERS)
    if is_worker and (info.ppid == 1 or not info.parent_alive):
        why = "re-parented to PID 1" if info.ppid == 1 else f"parent PID {info.ppid} is gone"
        return (
            f"orphaned worker holding {held}: its parent exited ({why})",
            _kill(info.pid, info.user, current_user),
        )
    idle = raw.sm_utilization_percent == 0 or (
        raw.sm_utilization_percent is None and device_utilization_percent == 0
    )
    age = info.age_s
    if "ipykernel" in command and idle and age is not None and age >= JUPYTER_IDLE_AFTER_S:
        return (
            f"idle Jupyter kernel (up {_age_text(age)}, 0% GPU) holding {held}; shut the kernel "
            "down or restart it",
            _kill(info.pid, info.user, current_user),
        )
    if raw.sm_utilization_percent == 0 and age is not None and age >= IDLE_AFTER_S:
        return (
            f"no GPU activity in the sampling window after {_age_text(age)} of running, "
            f"holding {held}",
            _kill(info.pid, info.user, current_user),
        )
    return None, None


def default_backend() -> GpuBackend:
    """Pick the first backend that works here: NVML, nvidia-smi, rocm-smi, then Apple.

    Raises:
        HardwareError: no NVIDIA, AMD or Apple GPU could be queried (no driver, no tools).
    """
    from oomkit.errors import NvmlUnavailableError
    from oomkit.hardware import smi
    from oomkit.hardware.nvml import NvmlBackend

    reasons: list[str] = []
    try:
        return NvmlBackend()
    except NvmlUnavailableError as exc:
        reasons.append(str(exc))
    for factory in (smi.NvidiaSmiBackend, smi.RocmSmiBackend, smi.AppleBackend):
        try:
            return factory()
        except HardwareError as exc:  # noqa: PERF203 - three tries, not a hot loop
            reasons.append(str(exc))
    raise HardwareError(
        "GPU detection failed for 'this machine' (NVML, nvidia-smi, rocm-smi, sysctl): "
        "no NVIDIA, AMD or Apple GPU found. Install the driver, or look a GPU up with "
        "'oomkit gpus --catalog'.\n  " + "\n  ".join(reasons)
    )


def detect_gpus(
    backend: GpuBackend | None = None,
    *,
    procs: ProcReader | None = None,
    current_user: str | None = None,
) -> tuple[GpuStatus, ...]:
    """Query every GPU and the processes holding its memory.

    Args:
        backend: where device data comes from; :func:`default_backend` when ``None``.
        procs: where process data comes from; the live ``/proc`` when ``None``.
        current_user: login name used to decide on ``sudo``; the caller's when ``None``.

    Returns:
        One :class:`GpuStatus` per physical device, in index order. Bytes are ints.

    Raises:
        HardwareError: no backend works (see :func:`default_backend`).
    """
    source = backend if backend is not None else default_backend()
    reader: ProcReader = procs if procs is not None else ProcFs()
    if current_user is None:
        try:
            current_user = getpass.getuser()
        except (KeyError, OSError):  # pragma: no cover - no passwd entry
            current_user = None
    statuses: list[GpuStatus] = []
    for index in range(source.device_count()):
        raw = source.device(index)
        processes: list[GpuProcess] = []
        for proc in source.processes(index):
            info = reader.read(proc.pid)
            reason, kill = classify_process(
                proc,
                info,
                device_utilization_percent=raw.utilization_gpu_percent,
                current_user=current_user,
            )
            processes.append(
                GpuProcess(
                    pid=proc.pid,
                    used_bytes=proc.used_bytes,
                    user=info.user if info else None,
                    command=(info.command or info.comm) if info else proc.name,
                    age_s=info.age_s if info else None,
                    alive=(not info.zombie) if info else None,
                    zombie=info.zombie if info else None,
                    parent_alive=info.parent_alive if info else None,
                    sm_utilization_percent=proc.sm_utilization_percent,
                    straggler_reason=reason,
                    kill_command=kill,
                )
            )
        free = raw.memory_free_bytes
        if free is None:
            free = max(0, raw.memory_total_bytes - raw.memory_used_bytes)
        statuses.append(
            GpuStatus(
                index=raw.index,
                name=raw.name,
                uuid=raw.uuid,
                memory_total_bytes=raw.memory_total_bytes,
                memory_used_bytes=raw.memory_used_bytes,
                memory_free_bytes=free,
                utilization_gpu_percent=raw.utilization_gpu_percent,
                mig_slices=raw.mig_slices,
                processes=tuple(
                    sorted(processes, key=lambda p: -(p.used_bytes or 0)),
                ),
            )
        )
    return tuple(statuses)

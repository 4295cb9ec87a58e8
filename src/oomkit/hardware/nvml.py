"""NVML backend (``nvidia-ml-py``): the only module that imports :mod:`pynvml`, and only lazily.

Calls used (NVML API reference, https://docs.nvidia.com/deploy/nvml-api/):
``nvmlInit``, ``nvmlDeviceGetCount``, ``nvmlDeviceGetHandleByIndex``, ``nvmlDeviceGetName``,
``nvmlDeviceGetUUID``, ``nvmlDeviceGetMemoryInfo`` (bytes), ``nvmlDeviceGetUtilizationRates``
(``NOT_SUPPORTED`` in MIG mode), ``nvmlDeviceGetMigMode``, ``nvmlDeviceGetMaxMigDeviceCount``,
``nvmlDeviceGetMigDeviceHandleByIndex`` (+ ``GetGpuInstanceId``/``GetComputeInstanceId``),
``nvmlDeviceGetComputeRunningProcesses`` and ``...GraphicsRunningProcesses`` (``usedGpuMemory`` is
``None`` when the driver cannot say, e.g. Windows WDDM), and ``nvmlDeviceGetProcessUtilization``
(per-PID SM samples newer than a timestamp; ``NOT_FOUND`` means no process ran kernels).
How the errors are told apart follows nvitop's ``nvitop/api/libnvml.py``.
"""

from __future__ import annotations

import time
from typing import Any

from oomkit.errors import HardwareError, NvmlUnavailableError
from oomkit.hardware.live import MigSlice, RawDevice, RawProcess

__all__ = ["NvmlBackend"]

_HINT = (
    "Install the NVIDIA driver and 'pip install nvidia-ml-py', or run 'nvidia-smi' to check it; "
    "'oomkit gpus --catalog' works without a GPU"
)
#: Per-process SM samples are read for this many seconds back.
_SAMPLE_WINDOW_S = 60.0


def _load() -> Any:
    try:
        import pynvml
    except ImportError as exc:
        raise NvmlUnavailableError(
            f"NVML query failed for 'pynvml' (import): nvidia-ml-py is not installed. {_HINT}."
        ) from exc
    return pynvml


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlBackend:
    """:class:`~oomkit.hardware.live.GpuBackend` over NVML.

    Raises:
        NvmlUnavailableError: nvidia-ml-py is missing, or ``nvmlInit`` failed (no driver,
            driver/library mismatch, no permission).
    """

    def __init__(self) -> None:
        nv = _load()
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise NvmlUnavailableError(
                f"NVML query failed for 'nvmlInit' (driver): {exc}. {_HINT}."
            ) from exc
        self._nv = nv

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self._nv.NVMLError as exc:
            raise HardwareError(f"NVML query failed for '{what}' (args {args!r}): {exc}.") from exc

    def _optional(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self._nv.NVMLError:
            return None

    def device_count(self) -> int:
        """``nvmlDeviceGetCount``."""
        return int(self._call("nvmlDeviceGetCount", self._nv.nvmlDeviceGetCount))

    def _handle(self, index: int) -> Any:
        return self._call("nvmlDeviceGetHandleByIndex", self._nv.nvmlDeviceGetHandleByIndex, index)

    def device(self, index: int) -> RawDevice:
        """Memory, utilization and MIG slices of GPU ``index``."""
        nv = self._nv
        handle = self._handle(index)
        mem = self._call("nvmlDeviceGetMemoryInfo", nv.nvmlDeviceGetMemoryInfo, handle)
        util = self._optional(nv.nvmlDeviceGetUtilizationRates, handle)
        uuid = self._optional(nv.nvmlDeviceGetUUID, handle)
        return RawDevice(
            index=index,
            name=_text(self._call("nvmlDeviceGetName", nv.nvmlDeviceGetName, handle)),
            uuid=_text(uuid) if uuid is not None else None,
            memory_total_bytes=int(mem.total),
            memory_used_bytes=int(mem.used),
            memory_free_bytes=int(mem.free),
            utilization_gpu_percent=int(util.gpu) if util is not None else None,
            mig_slices=self._mig(index, handle),
        )

    def _mig(self, index: int, handle: Any) -> tuple[MigSlice, ...]:
        nv = self._nv
        mode = self._optional(nv.nvmlDeviceGetMigMode, handle)
        if not mode or mode[0] != 1:  # NVML_DEVICE_MIG_ENABLE == 1
            return ()
        slices: list[MigSlice] = []
        count = self._optional(nv.nvmlDeviceGetMaxMigDeviceCount, handle) or 0
        for mig_index in range(int(count)):
            mig = self._optional(nv.nvmlDeviceGetMigDeviceHandleByIndex, handle, mig_index)
            if mig is None:  # NOT_FOUND: an empty slot
                continue
            mem = self._optional(nv.nvmlDeviceGetMemoryInfo, mig)
            name = self._optional(nv.nvmlDeviceGetName, mig)
            uuid = self._optional(nv.nvmlDeviceGetUUID, mig)
            gi = self._optional(nv.nvmlDeviceGetGpuInstanceId, mig)
            ci = self._optional(nv.nvmlDeviceGetComputeInstanceId, mig)
            slices.append(
                MigSlice(
                    gpu_index=index,
                    mig_index=mig_index,
                    gpu_instance_id=int(gi) if gi is not None else None,
                    compute_instance_id=int(ci) if ci is not None else None,
                    name=_text(name) if name is not None else None,
                    uuid=_text(uuid) if uuid is not None else None,
                    memory_total_bytes=int(mem.total) if mem is not None else None,
                    memory_used_bytes=int(mem.used) if mem is not None else None,
                )
            )
        return tuple(slices)

    def _sm_by_pid(self, handle: Any) -> dict[int, int] | None:
        nv = self._nv
        since_us = int((time.time() - _SAMPLE_WINDOW_S) * 1_000_000)
        try:
            samples = nv.nvmlDeviceGetProcessUtilization(handle, since_us)
        except nv.NVMLError_NotFound:
            return {}  # no samples in the window: nobody ran kernels
        except nv.NVMLError:
            return None
        out: dict[int, int] = {}
        for sample in samples:
            pid = int(sample.pid)
            out[pid] = max(out.get(pid, 0), int(sample.smUtil))
        return out

    def processes(self, index: int) -> tuple[RawProcess, ...]:
        """Compute and graphics processes on GPU ``index``, one row per PID."""
        nv = self._nv
        handle = self._handle(index)
        rows: dict[int, RawProcess] = {}
        sm = self._sm_by_pid(handle)
        for fn in (
            nv.nvmlDeviceGetComputeRunningProcesses,
            nv.nvmlDeviceGetGraphicsRunningProcesses,
        ):
            for proc in self._optional(fn, handle) or ():
                pid = int(proc.pid)
                used = getattr(proc, "usedGpuMemory", None)
                known = rows.get(pid)
                # A C+G process is listed by both calls with the same charge: keep the larger.
                values = [v for v in (used, known.used_bytes if known else None) if v is not None]
                rows[pid] = RawProcess(
                    pid=pid,
                    used_bytes=max(int(v) for v in values) if values else None,
                    name=None,
                    sm_utilization_percent=None if sm is None else sm.get(pid, 0),
                )
        return tuple(rows.values())

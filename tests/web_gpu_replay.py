"""A GPU backend that replays a captured ``nvidia-smi`` table (no NVIDIA driver here).

Used by the web tests to show the page's "My GPUs" list; the table is a real capture from
tests/fixtures/nvidia_smi/ (see PROVENANCE.md there) parsed by oomkit's own parser.
"""

from __future__ import annotations

from pathlib import Path

from oomkit.hardware import smi
from oomkit.hardware.live import RawDevice, RawProcess

CAPTURE = Path(__file__).parent / "fixtures" / "nvidia_smi" / "table_gpus_rlinf_255.txt"


class ReplayBackend:
    """Two RTX 4090 (driver 550 layout, RLinf#255), with their processes."""

    def __init__(self, path: Path = CAPTURE) -> None:
        table = smi.parse_smi_table(path.read_text(encoding="utf-8"))
        self._devices = tuple(
            RawDevice(
                index=g.index,
                name=g.name,
                uuid=None,
                memory_total_bytes=g.memory_total_bytes,
                memory_used_bytes=g.memory_used_bytes,
                memory_free_bytes=None,
                utilization_gpu_percent=g.utilization_gpu_percent,
                mig_slices=(),
            )
            for g in table.gpus
        )
        self._procs = table.processes

    def device_count(self) -> int:
        return len(self._devices)

    def device(self, index: int) -> RawDevice:
        return self._devices[index]

    def processes(self, index: int) -> tuple[RawProcess, ...]:
        return tuple(
            RawProcess(pid=p.pid, used_bytes=p.used_bytes, name=p.name, sm_utilization_percent=None)
            for p in self._procs
            if p.gpu_index == index
        )

"""The default ``nvidia-smi`` printout (the table people paste): GPU rows, MIG devices, processes.

Both layouts of the "Processes" block are read: the pre-470 one (``GPU PID Type Process name``)
and the newer one with GI/CI ids. :func:`parse_smi_table` is pure and never raises (tested on
printouts posted in public threads, ``tests/fixtures/nvidia_smi/PROVENANCE.md``); it is
re-exported by :mod:`oomkit.hardware.smi` with the other command-line parsers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oomkit.hardware.live import MigSlice
from oomkit.units import MiB

__all__ = ["SmiTable", "TableGpu", "TableProcess", "parse_smi_table"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableGpu:
    """A GPU row of the default ``nvidia-smi`` table (the name may be truncated with ``...``)."""

    index: int
    name: str
    memory_used_bytes: int
    memory_total_bytes: int
    utilization_gpu_percent: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TableProcess:
    """A row of the "Processes" block; ``used_bytes`` is ``None`` for ``N/A`` (Windows WDDM)."""

    gpu_index: int
    gpu_instance_id: int | None
    compute_instance_id: int | None
    pid: int
    type: str
    name: str
    used_bytes: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SmiTable:
    """Everything read from one default ``nvidia-smi`` printout."""

    gpus: tuple[TableGpu, ...]
    mig_slices: tuple[MigSlice, ...]
    processes: tuple[TableProcess, ...]


_T_GPU_RE = re.compile(r"^\|\s+(\d+)\s+(\S.*?)\s+(?:On|Off)\s*\|")
_T_MEM_RE = re.compile(r"^\|.*?\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(?:(\d+)%|N/A)\s")
_T_MIG_RE = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|\s+(\d+)MiB\s*/\s*(\d+)MiB\s*\|")
_T_PROC_RE = re.compile(
    r"^\|\s+(\d+)\s+(N/A|\d+)\s+(N/A|\d+)\s+(\d+)\s+(C\+G|C|G)\s+(.*?)\s+(\d+MiB|N/A)\s*\|\s*$"
)
_T_PROC_OLD_RE = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+(C\+G|C|G)\s+(.*?)\s+(\d+MiB|N/A)\s*\|\s*$")


def _opt_int(text: str) -> int | None:
    return None if text == "N/A" else int(text)


def _mib_cell(text: str) -> int | None:
    return None if text == "N/A" else int(text.removesuffix("MiB")) * MiB


def parse_smi_table(text: str) -> SmiTable:
    """Parse the default ``nvidia-smi`` printout (GPU rows, MIG devices, processes).

    Never raises: lines it does not recognise are skipped.
    """
    gpus: list[TableGpu] = []
    migs: list[MigSlice] = []
    procs: list[TableProcess] = []
    section = "gpus"
    pending: tuple[int, str] | None = None
    for line in text.splitlines():
        if "MIG devices:" in line:
            section = "mig"
            continue
        if "Processes:" in line:
            section = "processes"
            continue
        if section == "gpus":
            head = _T_GPU_RE.match(line)
            if head:
                pending = (int(head.group(1)), head.group(2).strip())
                continue
            mem = _T_MEM_RE.match(line)
            if mem and pending is not None:
                gpus.append(
                    TableGpu(
                        index=pending[0],
                        name=pending[1],
                        memory_used_bytes=int(mem.group(1)) * MiB,
                        memory_total_bytes=int(mem.group(2)) * MiB,
                        utilization_gpu_percent=None if mem.group(3) is None else int(mem.group(3)),
                    )
                )
                pending = None
        elif section == "mig":
            row = _T_MIG_RE.match(line)
            if row:
                migs.append(
                    MigSlice(
                        gpu_index=int(row.group(1)),
                        gpu_instance_id=int(row.group(2)),
                        compute_instance_id=int(row.group(3)),
                        mig_index=int(row.group(4)),
                        name=None,
                        uuid=None,
                        memory_used_bytes=int(row.group(5)) * MiB,
                        memory_total_bytes=int(row.group(6)) * MiB,
                    )
                )
        else:
            new = _T_PROC_RE.match(line)
            if new:
                procs.append(
                    TableProcess(
                        gpu_index=int(new.group(1)),
                        gpu_instance_id=_opt_int(new.group(2)),
                        compute_instance_id=_opt_int(new.group(3)),
                        pid=int(new.group(4)),
                        type=new.group(5),
                        name=new.group(6).strip(),
                        used_bytes=_mib_cell(new.group(7)),
                    )
                )
                continue
            old = _T_PROC_OLD_RE.match(line)
            if old:
                procs.append(
                    TableProcess(
                        gpu_index=int(old.group(1)),
                        gpu_instance_id=None,
                        compute_instance_id=None,
                        pid=int(old.group(2)),
                        type=old.group(3),
                        name=old.group(4).strip(),
                        used_bytes=_mib_cell(old.group(5)),
                    )
                )
    return SmiTable(gpus=tuple(gpus), mig_slices=tuple(migs), processes=tuple(procs))

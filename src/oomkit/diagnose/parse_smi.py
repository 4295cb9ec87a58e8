"""An ``nvidia-smi`` table pasted beside an OOM message: memory in use per GPU and the processes.

Users often paste the output of ``nvidia-smi`` next to the error. Its device rows carry
``<used>MiB / <total>MiB`` in the *Memory-Usage* column, after a row that starts with the GPU
index; its *Processes* section lists ``GPU [GI CI] PID Type Process-name <used>MiB`` (nvidia-smi
prints MiB, 2**20 bytes). This parser finds no OOM event; it adds two context facts that
:mod:`oomkit.diagnose.rules_smi` reads:

* ``smi_memory``: ``(gpu, used_bytes, total_bytes)`` per device row;
* ``smi_processes``: ``(gpu, pid, name, used_bytes)`` per process row.

>>> from oomkit.diagnose.text import split_lines
>>> table = '''
... |   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                    0 |
... | N/A   34C    P0    38W / 300W |  15514MiB / 16130MiB |      0%      Default |
... |    0   N/A  N/A     12345      C   python                          15511MiB |
... '''
>>> _, facts = parse_smi(split_lines(table))
>>> facts["smi_memory"], facts["smi_processes"]
([(0, 16267608064, 16913530880)], [(0, 12345, 'python', 16264462336)])
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.text import Lines

__all__ = ["parse_smi"]

_MIB = 1 << 20
# "| N/A   34C    P0    38W / 300W |  15514MiB / 16130MiB |      0%      Default |"
_MEMORY = re.compile(
    r"\|\s{0,40}(?P<used>\d{1,9})MiB\s{0,4}/\s{0,4}(?P<total>\d{1,9})MiB\s{0,40}\|"
)
# "|   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |" (the row above the memory row)
_DEVICE = re.compile(r"^\|\s{1,8}(?P<gpu>\d{1,2})\s{1,8}\S")
# "|    0   N/A  N/A     12345      C   python     15511MiB |" (GI/CI columns since driver 450)
_PROCESS = re.compile(
    r"^\|\s{1,12}(?P<gpu>\d{1,2})\s{1,12}(?:(?:N/A|\d{1,4})\s{1,12}(?:N/A|\d{1,4})\s{1,12})?"
    r"(?P<pid>\d{1,10})\s{1,12}(?:C\+G|M\+C|C|G|M)\s{1,12}(?P<name>\S.{0,80}?)\s{1,60}"
    r"(?P<used>\d{1,9})MiB\s{0,12}\|"
)


def parse_smi(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """Memory rows and process rows of an ``nvidia-smi`` table; never raises, no events."""
    memory: list[tuple[int, int, int]] = []
    processes: list[tuple[int, int, str, int]] = []
    text = lines.text
    for i, raw in enumerate(text):
        if "MiB" not in raw or not raw.lstrip().startswith("|"):
            continue
        m = _MEMORY.search(raw)
        if m is not None and i:
            dev = _DEVICE.match(text[i - 1].strip())
            if dev is not None:
                memory.append(
                    (
                        int(dev.group("gpu")),
                        int(m.group("used")) * _MIB,
                        int(m.group("total")) * _MIB,
                    )
                )
                continue
        p = _PROCESS.match(raw.strip())
        if p is not None:
            processes.append(
                (
                    int(p.group("gpu")),
                    int(p.group("pid")),
                    p.group("name").strip()[:80],
                    int(p.group("used")) * _MIB,
                )
            )
    facts: dict[str, Any] = {}
    if memory:
        facts["smi_memory"] = memory
    if processes:
        facts["smi_processes"] = processes
    return [], facts

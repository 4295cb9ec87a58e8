"""What the OS knows about a process holding GPU memory (Linux ``/proc``).

NVML and ``nvidia-smi`` report a PID and its memory; everything else (user, command line, age,
zombie state, whether its parent still lives) comes from ``/proc/<pid>``. The reader takes the
``/proc`` root as a parameter so tests can point it at a fixture tree, the same way nvitop's
``host`` layer wraps psutil.

Fields parsed (``proc(5)``):

* ``/proc/<pid>/stat``: field 3 ``state`` (``Z`` zombie, ``X`` dead), field 4 ``ppid``, field 22
  ``starttime`` in clock ticks since boot. The command in field 2 is in parentheses and may
  itself hold spaces and parentheses, so the line is split at the *last* ``)``.
* ``/proc/<pid>/cmdline``: NUL-separated argv (empty for zombies and kernel threads).
* ``/proc/<pid>/status``: ``Uid:`` real uid, mapped to a user name with :mod:`pwd`.
* ``/proc/uptime``: seconds since boot, to turn ``starttime`` into an age.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = [
    "ProcFs",
    "ProcInfo",
    "ProcReader",
    "parse_proc_stat",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcInfo:
    """One process as the OS reports it.

    Attributes:
        pid: process id.
        ppid: parent process id (1 after the original parent exited and init adopted it).
        state: one-letter state from ``/proc/<pid>/stat`` (``R``, ``S``, ``D``, ``Z``, ...).
        user: login name of the real uid, or the uid as text when it has no name; ``None``
            when unreadable.
        command: the command line joined with spaces; ``None`` when empty (zombies).
        comm: the short name from ``stat`` (15 characters at most).
        age_s: seconds since the process started; ``None`` when unknown.
        parent_alive: whether ``ppid`` still exists and is not a zombie.
    """

    pid: int
    ppid: int
    state: str
    user: str | None
    command: str | None
    comm: str
    age_s: float | None
    parent_alive: bool

    @property
    def zombie(self) -> bool:
        """True for a zombie (``Z``) or dead (``X``) process."""
        return self.state in ("Z", "X")


class ProcReader(Protocol):
    """Looks a PID up; returns ``None`` when the PID is not visible here."""

    def read(self, pid: int) -> ProcInfo | None:
        """Return what the OS knows about ``pid``, or ``None`` if it does not exist here."""
        ...  # pragma: no cover


def parse_proc_stat(text: str) -> tuple[str, str, int, int]:
    """Parse one ``/proc/<pid>/stat`` line into ``(comm, state, ppid, starttime_ticks)``.

    Raises:
        ValueError: the line does not have the ``proc(5)`` layout.

    >>> parse_proc_stat("4867 (cat) R 4865 4865 2049 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 23008")
    ('cat', 'R', 4865, 23008)
    >>> parse_proc_stat("77 (python (x) y) Z 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 500 0")[:3]
    ('python (x) y', 'Z', 1)
    """
    open_at = text.find("(")
    close_at = text.rfind(")")
    if open_at < 0 or close_at < open_at:
        raise ValueError(f"not a /proc/<pid>/stat line: {text[:80]!r}")
    comm = text[open_at + 1 : close_at]
    rest = text[close_at + 1 :].split()
    # rest[0] is field 3 (state); field N is rest[N - 3].
    if len(rest) < 20:
        raise ValueError(f"/proc/<pid>/stat line has {len(rest) + 2} fields, expected >= 22")
    return comm, rest[0], int(rest[1]), int(rest[19])


class ProcFs:
    """A :class:`ProcReader` over a ``/proc``-shaped directory.

    Args:
        root: the ``/proc`` mount (a fixture tree in tests).
        clock_ticks_per_s: ``sysconf(SC_CLK_TCK)``; read from the OS when ``None``.
        uid_names: uid -> name table; the system's :mod:`pwd` database when ``None``.
    """

    def __init__(
        self,
        root: Path = Path("/proc"),
        *,
        clock_ticks_per_s: int | None = None,
        uid_names: dict[int, str] | None = None,
    ) -> None:
        self._root = root
        self._ticks = clock_ticks_per_s
        self._uid_names = uid_names

    def _clock_ticks(self) -> int:
        if self._ticks is None:
            try:
                self._ticks = int(os.sysconf("SC_CLK_TCK"))
            except (ValueError, OSError, AttributeError):
                self._ticks = 100
        return self._ticks

    def _user(self, uid: int) -> str:
        if self._uid_names is not None:
            return self._uid_names.get(uid, str(uid))
        try:
            import pwd  # Unix only

            return pwd.getpwuid(uid).pw_name
        except (ImportError, KeyError):
            return str(uid)

    def _read_text(self, *parts: str) -> str | None:
        try:
            return self._root.joinpath(*parts).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def _stat(self, pid: int) -> tuple[str, str, int, int] | None:
        text = self._read_text(str(pid), "stat")
        if text is None:
            return None
        try:
            return parse_proc_stat(text)
        except ValueError:
            return None

    def read(self, pid: int) -> ProcInfo | None:
        """Return the process ``pid`` or ``None`` when ``<root>/<pid>`` does not exist."""
        stat = self._stat(pid)
        if stat is None:
            return None
        comm, state, ppid, start_ticks = stat
        cmdline = self._read_text(str(pid), "cmdline") or ""
        command = " ".join(part for part in cmdline.split("\x00") if part) or None
        user: str | None = None
        status = self._read_text(str(pid), "status") or ""
        for line in status.splitlines():
            if line.startswith("Uid:"):
                fields = line.split()
                if len(fields) > 1 and fields[1].isdigit():
                    user = self._user(int(fields[1]))
                break
        age_s: float | None = None
        uptime = self._read_text("uptime")
        if uptime:
            try:
                age_s = max(0.0, float(uptime.split()[0]) - start_ticks / self._clock_ticks())
            except (ValueError, IndexError):
                age_s = None
        parent_alive = False
        if ppid > 0:
            parent = self._stat(ppid)
            parent_alive = parent is not None and parent[1] not in ("Z", "X")
        return ProcInfo(
            pid=pid,
            ppid=ppid,
            state=state,
            user=user,
            command=command,
            comm=comm,
            age_s=age_s,
            parent_alive=parent_alive,
        )

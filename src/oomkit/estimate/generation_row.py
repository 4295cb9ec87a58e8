"""One row of the runtime generations table as written (:mod:`oomkit.estimate.generation_table`).

A row is text (runtime, key, label, first day as an ISO date, first release, the upstream
change that starts it, what differs in memory) plus the effects the estimators read, so that
importing the table costs no :mod:`datetime` (issue 10). The per-runtime modules
``generation_rows_<runtime>`` write their rows with :func:`row`.
"""

from __future__ import annotations

__all__ = ["Effect", "Row", "row"]

Effect = bool | int | float | str

#: one row of the table as written: runtime, key, label, since (ISO date), version, change,
#: memory, effects
Row = tuple[str, str, str, str, str | None, str, str, dict[str, Effect]]


def row(
    runtime: str,
    key: str,
    label: str,
    since: str,
    version: str | None,
    change: str,
    memory: str,
    **effects: Effect,
) -> Row:
    """A :data:`Row` from its fields, the effects as keyword arguments."""
    return (runtime, key, label, since, version, change, memory, effects)

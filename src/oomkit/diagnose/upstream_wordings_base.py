"""The record type of :mod:`oomkit.diagnose.upstream_wordings` (one harvested OOM wording)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GIB", "MIB", "Wording", "w"]

GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Wording:
    """One upstream OOM wording, where it is printed, and a line built from it."""

    family: str
    source: str
    wording: str
    example: str
    requested: int | None = None
    total: int | None = None
    free: int | None = None
    allocated: int | None = None


def w(
    family: str,
    source: str,
    wording: str,
    example: str,
    *,
    req: int | None = None,
    total: int | None = None,
    free: int | None = None,
    alloc: int | None = None,
) -> Wording:
    return Wording(family, source, wording, example, req, total, free, alloc)

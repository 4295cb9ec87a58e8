"""The verdict's result types: the levels, one margin checked against its band, the answer.

Split from :mod:`oomkit.estimate.verdict` (which computes them): :class:`DeviceMargin` (one
device, or one runtime margin such as vLLM's KV pool against one request) and :class:`Verdict`
(level, margins, risks, the safe change; worded by :mod:`oomkit.estimate.verdict_summary`), with
their JSON forms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oomkit.estimate.verdict_summary import summary_line

__all__ = ["LEVELS", "DeviceMargin", "Verdict"]

LEVELS: tuple[str, ...] = ("fits", "tight", "does_not_fit", "unknown")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceMargin:
    """One device (or one runtime margin) checked against its band."""

    device: str
    what: str  # "device memory" | "KV pool vs one max_model_len request"
    free_bytes: int
    band_bytes: int
    terms: tuple[tuple[str, int], ...]  # band terms, largest first
    reservations: tuple[tuple[str, int], ...]
    level: str
    spare_tokens: int | None = None  # a KV pool margin: tokens beyond one full-context request

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "what": self.what,
            "free_bytes": self.free_bytes,
            "band_bytes": self.band_bytes,
            "band_terms": [{"label": k, "bytes": v} for k, v in self.terms],
            "reservations": [{"label": k, "bytes": v} for k, v in self.reservations],
            "level": self.level,
            "spare_tokens": self.spare_tokens,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The answer: level, margins, the band, what could push it over, and a safe change."""

    level: str
    margins: tuple[DeviceMargin, ...]
    band_source: str
    risks: tuple[str, ...] = ()
    safe_change: str | None = None
    notes: tuple[str, ...] = ()
    #: the host RAM this run needs when no --ram was given (not checked: the level and the exit
    #: code are the GPUs'); None when the host was checked or needs under 1 GiB
    host_unchecked_bytes: int | None = None

    @property
    def tightest(self) -> DeviceMargin | None:
        if not self.margins:
            return None
        return min(self.margins, key=lambda m: m.free_bytes - m.band_bytes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "margins": [m.to_dict() for m in self.margins],
            "band_source": self.band_source,
            "risks": list(self.risks),
            "safe_change": self.safe_change,
            "notes": list(self.notes),
            # additive: the unchecked host RAM need (no --ram), else null
            "host_ram_unchecked_bytes": self.host_unchecked_bytes,
        }

    def summary(self) -> str:
        """One line for the text output (:mod:`oomkit.estimate.verdict_summary`)."""
        return summary_line(self)

"""Estimators: pure ``estimate(spec, settings, hardware) -> Estimate``, one per runtime."""

from __future__ import annotations

__all__: list[str] = []

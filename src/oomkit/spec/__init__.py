"""Plain typed inputs to every estimator: model architecture facts, settings and hardware."""

from __future__ import annotations

__all__: list[str] = []

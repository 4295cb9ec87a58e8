"""The measured band fractions of the verdict (:mod:`oomkit.estimate.verdict`), read from data.

``src/oomkit/data/verdict_band.json``, written by ``python benchmarks/verdict_band.py`` from
the accuracy harness's results: the largest under-prediction per runtime family and category,
and (transformers) the caching allocator's measured bounds. Training estimates take theirs from
real training steps instead (:mod:`oomkit.estimate.training_band`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["band_allocator", "band_doc", "band_fractions"]


@lru_cache(maxsize=1)
def band_doc() -> dict[str, Any]:
    """The parsed ``verdict_band.json`` (read once)."""
    text = resources.files("oomkit").joinpath("data/verdict_band.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


def band_fractions(runtime: str) -> dict[str, float]:
    """Measured under-prediction fraction per category for ``runtime`` (0 when unmeasured)."""
    rts = band_doc()["runtimes"]
    row = rts.get(runtime) or rts.get("llama.cpp")
    return {cat: float(v["fraction"]) for cat, v in row["categories"].items()}


def band_allocator(runtime: str) -> dict[str, Any] | None:
    """The measured allocator bounds of ``runtime`` (transformers only so far), or None."""
    row = band_doc()["runtimes"].get(runtime) or {}
    alloc = row.get("allocator")
    return dict(alloc) if isinstance(alloc, Mapping) else None

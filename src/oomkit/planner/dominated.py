"""Alternatives worth showing: one that is no better than another plan on any axis is dropped.

The axes a user trades between: weight quality (the published KL divergence of the quant,
:mod:`oomkit.planner.quality`), KV cache quality, context, decode speed and how much runs on
the CPU. A q8_0 KV cache counts as f16's equal: llama.cpp PR #7412 measured +0.0008 KLD for a
q8_0 K and V cache on LLaMA-3-8B, less than Q8_0 weights cost (0.0014), so "f16 KV, 40/41
layers on the GPU, 28 tok/s" next to "q8_0 KV, all on the GPU, 43 tok/s" at the same quant and
context offers nothing (review 15). A q4_0 (or fp8) cache is a real quality step. Free GPU
memory is not an axis: every plan already clears the variance band of real runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from oomkit.errors import OomkitError
from oomkit.spec.settings import InferenceSettings

__all__ = ["drop_dominated"]

#: KV types no worse than f16 for this purpose (see the module docstring)
_NEAR_LOSSLESS_KV = (None, "f16", "auto", "q8_0")


class _PlanLike(Protocol):
    @property
    def runtime(self) -> str: ...
    @property
    def settings(self) -> InferenceSettings: ...
    @property
    def level(self) -> int: ...
    @property
    def speed(self) -> object: ...


def _quant_cost(quant: str | None) -> float | None:
    from oomkit.planner.quality import quality_rank_key

    try:
        return None if quant is None else quality_rank_key(quant)
    except OomkitError:
        return None


def _tps(p: _PlanLike) -> float | None:
    value = getattr(p.speed, "decode_tokens_per_s", None)
    return float(value) if isinstance(value, int | float) else None


def _axes(p: _PlanLike) -> tuple[float, float, float, float, float] | None:
    """Costs, lower is better; None when the plan cannot be compared (no speed, no quant)."""
    q, tps = _quant_cost(p.settings.quant), _tps(p)
    if q is None or tps is None or p.settings.ctx is None:
        return None
    kv = 0.0 if p.settings.cache_type_k in _NEAR_LOSSLESS_KV else 1.0
    return (q, kv, -float(p.settings.ctx), -tps, float(p.level))


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b


P = TypeVar("P", bound=_PlanLike)


def drop_dominated(plans: Sequence[P]) -> list[P]:
    """``plans`` (best first) without the alternatives another plan of the same runtime beats
    or equals on every axis; the first plan always stays."""
    axes = [_axes(p) for p in plans]
    out: list[P] = []
    for i, p in enumerate(plans):
        mine = axes[i]
        beaten = (
            i > 0
            and mine is not None
            and any(
                j != i
                and other is not None
                and plans[j].runtime == p.runtime
                and _dominates(other, mine)
                for j, other in enumerate(axes)
            )
        )
        if not beaten:
            out.append(p)
    return out

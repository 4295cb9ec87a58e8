"""The one search for "the largest setting that still fits", used by every layer that asks it.

Memory grows monotonically with the knobs searched (context, layers on the GPU, experts on the
GPU, batch), so the fitting values form a prefix ``[lo, boundary]``. Two searches:

* :func:`largest`: bisection on a yes/no predicate (the doctor's fixes, Ollama's automatic
  ``num_gpu``, ``estimate --ctx max``);
* :func:`largest_by_margin`: regula falsi on the free-memory margin, alternating with bisection
  so the worst case stays logarithmic. Device memory is close to affine in each knob, so two or
  three probes usually land on the exact boundary (the planner).

>>> largest(1, 100, lambda n: n * n <= 50)
7
>>> largest_by_margin(0, 1000, lambda n: 500 - 3 * n, lambda m: m >= 0, lambda m: m)
(166, 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["largest", "largest_by_margin"]

T = TypeVar("T")


def largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Largest n in [lo, hi] with ``ok(n)``, for ``ok`` true up to a threshold; None if
    ``ok(lo)`` is false."""
    if hi < lo or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def largest_by_margin(
    lo: int,
    hi: int,
    probe: Callable[[int], T],
    fits: Callable[[T], bool],
    margin: Callable[[T], int],
) -> tuple[int, T] | None:
    """Largest x in [lo, hi] whose ``probe(x)`` fits, with that probe's result.

    ``margin`` (free bytes, negative when short) steers the next probe: where it is affine in
    x the interpolated point is the boundary, and its neighbour confirms it.
    """
    if lo > hi:
        return None
    at_lo = probe(lo)
    if not fits(at_lo):
        return None
    at_hi = probe(hi)
    if fits(at_hi):
        return hi, at_hi
    good, bad = (lo, at_lo), (hi, at_hi)
    interpolate = True
    while bad[0] - good[0] > 1:
        g, b = margin(good[1]), margin(bad[1])
        if interpolate and g != b:  # regula falsi
            x = good[0] + int((bad[0] - good[0]) * g / (g - b))
            x = min(max(x, good[0] + 1), bad[0] - 1)
        else:  # bisection
            x = (good[0] + bad[0]) // 2
        for step in (x, None):
            if step is None:
                # after an interpolation, its neighbour is most likely the boundary
                step = good[0] + 1 if good[0] == x else bad[0] - 1
                if not (interpolate and good[0] < step < bad[0]):
                    break
            result = probe(step)
            if fits(result):
                good = (step, result)
            else:
                bad = (step, result)
        interpolate = not interpolate
    return good

"""Raising SGLang's ``--mem-fraction-static`` as a planner lever (vLLM's is
:mod:`oomkit.planner.vllm_util`).

SGLang's KV pool is what ``mem_fraction_static`` of the free memory leaves after the weights
(:mod:`oomkit.estimate.sglang`); when that is nothing it stops with "Not enough memory. Please
try to increase --mem-fraction-static." (``model_runner.py`` / ``pool_configurator.py``), and
when it is shorter than the context it caps every request at the pool. The fix its own error
names is the raise; the planner used to take only the shorter context.

The bound is SGLang's own rule for the ``1 - mem_fraction_static`` rest, which holds the
CUDA-graph buffers and the activations: its tuning guide (docs/advanced_features/
hyperparameter_tuning.md, "Tune --mem-fraction-static to increase KV cache pool capacity")
says "reserving 5-8 GB of memory for activations is typically sufficient", read off the
``available_gpu_mem`` SGLang logs once the pool is allocated and the CUDA graphs captured
(``get_available_gpu_memory``: GiB), "between 5-8 GB, the setting is good ... too low, you
risk out-of-memory (OOM) errors later". So the raise keeps, after the ``req_to_token`` pool,
the fa3 graph tables and the graph's decode-logits buffer (:mod:`oomkit.estimate.sglang_outside`,
the part of the graph pool oomkit sizes), at least :data:`ACTIVATION_FLOOR` (5 GiB, the lower
end of SGLang's "good" range) and at least one prefill chunk's activations. SGLang's default
(``_handle_gpu_memory_settings``, server_args.py) reserves a fixed ``512 MiB + chunk x 1.5 MiB +
cuda_graph_max_bs x 2 MiB + tp x pp / 8 GiB`` whatever the model, which the same guide calls a
"simple heuristic" to "optimize for your use cases"; on an 80 GB card that is 13.1 GiB, the
guide's "too high (e.g., 10 - 20 GB)".

As with vLLM, the raise is the least hundredth whose pool holds one request of the context with
its band, and it is kept only when the verdict at the raised fraction is "fits" (never
"tight": the verdict's SGLang-outside check, :func:`oomkit.estimate.verdict_runtime.
sglang_outside_over`, is part of it). A fraction the user gave is never changed.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.sglang_activation_floor import ACTIVATION_FLOOR, activation_room
from oomkit.estimate.verdict import verdict
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, format_bytes

if TYPE_CHECKING:
    from oomkit.planner.search import Searcher

__all__ = [
    "ACTIVATION_FLOOR",
    "RAISED_FROM",
    "RAISE_TRIED",
    "raise_sglang_fraction",
    "raised_fraction_note",
]

#: runtime_details key: SGLang's default fraction the planner raised from
RAISED_FROM = "mem_fraction_raised_from"
#: runtime_details key: the raise the planner tried and why it failed (the default fraction's
#: estimate is kept; the candidate's reason names this)
RAISE_TRIED = "mem_fraction_raise_tried"
_FLOOR_GIB = f"{ACTIVATION_FLOOR / GiB:g} GiB"
_POOL = "KV pool"
#: estimates one raise may take: the first guess is the pool's own shortfall, and the band
#: grows a little with the weights' share, so a second hundredth is the usual most
_TRIES = 3


def _available(est: Estimate) -> int | None:
    """SGLang's ``available_gpu_mem`` at ``est`` (the doctor's bound too:
    :func:`oomkit.estimate.sglang_activation_floor.activation_room`)."""
    return activation_room(est)


def _pool_short(est: Estimate, s: Searcher) -> float | None:
    """The fraction of the first GPU the KV pool lacks for one request of the context with its
    band (None: the pool is not what is short)."""
    cap = est.devices[0].capacity_bytes if est.devices else None
    if not cap:
        return None
    for m in verdict(est, s.platform).margins:
        if m.what.startswith(_POOL) and m.level != "fits":
            return max(0, m.band_bytes - m.free_bytes) / cap
    return None


def raise_sglang_fraction(s: Searcher, settings: InferenceSettings, est: Estimate) -> Estimate:
    """``est`` re-estimated at the least raised ``mem_fraction_static`` whose verdict is "fits"
    and that leaves :data:`ACTIVATION_FLOOR` outside it, or ``est`` itself when none does (then
    with what was tried in ``runtime_details[RAISE_TRIED]``, for the candidate's reason)."""
    frac = est.settings.get("mem_fraction_static")
    if not isinstance(frac, float) or settings.mem_fraction_static is not None:
        return est
    short = _pool_short(est, s)
    avail = _available(est)
    cap = est.devices[0].capacity_bytes if est.devices else None
    if short is None or avail is None or not cap:
        return est
    # the pool grows by free0 x the raise and the rest shrinks by as much; free0 < capacity,
    # so dividing by the capacity overstates the rest's loss (the safe side)
    top = math.floor((frac + (avail - ACTIVATION_FLOOR) / cap) * 100 + 1e-9) / 100
    new = math.ceil((frac + short) * 100 - 1e-9) / 100
    tried = ""
    for _ in range(_TRIES):
        if new > min(top, 0.99) or new <= frac:
            if new > min(top, 0.99):
                tried = f"{tried + '; ' if tried else ''}{_not_tried(new, top, frac)}"
            break
        s.n_estimates += 1
        raised = s.estimator(
            s.spec, dataclasses.replace(settings, mem_fraction_static=new), s.hardware
        )
        left = _available(raised)
        if left is None or left < ACTIVATION_FLOOR:
            left_text = "" if left is None else f" ({format_bytes(max(0, left))})"
            return _tried(
                est,
                f"--mem-fraction-static {new:g} tried: it leaves under {_FLOOR_GIB} outside it "
                f"for activations{left_text}, SGLang's tuning guide's floor",
            )
        if not raised.blockers and verdict(raised, s.platform).level == "fits":
            details = {**raised.runtime_details, RAISED_FROM: frac}
            return dataclasses.replace(raised, runtime_details=details)
        why = "; ".join(raised.blockers) or verdict(raised, s.platform).summary()
        tried = f"--mem-fraction-static {new:g} tried: {why}"
        more = _pool_short(raised, s)
        if more is None:  # the pool holds it; something else does not fit
            break
        new = max(round(new + 0.01, 2), math.ceil((new + more) * 100 - 1e-9) / 100)
    return _tried(est, tried) if tried else est


def _not_tried(new: float, top: float, frac: float) -> str:
    """Why the raise from ``frac`` to ``new`` was not estimated (``top``: the most that keeps
    the floor)."""
    keeps = f"at most {top:g} keeps it" if top > 0 else "no fraction keeps it"
    if top <= frac:
        keeps += f": the default {frac:g} already leaves less"
    if new >= 1:
        return (
            f"no raise of --mem-fraction-static was tried: the pool would need {new:.2f} of the "
            f"GPU, and SGLang keeps {_FLOOR_GIB} outside it for activations ({keeps})"
        )
    return (
        f"no raise of --mem-fraction-static was tried: {new:g} would leave under {_FLOOR_GIB} "
        f"outside it for activations (SGLang's tuning guide; {keeps})"
    )


def _tried(est: Estimate, text: str) -> Estimate:
    """``est`` (the default fraction's) with the failed raise named for the candidate's reason."""
    return dataclasses.replace(est, runtime_details={**est.runtime_details, RAISE_TRIED: text})


def raised_fraction_note(est: Estimate) -> str | None:
    """The plan's line saying why it raised the fraction (None when it did not)."""
    frac = est.settings.get("mem_fraction_static")
    was = est.runtime_details.get(RAISED_FROM)
    if not isinstance(frac, float) or not isinstance(was, float) or frac <= was:
        return None
    left = _available(est)
    kept = f"{left / GiB:.1f} GiB" if left is not None else "enough"
    return (
        f"--mem-fraction-static {frac:g} (default {was:g}; raised so the KV pool holds one "
        f"request of the context, as SGLang's 'Not enough memory' error advises; {kept} stays "
        "outside it for activations after the CUDA graphs, SGLang's guide asks 5-8 GB)"
    )

"""Raising and lowering vLLM's ``--gpu-memory-utilization`` as a planner lever.

Lowering: vLLM fills ``gpu_memory_utilization`` of each GPU by design, and what it allocates
outside that budget is not in its own accounting: on V0 (0.5.x-0.6.x) the CUDA graphs are
captured after the KV cache is allocated (``Worker.initialize_cache`` then ``_warm_up_model``
-> ``capture_model``, vllm/worker/worker.py; the log says "This process usually takes ...
CUDA graph ... 1~3 GiB per GPU"), with the non-torch memory and a display's share. When the
memory that leaves free is within the verdict's variance band, the planner lowers the
utilization just enough to clear it (never proposing a "tight" run); the plan says so, and
why, in its notes (:func:`lowered_util_note`), since a lower budget shrinks the KV pool and so
the context the plan can offer.

When ``max_model_len`` needs more KV than the pool holds, vLLM refuses to start and its own
error names two ways out: "Try increasing `gpu_memory_utilization` or decreasing
`max_model_len` when initializing the engine" (vLLM v1 ``vllm/v1/core/kv_cache_utils.py``
``check_enough_kv_cache_memory``). The planner used to take only the second. This takes the
first too, where the GPU has room for it: what lives outside the budget, the CUDA graphs
captured after the KV cache (vLLM: "1~3 GiB per GPU", ``vllm_engines.CUDAGRAPH_POOL_MAX``,
:func:`oomkit.estimate.verdict_runtime.vllm_graph_span`), the non-torch memory and the CUDA
context, is what the verdict's device-memory band and reservations model, so the ceiling is
the utilization that keeps that margin "fits"; the raise is the least that makes the pool
hold one full request with its own band, and is kept only when the verdict at the raised
utilization is "fits" (never "tight").
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, verdict
from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from oomkit.planner.search import Searcher

__all__ = ["lower_vllm_util", "lowered_util_note", "raise_vllm_util", "raised_util_note"]

_DEVICE = "device memory"
#: runtime_details key: the utilization the planner lowered from and the band terms it cleared
LOWERED = "util_lowered"


def lower_vllm_util(s: Searcher, settings: InferenceSettings, est: Estimate) -> Estimate:
    """When what vLLM leaves free of its ``gpu_memory_utilization`` is within the variance band
    ("tight"), ``est`` re-estimated at the utilization lowered just enough (the pool shrinks),
    its ``runtime_details`` saying what it was lowered from and what band it clears."""
    util = est.settings.get("gpu_memory_utilization")
    if not isinstance(util, float):
        return est
    need = 0.0
    terms: list[str] = []
    for m in verdict(est, s.platform).margins:
        d = next((x for x in est.devices if x.device == m.device), None)
        if m.what != _DEVICE or m.level != "tight" or d is None:
            continue
        if d.capacity_bytes:
            need = max(need, (m.band_bytes - m.free_bytes) / d.capacity_bytes)
            terms.extend(name for name, _ in m.terms if name not in terms)
    if need <= 0:
        return est
    new = int((util - need) * 100) / 100  # floor to the hundredth
    if new < 0.5:
        return est
    s.n_estimates += 1
    lowered = s.estimator(
        s.spec, dataclasses.replace(settings, gpu_memory_utilization=new), s.hardware
    )
    details = {**lowered.runtime_details, LOWERED: {"from": util, "band": terms[:3]}}
    return dataclasses.replace(lowered, runtime_details=details)


def lowered_util_note(est: Estimate) -> str | None:
    """The plan's line saying why it lowered the utilization (None when it did not)."""
    util = est.settings.get("gpu_memory_utilization")
    lowered = est.runtime_details.get(LOWERED)
    if not isinstance(util, float) or not isinstance(lowered, dict):
        return None
    was = lowered.get("from")
    if not isinstance(was, float) or util >= was:
        return None
    band = lowered.get("band")
    what = f" ({band[0]}, the largest)" if isinstance(band, list) and band else ""
    return (
        f"--gpu-memory-utilization {util:g} (default {was:g}; lowered because at {was:g} what "
        f"vLLM leaves free is within the band of what it allocates outside its budget{what}: a "
        f"smaller KV pool, so a shorter context than the 'largest that fits' at {was:g})"
    )


def _util_bounds(est: Estimate, platform: Platform) -> tuple[float, float] | None:
    """(utilization the pool needs, ceiling the device margin allows), or None when the
    estimate is not short of pool or has no device to raise it on."""
    v = verdict(est, platform)
    need = 0.0
    ceiling = 1.0
    short = False
    for m in v.margins:
        d = next((x for x in est.devices if x.device == m.device), None)
        if d is None or not d.capacity_bytes:
            return None
        cap = d.capacity_bytes
        if m.what == _DEVICE:  # what vLLM leaves free shrinks as its budget grows
            ceiling = min(ceiling, (m.free_bytes - m.band_bytes) / cap)
        elif m.level != "fits":  # the pool vs one max_model_len request
            short = True
            need = max(need, (m.band_bytes - m.free_bytes) / cap)
    if not short or need <= 0:
        return None
    return need, ceiling


def raise_vllm_util(s: Searcher, settings: InferenceSettings, est: Estimate) -> Estimate:
    """``est`` re-estimated at the least raised utilization whose verdict is "fits", or
    ``est`` itself when none up to the ceiling is."""
    util = est.settings.get("gpu_memory_utilization")
    if not isinstance(util, float):
        return est
    bounds = _util_bounds(est, s.platform)
    if bounds is None:
        return est
    need, ceiling = bounds
    new = math.ceil((util + need) * 100 - 1e-9) / 100  # up to the hundredth
    top = math.floor((util + ceiling) * 100 + 1e-9) / 100
    if new > min(top, 1.0) or new <= util:
        return est
    s.n_estimates += 1
    raised = s.estimator(
        s.spec, dataclasses.replace(settings, gpu_memory_utilization=new), s.hardware
    )
    if raised.blockers or verdict(raised, s.platform).level != "fits":
        return est
    return raised


def raised_util_note(est: Estimate) -> str | None:
    """The plan's line saying why it raised the utilization (None when it did not)."""
    util = est.settings.get("gpu_memory_utilization")
    default = est.runtime_details.get("default_util")
    if not isinstance(util, float) or not isinstance(default, float) or util <= default:
        return None
    return (
        f"--gpu-memory-utilization {util:g} (default {default:g}; raised so the KV pool holds "
        "one max_model_len request, as vLLM's error advises; CUDA graphs and non-torch memory "
        "still fit outside it)"
    )

"""Raising vLLM's ``--gpu-memory-utilization`` as a planner lever.

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

__all__ = ["raise_vllm_util", "raised_util_note"]

_DEVICE = "device memory"


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

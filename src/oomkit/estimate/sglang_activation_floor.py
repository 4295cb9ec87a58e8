"""How much SGLang must keep outside ``--mem-fraction-static``: one bound for the planner's raise
(:mod:`oomkit.planner.sglang_fraction`) and the doctor's fix (:mod:`oomkit.diagnose.rules_sglang`,
:mod:`oomkit.diagnose.model_fixes_sglang`).

SGLang's tuning guide (docs/advanced_features/hyperparameter_tuning.md, "Tune
--mem-fraction-static to increase KV cache pool capacity"): "reserving 5-8 GB of memory for
activations is typically sufficient", read off the ``available_gpu_mem`` SGLang logs once the
pool is allocated and the CUDA graphs captured (``get_available_gpu_memory``: GiB); "too low, you
risk out-of-memory (OOM) errors later". The bound is the lower end, :data:`ACTIVATION_FLOOR`:

* with the model (an estimate carrying ``runtime_details["outside_pool"]``,
  :mod:`oomkit.estimate.sglang_outside`) what ``available_gpu_mem`` would read is the rest
  outside the fraction (after the ``req_to_token`` pool and the fa3 graph tables) less the CUDA
  graph's decode-logits buffer, less one prefill chunk's activations where those exceed the
  floor (:func:`activation_room`), and it must be at least the floor;
* from a log alone (no model) only the floor is known: the largest fraction is the one whose
  rest ``total x (1 - fraction)`` keeps it (:func:`largest_fraction`).
"""

from __future__ import annotations

import math

from oomkit.estimate.breakdown import Estimate
from oomkit.units import GiB

__all__ = ["ACTIVATION_FLOOR", "FLOOR_SOURCE", "activation_room", "largest_fraction"]

#: the least memory SGLang keeps for activations once the pool and CUDA graphs are in place: the
#: lower end of "reserving 5-8 GB of memory for activations is typically sufficient"
ACTIVATION_FLOOR = 5 * GiB
#: where the floor comes from, for the texts that state it
FLOOR_SOURCE = (
    "SGLang's tuning guide: 'reserving 5-8 GB of memory for activations is typically sufficient'"
)


def activation_room(est: Estimate) -> int | None:
    """What SGLang's ``available_gpu_mem`` would read at ``est``: the rest outside the fraction
    after the req_to_token pool, the graph tables and the decode-logits buffer, less one prefill
    chunk's activations where those exceed the floor (None: not sized for this run)."""
    info = est.runtime_details.get("outside_pool")
    if not isinstance(info, dict):
        return None
    rest, logits = info.get("rest_bytes"), info.get("graph_logits_bytes")
    chunk = info.get("prefill_chunk_bytes")
    if not isinstance(rest, int) or not isinstance(logits, int) or not isinstance(chunk, int):
        return None
    return rest - logits - max(0, chunk - ACTIVATION_FLOOR)


def largest_fraction(total_bytes: int, cap: float = 0.99) -> float | None:
    """The largest hundredth whose rest, ``total_bytes x (1 - fraction)``, keeps
    :data:`ACTIVATION_FLOOR` (at most ``cap``); None when even 0.01 does not."""
    if total_bytes <= 0:
        return None
    top = min(cap, math.floor((1 - ACTIVATION_FLOOR / total_bytes) * 100 + 1e-9) / 100)
    return top if top > 0 else None

"""The planner's sequence-cap lever: fewer concurrent sequences (vLLM ``--max-num-seqs``,
SGLang ``--max-running-requests``) when the profile run or the activations are what does not fit
(:class:`oomkit.planner.search.Searcher` delegates here)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from oomkit.planner.knobs import Candidate
from oomkit.planner.search import SEQS_LEVER

if TYPE_CHECKING:
    from oomkit.planner.search import Evaluation, Searcher

__all__ = ["level_seqs", "seqs_top"]


def seqs_top(s: Searcher, quant: str) -> int | None:
    """The sequence cap the runtime uses when the planner leaves it alone: the user's own
    value, else the one the estimator resolved (vLLM's default depends on engine and GPU)."""
    if s.runtime == "transformers":  # the generate() batch the user asked
        return s.request.parallel
    if quant not in s.seqs_default:
        top = s.base.max_num_seqs
        for ctx in (s.target_ctx, s.min_ctx):  # SGLang's default falls with ctx
            if top is not None:
                break
            ev = s.evaluate(Candidate(quant, s.kvs[0], ctx, tp=s._tp()))
            value = ev.estimate.runtime_details.get(SEQS_LEVER[s.runtime][0])
            top = value if isinstance(value, int) and not isinstance(value, bool) else None
        if top is None:
            return None
        s.seqs_default[quant] = top
    return s.seqs_default[quant]


def level_seqs(s: Searcher, quant: str, beat_ctx: int | None = None) -> Evaluation | None:
    """Everything on the GPU with fewer concurrent sequences (vLLM ``--max-num-seqs``,
    SGLang ``--max-running-requests``): the asked context with the best KV type and the
    largest cap that fits; else, when the runtime's own cap fits at no context
    (``beat_ctx`` None), the longest context at the smallest cap, then the largest cap at
    that context. With ``beat_ctx`` (the context the runtime's own cap reaches) only the
    asked context is worth a cap: a few more tokens do not justify fewer sequences.
    None when lowering the cap does not help."""
    if not s.seqs_lever:
        return None
    top = seqs_top(s, quant)
    floor = s.seqs_floor
    if top is None or top <= floor:
        return None
    hi = top - 1  # the cap itself is what level_gpu already tried

    def make(kv: str, ctx: int, n: int) -> Candidate:
        return Candidate(quant, kv, ctx, tp=s._tp(), max_num_seqs=n)

    def make_floor(kv: str, ctx: int) -> Candidate:
        return make(kv, ctx, floor)

    def largest_cap(kv: str, ctx: int) -> Evaluation | None:
        found = s._largest(floor, hi, lambda n: make(kv, ctx, n))
        return None if found is None or not found[1].fits else found[1]

    if not s._gpu_fits(s.evaluate(make(s.kvs[-1], s.min_ctx, floor))):
        return None
    for kv in s.kvs:
        if not s._gpu_fits(s.evaluate(make(kv, s.target_ctx, floor))):
            continue
        ev = largest_cap(kv, s.target_ctx)
        if ev is not None:
            return ev
    if beat_ctx is not None:
        return None
    best: Evaluation | None = None
    for kv in s.kvs:
        found = s._largest_ctx(functools.partial(make_floor, kv))
        if found is None or (best is not None and found[0] <= best.cand.ctx):
            continue
        ev = largest_cap(kv, found[0])
        if ev is not None:
            best = ev
    return best

"""When no training lever makes the step fit: whether more GPUs would, or only a shorter sequence.

More GPUs lower the per-GPU peak only where they shard something: ZeRO-3 / FSDP FULL_SHARD
partition the parameters, gradients and optimizer states over the ranks (ZeRO paper, section
5; ``torch.distributed.fsdp.ShardingStrategy.FULL_SHARD``), plain DDP keeps a full replica on
every rank (``torch.nn.parallel.DistributedDataParallel``), and no data-parallel scheme splits
one sequence's activations: each rank runs its own micro-batch through the whole model. So
"more GPUs are needed" is said only when the estimator finds a ZeRO-3 / FSDP world whose
per-GPU peak fits; otherwise the step's activations are what is too large, and the honest
answer is the largest ``--seq`` that fits with the planner's minimal stack of levers (the
micro-batch stepped down to what fits, 1 at worst). ``plan --train`` said "more GPUs
(--gpus/--nodes) are needed" for a QLoRA step whose per-GPU floor was its activations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from oomkit.estimate.breakdown import Estimate
from oomkit.planner.training import Lever, TrainingChange, _combination
from oomkit.spec.settings import TrainingSettings

__all__ = ["NothingFits", "nothing_fits"]

#: the data-parallel worlds tried, per node (``--gpus``; ``--nodes`` multiplies them)
_WORLDS = (2, 4, 8, 16, 32, 64)
_SEQ_STEP = 128


@dataclass(frozen=True, slots=True, kw_only=True)
class NothingFits:
    """What to say when no lever fits: ``sharded`` the smallest ZeRO / FSDP world whose minimal
    stack of levers fits (None: none does), else ``seq`` the longest sequence (a multiple of
    ``_SEQ_STEP`` tokens) whose minimal stack fits (None: not even ``_SEQ_STEP`` tokens)."""

    sharded: TrainingChange | None = None
    seq: TrainingChange | None = None
    #: the longest sequence memory allows when ``seq`` was capped at the model's maximum
    #: (``max_seq``: :func:`oomkit.planner.seq_cap.model_max_seq`), None when it was not
    memory_seq: int | None = None


def nothing_fits(
    settings: TrainingSettings,
    levers: Callable[[TrainingSettings], tuple[Lever, ...]],
    run: Callable[[TrainingSettings], Estimate | None],
    accept: Callable[[Estimate], str | None],
    max_seq: int | None = None,
) -> NothingFits:
    """``levers(s)``: the planner's levers for ``s`` (:func:`oomkit.planner.training.plan_levers`);
    ``run``: the estimate (None: refused); ``accept``: the verdict's level when it takes it. Each
    answer is the planner's own minimal stack (:func:`oomkit.planner.training._combination`).
    ``max_seq``: the model's longest sequence; a longer answer is capped at it, and what memory
    would allow is kept in ``memory_seq``."""

    def stack(s: TrainingSettings) -> TrainingChange | None:
        return _combination(s, run, accept, levers(s))

    world = settings.gpus
    for w in _WORLDS:
        if w <= world:
            continue
        found = stack(dataclasses.replace(settings, gpus=w))
        if found is not None and (found.settings.zero or found.settings.fsdp):
            # the world fits because it shards (a DDP replica per GPU lowers nothing)
            return NothingFits(sharded=found)
    best = _longest(settings, stack, -(-settings.seq // _SEQ_STEP))
    if best is None or max_seq is None or best.settings.seq <= max_seq:
        return NothingFits(seq=best)
    # memory allows more than the model was trained for: the answer is the model's maximum
    at_cap = stack(dataclasses.replace(settings, seq=max_seq))
    if at_cap is None:  # not monotone at the edge: the longest multiple below the cap
        at_cap = _longest(settings, stack, max_seq // _SEQ_STEP + 1)
    return NothingFits(seq=at_cap, memory_seq=best.settings.seq)


def _longest(
    settings: TrainingSettings,
    stack: Callable[[TrainingSettings], TrainingChange | None],
    hi: int,
) -> TrainingChange | None:
    """The minimal stack at the longest multiple of ``_SEQ_STEP`` below ``hi`` steps that fits
    (``hi``: a length no stack fits, or past the range searched)."""
    lo = 0
    best: TrainingChange | None = None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        found = stack(dataclasses.replace(settings, seq=mid * _SEQ_STEP))
        if found is not None:
            lo, best = mid, found
        else:
            hi = mid
    return best

"""Shared types of the diagnosis rules: the cause names and one rule's result."""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.diagnose.fixes import Fix

__all__ = ["CAUSES", "DECIDER", "Analysis", "without_decider"]

#: Every cause the doctor can report (DESIGN.md doctor contract).
CAUSES = (
    "model_too_large",
    "other_process_holding_memory",
    "fragmentation",
    "kv_cache_or_context",
    "batch_or_activations",
    "leak_or_accumulation",
    "host_ram",
    "multi_gpu_imbalance",
    "unknown",
)

#: the sentence that names the fact deciding the cause: one per finding (revfix19f)
DECIDER = " What would decide:"


def without_decider(explanation: str) -> str:
    """``explanation`` up to its "What would decide:" sentence: a rule that reads the cause
    anew on top of another's result asks its own question, not the superseded one too.

    >>> without_decider("Usage is high. What would decide: the peak. (1 related message.)")
    'Usage is high.'
    """
    return explanation.split(DECIDER, 1)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    """What one rule concluded: cause, confidence in [0, 1], the arithmetic, and fixes."""

    cause: str
    confidence: float
    explanation: str
    fixes: tuple[Fix, ...] = ()
    #: whether the cause is still an open question for the base rate
    #: (:func:`oomkit.diagnose.priors.with_prior`): ``True`` when the rule's cause is its own
    #: fallback guess (no number or phase decided it), ``False`` when the rule settled it (also
    #: a deliberate ``unknown``: "not a lack of memory"), ``None`` to infer it (an ``unknown``
    #: below confidence 0.5 is open, anything else settled)
    open_question: bool | None = None

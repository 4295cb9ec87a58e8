"""Which deciding question a diagnosis asks, and the hook that re-runs the doctor with an answer.

:mod:`oomkit.diagnose.questions` holds the set and reads the answers; this module picks the
question for an open or low-confidence diagnosis (the pair of causes it leaves open: the
diagnosis's cause and the base rate's runner-up, a hand order; then, among the questions whose
answers change the cause, the one the data says is most likely to reveal another cause:
:mod:`oomkit.diagnose.question_facts`) and states, for each answer, the cause the doctor gives
with it, computed by re-running the steps after the rules (:class:`AskedQuestion`, used by
:func:`oomkit.diagnose.rules.diagnose`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.question_facts import fact_score, fact_table
from oomkit.diagnose.questions import (
    ASK_BELOW,
    BATCH,
    FRAG,
    HOST,
    KV,
    LEAK,
    MODEL,
    MULTI,
    OTHER,
    QUESTIONS,
    AppliedAnswer,
    Question,
    with_answers,
)

__all__ = ["AskedQuestion", "pick_question"]


#: the question that separates a pair of causes (the diagnosis's and the runner-up)
_PAIR_QUESTION: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({OTHER}), "other_process"),
    (frozenset({FRAG}), "expandable"),
    (frozenset({LEAK}), "growth"),
    (frozenset({KV}), "short_context"),
    (frozenset({MODEL, BATCH}), "batch1"),
)
#: per cause, the questions to try when the pair does not name one (in order); host RAM and a
#: multi-GPU split are asked only of a diagnosis that reads them (as a runner-up of a GPU reading
#: they would replace the phase question on most CUDA messages)
_BY_CAUSE: Mapping[str, tuple[str, ...]] = {
    BATCH: ("when", "batch1", "model_fits"),
    MODEL: ("when", "batch1", "model_fits"),
    KV: ("short_context", "model_fits"),
    OTHER: ("other_process",),
    LEAK: ("growth", "when"),
    FRAG: ("expandable",),
    HOST: ("host_ram",),
    MULTI: ("gpu_balance",),
    "unknown": ("when", "batch1", "other_process", "model_fits"),
}


#: traceback phases reached only after the weights loaded (the KV cache is created after the
#: model, ExLlamaV2's ``ExLlamaV2Cache(model)`` and vLLM's ``_allocate_kv_cache`` alike; a server
#: serves or captures graphs after both): "does the model alone fit" is answered by the log
#: (docrt23)
_AFTER_LOAD = frozenset({"kv_cache_alloc", "serving_step", "cuda_graph_capture"})


def _runner_up(cause: str, e: OomEvent, ctx: LogContext) -> str | None:
    from oomkit.diagnose.priors import base_rate, prior_key

    rate = base_rate(prior_key(e, ctx))
    if rate is None:
        return None
    left = [c for c, _ in rate.counts if c not in (cause, "unknown")]
    return left[0] if left else None


def _candidates(cause: str, e: OomEvent, ctx: LogContext) -> list[str]:
    if e.runtime == "nccl":  # NCCL's buffers fail on a card already full: whose (rules_nccl)
        return ["other_process"]
    out: list[str] = []
    other = _runner_up(cause, e, ctx)
    if other is not None:
        pair = {cause, other}
        for need, qid in _PAIR_QUESTION:
            if need <= pair:
                out.append(qid)
                break
    out.extend(q for q in _BY_CAUSE.get(cause, ()) if q not in out)
    return out


def pick_question(
    final: Analysis,
    rerun: Callable[[str, str], str],
    e: OomEvent,
    ctx: LogContext,
    answered: Mapping[str, str] | None = None,
) -> Question | None:
    """The question for a diagnosis left open or below :data:`ASK_BELOW`, else ``None``.

    ``rerun(id, value)`` is the cause the doctor gives with that one more answer; a question is
    asked only when its answers lead to at least two different causes (an answer that changes
    nothing is not worth asking), and never twice (``answered``). A question is asked only where
    the hand order (``_candidates``) has one; which one is learned (doccause9,
    :mod:`oomkit.diagnose.question_facts`): of every question whose answers change the cause and
    keep it among them, the one most likely to reveal another cause for this message's key.
    """
    if final.confidence >= ASK_BELOW and final.open_question is not True:
        return None
    done = dict(answered or {})
    if ctx.frame_phase in _AFTER_LOAD:
        done.setdefault("model_fits", "yes")  # the log answers it: the weights had loaded
    hand = [q for q in _candidates(final.cause, e, ctx) if q not in done]
    asked: list[Question] = []
    rest = () if e.runtime == "nccl" else (q for q in QUESTIONS if q not in hand and q not in done)
    for qid in (*hand, *rest):
        spec = QUESTIONS[qid]
        leads = tuple((c.value, c.text, rerun(qid, c.value)) for c in spec.choices)
        if len({cause for _, _, cause in leads}) >= 2:
            asked.append(Question(qid, spec.text, leads))
    if not any(q.id in hand for q in asked):
        return None  # no question of the hand order would change the cause
    return _most_revealing(final.cause, asked, e, ctx)


def _most_revealing(
    cause: str, asked: Sequence[Question], e: OomEvent, ctx: LogContext
) -> Question:
    """Of the questions whose answers change the cause (hand order first), the one with the
    highest :func:`~oomkit.diagnose.question_facts.fact_score` for this message's base rate; the
    first in hand order when none scores (no rate for the key, or no fact seen in its causes'
    threads)."""
    from oomkit.diagnose.priors import base_rate, prior_key

    rate = base_rate(prior_key(e, ctx))
    if rate is None:
        return asked[0]
    counts = dict(rate.counts)
    table = fact_table()
    scores = [
        fact_score(cause, frozenset(c for _, _, c in q.answers), q.id, counts, table) for q in asked
    ]
    # a question decides between the cause given and another: one of its answers must keep the
    # cause (a question all of whose answers move away would move a right cause away too)
    keeps = [cause == "unknown" or any(c == cause for _, _, c in q.answers) for q in asked]
    best = max(range(len(asked)), key=lambda i: (keeps[i], scores[i], -i))
    return asked[best]


class AskedQuestion:
    """The deciding question's hook in :func:`oomkit.diagnose.rules.diagnose`: the steps after
    the rules (``finish``: base rate, growth), then the user's answers; re-run with one more
    answer for the cause each answer leads to.

    Raises:
        ValueError: ``when`` and the answer ``when=`` disagree.
    """

    def __init__(
        self,
        pre: Analysis,
        e: OomEvent,
        ctx: LogContext,
        finish: Callable[[Analysis], Analysis],
        *,
        shown: str | None,
        answers: Mapping[str, str] | None,
        when: str | None,
    ) -> None:
        self.pre, self.e, self.ctx, self.finish, self.shown = pre, e, ctx, finish, shown
        self.answers = dict(answers or {})
        said = self.answers.pop("when", None)
        if said is not None and when is not None and said != when:
            raise ValueError(f"--when {when} and the answer when={said} disagree; give one")
        self.when = when or said

    def last(
        self, a: Analysis, extra: Mapping[str, str] | None = None
    ) -> tuple[Analysis, tuple[AppliedAnswer, ...]]:
        """``finish(a)`` read with the answers (and ``extra``)."""
        return with_answers(self.finish(a), {**self.answers, **(extra or {})}, self.e, self.ctx)

    def _phase(self, when: str | None) -> Analysis:
        from oomkit.diagnose.user_phase import with_user_phase

        return with_user_phase(self.pre, when, self.shown)

    def _cause(self, qid: str, value: str) -> str:
        if qid == "when":
            return self.last(self._phase(value))[0].cause
        return self.last(self._phase(self.when), {qid: value})[0].cause

    def question(self, result: Analysis, opened: bool) -> Question | None:
        """The question for the final ``result`` (``opened``: the diagnosis is open)."""
        done = {**self.answers, **({"when": self.when} if self.when else {})}
        final = replace(result, open_question=opened)
        return pick_question(final, self._cause, self.e, self.ctx, done)

    @staticmethod
    def closed(applied: Sequence[AppliedAnswer]) -> bool:
        """Whether an answer decided or confirmed the cause."""
        return any(a.effect in ("decided", "confirmed") for a in applied)

    def applied(self, applied: tuple[AppliedAnswer, ...]) -> tuple[AppliedAnswer, ...]:
        """``applied`` with the ``when`` answer first (its effect: the cause with and without)."""
        if self.when is None:
            return applied
        before = self.last(self._phase(None))[0].cause
        after = self.last(self._phase(self.when))[0].cause
        effect = "decided" if after != before else "consistent"
        return (AppliedAnswer("when", self.when, effect, before), *applied)

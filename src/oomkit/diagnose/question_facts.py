"""Which fact is worth asking: the question most likely to reveal a cause other than the one given.

:mod:`oomkit.diagnose.question_pick` asks one question of an open or low-confidence diagnosis.
Which one is learned from data, the way the base rate is (:mod:`oomkit.diagnose.priors`):

* the base rate of the message's key (``family|phase|evidence``, the labelled development
  records whose message looks the same) says how often each cause is the true one;
* ``data/question_facts.json`` says, for each true cause, how often the thread of a record with
  that cause gave the fact each question asks (the answers of
  ``tests/fixtures/oom_corpus/answers/answers_dev.jsonl``, written by
  ``python benchmarks/doctor_answers.py --table``): a user whose job was killed for host RAM
  reports ``dmesg``; one whose model was too large reports that batch 1 still fails.

A question earns, for every cause ``L`` other than the diagnosis's that one of its answers leads
to (the re-run, :class:`~oomkit.diagnose.question_pick.AskedQuestion`), the records of ``L`` at
this key times the share of ``L``'s threads that state that fact: the expected number of
messages of this shape on which asking it turns a wrong cause into the right one. The highest
score is asked; ties (and keys without a rate) keep the hand order of ``question_pick``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

__all__ = ["FactTable", "fact_score", "fact_table", "override_facts"]


@dataclass(frozen=True, slots=True)
class FactTable:
    """Per true cause: answered development records, and how many of them gave each fact."""

    records: Mapping[str, int]  # cause -> records whose thread answered any question
    given: Mapping[str, Mapping[str, int]]  # cause -> question id -> records that answered it

    def share(self, cause: str, qid: str) -> float:
        """The share of ``cause``'s answered threads that give the fact ``qid`` asks (0 unseen)."""
        n = self.records.get(cause, 0)
        return self.given.get(cause, {}).get(qid, 0) / n if n else 0.0


_OVERRIDE: ContextVar[FactTable | None] = ContextVar("oomkit_fact_table", default=None)


@contextlib.contextmanager
def override_facts(table: FactTable) -> Iterator[None]:
    """Use another fact table inside the block (leave-one-part-out scoring, tests)."""
    token = _OVERRIDE.set(table)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


@lru_cache(maxsize=1)
def _committed() -> FactTable:
    """``data/question_facts.json`` (written by ``benchmarks/doctor_answers.py --table``)."""
    text = resources.files("oomkit").joinpath("data/question_facts.json").read_text("utf-8")
    raw = json.loads(text)
    return FactTable(records=raw["records"], given=raw["given"])


def fact_table() -> FactTable:
    """The table in use (an override, else the committed one)."""
    table = _OVERRIDE.get()
    return table if table is not None else _committed()


def fact_score(
    cause: str,
    leads_to: frozenset[str],
    qid: str,
    rate: Mapping[str, int],
    table: FactTable,
) -> float:
    """Expected records of this key on which asking ``qid`` reveals a cause other than
    ``cause``: for each such cause one of its answers leads to, its records in ``rate`` times
    the share of its threads that state the fact."""
    return sum(
        n * table.share(other, qid)
        for other, n in rate.items()
        if other != cause and other != "unknown" and other in leads_to
    )

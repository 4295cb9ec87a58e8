"""``tests/fixtures/oom_corpus/answers/answers_dev.jsonl``: the answers the threads give to the
deciding question (``benchmarks/doctor_answers.py``). Every answer is a valid ``--answer``, of a
record of a development part, with a quote that is in that record's ``cause_notes``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from oomkit.diagnose.questions import check_answers

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = ROOT / "tests" / "fixtures" / "oom_corpus" / "answers" / "answers_dev.jsonl"


def _module(name: str) -> ModuleType:
    path = ROOT / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return [json.loads(x) for x in ANSWERS.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_every_answer_is_valid_and_quoted_from_its_development_record(
    rows: list[dict[str, str]],
) -> None:
    corpus = _module("doctor_corpus")
    assert rows
    notes: dict[str, str] = {}
    for part in {r["part"] for r in rows}:
        assert part in corpus.DEVELOPMENT_PARTS, part  # never a fresh held-out part
        for rec in corpus.load(corpus.part_files(part)):
            notes[rec["id"]] = rec.get("cause_notes", "")
    seen: set[tuple[str, str]] = set()
    for r in rows:
        assert set(r) == {"id", "part", "question", "value", "quote"}, r
        check_answers({r["question"]: r["value"]})
        assert r["id"] in notes, r["id"]
        assert len(r["quote"]) >= 6, r  # a sentence, not a word (CJK quotes are short)
        assert r["quote"] in notes[r["id"]], r["id"]
        assert (r["id"], r["question"]) not in seen, r["id"]
        seen.add((r["id"], r["question"]))


def test_the_benchmark_scores_with_and_without(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _module("doctor_answers")
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert "records carrying an answer" in out
    assert "  without " in out
    assert "  all " in out

"""Real OOM messages of the development corpus, by record id, for tests.

Only development parts are read (``benchmarks/doctor_corpus.DEVELOPMENT_PARTS``: a fresh
held-out part is never opened by a test helper). Importable from any test (``pythonpath`` in
pyproject.toml lists ``tests``)::

    from corpus_records import corpus_text
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.diagnose.doctor import Diagnosis

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "oom_corpus"


@cache
def _corpus_module() -> ModuleType:
    path = ROOT / "benchmarks" / "doctor_corpus.py"
    spec = importlib.util.spec_from_file_location("doctor_corpus_parts", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _development_parts() -> tuple[str, ...]:
    return tuple(_corpus_module().DEVELOPMENT_PARTS)


@cache
def _texts() -> dict[str, str]:
    out: dict[str, str] = {}
    for part in _development_parts():
        for path in sorted(CORPUS.glob(f"{part}_*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec = json.loads(line)
                    out[str(rec["id"])] = str(rec["text"])
    return out


def corpus_text(record_id: str) -> str:
    """The verbatim ``text`` of development record ``record_id``."""
    try:
        return _texts()[record_id]
    except KeyError:
        raise AssertionError(f"record {record_id} not in the development corpus") from None


@cache
def development_diagnoses() -> tuple[tuple[dict[str, object], Diagnosis], ...]:
    """Every development record with the doctor's default diagnosis of its text, computed once
    per test process: the corpus-wide tests (fixes, deciding sentences, shell lines) share it
    instead of each diagnosing the ~5,000 records again."""
    from oomkit.diagnose.doctor import diagnose_text

    mod = _corpus_module()
    return tuple(
        (rec, diagnose_text(str(rec.get("text", ""))))
        for part in mod.DEVELOPMENT_PARTS
        for rec in mod.load(mod.part_files(part))
    )

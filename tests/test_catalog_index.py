"""The precomputed model-name index (oomkit/data/models_index.json) agrees with the data."""

from __future__ import annotations

import pytest

from oomkit.catalog import models
from oomkit.catalog.models import INDEX_FILE, all_models, find_model
from oomkit.catalog.models_index import render_index


def test_committed_index_matches_the_data() -> None:
    assert INDEX_FILE.read_text(encoding="utf-8") == render_index(), (
        "oomkit/data/models_index.json is stale: run 'python -m oomkit.catalog.models_index'"
    )


def _slow(name: str) -> str:
    """find_model's answer from the full scan alone (no index)."""
    strict, loose = models._indexes()
    candidates = models._candidates(name)
    for c in candidates:
        hit = strict.get(models.normalize_name(c))
        if hit is not None:
            return hit.key
    for c in candidates:
        hits = loose.get(models.loose_name(c), ())
        if len(hits) == 1:
            return hits[0].key
    raise LookupError(name)


def test_index_answers_like_the_full_scan_for_every_name() -> None:
    names = [n for e in all_models() for n in e.names()]
    # plus the spellings people type: upper case, org prefixes, instruct/quant suffixes
    names += [n.upper() for n in names[:200]]
    names += ["meta-llama/Llama-3.1-8B-Instruct", "llama3.1:8b-instruct-q4_K_M", "Llama_3_1_8B"]
    for name in names:
        assert find_model(name).key == _slow(name), name


def test_index_entries_equal_the_full_scan_entries() -> None:
    by_key = {e.key: e for e in all_models()}
    for key in by_key:
        assert models._indexed_entry(key) == by_key[key], key


def test_a_name_missing_from_the_index_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    empty = {"schema_version": 1, "files": {}, "strict": {}, "loose": {}}
    monkeypatch.setattr(models, "_name_index", lambda: empty)
    assert find_model("llama-3.1-8b").key == "llama-3.1-8b"


def test_a_stale_index_never_answers_with_another_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # The index claims "llama-3.1-8b" is qwen's: the entry's own names disagree, so the full
    # scan answers instead.
    index = models._name_index()
    assert index is not None
    wrong = {**index, "strict": {**index["strict"], "llama3.18b": "qwen2.5-7b"}}
    monkeypatch.setattr(models, "_name_index", lambda: wrong)
    models._indexed_entry.cache_clear()
    try:
        assert find_model("llama-3.1-8b").key == "llama-3.1-8b"
    finally:
        models._indexed_entry.cache_clear()


def test_estimate_reads_one_family_file(monkeypatch: pytest.MonkeyPatch) -> None:
    models._read_family.cache_clear()
    models._indexed_entry.cache_clear()
    find_model("llama-3.1-8b")
    assert models._read_family.cache_info().currsize == 1

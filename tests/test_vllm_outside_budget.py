"""benchmarks/vllm_outside_budget.py: vLLM's memory outside the util budget, from real readings."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "vllm_outside_budget.py"


@pytest.fixture(scope="module")
def mod() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("vllm_outside_budget", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


@pytest.fixture(scope="module")
def rows(mod: ModuleType) -> list[dict[str, object]]:
    doc = json.loads(mod.DATA.read_text())
    recs = mod.records()
    return [mod.row(r, recs) for r in doc["readings"] if not r.get("excluded")]


def test_every_reading_has_a_source_and_a_development_record(mod: ModuleType) -> None:
    doc = json.loads(mod.DATA.read_text())
    recs = mod.records()
    assert all("heldout35" not in p for p in mod.DEV_PARTS)
    for r in doc["readings"]:
        assert r["url"].startswith("https://")
        assert r["quote"]
        if "record" in r:
            assert r["record"] in recs, r["id"]
        elif not r.get("excluded"):
            assert "estimate" in r, r["id"]


def test_26833_util_08_holds_13_gib_outside_its_budget(rows: list[dict[str, object]]) -> None:
    # 78737 MiB in use at util 0.8 of an H100's 79.10 GiB: 13.6 GiB outside the 63.3 GiB budget,
    # 13.1 GiB beyond oomkit's modelled 0.5 GiB graph pool (the band's term is 2.5 GiB)
    x = next(r for r in rows if r["id"] == "vllm-26833-u080")
    assert x["overshoot_gib"] == pytest.approx(78737 / 1024 - 0.8 * 79.10, abs=0.02)
    assert x["modelled_gib"] == pytest.approx(0.5)
    assert x["beyond_gib"] == pytest.approx(13.11, abs=0.02)
    assert x["band_term_gib"] == pytest.approx(2.5)
    assert x["class"] == "V1 graphs after KV"
    assert x["tp"] == 2


def test_the_7553_pair_separates_the_graphs(rows: list[dict[str, object]]) -> None:
    graphs = next(r for r in rows if r["id"] == "vllm-7553-graphs")
    eager = next(r for r in rows if r["id"] == "vllm-7553-eager")
    assert eager["eager"]
    assert not graphs["eager"]
    assert eager["modelled_gib"] == 0.0
    assert eager["overshoot_gib"] < 0
    # the graphs' 2464 MiB (the thread's own difference) is within the band's 1~3 GiB span
    assert 0 < graphs["beyond_gib"] < graphs["band_term_gib"]


def test_no_class_has_three_independent_sources_above_the_band(
    mod: ModuleType, rows: list[dict[str, object]]
) -> None:
    summary = mod.summarise(rows)
    assert not any(s["supports_term"] for s in summary.values())
    tp = summary["V1 graphs after KV, TP>1, graphs"]
    # two sources above the present term (26833 and the 8x H200 Scout), one of them at 13 GiB
    assert tp["above_band_sources"] == 2
    assert tp["largest_from"] == "vllm-26833-u080"


def test_a_death_reading_is_shown_never_used(
    mod: ModuleType, rows: list[dict[str, object]]
) -> None:
    death = [r for r in rows if r["outcome"] == "oom"]
    assert {r["id"] for r in death} == {"vllm-7553-graphs", "vllm-2631-mixtral-awq-tp2"}
    fake = [{**r, "beyond_gib": 99.0} for r in death]
    summary = mod.summarise([*rows, *fake])
    assert all(s["largest_beyond_gib"] != 99.0 for s in summary.values())

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
    # heldout35-39 are development data since session 15, heldout40-43 since session 16 and
    # heldout44-45 since session 17, heldout46-50 since session 18 (each scored once, then
    # retired); a fresh part never is
    assert {"heldout35", "heldout40", "heldout45", "heldout46", "heldout50"} <= set(mod.DEV_PARTS)
    assert "heldout53" in mod.DEV_PARTS
    assert "heldout55" in mod.DEV_PARTS
    assert "heldout54" not in mod.DEV_PARTS  # colver54 found no run: no such part
    assert "heldout56" in mod.DEV_PARTS  # scored once in session 21, then retired
    assert "heldout57" in mod.DEV_PARTS  # scored once in session 22, then retired
    assert "heldout58" in mod.DEV_PARTS  # scored once in session 23, then retired
    assert "heldout59" in mod.DEV_PARTS  # scored once in session 23, then retired
    assert "heldout60" not in mod.DEV_PARTS
    for r in doc["readings"]:
        assert r["url"].startswith("https://")
        assert r["quote"]
        assert r["outcome"] in ("ok", "oom"), r["id"]
        assert r.get("excluded") or r["used"] is not None, r["id"]
        if "record" in r:
            assert r["record"] in recs, r["id"]
        elif not r.get("excluded"):
            assert "estimate" in r, r["id"]


def test_26833_util_08_holds_13_gib_outside_its_budget(rows: list[dict[str, object]]) -> None:
    # 78737 MiB in use at util 0.8 of an H100's 79.10 GiB: 13.6 GiB outside the 63.3 GiB budget,
    # 12.6 GiB beyond oomkit's modelled 1.03 GiB of graphs (vllm_cudagraph: 0.11.0 captures 67
    # PIECEWISE + 67 FULL sizes up to min(2 x 2048, 512) over gpt-oss-20b's 24 layers, + the
    # 512-token pool; it was the fixed 0.5 GiB before); the band's term is the rest of vLLM's
    # "1~3 GiB", 1.97 GiB (verdict_runtime.vllm_graph_span: 3 GiB - the modelled graphs)
    x = next(r for r in rows if r["id"] == "vllm-26833-u080")
    assert x["overshoot_gib"] == pytest.approx(78737 / 1024 - 0.8 * 79.10, abs=0.02)
    assert x["modelled_gib"] == pytest.approx(1.03, abs=0.01)
    assert x["beyond_gib"] == pytest.approx(12.59, abs=0.02)
    assert x["band_term_gib"] == pytest.approx(3.0 - x["modelled_gib"])
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
    # two term sources above the present term (the 8x H200 Scout, +3.10 GiB beyond its 1.03 GiB
    # of modelled graphs, +3.64 GiB beyond the fixed 0.5 GiB before vllm_cudagraph; kubesimplify's
    # vLLM 0.27.1 Qwen3-32B TP=2, +2.24 GiB beyond its graphs, which Model Runner V2 captures
    # after the KV cache: oomkit.estimate.vllm_mrv2): 26833's 13 GiB at max_num_seqs 2048 is
    # shown, never used (vllmread16)
    assert tp["above_band_sources"] == 2
    assert tp["working_sources"] == 2
    assert tp["largest_from"] == "fuhengwu-scout-8xh200"
    assert tp["largest_beyond_gib"] == pytest.approx(3.10, abs=0.02)


def test_a_death_reading_is_shown_never_used(
    mod: ModuleType, rows: list[dict[str, object]]
) -> None:
    death = [r for r in rows if r["outcome"] == "oom"]
    assert {r["id"] for r in death} == {"vllm-7553-graphs", "vllm-2631-mixtral-awq-tp2"}
    fake = [{**r, "beyond_gib": 99.0} for r in death]
    summary = mod.summarise([*rows, *fake])
    assert all(s["largest_beyond_gib"] != 99.0 for s in summary.values())


def test_the_nearest_classes_need_two_more_sources(
    mod: ModuleType, rows: list[dict[str, object]]
) -> None:
    summary = mod.summarise(rows)
    # kubesimplify's 0.27.1 readings (Model Runner V2: graphs after the KV cache) left the
    # "in budget" classes for "after KV": that TP>1 class is one source short now
    assert min(s["sources_needed"] for s in summary.values()) == 1
    nearest = sorted(k for k, s in summary.items() if s["sources_needed"] <= 2)
    assert nearest == ["V0, TP>1, graphs", "V1 graphs after KV, TP>1, graphs"]
    assert summary["V1 graphs after KV, TP>1, graphs"]["sources_needed"] == 1
    # V0 TP>1 graphs: PR #2031's 5.8 GiB is the only source above the 2.5 GiB term
    assert summary["V0, TP>1, graphs"]["largest_from"] == "vllm-2031-llama2-70b-tp4"


def test_26833_is_shown_but_sets_no_term(mod: ModuleType, rows: list[dict[str, object]]) -> None:
    # vllm#26833's u0.8 run served with max_num_seqs 2048 on a 201,088-token vocabulary: V1's
    # profile samples those rows with no penalties and no logprobs (_dummy_sampler_run), so what a
    # served request's penalties/logprobs allocate per row lives in the headroom and scales with
    # max_num_seqs x vocab; the reading is tabulated, never a term's source
    x = next(r for r in rows if r["id"] == "vllm-26833-u080")
    assert x["outcome"] == "ok"
    reason = x["not_for_term"]
    assert isinstance(reason, str)
    assert "max_num_seqs 2048" in reason
    assert "_dummy_sampler_run" in reason
    assert not mod.term_source(x)
    summary = mod.summarise(rows)["V1 graphs after KV, TP>1, graphs"]
    assert summary["largest_beyond_gib"] < 13.0
    assert "vllm-26833-u080" not in summary["above_band_term"]
    # without the mark it would be the class's largest beyond again
    unmarked = [{**r, "not_for_term": None} if r["id"] == x["id"] else r for r in rows]
    again = mod.summarise(unmarked)["V1 graphs after KV, TP>1, graphs"]
    assert again["largest_from"] == "vllm-26833-u080"
    assert again["above_band_sources"] == 3


def test_a_not_for_term_reading_never_completes_a_class(mod: ModuleType) -> None:
    key = "V1 graphs after KV, TP>1, graphs"
    third = {**_synthetic(1, 1, 30.0)[0], "id": "big", "source": "https://github.com/o/r/issues/7"}
    rows = [*_synthetic(2, 1, 4.0), {**third, "not_for_term": "max_num_seqs 8x the default"}]
    s = mod.summarise(rows)[key]
    assert s["working_sources"] == 2
    assert not s["supports_term"]
    assert s["largest_beyond_gib"] == 5.0
    # the same reading unmarked is the third source and the class's term
    s3 = mod.summarise([*_synthetic(2, 1, 4.0), third])[key]
    assert s3["supports_term"]
    assert s3["largest_beyond_gib"] == 30.0


def test_every_not_for_term_reading_is_a_working_run_with_a_reason(mod: ModuleType) -> None:
    doc = json.loads(mod.DATA.read_text())
    marked = [r for r in doc["readings"] if "not_for_term" in r]
    assert [r["id"] for r in marked] == ["vllm-26833-u080"]
    for r in marked:
        assert r["outcome"] == "ok"
        assert len(r["not_for_term"]) > 40


def _synthetic(
    n_threads: int, per_thread: int, beyond: float, outcome: str = "ok"
) -> list[dict[str, object]]:
    return [
        {
            "id": f"t{t}-{i}",
            "source": f"https://github.com/o/r/issues/{100 + t}#c{i}",
            "class": "V1 graphs after KV",
            "tp": 2,
            "eager": False,
            "beyond_gib": beyond + t + i / 10,
            "band_term_gib": 2.5,
            "outcome": outcome,
        }
        for t in range(n_threads)
        for i in range(per_thread)
    ]


def test_the_rule_counts_threads_not_readings(mod: ModuleType) -> None:
    key = "V1 graphs after KV, TP>1, graphs"
    thread = "https://github.com/vllm-project/vllm/issues/26833"
    assert mod.source_key(thread + "#issuecomment-3402") == mod.source_key(thread)
    # four readings of two threads are two sources: no term
    two = mod.summarise(_synthetic(2, 2, 4.0))[key]
    assert two["working_sources"] == 2
    assert not two["supports_term"]
    assert two["sources_needed"] == 1
    # three threads above the band's term: a term, the largest working beyond among them
    three = mod.summarise(_synthetic(3, 1, 4.0))[key]
    assert three["supports_term"]
    assert three["sources_needed"] == 0
    assert three["largest_beyond_gib"] == 6.0
    # three threads, one of them under the band's term: no term
    low = {**_synthetic(1, 1, 0.0)[0], "id": "u", "source": "https://github.com/o/r/issues/9"}
    under = [*_synthetic(2, 1, 4.0), low]
    assert not mod.summarise(under)[key]["supports_term"]


def test_deaths_are_no_source_of_a_term(mod: ModuleType) -> None:
    key = "V1 graphs after KV, TP>1, graphs"
    rows = _synthetic(2, 1, 4.0) + [
        {**r, "source": "https://github.com/o/r/issues/7"} for r in _synthetic(1, 1, 30.0, "oom")
    ]
    s = mod.summarise(rows)[key]
    assert s["working_sources"] == 2
    assert not s["supports_term"]
    assert s["largest_beyond_gib"] == 5.0


def test_3484_single_gpu_reading_is_inside_the_v0_budget(rows: list[dict[str, object]]) -> None:
    # 73393 MiB at the default util 0.9 of an A100 80GB PCIe: 0.3 GiB under the budget
    x = next(r for r in rows if r["id"] == "vllm-3484-llama2-7b-tp1")
    assert x["class"] == "V0"
    assert x["tp"] == 1
    over = x["overshoot_gib"]
    assert isinstance(over, float)
    assert over == pytest.approx(73393 / 1024 - 0.9 * 80.0, abs=0.02)
    assert over < 0


def test_an_excluded_reading_is_never_tabulated(
    mod: ModuleType, rows: list[dict[str, object]]
) -> None:
    doc = json.loads(mod.DATA.read_text())
    excluded = {r["id"] for r in doc["readings"] if r.get("excluded")}
    assert "vllm-51590-gptoss120b-tp8-pro4500" in excluded
    # club-3090 #127 (V1 0.21+, TP=4, 3090s at util 0.92): its model is not in the catalog
    assert "club3090-127-tp4-3090" in excluded
    assert not excluded & {r["id"] for r in rows}

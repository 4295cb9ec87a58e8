"""What a vLLM process really holds outside its ``gpu_memory_utilization`` budget, measured.

    PYTHONPATH=src python benchmarks/vllm_outside_budget.py [--json OUT]

vLLM sizes its KV pool so that weights + profile peak + non-torch memory + pool fill
``util x total`` (``total`` = ``cudaMemGetInfo`` total); what it allocates after that (CUDA graphs
captured after the KV cache before 0.21, custom all-reduce graph registrations, inductor/autotune
workspaces, cuBLAS workspaces of shapes the profile never ran, the caching allocator's growth
while serving) lives in the ``1 - util`` headroom. The verdict's band has one term for it
(``oomkit.estimate.verdict_runtime.vllm_graph_span``: vLLM's own "1~3 GiB per GPU" warning).
This script checks that term against every reading that shows a device's used memory and the
util it ran at (``benchmarks/vllm_outside_budget.json``, each with its source and quote):

* overshoot = used - util x total (what lived outside the budget);
* modelled  = oomkit's device total - util x total for the same run (its out-of-budget terms:
  the modelled CUDA-graph pool; the CUDA context is inside the budget from the non-torch rows);
* beyond    = used - oomkit's device total (= overshoot - modelled), against the band's term
  (``vllm_graph_span``) for the same run.

Readings are grouped by generation class (V0; V1 before 0.21, graphs captured after the KV
cache; V1 0.21+, graph memory profiled inside the budget), tensor parallelism (1 / >1) and
eager vs graphs. The rule for a measured term (issue #13: "the band from measured variance"):
a class gets one only from working runs' readings of at least ``MIN_SOURCES`` independent
sources (distinct threads or repositories), taken as the largest ``beyond`` among them; a
death's own reading is shown, never used; so is a working run's reading marked ``not_for_term``
(its reason printed): one whose settings sit outside the class on the axis the out-of-profile
memory scales with (vllm#26833's ``max_num_seqs`` 2048, vllmread16). The script prints the
table and, per class, whether the readings support a term and how it compares with the band's
present term. It writes nothing into ``src/``: at the readings of this commit no class supports
a term above the present one (see the printed verdict and tests/fixtures/verdict_runs/README.md,
verff32, vllmread16).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))
DATA = HERE / "vllm_outside_budget.json"
FIXTURES = ROOT / "tests" / "fixtures" / "verdict_runs"
#: the verdict parts that are development data (a fresh held-out part is never read here;
#: heldout35-39 became development data in session 15, heldout40-45 in sessions 16-17,
#: heldout46-50 in session 18, heldout51-53 in session 19, heldout55 in 20, heldout56 in 21,
#: heldout57 in 22, heldout58-59 in 23; there is no heldout54)
DEV_PARTS = (
    "dev", "dev2", *(f"heldout{i}" for i in range(2, 54)),
    *(f"heldout{i}" for i in range(55, 60)),
)  # fmt: skip
#: independent sources (threads/repositories) a class needs before its readings set a term
MIN_SOURCES = 3
GiB = 1 << 30
MiB = 1 << 20
_MOE_ARCH = ("moe", "mixtral", "gptoss", "llama4", "deepseek", "qwen3next")


def records() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for part in DEV_PARTS:
        path = FIXTURES / f"{part}.jsonl"
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["id"]] = rec
    return out


def estimate_for(rec: dict[str, Any]) -> Any:
    """oomkit's estimate for a record, built exactly as ``verdict_accuracy.judge`` builds it."""
    import verdict_accuracy

    from oomkit.estimate import verdict as verdict_mod

    seen: list[Any] = []
    real = verdict_mod.verdict

    def capture(est: Any, platform: Any = None) -> Any:
        seen.append(est)
        return real(est, platform)

    verdict_mod.verdict = capture  # type: ignore[assignment]
    try:
        verdict_accuracy.judge(rec)
    finally:
        verdict_mod.verdict = real  # type: ignore[assignment]
    return seen[0]


def used_bytes(r: dict[str, Any]) -> int:
    unit = r.get("unit", "MiB")
    return int(float(r["used"]) * (GiB if unit == "GiB" else MiB))


def gen_class(est: Any) -> str:
    rd = est.runtime_details
    engine = str(rd.get("engine", ""))
    if engine.startswith("v0"):  # "v0-..." rows; "v1-..." and "current" are V1
        return "V0"
    return "V1 graphs after KV" if rd.get("cudagraph_charged") is False else "V1 graphs in budget"


def row(r: dict[str, Any], recs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from oomkit.estimate.verdict_runtime import vllm_graph_span

    if "record" in r:
        rec = dict(recs[r["record"]])
    else:
        rec = {"id": r["id"], "url": r["url"], "runtime": "vllm", "outcome": r["outcome"]}
        rec.update(r["estimate"])
    if r.get("override"):
        rec["settings"] = {**(rec.get("settings") or {}), **r["override"]}
    est = estimate_for(rec)
    d = est.devices[int(r.get("device", 0))]
    assert d.capacity_bytes is not None
    util = est.settings.get("gpu_memory_utilization")
    assert isinstance(util, float)
    budget = int(util * d.capacity_bytes)
    used = used_bytes(r)
    span = vllm_graph_span(est)
    tp = est.settings.get("tp") or 1
    eager = bool(est.settings.get("enforce_eager"))
    moe = any(k in est.model.architecture.lower() for k in _MOE_ARCH)
    return {
        "id": r["id"],
        "source": r["url"],
        "engine": est.runtime_details.get("engine"),
        "class": gen_class(est),
        "tp": tp,
        "eager": eager,
        "moe": moe,
        "util": util,
        "total_gib": d.capacity_bytes / GiB,
        "used_gib": used / GiB,
        "overshoot_gib": (used - budget) / GiB,
        "modelled_gib": (d.total_bytes - budget) / GiB,
        "beyond_gib": (used - d.total_bytes) / GiB,
        "band_term_gib": (span[1] if span else 0) / GiB,
        "approx": bool(r.get("approx")),
        "outcome": r["outcome"],
        "not_for_term": r.get("not_for_term"),
    }


def term_source(x: dict[str, Any]) -> bool:
    """A working run's reading that may set its class's term (a death's, or one marked
    ``not_for_term``, is shown, never used)."""
    return x["outcome"] == "ok" and not x.get("not_for_term")


def class_key(x: dict[str, Any]) -> str:
    tp = "TP>1" if x["tp"] > 1 else "TP1"
    return f"{x['class']}, {tp}, {'eager' if x['eager'] else 'graphs'}"


def source_key(url: str) -> str:
    """A thread or a repository: readings of one source are not independent (a comment's
    ``#issuecomment-...`` link or a query string names the same thread)."""
    parts = url.split("#")[0].split("?")[0].split("/")
    return "/".join(parts[:7]) if "/issues/" in url or "/pull/" in url else "/".join(parts[:5])


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    classes: dict[str, dict[str, Any]] = {}
    for x in rows:
        c = classes.setdefault(class_key(x), {"readings": [], "sources": set()})
        c["readings"].append(x["id"])
        if term_source(x):
            c["sources"].add(source_key(x["source"]))
    out: dict[str, Any] = {}
    for key, c in sorted(classes.items()):
        ok = [x for x in rows if class_key(x) == key and term_source(x)]
        largest = max(ok, key=lambda x: x["beyond_gib"], default=None)
        above = [x for x in ok if x["beyond_gib"] > x["band_term_gib"]]
        out[key] = {
            "readings": len(c["readings"]),
            "working_sources": len(c["sources"]),
            "largest_beyond_gib": None if largest is None else round(largest["beyond_gib"], 2),
            "largest_from": None if largest is None else largest["id"],
            "above_band_term": sorted(x["id"] for x in above),
            "above_band_sources": len({source_key(x["source"]) for x in above}),
            "supports_term": len(c["sources"]) >= MIN_SOURCES
            and len({source_key(x["source"]) for x in above}) >= MIN_SOURCES,
            # independent working sources above the band's term still missing (those above it
            # are working sources too, so this one count covers both halves of the rule)
            "sources_needed": max(0, MIN_SOURCES - len({source_key(x["source"]) for x in above})),
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the table and the summary here")
    args = ap.parse_args()
    doc = json.loads(DATA.read_text())
    recs = records()
    rows = [row(r, recs) for r in doc["readings"] if not r.get("excluded")]
    print(
        f"{'reading':<27}{'engine':<12}{'TP':>3} {'eag':<4}{'moe':<4}{'util':>5}{'total':>7}"
        f"{'used':>8}{'over':>7}{'model':>6}{'beyond':>7}{'band':>6}  outcome"
    )
    for x in rows:
        print(
            f"{x['id']:<27}{x['engine']!s:<12}{x['tp']:>3} {'y' if x['eager'] else 'n':<4}"
            f"{'y' if x['moe'] else 'n':<4}{x['util']:>5.3g}{x['total_gib']:>7.2f}"
            f"{x['used_gib']:>8.2f}{x['overshoot_gib']:>+7.2f}{x['modelled_gib']:>6.2f}"
            f"{x['beyond_gib']:>+7.2f}{x['band_term_gib']:>6.2f}  {x['outcome']}"
            + ("  ~" if x["approx"] else "")
            + ("  (not a term source)" if x["not_for_term"] else "")
        )
    for x in rows:
        if x["not_for_term"]:
            print(f"not a term source {x['id']}: {x['not_for_term']}")
    for r in doc["readings"]:
        if r.get("excluded"):
            print(f"excluded {r['id']}: {r['excluded']}")
    summary = summarise(rows)
    print()
    for key, s in summary.items():
        print(
            f"{key:<38} readings {s['readings']}, working sources {s['working_sources']}, "
            f"largest beyond {s['largest_beyond_gib']} GiB ({s['largest_from']}); above the "
            f"band's term: {s['above_band_sources']} source(s) -> "
            + (
                "supports a measured term"
                if s["supports_term"]
                else f"no measured term ({s['sources_needed']} more source(s) needed)"
            )
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "classes": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Derive the verdict's "tight" band from measured variance (benchmarks/accuracy_results.json).

    python benchmarks/verdict_band.py [--accuracy benchmarks/accuracy_results.json]
                                      [--out src/oomkit/data/verdict_band.json]

For every runtime and estimate category (weights, kv_cache, activations, overhead) the band is
the largest UNDER-prediction, ``max(0, (measured - predicted) / predicted)``, over the rows of
``benchmarks/accuracy.py`` that score a GPU-resident quantity of that runtime family (host-side
buffers are left out: they do not press on the GPU). A runtime without measured rows borrows
the family that shares its code path, and says so. The verdict multiplies each device's
category bytes by these fractions (oomkit.estimate.verdict); re-run this script after
``benchmarks/accuracy.py`` and commit both outputs.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: accuracy runtime -> the oomkit runtime family it measures
FAMILY = {
    "llama.cpp": "llama.cpp",
    "llama.cpp-cpu": "llama.cpp",
    "ik_llama.cpp": "llama.cpp",
    "ollama-runner": "llama.cpp",
    "vllm": "vllm",
}
#: accuracy component -> estimate category (None: not a GPU-resident quantity / derived)
CATEGORY = {
    "model_buffer_gpu": "weights",
    "model_buffer": "weights",
    "weights_per_rank": "weights",
    "kv_buffer": "kv_cache",
    "rs_buffer": "kv_cache",
    "compute_buffer_gpu0": "activations",
    "compute_buffer": "activations",
    "activation_peak": "activations",
    "non_torch": "overhead",
}
#: oomkit runtime -> (family whose rows apply, note)
RUNTIMES = {
    "llama.cpp": (
        "llama.cpp",
        "measured: llama.cpp GPU logs, CPU oracle, ik_llama.cpp, Ollama runner",
    ),
    "ollama": ("llama.cpp", "Ollama's runner allocates llama.cpp's buffers: llama.cpp rows"),
    "vllm": ("vllm", "measured: vLLM startup profiling logs"),
    "sglang": ("vllm", "no SGLang rows yet: vLLM's rows (same HF weights and torch forward)"),
    "transformers": ("vllm", "no transformers rows yet: vLLM's rows (same HF weights, torch)"),
}
CATEGORIES = ("weights", "kv_cache", "activations", "overhead")


def derive(rows: list[dict[str, object]]) -> dict[str, object]:
    under: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        fam = FAMILY.get(str(r["runtime"]))
        cat = CATEGORY.get(str(r["component"]))
        if fam is None or cat is None or r.get("unit", "bytes") != "bytes":
            continue
        err = float(r["error"])  # type: ignore[arg-type]
        under[(fam, cat)].append(max(0.0, -err / (1 + err)) if err > -1 else 1.0)
    out: dict[str, object] = {}
    for rt, (fam, note) in RUNTIMES.items():
        cats = {}
        for cat in CATEGORIES:
            vals = under.get((fam, cat), [])
            cats[cat] = {
                "fraction": round(max(vals, default=0.0), 4),
                "median": round(statistics.median(vals), 4) if vals else None,
                "n": len(vals),
            }
        out[rt] = {"family": fam, "note": note, "categories": cats}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accuracy", default=str(HERE / "accuracy_results.json"))
    ap.add_argument("--out", default=str(ROOT / "src/oomkit/data/verdict_band.json"))
    args = ap.parse_args()
    rows = json.loads(Path(args.accuracy).read_text())["rows"]
    doc = {
        "_source": "python benchmarks/verdict_band.py (from benchmarks/accuracy_results.json, "
        "itself from python benchmarks/accuracy.py --json benchmarks/accuracy_results.json)",
        "_rule": "fraction = largest under-prediction (measured - predicted) / predicted of a "
        "GPU-resident quantity, per runtime family and category",
        "runtimes": derive(rows),
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    for rt, v in doc["runtimes"].items():  # type: ignore[union-attr]
        cats = v["categories"]
        print(
            rt.ljust(13),
            "  ".join(f"{c}={cats[c]['fraction']:.2%}(n={cats[c]['n']})" for c in CATEGORIES),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

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
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: accuracy runtime -> the oomkit runtime family it measures
FAMILY = {
    "llama.cpp": "llama.cpp",
    "llama.cpp-cpu": "llama.cpp",
    "ik_llama.cpp": "llama.cpp",
    "ollama-runner": "llama.cpp",
    "vllm": "vllm",
    "transformers-gpu": "transformers",
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
    "weights_gpu": "weights",
    "activation_peak_gpu": "activations",
    "non_torch_gpu": "overhead",
    "activation_need_gpu": "activations",
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
    "transformers": (
        "transformers",
        "measured: generate() on an H100 (benchmarks/gpu/results/transformers_h100.json) and "
        "the smallest card each of forty-five generate() runs survived on (nine on an H200, "
        "three held-out sets of twelve on an H100): the caching allocator's term "
        "(benchmarks/gpu/results/verdict_boundary_h200.json, verdict_boundary_holdout*_h100.json)",
    ),
}
#: real-GPU transformers runs: ``benchmarks/gpu/validate_transformers.py`` results
GPU_TRANSFORMERS = ROOT / "benchmarks" / "gpu" / "results" / "transformers_h100.json"


def predict_transformers(r: dict[str, Any]) -> dict[str, int]:
    """Today's transformers estimate for one H100 run (not the figures recorded with it)."""
    import dataclasses
    import sys

    sys.path.insert(0, str(ROOT / "src"))
    import oomkit
    from oomkit.hardware.catalog import find_gpu_by_nvml_name
    from oomkit.hardware.targets import hardware_for
    from oomkit.inprocess.probe_model import load_config_dict
    from oomkit.loaders.hf_config import parse_config

    spec = parse_config({**load_config_dict(r["model"]), **r["overrides"]}, name=r["model"])
    est = oomkit.estimate_model(
        dataclasses.replace(spec, torch_dtype="bfloat16"),
        oomkit.InferenceSettings(
            runtime="transformers",
            quant="bf16",
            ctx=r["prompt"],
            max_new_tokens=r["new"],
            parallel=r["batch"],
            attn_implementation=r["attn_implementation"],
        ),
        hardware_for((find_gpu_by_nvml_name("NVIDIA H100 80GB HBM3", 85017493504),)),
    )
    dev = est.devices[0]
    # outside PyTorch: the CUDA context only; the caching allocator's rounding of the weights
    # (an "overhead" component, oomkit.estimate.torch_blocks) is inside torch's allocated bytes
    context = sum(c.n_bytes for c in dev.components if c.label == "CUDA context")
    return {
        "weights_bytes": dev.weights_bytes,
        "kv_cache_bytes": dev.kv_cache_bytes,
        "activations_bytes": dev.activations_bytes,
        "device_total_bytes": dev.total_bytes,
        "torch_bytes": dev.total_bytes - context,
    }


def gpu_transformers_rows(path: Path = GPU_TRANSFORMERS) -> list[dict[str, object]]:
    """Rows in ``accuracy.py``'s shape from the H100 ``generate()`` runs.

    activations: ``max_memory_allocated`` over generate() less the parameters and oomkit's KV
    cache (the KV cache is exact by construction: layers x 2 x kv heads x head dim x tokens),
    against oomkit's activations; overhead: nvidia-smi used less torch's reserved memory (the
    process's non-PyTorch share: CUDA context, cuBLAS) against oomkit's context. The weights
    are the parameters' bytes.
    """
    if not path.exists():
        return []
    rows: list[dict[str, object]] = []
    for r in json.loads(path.read_text())["results"]:
        if "error" in r:
            continue
        m, p = r["measured"], predict_transformers(r)
        rec = f"h100-{r['model']}-b{r['batch']}-p{r['prompt']}-{r['attn_implementation']}"
        measured = {
            "weights_gpu": m["parameter_bytes"],
            "activation_peak_gpu": m["max_memory_allocated_bytes"]
            - m["parameter_bytes"]
            - p["kv_cache_bytes"],
            "non_torch_gpu": m["nvidia_smi_used_MiB"] * (1 << 20) - m["max_memory_reserved_bytes"],
        }
        predicted = {
            "weights_gpu": p["weights_bytes"],
            "activation_peak_gpu": p["activations_bytes"],
            "non_torch_gpu": p["device_total_bytes"] - p["torch_bytes"],
        }
        for comp, meas in measured.items():
            pred = predicted[comp]
            rows.append(
                {
                    "source": "gpu_h100",
                    "record": rec,
                    "runtime": "transformers-gpu",
                    "component": comp,
                    "predicted": float(pred),
                    "measured": float(meas),
                    "unit": "bytes",
                    "error": (pred - meas) / meas,
                }
            )
    return rows


#: the smallest card each generate() run survives on (benchmarks/gpu/verdict_boundary.py): the
#: nine runs the first band was derived from (H200), four sets of twelve held-out runs and one of
#: seven (H100, scored once at 1825cbd, 9b4b4a0, d9b7076, 17f0642 and c84e3a0 before each was
#: folded in)
GPU_BOUNDARY = (
    ROOT / "benchmarks" / "gpu" / "results" / "verdict_boundary_h200.json",
    ROOT / "benchmarks" / "gpu" / "results" / "verdict_boundary_holdout_h100.json",
    ROOT / "benchmarks" / "gpu" / "results" / "verdict_boundary_holdout2_h100.json",
    ROOT / "benchmarks" / "gpu" / "results" / "verdict_boundary_holdout3_h100.json",
    ROOT / "benchmarks" / "gpu" / "results" / "verdict_boundary_holdout4_h100.json",
    ROOT / "benchmarks" / "gpu" / "results" / "verdict_boundary_holdout5_h100.json",
)


def gpu_boundary_rows(paths: tuple[Path, ...] = GPU_BOUNDARY) -> list[dict[str, Any]]:
    """Per measured run: what it needed beyond oomkit's device total on the smallest card it
    survived on (``extra_bytes``), the bytes oomkit says it allocates while it runs (activations
    and KV cache: ``during_bytes``) and the prefill's largest single request.

    This is what the device needs, not what PyTorch counts as allocated: PyTorch's caching
    allocator keeps segments it split for earlier requests (``max_memory_reserved`` exceeded
    ``max_memory_allocated`` by 0.09-2.05 GiB), and a request that no cached block fits needs a
    new segment even when the free bytes add up (the allocator frees only whole cached segments
    before it raises; ``release_cached_blocks``, c10/cuda/CUDACachingAllocator.cpp). The
    boundaries were measured in one warm process (CUDA modules and cuBLAS workspace already
    made), which a fresh process beat by 50-130 MB on the one case checked: a conservative side.
    """
    import sys

    sys.path.insert(0, str(HERE / "gpu"))
    from verdict_boundary import oomkit_side, settings_for, spec_for

    import oomkit
    from oomkit.estimate.hf_kv import regrow_stranded_bytes
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    rows: list[dict[str, Any]] = []
    for path in paths:
        if not path.exists():
            continue
        for r in json.loads(path.read_text())["results"]:
            if "smallest_survived_bytes" not in r:
                continue
            gpu = r.get("gpu_catalog", "h200")
            p = oomkit_side(r, gpu_name=gpu)
            est = oomkit.estimate_model(
                spec_for(r["model"], r["overrides"]),
                settings_for(r["batch"], r["prompt"], r["new"], r["attn_implementation"]),
                hardware_for((find_gpu(gpu),)),
            )
            regrow = min(
                int(est.runtime_details.get("decode_regrow_bytes", 0) or 0), p["kv_cache_bytes"]
            )
            rows.append(
                {
                    "record": f"{gpu}-{r['model']}-b{r['batch']}-p{r['prompt']}-n{r['new']}-"
                    f"{r['attn_implementation']}",
                    "extra_bytes": r["smallest_survived_bytes"] - p["device_total_bytes"],
                    "during_bytes": p["activations_bytes"] + p["kv_cache_bytes"],
                    # a second prefill (Phi-3's RoPE switch) counts its request twice
                    "request_bytes": int(est.runtime_details["largest_request_bytes"])
                    * int(est.runtime_details.get("prefills", 1)),
                    # the decode's K/V regrowth bound (oomkit.estimate.hf_kv.decode_regrow_bytes,
                    # capped at the device's KV cache as the verdict caps it)
                    "regrow_bytes": regrow,
                    # what the allocator's rules let the freed K/V strand beyond the prefill's
                    # own stranding (hf_kv.regrow_stranded_bytes)
                    "stranded_bytes": regrow_stranded_bytes(
                        regrow,
                        int(est.runtime_details.get("decode_regrow_block_bytes", 0) or 0),
                        int(est.runtime_details.get("decode_regrow_grown_bytes", 0) or 0),
                        int(est.runtime_details["largest_request_bytes"]),
                    ),
                }
            )
    return rows


def derive_allocator(rows: list[dict[str, Any]]) -> dict[str, object] | None:
    """The two bounds of the transformers allocator term, each the largest seen (so no measured
    run is "fits" on a card it died on): ``share`` of the bytes allocated during the run and
    ``request_ratio`` x the largest request; the verdict charges the smaller of the share and
    the decode's bound, itself the smaller of two bounds of the allocator's rules: the larger
    of the request bound and the decode's whole K/V regrowth, and the request bound plus what
    the freed K/V can strand beyond the prefill's own stranding (``stranded_bytes``). So the
    ratio is the largest needed by a run the regrowth does not cover, and by any run beyond
    its ``stranded_bytes``."""
    if not rows:
        return None
    by_share = max(rows, key=lambda r: r["extra_bytes"] / r["during_bytes"])
    uncovered = [r for r in rows if r["extra_bytes"] > r.get("regrow_bytes", 0)] or rows
    beyond = [{**r, "extra_bytes": r["extra_bytes"] - r.get("stranded_bytes", 0)} for r in rows]
    by_ratio = max([*uncovered, *beyond], key=lambda r: r["extra_bytes"] / r["request_bytes"])
    return {
        "share": math.ceil(by_share["extra_bytes"] / by_share["during_bytes"] * 1e4) / 1e4,
        "share_from": by_share["record"],
        "request_ratio": math.ceil(by_ratio["extra_bytes"] / by_ratio["request_bytes"] * 100) / 100,
        "request_ratio_from": by_ratio["record"],
        "n": len(rows),
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
    rows = json.loads(Path(args.accuracy).read_text())["rows"] + gpu_transformers_rows()
    doc = {
        "_source": "python benchmarks/verdict_band.py (from benchmarks/accuracy_results.json, "
        "itself from python benchmarks/accuracy.py --json benchmarks/accuracy_results.json, "
        "the H100 runs of benchmarks/gpu/results/transformers_h100.json and the death "
        "boundaries of benchmarks/gpu/results/verdict_boundary_h200.json, "
        "verdict_boundary_holdout_h100.json, verdict_boundary_holdout2_h100.json, "
        "verdict_boundary_holdout3_h100.json, verdict_boundary_holdout4_h100.json and "
        "verdict_boundary_holdout5_h100.json)",
        "_rule": "fraction = largest under-prediction (measured - predicted) / predicted of a "
        "GPU-resident quantity, per runtime family and category",
        "runtimes": derive(rows),
    }
    allocator = derive_allocator(gpu_boundary_rows())
    if allocator is not None:
        doc["runtimes"]["transformers"]["allocator"] = allocator  # type: ignore[index]
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

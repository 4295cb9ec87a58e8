"""Derive the training verdict's band and allocator fraction from real training steps.

    python benchmarks/training_band.py [--h100 PATH] [--boundary PATH] [--out PATH]

(defaults: benchmarks/gpu/results/training_h100.json, benchmarks/gpu/results/
training_boundary_h200.json, src/oomkit/data/training_band.json)

Input rows (:func:`h100_rows`, :func:`boundary_rows`), one per real run, each saying what the run
needed from PyTorch's caching allocator beyond what it allocated, and how far today's estimate is
from the measured weights/gradients/optimizer states and activations:

* ``training_h100.json`` (``benchmarks/gpu/validate_training.py``): a steady-state step's
  ``max_memory_reserved`` against its ``max_memory_allocated``. On a full card the reserved peak
  is what a run needs: the H200 boundaries of nine ``generate()`` runs (``verdict_boundary_h200
  .json``) died within 32 MiB of ``max_memory_reserved`` + the CUDA context, because under a full
  card PyTorch frees only whole cached segments before it raises (``release_cached_blocks``,
  c10/cuda/CUDACachingAllocator.cpp), so a segment split for an earlier tensor cannot serve a
  larger request.
* ``training_boundary_h200.json`` and ``training_boundary_qlora_h200.json``
  (``benchmarks/gpu/training_boundary.py``, when they exist): the
  smallest emulated card each step survived on, less oomkit's CUDA context for the card: what the
  allocator really needed. It stands in for the reserved row of the same case (a full card's
  reserved peak bounds the need from above) and is one more row of its family.

:func:`derive` (a pure function over rows) gives, per allocator family (``encoder``: no
vocabulary-sized logits; ``dense`` decoders; ``moe`` decoders, whose expert GEMMs allocate
buffers sized by the tokens routed to each expert, so their sizes change every layer and step):

* ``fraction``: the smallest measured ``(need - allocated) / allocated``: the estimate charges it
  (``oomkit.estimate.training``), so a run needing the least seen is never "does not fit" on a
  card it survives on;
* ``spread``: the largest measured fraction less that one: the verdict's allocator band term, so
  a run needing the most seen is never "fits" on a card it dies on. A family with one row has no
  measured spread and borrows the ``dense`` family's (the same allocator, one code path).
* ``request_ratio``: a second bound on the same need, in units of the step's largest single
  request (the estimate's ``largest_request_bytes``: fp32 loss buffers, the largest gradient,
  the widest activation): the largest ``(need - peak x (1 + fraction)) / largest request``.
  Memory stranded beside split segments is useless to a request larger than the pieces, so
  the waste scales with what the step asks for at once more than with its total (the H200
  rows: 1.7-31% of the peak, 0.2-1.8x the largest request). Both bounds hold on every row, so
  the band takes the smaller of the two for a run.

Per estimate category (weights, gradients, optimizer, activations) the band fraction is the
largest under-prediction ``max(0, (measured - predicted) / predicted)`` over all rows, as
``benchmarks/verdict_band.py`` derives inference's: the states against the tensors' own storage
(``parameter_bytes``, ``gradient_bytes``, ``optimizer_state_bytes``), the activations as the
allocated peak less today's non-activation part of the peak phase.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
H100 = HERE / "gpu" / "results" / "training_h100.json"
BOUNDARY = HERE / "gpu" / "results" / "training_boundary_h200.json"
#: the same steps' boundaries under PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
EXPANDABLE = HERE / "gpu" / "results" / "training_boundary_h200_expandable.json"
#: QLoRA steps (real bitsandbytes Linear4bit + PEFT adapters, session 9) on the same H200
QLORA = HERE / "gpu" / "results" / "training_boundary_qlora_h200.json"
#: six steps scored once out of sample against the band of the files above, then folded in
HOLDOUT = HERE / "gpu" / "results" / "training_boundary_holdout_h200.json"
#: those twelve steps again with expandable segments, scored once against the first ten's band
LATE_EXPANDABLE = HERE / "gpu" / "results" / "training_boundary_late_h200_expandable.json"
#: six steps on an H100 (session 17), scored once at 17f0642, then folded in
HOLDOUT2 = HERE / "gpu" / "results" / "training_boundary_holdout2_h100.json"
#: three more H100 steps (session 17), scored once at c84e3a0, then folded in (Falcon-7B died
#: on the whole card: no boundary, no row)
HOLDOUT3 = HERE / "gpu" / "results" / "training_boundary_holdout3_h100.json"
OUT = ROOT / "src" / "oomkit" / "data" / "training_band.json"
#: ``expandable``: any model under ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``, where
#: the allocator maps pages into one growing segment per stream instead of cutting blocks out of
#: fixed segments, so what a step needs beyond its allocated peak no longer depends on how the
#: model's tensors split segments (c10/cuda/CUDACachingAllocator.cpp ``ExpandableSegment``)
FAMILIES = ("encoder", "dense", "moe", "expandable")
CATEGORIES = ("weights", "gradients", "optimizer", "activations")
#: the family a single-row family borrows its spread from
SPREAD_FALLBACK = "dense"


def _spec_and_settings(r: dict[str, Any]) -> tuple[Any, Any]:
    sys.path.insert(0, str(ROOT / "src"))
    from oomkit.inprocess.probe_model import load_config_dict
    from oomkit.loaders.hf_config import parse_config
    from oomkit.loaders.hf_config_dropout import DROPOUT_KEYS
    from oomkit.spec.settings import TrainingSettings

    cfg = {**load_config_dict(r["model"]), **r.get("overrides", {})}
    if not r.get("catalog_dropout_keys"):
        # recorded before the catalog copied the dropout keys (session 18): the run's config
        # lacked them and transformers' defaults applied (gpu/training_boundary.py run_config)
        cfg = {k: v for k, v in cfg.items() if k not in DROPOUT_KEYS or k in r.get("overrides", {})}
    spec = parse_config(cfg, name=r["model"])
    ckpt = r.get("grad_checkpointing")
    mode = ckpt if isinstance(ckpt, str) else ("full" if ckpt else "none")
    settings = TrainingSettings(
        method=r["method"], micro_batch=r["batch"], seq=r["seq"], grad_checkpointing=mode,
        kbit_prep=bool(r.get("kbit_prep")),
        lora_targets=tuple(r["lora_targets"]) if r.get("lora_targets") else None,
    )  # fmt: skip
    return spec, settings


def family_of(spec: Any) -> str:
    """The allocator family of a model (see the module docstring)."""
    if spec.is_encoder:
        return "encoder"
    return "moe" if spec.moe is not None else "dense"


def predicted(r: dict[str, Any]) -> dict[str, Any]:
    """Today's estimate for one run's settings: family, states, peak and its activations."""
    from oomkit.estimate.training import estimate_training
    from oomkit.estimate.training_states import model_states
    from oomkit.spec.hardware import Hardware

    spec, settings = _spec_and_settings(r)
    est = estimate_training(spec, settings, Hardware())
    st = model_states(spec, settings)
    dev = est.devices[0]
    return {
        "family": family_of(spec),
        "weights": st.frozen_weights_bytes + st.trainable_weights_bytes,
        "gradients": st.gradients_bytes,
        "optimizer": st.optimizer_bytes,
        "peak_allocated": int(est.runtime_details["peak_allocated_bytes"]),  # type: ignore[call-overload]
        "largest_request": int(est.runtime_details["largest_request_bytes"]),  # type: ignore[call-overload]
        "activations": dev.activations_bytes,
    }


def _case(r: dict[str, Any]) -> str:
    layers = r.get("overrides", {}).get("num_hidden_layers")
    lay = f"-{layers}l" if layers else ""
    ck = "-ckpt" if r.get("grad_checkpointing") else ""
    kbit = "-kbit" if r.get("kbit_prep") else ""
    targets = "-all" if r.get("lora_targets") else ""
    return f"{r['model']}{lay}-{r['method']}{kbit}{targets}-b{r['batch']}-s{r['seq']}{ck}"


def _category_pairs(m: dict[str, Any], p: dict[str, Any], allocated: int) -> dict[str, list[int]]:
    pairs = {
        "weights": [p["weights"], m.get("parameter_bytes")],
        "gradients": [p["gradients"], m.get("gradient_bytes")],
        "optimizer": [p["optimizer"], m.get("optimizer_state_bytes")],
        "activations": [p["activations"], allocated - (p["peak_allocated"] - p["activations"])],
    }
    return {k: v for k, v in pairs.items() if isinstance(v[1], int) and v[0] > 0}


def h100_rows(path: Path = H100) -> list[dict[str, Any]]:
    """One row per H100 step: need = ``max_memory_reserved`` (see the module docstring)."""
    if not path.exists():
        return []
    rows = []
    for r in json.loads(path.read_text())["results"]:
        m = r.get("measured") or {}
        alloc, reserved = m.get("max_memory_allocated_bytes"), m.get("max_memory_reserved_bytes")
        if not isinstance(alloc, int) or not isinstance(reserved, int):
            continue
        p = predicted(r)
        rows.append(
            {
                "record": f"h100-{_case(r)}",
                "case": _case(r),
                "kind": "reserved",
                "source": "training_h100.json",
                "family": p["family"],
                "allocated_bytes": alloc,
                "predicted_peak_bytes": p["peak_allocated"],
                "largest_request_bytes": p["largest_request"],
                "need_bytes": reserved,
                "categories": _category_pairs(m, p, alloc),
            }
        )
    return rows


def boundary_rows(
    path: Path = BOUNDARY, gpu: str = "h200", family: str | None = None
) -> list[dict[str, Any]]:
    """One row per death boundary: need = smallest survived card less oomkit's CUDA context.

    The rows carry the case's training settings (``model``, ``overrides``, ``method``, ``batch``,
    ``seq``, ``grad_checkpointing``), ``full_card_max_allocated_bytes`` and
    ``smallest_survived_bytes`` (``benchmarks/gpu/training_boundary.py``). ``family`` overrides
    the model's allocator family (``expandable``: the runs made with expandable segments).
    A row's ``gpu_catalog`` (the H100 files write it) names its GPU; ``gpu`` is the default
    (the H200 files of sessions 7-9 lack it).
    """
    if not path.exists():
        return []
    sys.path.insert(0, str(ROOT / "src"))
    from oomkit.estimate.overhead import cuda_context_bytes
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    rows = []
    for r in json.loads(path.read_text())["results"]:
        alloc, survived = r.get("full_card_max_allocated_bytes"), r.get("smallest_survived_bytes")
        if not isinstance(alloc, int) or not isinstance(survived, int):
            continue
        name = str(r.get("gpu_catalog") or gpu)
        ctx = cuda_context_bytes("training", hardware_for((find_gpu(name),)).devices[0])[0]
        p = predicted(r)
        tag = f"-{family}" if family else ""
        rows.append(
            {
                "record": f"{name}{tag}-{_case(r)}",
                "case": f"{_case(r)}{tag}",
                "kind": "boundary",
                "source": path.name,
                "family": family or p["family"],
                "allocated_bytes": alloc,
                "predicted_peak_bytes": p["peak_allocated"],
                "largest_request_bytes": p["largest_request"],
                "need_bytes": survived - ctx,
                "categories": _category_pairs(r.get("measured") or {}, p, alloc),
            }
        )
    return rows


def _gap(row: dict[str, Any]) -> float:
    """What the run needed beyond the estimate's allocated peak, as a fraction of that peak:
    the fraction is charged on the estimate's peak, so it is measured against it (a peak the
    formula over-predicts leaves less to charge, one it under-predicts more). Rows without a
    prediction fall back to the measured allocated peak."""
    need = int(row["need_bytes"])
    base = int(row.get("predicted_peak_bytes") or row["allocated_bytes"])
    return max(0.0, (need - base) / base)


def _request_units(row: dict[str, Any], fraction: float) -> float:
    """What the run needed beyond its estimated peak plus the charged ``fraction``, in units of
    the step's largest single request (the second bound of the band: the allocator's stranded
    pieces are measured in the size of what it failed to place)."""
    base = int(row.get("predicted_peak_bytes") or row["allocated_bytes"])
    beyond = int(row["need_bytes"]) - base * (1 + fraction)
    return max(0.0, beyond / int(row["largest_request_bytes"]))


def _under(pred: int, meas: int) -> float:
    return max(0.0, (meas - pred) / pred)


def derive(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The band document's ``allocator`` and ``categories`` from rows (pure)."""
    allocator: dict[str, Any] = {}
    # a case's death boundary is what it needed; its full-card reserved peak only bounds that
    bounded = {r.get("case") for r in rows if r.get("kind") == "boundary"}
    gap_rows = [r for r in rows if r.get("kind") == "boundary" or r.get("case") not in bounded]
    for fam in FAMILIES:
        mine = sorted((_gap(r), r["record"]) for r in gap_rows if r["family"] == fam)
        if not mine:
            continue
        lo, hi = mine[0], mine[-1]
        # rounded outwards to 4 decimals: the charged fraction down (never "does not fit" where
        # the least-needing run lived), the top up (never "fits" where the most-needing died)
        low, top = math.floor(lo[0] * 1e4) / 1e4, math.ceil(hi[0] * 1e4) / 1e4
        allocator[fam] = {
            "fraction": low,
            "fraction_row": lo[1],
            "max": top,
            "max_row": hi[1],
            # the difference of the rounded ends: fraction + spread is exactly the rounded max
            "spread": round(top - low, 4) if len(mine) > 1 else None,
            "median": round(statistics.median(g for g, _ in mine), 4),
            "n": len(mine),
            "rows": {rec: round(g, 4) for g, rec in mine},
        }
        # the second bound, in units of the step's largest request: what the run needed beyond
        # the charged fraction, over the largest single allocation the estimate sees
        req = [
            (_request_units(r, low), r["record"])
            for r in gap_rows
            if r["family"] == fam and r.get("largest_request_bytes")
        ]
        if req:
            top_req = max(req)
            allocator[fam]["request_ratio"] = math.ceil(top_req[0] * 1e4) / 1e4
            allocator[fam]["request_row"] = top_req[1]
    fallback = allocator.get(SPREAD_FALLBACK, {}).get("spread")
    fallback_req = allocator.get(SPREAD_FALLBACK, {}).get("request_ratio")
    for v in allocator.values():
        if v["spread"] is None:  # (never the expandable family: its rows are all boundaries)
            v["spread"] = fallback if fallback is not None else 0.0
            v["spread_from"] = SPREAD_FALLBACK
            if fallback_req is not None:
                v["request_ratio"] = fallback_req
                v["request_row"] = allocator[SPREAD_FALLBACK]["request_row"]
    categories: dict[str, Any] = {}
    default_rows = [r for r in rows if r["family"] != "expandable"]  # the same steps again
    for cat in CATEGORIES:
        vals = [
            (_under(*r["categories"][cat]), r["record"])
            for r in default_rows
            if cat in r["categories"]
        ]
        top = max(vals, default=(0.0, None))
        categories[cat] = {
            "fraction": round(top[0], 4),
            "row": top[1],
            "median": round(statistics.median(v for v, _ in vals), 4) if vals else None,
            "n": len(vals),
        }
    return {"allocator": allocator, "categories": categories}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--h100", default=str(H100))
    ap.add_argument("--boundary", default=str(BOUNDARY))
    ap.add_argument("--expandable", default=str(EXPANDABLE))
    ap.add_argument("--qlora", default=str(QLORA))
    ap.add_argument("--holdout", default=str(HOLDOUT))
    ap.add_argument("--late-expandable", default=str(LATE_EXPANDABLE))
    ap.add_argument("--holdout2", default=str(HOLDOUT2))
    ap.add_argument("--holdout3", default=str(HOLDOUT3))
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    rows = (
        h100_rows(Path(args.h100))
        + boundary_rows(Path(args.boundary))
        + boundary_rows(Path(args.qlora))
        + boundary_rows(Path(args.holdout))
        + boundary_rows(Path(args.holdout2))
        + boundary_rows(Path(args.holdout3))
        + boundary_rows(Path(args.expandable), family="expandable")
        + boundary_rows(Path(args.late_expandable), family="expandable")
    )
    sources = sorted({r["source"] for r in rows})
    doc = {
        "_source": "python benchmarks/training_band.py (from benchmarks/gpu/results/"
        + ", ".join(sources)
        + ")",
        "_rule": "allocator: fraction = smallest (need - estimated allocated peak) / estimated "
        "peak per family, spread = largest less smallest; categories: largest under-prediction "
        "(measured - predicted) / predicted",
        **derive(rows),
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    for fam, v in doc["allocator"].items():
        print(
            f"allocator {fam:8} fraction={v['fraction']:.2%} ({v['fraction_row']})  "
            f"max={v['max']:.2%} ({v['max_row']})  spread={v['spread']:.2%}  n={v['n']}"
        )
    for cat, v in doc["categories"].items():
        print(f"category  {cat:12} +{v['fraction']:.2%} ({v['row']})  n={v['n']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

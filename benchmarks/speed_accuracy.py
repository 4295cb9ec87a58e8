"""Speed estimate vs measured throughput: decode and prefill |error| on dev and heldout records.

    python benchmarks/speed_accuracy.py          # report, writes speed_accuracy_results.txt
    python benchmarks/speed_accuracy.py --fit    # re-fit the factors on the dev records first

Records: tests/fixtures/throughput/records.jsonl (public llama-bench / llama_print_timings
numbers with their source URL; split by source URL: sha1(url) % 3 == 0 is ``heldout``). The
efficiency factors in src/oomkit/data/speed_efficiency.json are fitted on ``dev`` records only,
one set per backend class (cuda, metal, cpu), by :func:`oomkit.planner.speed.fit_decode` /
:func:`oomkit.planner.speed.fit_prefill`. Each record is estimated with oomkit's own llama.cpp
memory estimate for its model, quant, GPUs and context (``tg_ctx``; decoding at ``tg_fill``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "tests" / "fixtures" / "throughput" / "records.jsonl"
FACTORS = ROOT / "src" / "oomkit" / "data" / "speed_efficiency.json"
RESULTS = ROOT / "benchmarks" / "speed_accuracy_results.txt"


def load_records(path: Path = RECORDS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@dataclass(frozen=True)
class Case:
    record: dict[str, Any]
    spec: Any
    est: Any
    hardware: Any
    host_bandwidth: int | None
    settings: Any


def build_case(rec: dict[str, Any]) -> Case:
    from oomkit.catalog.models import find_model
    from oomkit.estimate.llamacpp import estimate_llamacpp
    from oomkit.hardware.catalog import find_gpu
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.settings import InferenceSettings

    spec = find_model(rec["model"]).spec()
    gpus = tuple(find_gpu(k).to_device_target() for k in rec["gpus"])
    hardware = Hardware(devices=gpus)
    settings = InferenceSettings(
        quant=rec["quant"],
        ctx=rec["tg_ctx"],
        n_gpu_layers=rec["n_gpu_layers"] if gpus else 0,
        n_cpu_moe=rec.get("n_cpu_moe"),
        flash_attn=rec["flash_attn"],
        split_mode=rec["split_mode"],
    )
    if rec["runtime"] == "ollama":
        from oomkit.estimate.ollama import estimate_ollama

        est = estimate_ollama(spec, dataclasses.replace(settings, runtime="ollama"), hardware)
    else:
        est = estimate_llamacpp(spec, settings, hardware)
    return Case(rec, spec, est, hardware, rec.get("host_bandwidth_bytes_per_s"), settings)


def predict(case: Case) -> Any:
    from oomkit.planner.speed import estimate_speed

    prefill_fill = (case.record.get("pp_tokens") or 0) // 2
    dec = estimate_speed(
        case.spec,
        case.est,
        case.hardware,
        host_bandwidth_bytes_per_s=case.host_bandwidth,
        ctx_fill=case.record["tg_fill"],
        settings=case.settings,
    )
    pre = estimate_speed(
        case.spec,
        case.est,
        case.hardware,
        host_bandwidth_bytes_per_s=case.host_bandwidth,
        ctx_fill=prefill_fill,
        settings=case.settings,
    )
    return dec, pre


def record_class(rec: dict[str, Any]) -> str:
    from oomkit.planner.speed import backend_class

    return backend_class(rec["backend"])


def fit(cases: list[Case]) -> dict[str, Any]:
    """Fit each backend class's factors on the dev cases; return the JSON document."""
    from oomkit.planner.speed import DecodePoint, fit_decode, fit_prefill, prefill_flops_per_token

    classes: dict[str, Any] = {}
    for cls in ("cuda", "metal", "cpu"):
        mine = [c for c in cases if c.record["split"] == "dev" and record_class(c.record) == cls]
        points: list[DecodePoint] = []
        ratios: list[float] = []
        for c in mine:
            dec, _ = predict(c)  # byte counts do not depend on the factors
            if c.record["gpus"] and dec.host_bytes_per_token:
                continue  # GPU + host RAM: two classes in one time, not a fit point
            parts = [p for p in dec.parts if p.weight_bytes + p.kv_bytes or p.n_layers]
            ideal = sum(
                (p.weight_bytes + p.kv_bytes) / (p.bandwidth_bytes_per_s or 1) for p in parts
            )
            layers = sum(p.n_layers for p in parts)
            points.append(
                DecodePoint(
                    ideal_s=ideal, n_layers=layers, measured_s=1 / c.record["tg_tokens_per_s"]
                )
            )
            pp = c.record.get("pp_tokens_per_s")
            if pp and cls != "cpu":
                from oomkit.hardware.catalog import find_gpu

                tflops = [find_gpu(k).fp16_tflops for k in c.record["gpus"]]
                if all(t is not None for t in tflops):
                    flops = prefill_flops_per_token(
                        c.spec, mean_fill=(c.record["pp_tokens"] or 0) // 2
                    )
                    # layer split: the devices run one after another, each its share of layers
                    ideal_pp = flops / (min(t for t in tflops if t is not None) * 1e12)
                    ratios.append(ideal_pp * pp)
        eff, lat = fit_decode(points) if points else (1.0, 0.0)
        classes[cls] = {
            "decode_efficiency": eff,
            "layer_latency_s": lat,
            "prefill_efficiency": fit_prefill(ratios) if ratios else None,
            "n_decode_records": len(points),
            "n_prefill_records": len(ratios),
        }
    return {
        "description": (
            "Decode efficiency (achieved/peak memory bandwidth), per-layer latency and prefill "
            "efficiency (achieved/peak dense FP16 FLOPS) per backend class, fitted on the dev "
            "records of tests/fixtures/throughput/records.jsonl (split by sha1(source url) % 3)."
        ),
        "fitted_by": "python benchmarks/speed_accuracy.py --fit",
        "classes": classes,
    }


def _err(pred: float | None, meas: float | None) -> float | None:
    if pred is None or not meas:
        return None
    return abs(pred - meas) / meas


def evaluate(cases: list[Case]) -> tuple[list[dict[str, Any]], dict[str, dict[str, float]]]:
    rows: list[dict[str, Any]] = []
    for c in cases:
        dec, pre = predict(c)
        rows.append(
            {
                "id": c.record["id"],
                "split": c.record["split"],
                "class": record_class(c.record),
                "tg": c.record["tg_tokens_per_s"],
                "tg_pred": dec.decode_tokens_per_s,
                "tg_err": _err(dec.decode_tokens_per_s, c.record["tg_tokens_per_s"]),
                "pp": c.record.get("pp_tokens_per_s"),
                "pp_pred": pre.prefill_tokens_per_s,
                "pp_err": _err(pre.prefill_tokens_per_s, c.record.get("pp_tokens_per_s")),
            }
        )
    summary: dict[str, dict[str, float]] = {}
    for split in ("dev", "heldout"):
        for kind in ("tg", "pp"):
            errs = [
                r[f"{kind}_err"]
                for r in rows
                if r["split"] == split and r[f"{kind}_err"] is not None
            ]
            if errs:
                summary[f"{split}/{kind}"] = {
                    "n": len(errs),
                    "median": statistics.median(errs),
                    "worst": max(errs),
                }
        for cls in ("cuda", "metal", "cpu"):
            errs = [
                r["tg_err"]
                for r in rows
                if r["split"] == split and r["class"] == cls and r["tg_err"] is not None
            ]
            if errs:
                summary[f"{split}/tg/{cls}"] = {
                    "n": len(errs),
                    "median": statistics.median(errs),
                    "worst": max(errs),
                }
    return rows, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fit", action="store_true", help="re-fit the factors on the dev records")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    cases = [build_case(r) for r in load_records()]
    if args.fit:
        doc = fit(cases)
        FACTORS.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
        from oomkit.planner import speed

        speed._factors_table.cache_clear()
    rows, summary = evaluate(cases)
    factors = json.loads(FACTORS.read_text("utf-8"))["classes"]
    lines = ["# python benchmarks/speed_accuracy.py (2-core CPU box, no GPU)", ""]
    lines.append("factors (fitted on dev records):")
    for cls, f in factors.items():
        lines.append(
            f"  {cls:6s} decode_efficiency={f['decode_efficiency']:.3f} "
            f"layer_latency={f['layer_latency_s'] * 1e6:.0f}us "
            f"prefill_efficiency={f['prefill_efficiency']} "
            f"(n_decode={f['n_decode_records']}, n_prefill={f['n_prefill_records']})"
        )
    lines.append("")
    lines.append(
        f"records: {len(rows)} from {len({c.record['source'] for c in cases})} source URLs"
    )
    for key, s in summary.items():
        parts = key.split("/")
        what = ("decode" if parts[1] == "tg" else "prefill") + (
            f" {parts[2]}" if len(parts) > 2 else ""
        )
        lines.append(
            f"  {parts[0]:8s} {what:14s} n={s['n']:3d} "
            f"median |err| {s['median'] * 100:5.1f}%  "
            f"worst {s['worst'] * 100:5.1f}%"
        )
    lines.append("")
    head = ("id", "split", "tg", "pred", "err", "pp", "pred", "err")
    lines.append("{:58s} {:7s} {:>8s} {:>8s} {:>6s} {:>9s} {:>9s} {:>6s}".format(*head))
    for r in rows:
        tg_p = f"{r['tg_pred']:.1f}" if r["tg_pred"] else "-"
        tg_e = f"{r['tg_err'] * 100:.0f}%" if r["tg_err"] is not None else "-"
        pp_m = f"{r['pp']:.0f}" if r["pp"] else "-"
        pp_p = f"{r['pp_pred']:.0f}" if r["pp_pred"] else "-"
        pp_e = f"{r['pp_err'] * 100:.0f}%" if r["pp_err"] is not None else "-"
        cells = (r["id"], r["split"], f"{r['tg']:.1f}", tg_p, tg_e, pp_m, pp_p, pp_e)
        lines.append("{:58s} {:7s} {:>8s} {:>8s} {:>6s} {:>9s} {:>9s} {:>6s}".format(*cells))
    text = "\n".join(lines) + "\n"
    RESULTS.write_text(text, "utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

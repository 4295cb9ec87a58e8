"""Score oomkit's vLLM estimator against the vLLM records of measured_dev.jsonl.

Used by ``benchmarks/accuracy.py`` (``score_vllm``); runnable alone:

    python benchmarks/accuracy_vllm.py [--validation ../shared/validation]

Each record's setup is expressed through oomkit's settings only (GPU total, util, TP, max
model len, and the engine generation's profile batch: V0 without chunked prefill profiles
``max(max_model_len, 2048)`` tokens, V1 uses ``max_num_batched_tokens``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from oomkit.catalog.models import find_model
from oomkit.errors import OomkitError
from oomkit.estimate.vllm import estimate_vllm
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

#: record id -> (settings overrides, engine note). Only facts the record states or implies.
_SETUP: dict[str, dict[str, Any]] = {
    "vllm-10517-llama31-8b-3090-29k": {"total_GiB": 23.58, "util": 0.9, "ctx": 29000, "tp": 1,
                                        "v0": True},
    "vllm-21348-qwen3-235b-a22b-fp8-tp4-h100": {"gpu_total_bytes": 81559 * MiB, "util": 0.9,
                                                "tp": 4, "quant": "fp8", "v0": False},
    "vllm-13882-qwen25-7b-rtx4060-8gb": {"total_GiB": 8.0, "util": 0.7, "ctx": 4096, "tp": 1,
                                         "quant": "awq", "v0": True},
    "vllm-10511-llama3-8b-tp2-h100": {"total_GiB": 79.22, "util": 0.9, "ctx": 8192, "tp": 2,
                                      "v0": True},
    "vllm-2031-llama2-70b-tp4-a100-80g": {"gpu_total_bytes": 81920 * MiB, "util": 0.9, "tp": 4,
                                          "ctx": 4096, "v0": True, "legacy": True},
    "vllm-2031-llama2-7b-tp1-a100-80g": {"gpu_total_bytes": 81920 * MiB, "util": 0.9, "tp": 1,
                                         "ctx": 4096, "v0": True, "legacy": True},
}


def _rel(pred: float, meas: float) -> float:
    return (pred - meas) / meas


def score_vllm(record: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """Rows of {id, runtime, component, predicted, measured, error}; or a skip reason."""
    setup = _SETUP.get(record["id"])
    if setup is None:
        return [], "setup not expressible (no GPU total / settings in the record)"
    try:
        entry = find_model(record["hf_config_ref"].replace("-FP8", ""))
        spec = entry.spec()
    except OomkitError as e:
        return [], f"model not in catalog: {e}"
    if setup.get("quant") == "awq":
        spec = dataclasses.replace(spec, torch_dtype="float16")
    total = setup.get("gpu_total_bytes") or int(setup["total_GiB"] * GiB)
    ctx = setup.get("ctx") or spec.max_position_embeddings
    settings = InferenceSettings(
        runtime="vllm", quant=setup.get("quant"), ctx=ctx, tp=setup["tp"],
        gpu_memory_utilization=setup["util"],
        max_num_batched_tokens=max(ctx or 2048, 2048) if setup["v0"] else None,
        max_num_seqs=256 if setup["v0"] else None,
    )
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=total),) * setup["tp"])
    try:
        est = estimate_vllm(spec, settings, hw)
    except OomkitError as e:
        return [], f"estimator refused the setup: {e}"
    d = est.runtime_details
    m = record["measured"]
    rows: list[dict[str, Any]] = []

    def add(component: str, pred: float, meas: float) -> None:
        rows.append({"id": record["id"], "runtime": "vllm", "component": component,
                     "predicted": pred, "measured": meas, "error": _rel(pred, meas)})

    w_gib = int(d["weights_bytes_per_rank"]) / GiB  # type: ignore[call-overload]
    for key in ("model_weights_GB", "model_weights_GiB_per_gpu", "model_weights_GiB"):
        if key in m:  # vLLM prints GiB values labelled "GB" (float(bytes) / GiB_bytes)
            add("weights_per_rank", w_gib, float(m[key]))
            break
    blocks = d["num_gpu_blocks"]
    if "num_gpu_blocks" in m and blocks is not None:
        if m["num_gpu_blocks"] == 0:
            rows.append({"id": record["id"], "runtime": "vllm", "component": "num_gpu_blocks",
                         "predicted": blocks, "measured": 0,
                         "error": 0.0 if blocks == 0 else 1.0})
        else:
            add("num_gpu_blocks", float(blocks), float(m["num_gpu_blocks"]))  # type: ignore[arg-type]
    if "num_gpu_blocks_after_pr" in m and blocks is not None:
        add("num_gpu_blocks", float(blocks), float(m["num_gpu_blocks_after_pr"]))  # type: ignore[arg-type]
    if "gpu_kv_cache_tokens" in m and d["kv_cache_tokens"] is not None:
        add("kv_cache_tokens", float(d["kv_cache_tokens"]), float(m["gpu_kv_cache_tokens"]))  # type: ignore[arg-type]
    if "pytorch_activation_peak_GiB" in m:
        add("activation_peak", int(d["activation_peak_bytes"]) / GiB,  # type: ignore[call-overload]
            float(m["pytorch_activation_peak_GiB"]))
    if "peak_torch_memory_GiB" in m:
        add("activation_peak", int(d["activation_peak_bytes"]) / GiB,  # type: ignore[call-overload]
            float(m["peak_torch_memory_GiB"]) - float(m["model_weights_GB"]))
    return rows, None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--validation", default=str(Path(__file__).parents[1] / "../shared/validation"))
    args = ap.parse_args()
    for line in open(Path(args.validation) / "measured_dev.jsonl"):
        rec = json.loads(line)
        if rec["kind"] != "vllm":
            continue
        rows, skip = score_vllm(rec)
        if skip:
            print(f"{rec['id']}: skipped ({skip})")
        for r in rows:
            print(f"{r['id']:<45} {r['component']:<18} pred {r['predicted']:>10.2f} "
                  f"meas {r['measured']:>10.2f}  {r['error']:+.1%}")


if __name__ == "__main__":
    main()

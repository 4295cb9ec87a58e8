"""Score oomkit's vLLM estimator against the vLLM records of measured_dev.jsonl.

Used by ``benchmarks/accuracy.py`` (``score_vllm``); runnable alone:

    python benchmarks/accuracy_vllm.py [--validation ../shared/validation]

Each record's setup is expressed through oomkit's settings (GPU total as CUDA reports it, util,
TP, max model len, quant) plus the vLLM generation that printed the log, one row of
``oomkit.estimate.vllm_engines.VLLM_ENGINES`` chosen from the log's date and format. Rows:
weights per rank, num_gpu_blocks / kv_cache_tokens / available KV, the torch activation peak and
non-torch memory wherever the record shows them.
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
from oomkit.hardware.catalog import find_gpu
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

#: record id -> setup. Only facts the record states or implies, plus public facts of the named
#: GPU: its total as cudaMemGetInfo reports it (what vLLM multiplies by the utilisation; lower
#: than NVML's total by the driver's reserve) and its catalog key (interconnect, class), and the
#: vLLM generation that printed the log (its date and log format; oomkit.estimate.vllm_engines).
_H100_CUDA_TOTAL = 79.22  # GiB: "total_gpu_memory 79.22GiB" on H100-80GB (vllm#10511)
_A100_CUDA_TOTAL = 79.15  # GiB: "79.15 GiB total capacity" in 2023 PyTorch OOM messages
_SETUP: dict[str, dict[str, Any]] = {
    # vLLM 0.6.4 log format ("Memory profiling results: ... non_torch_memory"): V0, PR #9352
    "vllm-10517-llama31-8b-3090-29k": {
        "total_GiB": 23.58,
        "util": 0.9,
        "ctx": 29000,
        "tp": 1,
        "gpu": "rtx-3090",
        "engine": "v0-2024",
    },
    # July 2025 V1 ("Available KV cache memory"); "4x H100" for a 235B FP8 model: an HGX (SXM)
    # node assumed; LMCache connector buffers not modelled
    "vllm-21348-qwen3-235b-a22b-fp8-tp4-h100": {
        "total_GiB": _H100_CUDA_TOTAL,
        "util": 0.9,
        "tp": 4,
        "quant": "fp8",
        "gpu": "h100-sxm",
        "engine": "v1-2025",
    },
    # Feb 2025, "worker.py:267 ... non_torch_memory takes": V0 with the #12126 profiler
    "vllm-13882-qwen25-7b-rtx4060-8gb": {
        "total_GiB": 8.0,
        "util": 0.7,
        "ctx": 4096,
        "tp": 1,
        "quant": "awq",
        "gpu": "rtx-4060",
        "engine": "v0-2025",
    },
    # the PR that introduced the increase-based profiler (V0, 2024-12)
    "vllm-10511-llama3-8b-tp2-h100": {
        "total_GiB": 79.22,
        "util": 0.9,
        "ctx": 8192,
        "tp": 2,
        "gpu": "h100-sxm",
        "engine": "v0-2025",
    },
    # PR #2031 (2023-12): peak = init free - free after profiling
    "vllm-2031-llama2-70b-tp4-a100-80g": {
        "total_GiB": _A100_CUDA_TOTAL,
        "util": 0.9,
        "tp": 4,
        "ctx": 4096,
        "gpu": "a100-80gb-sxm",
        "engine": "v0-2023-total",
    },
    "vllm-2031-llama2-7b-tp1-a100-80g": {
        "total_GiB": _A100_CUDA_TOTAL,
        "util": 0.9,
        "tp": 1,
        "ctx": 4096,
        "gpu": "a100-80gb-sxm",
        "engine": "v0-2023-total",
    },
}


def _rel(pred: float, meas: float) -> float:
    if meas == 0:
        return 0.0 if pred == 0 else 1.0
    return (pred - meas) / abs(meas)


def _int(value: object) -> int:
    assert isinstance(value, int), value
    return value


def score_vllm(record: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """Rows of {id, runtime, component, unit, predicted, measured, error}; or a skip reason.

    ``unit`` is ``"bytes"`` (weights, activation peak, non-torch, available KV: vLLM's "GB"
    figures are GiB, ``float(bytes) / GiB_bytes``) or ``"count"`` (blocks, tokens). A measured 0
    scores 0 when the prediction is 0 too, else 1.
    """
    setup = _SETUP.get(record["id"])
    if setup is None:
        return [], "setup not expressible (no GPU total / settings in the record)"
    try:
        entry = find_model(record["hf_config_ref"].replace("-FP8", ""))
        spec = entry.spec()
    except OomkitError as e:
        return [], f"model not in catalog: {e}"
    if setup.get("quant") == "awq":
        spec = dataclasses.replace(spec, torch_dtype="float16")  # vLLM runs AWQ in fp16
    total = int(setup["total_GiB"] * GiB)
    ctx = setup.get("ctx") or spec.max_position_embeddings
    settings = InferenceSettings(
        runtime="vllm",
        quant=setup.get("quant"),
        ctx=ctx,
        tp=setup["tp"],
        gpu_memory_utilization=setup["util"],
    )
    gpu = dataclasses.replace(find_gpu(setup["gpu"]).to_device_target(), capacity_bytes=total)
    hw = Hardware(devices=(gpu,) * setup["tp"])
    try:
        est = estimate_vllm(spec, settings, hw, engine=setup["engine"])
    except OomkitError as e:
        return [], f"estimator refused the setup: {e}"
    d = est.runtime_details
    m = record["measured"]
    rows: list[dict[str, Any]] = []

    def add(component: str, unit: str, pred: float, meas: float) -> None:
        rows.append(
            {
                "id": record["id"],
                "runtime": "vllm",
                "component": component,
                "unit": unit,
                "predicted": pred,
                "measured": meas,
                "error": _rel(pred, meas),
            }
        )

    for key in ("model_weights_GB", "model_weights_GiB_per_gpu", "model_weights_GiB"):
        if key in m:
            add("weights_per_rank", "bytes", _int(d["weights_bytes_per_rank"]), m[key] * GiB)
            break
    if d["num_gpu_blocks"] is not None:
        for key in ("num_gpu_blocks", "num_gpu_blocks_after_pr"):
            if key in m:
                add("num_gpu_blocks", "count", _int(d["num_gpu_blocks"]), m[key])
    if "gpu_kv_cache_tokens" in m and d["kv_cache_tokens"] is not None:
        add("kv_cache_tokens", "count", _int(d["kv_cache_tokens"]), m["gpu_kv_cache_tokens"])
    for key in ("available_kv_cache_GiB", "kv_cache_size_GiB", "kv_cache_GiB"):
        if key in m and d["available_kv_cache_bytes"] is not None:
            pool = _int(d["available_kv_cache_bytes"])  # negative when nothing is left
            add("available_kv_cache", "bytes", pool, m[key] * GiB)
    act = _int(d["activation_peak_bytes"])
    if "pytorch_activation_peak_GiB" in m:
        add("activation_peak", "bytes", act, m["pytorch_activation_peak_GiB"] * GiB)
    if "peak_torch_memory_GiB" in m:  # 0.6.4 prints the absolute peak, weights included
        add(
            "activation_peak",
            "bytes",
            act,
            (m["peak_torch_memory_GiB"] - m["model_weights_GB"]) * GiB,
        )
    if "non_torch_memory_GiB" in m:
        add("non_torch", "bytes", _int(d["non_torch_bytes"]), m["non_torch_memory_GiB"] * GiB)
    return rows, None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--validation", default=str(Path(__file__).parents[2] / "shared/validation"))
    args = ap.parse_args()
    lines = (Path(args.validation) / "measured_dev.jsonl").read_text().splitlines()
    for line in lines:
        rec = json.loads(line)
        if rec["kind"] != "vllm":
            continue
        rows, skip = score_vllm(rec)
        if skip:
            print(f"{rec['id']}: skipped ({skip})")
        for r in rows:
            scale = GiB if r["unit"] == "bytes" else 1
            unit = "GiB" if r["unit"] == "bytes" else ""
            print(
                f"{r['id']:<42} {r['component']:<19} pred {r['predicted'] / scale:>10.2f}"
                f" meas {r['measured'] / scale:>10.2f} {unit:<3} {r['error']:+.1%}"
            )


if __name__ == "__main__":
    main()

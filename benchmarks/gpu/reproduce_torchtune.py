"""Re-run torchtune's 2024-11 Llama-3.2-3B memory table on a real GPU, eager and compiled.

torchtune's README at 1814feb17 ("Optimization flags" table, full_finetune_single_device,
batch 2, seq 4096, bf16 parameters, ``torch.optim.AdamW``, A100) publishes ``Peak Memory
Active`` per row; ``tests/fixtures/training_measured.jsonl`` holds the rows and oomkit's
estimator misses one of them (the activation-checkpointing row: +20.2%) because the settings the
source names (``torch.optim.AdamW`` without ``fused``, i.e. torch's foreach step) allocate a
state-sized ``_foreach_sqrt`` temporary that the published figure does not show.

This script runs the same step on the GPU it finds, with the recipe's mechanisms written out:
the model is ``transformers``' Llama built from the catalog config (random weights, bf16
parameters, no fp32 master copy), SDPA attention, the loss either the model's own (logits
upcast to fp32, as torchtune's ``TransformerDecoder`` did with ``.float()``) or torchtune's
``CEWithChunkedOutputLoss`` (8 sequence chunks through the head, each upcast to fp32 inside
``F.cross_entropy``), activation checkpointing per decoder layer (non-reentrant), and
``torch.compile`` per decoder layer plus the compiled per-chunk cross-entropy when the row was
compiled. It records ``active_bytes.all.peak`` / ``allocated_bytes.all.peak`` /
``reserved_bytes.all.peak`` of the second step (the states already exist, as in every logged
step after the first) and of the first, for the foreach and the fused AdamW step, next to
oomkit's estimate for the same settings.

    python benchmarks/gpu/reproduce_torchtune.py --out benchmarks/gpu/results_torchtune.json
    python benchmarks/gpu/reproduce_torchtune.py --score benchmarks/gpu/results_torchtune.json

``--score`` (no GPU needed) re-reads a results file and prints the table with oomkit's estimate
and, with ``--probe``, the FakeTensor probe for each case. Exits 0 with a message when CUDA,
torch or transformers is missing.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MODEL = "llama-3.2-3b"
CHUNKS = 8  # torchtune TransformerDecoder num_output_chunks
BASE: dict[str, Any] = {"method": "full", "master_weights": False, "micro_batch": 2, "seq": 4096}

#: (case id, the torchtune README row it mirrors or None, settings as TrainingSettings fields)
CASES: tuple[tuple[str, str | None, dict[str, Any]], ...] = (
    ("eager-standard-foreach", None, {"optimizer_impl": "foreach"}),
    ("eager-chunked-foreach", None, {"loss": "chunked", "optimizer_impl": "foreach"}),
    ("eager-chunked-ac-foreach", None,
     {"loss": "chunked", "grad_checkpointing": "full", "optimizer_impl": "foreach"}),
    ("eager-chunked-ac-fused", None,
     {"loss": "chunked", "grad_checkpointing": "full", "optimizer_impl": "fused"}),
    ("compiled-standard-foreach", "torchtune-readme-2024-11-llama3.2-3b-compile-bs2-s4096",
     {"compiled": True, "optimizer_impl": "foreach"}),
    ("compiled-chunked-foreach", "torchtune-readme-2024-11-llama3.2-3b-chunked-ce-bs2-s4096",
     {"loss": "chunked", "compiled": True, "compiled_loss": True, "optimizer_impl": "foreach"}),
    ("compiled-chunked-ac-foreach",
     "torchtune-readme-2024-11-llama3.2-3b-activation-checkpointing-bs2-s4096",
     {"loss": "chunked", "grad_checkpointing": "full", "compiled": True, "compiled_loss": True,
      "optimizer_impl": "foreach"}),
    ("compiled-chunked-ac-fused", None,
     {"loss": "chunked", "grad_checkpointing": "full", "compiled": True, "compiled_loss": True,
      "optimizer_impl": "fused"}),
)  # fmt: skip


def settings_of(case: dict[str, Any]) -> dict[str, Any]:
    return {**BASE, **case}


def _peaks(torch: Any) -> dict[str, int]:
    st = torch.cuda.memory_stats()
    return {
        "active_peak_bytes": int(st["active_bytes.all.peak"]),
        "allocated_peak_bytes": int(st["allocated_bytes.all.peak"]),
        "reserved_peak_bytes": int(st["reserved_bytes.all.peak"]),
    }


def run_case(
    case_id: str, row: str | None, case: dict[str, Any], *, device: str = "cuda",
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Three real training steps; the peaks of each (``device="cpu"``: the test suite's smoke
    run of the same code on a shrunk config, no peaks)."""
    import torch
    import torch.nn.functional as F

    from oomkit.inprocess import probe_model as pm

    s = settings_of(case)
    cfg = {**pm.load_config_dict(MODEL), **(overrides or {})}
    cuda = device == "cuda"
    if not cuda:
        s = {**s, "micro_batch": 1, "seq": 64}
    with torch.device(device):
        m = pm.build_from_config(cfg, dtype=torch.bfloat16)
    m.train()
    if s.get("grad_checkpointing") == "full":
        kw = {"use_reentrant": False}
        if hasattr(m, "activation_checkpointing_enable"):  # transformers >= 5.x's name
            m.activation_checkpointing_enable(activation_checkpointing_kwargs=kw)
        else:
            m.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kw)
    if s.get("compiled"):
        for layer in m.model.layers:  # torchtune training.compile_model: each decoder layer
            layer.compile()

    def ce(logits: Any, labels: Any) -> Any:
        return F.cross_entropy(logits.float(), labels, reduction="sum")

    chunk_ce = torch.compile(ce) if s.get("compiled_loss") else ce
    impl = s["optimizer_impl"]
    opt = torch.optim.AdamW(
        m.parameters(), lr=2e-5, foreach=impl == "foreach", fused=impl == "fused"
    )
    batch, seq = s["micro_batch"], s["seq"]
    vocab = int(cfg["vocab_size"])

    def step() -> None:
        ids = torch.randint(0, vocab, (batch, seq), device=device)
        if s.get("loss") == "chunked":  # torchtune CEWithChunkedOutputLoss
            hidden = m.model(input_ids=ids, use_cache=False)[0]
            chunks = [m.lm_head(c) for c in hidden.chunk(CHUNKS, dim=1)]
            del hidden
            total = torch.zeros((), dtype=torch.float32, device=device)
            for logit, label in zip(chunks, ids.chunk(CHUNKS, dim=1), strict=True):
                total = total + chunk_ce(logit.reshape(-1, vocab), label.reshape(-1))
            del chunks
            loss = total / ids.numel()
        else:
            loss = m(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        del loss
        opt.step()
        opt.zero_grad(set_to_none=True)

    steps = []
    t0 = time.perf_counter()
    for _ in range(3):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        step()
        if cuda:
            torch.cuda.synchronize()
        steps.append(_peaks(torch) if cuda else {})
    elapsed = time.perf_counter() - t0
    param_bytes = sum(p.numel() * p.element_size() for p in m.parameters())
    m = opt = None  # free both before the next case (the step closure holds the names)
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    torch._dynamo.reset()
    return {
        "case": case_id,
        "torchtune_row": row,
        "settings": s,
        "parameter_bytes": param_bytes,
        "step1": steps[0],
        "step2": steps[1],
        "step3": steps[2],
        "elapsed_s": round(elapsed, 1),
    }


def measure(out: str, only: str | None) -> int:
    sys.path.insert(0, str(HERE))
    from _suite import environment, gpu_modules

    mods = gpu_modules()
    if mods is None:
        return 0
    torch, transformers = mods
    from torch.optim.optimizer import _default_to_fused_or_foreach

    probe_param = [torch.nn.Parameter(torch.zeros(4, device="cuda"))]
    fused_default, foreach_default = _default_to_fused_or_foreach(probe_param, False, False)
    env = {
        **environment(torch, transformers),
        "adamw_default_impl": (
            "fused" if fused_default else "foreach" if foreach_default else "forloop"
        ),
    }
    print(json.dumps(env), flush=True)
    results = []
    for case_id, row, case in CASES:
        if only and only not in case_id:
            continue
        try:
            results.append(run_case(case_id, row, case))
        except Exception as e:  # a failing case is recorded, not fatal
            results.append({"case": case_id, "torchtune_row": row, "settings": settings_of(case),
                            "error": f"{type(e).__name__}: {e}"[:800]})  # fmt: skip
            gc.collect()
            torch.cuda.empty_cache()
        print(json.dumps(results[-1]), flush=True)
        Path(out).write_text(json.dumps({"environment": env, "results": results}, indent=1))
    print(f"wrote {out}")
    return 0


def _published() -> dict[str, float]:
    rows = {}
    for line in (ROOT / "tests/fixtures/training_measured.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            if r["unit"] == "GiB":
                rows[r["id"]] = float(r["measured"]) * (1 << 30)
    return rows


def score(path: str, with_probe: bool) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from oomkit.api import load_model
    from oomkit.estimate.training import estimate_training
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.settings import TrainingSettings

    sys.path.insert(0, str(HERE))
    from _suite import read_results

    data = read_results(path, "results")
    if data is None or not isinstance(data.get("environment"), dict):
        if data is not None:
            print(f"error: '{path}' has no 'environment' record")
        return 2
    env = data["environment"]
    print(
        f"{env['gpu']} driver {env['driver']} torch {env['torch']} (CUDA {env['cuda']}) "
        f"transformers {env['transformers']}; AdamW default: {env['adamw_default_impl']}"
    )
    published = _published()
    gib = float(1 << 30)
    hdr = f"{'case':30} {'measured':>9} {'oomkit':>8} {'err':>7}"
    hdr += f" {'probe':>8} {'err':>7}" if with_probe else ""
    print(hdr + "  published row")
    spec = load_model(MODEL, offline=True)
    for r in data["results"]:
        if "error" in r:
            print(f"{r['case']:30} error: {r['error'][:120]}")
            continue
        meas = r["step2"]["active_peak_bytes"]
        est = estimate_training(spec, TrainingSettings(**r["settings"]), Hardware())
        pred = int(est.runtime_details["peak_allocated_bytes"])
        line = f"{r['case']:30} {meas / gib:8.2f}G {pred / gib:7.2f}G {pred / meas - 1:+7.1%}"
        if with_probe:
            line += _probe_cell(r["settings"], meas)
        row = r.get("torchtune_row")
        if row in published:
            line += f"  {published[row] / gib:.1f}G ({row.split('-bs')[0][-28:]})"
        print(line)
    return 0


def _probe_cell(s: dict[str, Any], meas: int) -> str:
    sys.path.insert(0, str(HERE.parent))
    from training_probe_vs_measured import probe_kwargs

    import oomkit

    rec = {"settings": s, "unmodelled": []}
    r = oomkit.probe(MODEL, **probe_kwargs(rec))
    return f" {r.peak_bytes / float(1 << 30):7.2f}G {r.peak_bytes / meas - 1:+7.1%}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/gpu/results_torchtune.json")
    ap.add_argument("--only", help="run only the cases whose id contains this")
    ap.add_argument("--score", metavar="RESULTS", help="print the table for a results file")
    ap.add_argument("--probe", action="store_true", help="with --score: also run the probe")
    args = ap.parse_args()
    if args.score:
        return score(args.score, args.probe)
    sys.path.insert(0, str(ROOT / "src"))
    return measure(args.out, args.only)


if __name__ == "__main__":
    sys.exit(main())

"""Cross-check: the training formula's per-GPU peak against the FakeTensor probe's.

For each architecture family (dense GQA, MoE, MLA, sliding-window, tied embeddings, encoder)
and each training setup (full bf16-mixed AdamW, ± gradient checkpointing, LoRA, QLoRA-like with
checkpointing), the real ``transformers`` model is traced on fake tensors with
:func:`oomkit.inprocess.probe.probe` (allocator-block rounded bytes, one GPU, micro-batch 1)
and compared with :func:`oomkit.estimate.training.estimate_training`'s
``runtime_details["peak_allocated_bytes"]`` (allocated bytes: no CUDA context, no
fragmentation margin) and its per-phase totals.

Usage::

    python benchmarks/training_vs_probe.py                    # formula from this tree
    python benchmarks/training_vs_probe.py --formula-pythonpath /other/tree/src
    python benchmarks/training_vs_probe.py --quick            # 2-layer models, seq 256

``--formula-pythonpath`` computes the formula in a child process whose ``PYTHONPATH`` is that
folder (for a branch not merged yet); without it the formula is imported from the running
tree, and rows get ``formula: null`` when ``oomkit.estimate.training`` does not exist.
Writes ``benchmarks/training_vs_probe.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: (family, catalog model, seq): real configs from oomkit's catalog
ARCHS: tuple[tuple[str, str, int], ...] = (
    ("dense_gqa", "llama-3.1-8b", 2048),
    ("moe", "mixtral-8x7b", 2048),
    ("mla_moe", "deepseek-v2-lite", 2048),
    ("swa", "gemma-2-2b", 2048),
    ("swa", "mistral-7b-v0.1", 2048),
    ("tied_embeddings", "qwen2.5-0.5b", 2048),
    ("encoder", "bert-base-uncased", 512),
)
#: name -> (method, gradient checkpointing)
SETUPS: dict[str, tuple[str, bool]] = {
    "full_bf16_adamw": ("full", False),
    "full_bf16_adamw_ckpt": ("full", True),
    "lora_r16": ("lora", False),
    "qlora_r16_ckpt": ("qlora", True),
}
_PHASES = {"forward_end": "forward", "backward": "backward", "optimizer_step": "optimizer_step"}


def _plain(value: Any) -> Any:
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _config(model: str, quick: bool) -> dict[str, Any]:
    from oomkit.inprocess.probe_model import load_config_dict

    cfg = load_config_dict(model)
    if quick:
        cfg["num_hidden_layers"] = 2
    return cfg


def _formula(model: str, method: str, ckpt: bool, seq: int, attn: str, quick: bool) -> Any:
    from oomkit.estimate.training import estimate_training  # type: ignore[import-not-found]
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.settings import TrainingSettings

    if quick:
        from oomkit.catalog.models import find_model
        from oomkit.loaders.hf_config import parse_config

        cfg = _plain(find_model(model).config)
        cfg["num_hidden_layers"] = 2
        spec = parse_config(cfg, name=model)
    else:
        from oomkit.api import load_model

        spec = load_model(model)
    settings = TrainingSettings(
        method=method,
        optimizer="adamw",
        mixed_precision="bf16",
        micro_batch=1,
        seq=seq,
        grad_checkpointing="full" if ckpt else "none",
        attn_implementation=attn,
    )
    est = estimate_training(spec, settings, Hardware())
    d = est.runtime_details
    return {
        "peak_allocated_bytes": int(d["peak_allocated_bytes"]),
        "peak_phase": d["peak_phase"],
        "phases": {_PHASES.get(k, k): int(v) for k, v in dict(d["phases"]).items()},
        "trainable_params": int(d.get("trainable_params", 0)),
    }


def _formula_row(c: dict[str, Any], quick: bool) -> Any:
    try:
        return _formula(c["model"], c["method"], c["ckpt"], c["seq"], c["attn"], quick)
    except ImportError as e:
        return {"error": f"formula unavailable: {e}"}
    except Exception as e:  # report, do not hide, a formula that fails on a model
        return {"error": f"{type(e).__name__}: {e}"}


def _formula_rows(cases: list[dict[str, Any]], quick: bool) -> list[Any]:
    return [_formula_row(c, quick) for c in cases]


def _probe(model: str, method: str, ckpt: bool, seq: int, quick: bool) -> dict[str, Any]:
    from oomkit.inprocess.probe import probe

    t = time.perf_counter()
    r = probe(
        _config(model, quick) if quick else model,
        train=method,
        seq=seq,
        batch=1,
        dtype="bf16",
        optimizer="adamw",
        grad_checkpointing=ckpt,
        lora_rank=16,
    )
    d = r.to_dict()
    attn = "eager" if any("traced with 'eager'" in n for n in r.notes) else "sdpa"
    return {
        "peak_bytes": d["peak_bytes"],
        "peak_phase": d["peak_phase"],
        "phase_peaks": {k: v for k, v in d["phase_peaks"].items() if k != "setup"},
        "peak_by_category": {k: v for k, v in d["peak_by_category"].items() if v},
        "saved_activations_bytes": d["saved_activations_bytes"],
        "trainable_params": d["trainable_parameter_count"],
        "attn_implementation": attn,
        "notes": d["notes"],
        "seconds": round(time.perf_counter() - t, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).with_name("training_vs_probe.json")))
    ap.add_argument("--formula-pythonpath", default=None)
    ap.add_argument("--quick", action="store_true", help="2-layer models, seq 256")
    ap.add_argument("--models", default=None, help="comma-separated subset of catalog models")
    ap.add_argument("--emit-formula", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.emit_formula:  # child mode: formula rows for the cases in this JSON file
        cases = json.loads(Path(args.emit_formula).read_text())
        print(json.dumps(_formula_rows(cases, args.quick)))
        return 0
    wanted = set(args.models.split(",")) if args.models else None
    rows: list[dict[str, Any]] = []
    for family, model, seq in ARCHS:
        if wanted and model not in wanted:
            continue
        s = 256 if args.quick else seq
        for setup, (method, ckpt) in SETUPS.items():
            p = _probe(model, method, ckpt, s, args.quick)
            rows.append(
                {
                    "family": family, "model": model, "setup": setup, "method": method,
                    "grad_checkpointing": ckpt, "seq": s, "micro_batch": 1, "probe": p,
                }
            )  # fmt: skip
            print(f"{model:<20} {setup:<22} probe {p['peak_bytes'] / 2**30:8.2f} GiB "
                  f"({p['peak_phase']}, {p['seconds']} s)", flush=True)  # fmt: skip
    cases = [
        {"model": r["model"], "method": r["method"], "ckpt": r["grad_checkpointing"],
         "seq": r["seq"], "attn": r["probe"]["attn_implementation"]}
        for r in rows
    ]  # fmt: skip
    if args.formula_pythonpath:
        tmp = Path(args.out).with_suffix(".cases.json")
        tmp.write_text(json.dumps(cases))
        env = {**os.environ, "PYTHONPATH": args.formula_pythonpath}
        cmd = [sys.executable, __file__, "--emit-formula", str(tmp)]
        if args.quick:
            cmd.append("--quick")
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        tmp.unlink()
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 1
        formulas = json.loads(done.stdout.strip().splitlines()[-1])
        source = f"PYTHONPATH={args.formula_pythonpath}"
    else:
        formulas = _formula_rows(cases, args.quick)
        source = "this tree"
    for r, f in zip(rows, formulas, strict=True):
        if "error" in f:
            r["formula"] = None
            r["formula_error"] = f["error"]
            continue
        r["formula"] = f
        peak = r["probe"]["peak_bytes"]
        r["formula_over_probe"] = round(f["peak_allocated_bytes"] / peak, 4)
        r["within_15pct"] = abs(f["peak_allocated_bytes"] / peak - 1) <= 0.15
        r["phase_ratio"] = {
            ph: round(f["phases"][ph] / v, 4)
            for ph, v in r["probe"]["phase_peaks"].items()
            if ph in f["phases"] and v
        }
    have = [r for r in rows if r.get("formula")]
    doc = {
        "what": "per-GPU peak allocated bytes of one training step: training formula vs "
        "FakeTensor probe (CUDA caching-allocator blocks), 1 GPU, micro-batch 1, AdamW, "
        "bf16 autocast with fp32 master weights (full) / fp32 adapters (LoRA)",
        "command": "python benchmarks/training_vs_probe.py"
        + (f" --formula-pythonpath {args.formula_pythonpath}" if args.formula_pythonpath else "")
        + (" --quick" if args.quick else ""),
        "formula_source": source,
        "machine": "CPU only (fake tensors): no GPU involved",
        "summary": {
            "rows": len(rows),
            "with_formula": len(have),
            "within_15pct": sum(1 for r in have if r["within_15pct"]),
            "max_abs_error": max((abs(r["formula_over_probe"] - 1) for r in have), default=None),
        },
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    for r in rows:
        f = r.get("formula")
        ratio = f"{r['formula_over_probe']:.3f}" if f else "n/a"
        fp = f"{f['peak_allocated_bytes'] / 2**30:8.2f}" if f else "     n/a"
        print(f"{r['model']:<20} {r['setup']:<22} probe {r['probe']['peak_bytes'] / 2**30:8.2f} "
              f"formula {fp} GiB  formula/probe {ratio}")  # fmt: skip
    print(json.dumps(doc["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real-llama.cpp oracle: load sparse full-size GGUFs on the CPU backend and compare buffers.

    python benchmarks/oracle/run_oracle.py --out benchmarks/oracle/results.json [--only KEY]
    python benchmarks/oracle/run_oracle.py --out benchmarks/oracle/results.json --repredict

For each architecture a GGUF with the real header, metadata and tensor infos is written (the
data region is a hole, see gguf_writer.py), then loaded by llama-cpp-python (n_gpu_layers=0,
mmap, no repacking) in a subprocess per setting, with the C library's log on stderr. The buffer
lines llama.cpp prints (model / KV / RS / compute / output) are parsed and stored next to
oomkit's CPU-backend prediction. Needs ``pip install llama-cpp-python gguf``; writes files to a
temporary directory (sparse: a few MB of real disk per architecture).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from oracle_cases import ARCHS, SETTINGS_GRID, arch_metadata, exact_tensors  # noqa: E402

MiB = 1 << 20
TYPE_IDS = {
    "f32": 0,
    "f16": 1,
    "q4_0": 2,
    "q4_1": 3,
    "q5_0": 6,
    "q5_1": 7,
    "q8_0": 8,
    "iq4_nl": 20,
    "bf16": 30,
}

CHILD = r"""
import json, sys
import llama_cpp as L
cfg = json.loads(sys.argv[1])
L.llama_backend_init()
mp = L.llama_model_default_params()
mp.n_gpu_layers = 0
mp.use_extra_bufts = False
model = L.llama_model_load_from_file(cfg["path"].encode(), mp)
if not model:
    print("ORACLE: MODEL_FAIL", file=sys.stderr); sys.exit(2)
cp = L.llama_context_default_params()
for k in ("n_ctx", "n_batch", "n_ubatch", "n_seq_max"):
    setattr(cp, k, cfg[k])
cp.flash_attn_type = 1 if cfg["flash_attn"] else 0
cp.type_k = cfg["type_k_id"]; cp.type_v = cfg["type_v_id"]
cp.kv_unified = cfg["kv_unified"]; cp.swa_full = cfg["swa_full"]
cp.n_threads = 2; cp.n_threads_batch = 2
ctx = L.llama_init_from_model(model, cp)
print("ORACLE: OK" if ctx else "ORACLE: CTX_FAIL", file=sys.stderr)
sys.exit(0 if ctx else 3)
"""

_BUF = re.compile(r"^(\S+):\s+(\S+)\s+(model|KV|RS|compute|output) buffer size =\s+([0-9.]+) MiB")
_KVSZ = re.compile(
    r"^(llama_kv_cache\S*|llama_memory_recurrent\S*): size =\s+([0-9.]+) MiB \(\s*(\d+) cells,"
    r"\s+(\d+) layers,\s+(\d+)/(\d+) seqs\)"
)


def parse_log(text: str) -> dict[str, Any]:
    """Buffer sizes (MiB as printed) and cache shapes from llama.cpp's log."""
    out: dict[str, Any] = {
        "model": {},
        "kv": {},
        "rs": {},
        "compute": {},
        "output": {},
        "caches": [],
    }
    for line in text.splitlines():
        m = _BUF.match(line.strip())
        if m:
            kind = m.group(3).lower()
            out[kind][m.group(2)] = out[kind].get(m.group(2), 0.0) + float(m.group(4))
            continue
        m = _KVSZ.match(line.strip())
        if m:
            out["caches"].append(
                {
                    "who": m.group(1),
                    "MiB": float(m.group(2)),
                    "cells": int(m.group(3)),
                    "layers": int(m.group(4)),
                    "seqs": f"{m.group(5)}/{m.group(6)}",
                }
            )
    return out


def predict(rec: dict[str, Any]) -> dict[str, Any]:
    """oomkit's CPU-backend prediction for one record (bytes per buffer kind)."""
    from oracle_cases import record_inputs

    from oomkit.estimate.llamacpp import estimate_llamacpp
    from oomkit.estimate.llamacpp_params import LlamaCppOptions
    from oomkit.spec.hardware import Hardware

    spec, settings = record_inputs(rec)
    est = estimate_llamacpp(
        spec, settings, Hardware(), options=LlamaCppOptions(repack=False), default_swa_full=True
    )
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    return {k: dict(v) for k, v in b.items()}


def run_case(path: str, s: dict[str, Any], timeout: int) -> tuple[int, str, float]:
    cfg = {
        "path": path,
        "n_ctx": s["n_ctx"],
        "n_batch": s["n_batch"],
        "n_ubatch": s["n_ubatch"],
        "n_seq_max": s["n_seq"],
        "flash_attn": s["flash_attn"],
        "type_k_id": TYPE_IDS[s["type_k"]],
        "type_v_id": TYPE_IDS[s["type_v"]],
        "kv_unified": s["kv_unified"],
        "swa_full": s["swa_full"],
    }
    t0 = time.time()
    try:
        p = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(cfg)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        return 124, str(exc.stderr or ""), time.time() - t0
    return p.returncode, p.stderr, time.time() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "results.json"))
    ap.add_argument("--only", action="append", help="architecture key(s) to run")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--keep", action="store_true", help="keep the sparse GGUFs")
    ap.add_argument(
        "--repredict",
        action="store_true",
        help="only recompute oomkit's predictions in an existing --out file",
    )
    args = ap.parse_args(argv)
    if args.repredict:
        doc = json.loads(Path(args.out).read_text())
        for rec in doc["records"]:
            if rec.get("rc") == 0:
                rec["oomkit_bytes"] = predict(rec)
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
        return 0
    import llama_cpp

    info = {
        "llama_cpp_python_version": llama_cpp.__version__,
        "system_info": llama_cpp.llama_print_system_info().decode().strip(),
    }
    records: list[dict[str, Any]] = []
    tmp = tempfile.mkdtemp(prefix="oomkit-oracle-")
    for arch in ARCHS:
        if args.only and arch["key"] not in args.only:
            continue
        path = os.path.join(tmp, f"{arch['key']}.gguf")
        try:
            spec, rows = exact_tensors(arch)
            from gguf_writer import write_sparse_gguf

            md = arch_metadata(arch, spec)
            sizes = write_sparse_gguf(
                path, arch=arch["gguf_arch"], metadata=md, n_vocab=spec.vocab_size, tensors=rows
            )
        except Exception as exc:
            records.append(
                {
                    "id": arch["key"],
                    "arch": arch["key"],
                    "rc": -1,
                    "error": f"writer: {type(exc).__name__}: {exc}",
                }
            )
            print(f"[{arch['key']}] writer failed: {exc}", file=sys.stderr)
            continue
        for s in arch.get("settings", SETTINGS_GRID):
            rid = (
                f"{arch['key']}.{arch['ftype']}.c{s['n_ctx']}.ub{s['n_ubatch']}."
                f"fa{int(s['flash_attn'])}.k{s['type_k']}.v{s['type_v']}.seq{s['n_seq']}"
                f"{'.kvu' if s['kv_unified'] else ''}{'.swafull' if s['swa_full'] else ''}"
            )
            rc, log, wall = run_case(path, s, args.timeout)
            rec: dict[str, Any] = {
                "id": rid,
                "arch": arch["key"],
                "catalog_key": arch["catalog"],
                "gguf_arch": arch["gguf_arch"],
                "ftype": arch["ftype"],
                "pure": arch.get("pure", False),
                "settings": s,
                "rc": rc,
                "wall_s": round(wall, 2),
                **sizes,
            }
            if rc == 0:
                rec["measured_MiB"] = parse_log(log)
                try:
                    rec["oomkit_bytes"] = predict(rec)
                except Exception as exc:
                    rec["oomkit_error"] = f"{type(exc).__name__}: {exc}"
            else:
                rec["log_tail"] = log.splitlines()[-15:]
            records.append(rec)
            print(f"[{rid}] rc={rc} {wall:.1f}s", file=sys.stderr)
        if not args.keep:
            os.unlink(path)
    doc = {
        "schema": 1,
        "generated_by": "benchmarks/oracle/run_oracle.py",
        **info,
        "backend": "CPU (n_gpu_layers=0, mmap, use_extra_bufts=False)",
        "records": records,
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    ok = sum(1 for r in records if r.get("rc") == 0)
    print(f"wrote {args.out}: {ok}/{len(records)} cases loaded", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

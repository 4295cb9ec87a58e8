"""Real llama.cpp on a CUDA GPU: the buffers it allocates and the memory the process holds.

The CPU oracle (``benchmarks/oracle/run_oracle.py``) checks the buffer sizes on the CPU
backend; this runs the same sparse full-size GGUFs (real header and tensor infos, the data a
hole that reads as zeros) fully offloaded (``-ngl 99``) with a CUDA build of ``llama-completion``
and records the ``CUDA0`` model / KV / compute buffer lines of its log (``-v``: recent builds log
them only when verbose), and the most GPU
memory ``nvidia-smi`` shows for the process while it runs (the CUDA context and cuBLAS
included).

On the GPU machine (a CUDA build of llama.cpp, ``pip install gguf``)::

    python benchmarks/gpu/llamacpp_cuda_oracle.py --bin build/bin/llama-completion --out X.json

Here (no GPU): ``--score X.json`` adds oomkit's prediction for each record (all layers on one
H100) and prints the comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "oracle"))
sys.path.insert(0, str(ROOT / "src"))

#: (catalog key, settings): full offload on one GPU
CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("llama-3.1-8b", {"n_ctx": 4096, "fa": True}),
    ("llama-3.1-8b", {"n_ctx": 4096, "fa": False}),
    ("llama-3.1-8b", {"n_ctx": 32768, "fa": True}),
    ("qwen3-8b", {"n_ctx": 16384, "fa": True}),
    ("gemma-2-9b", {"n_ctx": 8192, "fa": True}),
    ("deepseek-v2-lite", {"n_ctx": 8192, "fa": True}),
    ("qwen3-30b-a3b", {"n_ctx": 8192, "fa": True}),
)
#: gpt-oss-20b (MXFP4) is left out: its sparse file's all-zero data aborts the CUDA add_id op
#: during the first decode (ggml_cuda_op_add_id) on the H100 build


def _arch(key: str) -> dict[str, Any]:
    from oracle_cases import ARCHS

    return next(a for a in ARCHS if a["key"] == key)


_STAMP = re.compile(r"^\d+\.\d+\.\d+\.\d+ [A-Z] ")


def last_pass(log_lines: list[str]) -> str:
    """The log of the real load: recent builds first run a dry "fit" pass (``common_params_fit``,
    every buffer 0.00 MiB) and prefix lines with a timestamp and a level letter."""
    lines = [_STAMP.sub("", ln) for ln in log_lines]
    starts = [i for i, ln in enumerate(lines) if ln.startswith("llama_prepare_model_devices")]
    return "\n".join(lines[starts[-1] :] if starts else lines)


def _smi_sampler(pid: int, stop: threading.Event, out: list[int]) -> None:
    while not stop.is_set():
        r = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            check=False,
        )
        for line in r.stdout.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
                out.append(int(parts[1]))
        time.sleep(0.05)


def measure(binary: str, out_path: str) -> int:
    from gguf_writer import write_sparse_gguf
    from oracle_cases import arch_metadata, exact_tensors
    from run_oracle import parse_log

    records: list[dict[str, Any]] = []
    tmp = tempfile.mkdtemp(prefix="oomkit-cuda-oracle-")
    written: dict[str, str] = {}
    for key, s in CASES:
        arch = _arch(key)
        path = written.get(key)
        if path is None:
            path = os.path.join(tmp, f"{key}.gguf")
            spec, rows = exact_tensors(arch)
            write_sparse_gguf(
                path,
                arch=arch["gguf_arch"],
                metadata=arch_metadata(arch, spec),
                n_vocab=spec.vocab_size,
                tensors=rows,
            )
            written[key] = path
        cmd = [binary, "-m", path, "-ngl", "99", "-c", str(s["n_ctx"]), "-fa",
               "on" if s["fa"] else "off", "-n", "4", "-p", "hello", "-no-cnv", "--no-warmup",
               "--temp", "0", "-v"]  # fmt: skip
        t0 = time.time()
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace"
        )
        samples: list[int] = []
        stop = threading.Event()
        th = threading.Thread(target=_smi_sampler, args=(proc.pid, stop, samples), daemon=True)
        th.start()
        try:
            _, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        stop.set()
        th.join()
        rec = {
            "id": f"{key}.{arch['ftype']}.c{s['n_ctx']}.fa{int(s['fa'])}",
            "catalog_key": key,
            "ftype": arch["ftype"],
            "settings": s,
            "rc": proc.returncode,
            "wall_s": round(time.time() - t0, 1),
            "smi_peak_MiB": max(samples, default=None),
            "measured_MiB": parse_log(last_pass(err.splitlines())),
            "log_tail": err.splitlines()[-12:] if proc.returncode else [],
            "log_memory_lines": [ln for ln in err.splitlines() if "MiB" in ln][:80],
        }
        records.append(rec)
        print(json.dumps({k: rec[k] for k in ("id", "rc", "smi_peak_MiB", "wall_s")}), flush=True)
        Path(out_path).write_text(json.dumps({"records": records}, indent=1) + "\n")
    return 0


def predict(rec: dict[str, Any]) -> dict[str, Any]:
    """oomkit's prediction for one record: every layer on one H100."""
    from oracle_cases import exact_tensors

    from oomkit.estimate.llamacpp import estimate_llamacpp
    from oomkit.hardware.targets import hardware_for
    from oomkit.spec.settings import InferenceSettings

    spec, _ = exact_tensors({"catalog": rec["catalog_key"], "ftype": rec["ftype"]})
    s = rec["settings"]
    settings = InferenceSettings(
        runtime="llama.cpp", ctx=s["n_ctx"], flash_attn=s["fa"], n_gpu_layers=99, mmap=True
    )
    from oomkit.hardware.catalog import find_gpu_by_nvml_name

    h100 = find_gpu_by_nvml_name("NVIDIA H100 80GB HBM3", 85017493504)
    assert h100 is not None
    est = estimate_llamacpp(spec, settings, hardware_for((h100,)))
    dev = est.devices[0]
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    return {
        "buffers": {k: dict(v) for k, v in b.items()},
        "device_total_bytes": dev.total_bytes,
        "overhead_bytes": dev.overhead_bytes,
    }


def score(path: str) -> int:
    sys.path.insert(0, str(HERE))
    from _suite import read_results

    doc = read_results(path, "records")
    if doc is None:
        return 2
    mib = float(1 << 20)
    print(f"{'case':40} {'buffer':8} {'llama.cpp':>10} {'oomkit':>10}")
    for rec in doc["records"]:
        if rec["rc"] != 0:
            print(f"{rec['id']:40} rc={rec['rc']}")
            continue
        p = predict(rec)
        rec["oomkit"] = p
        from run_oracle import parse_log

        rec["measured_MiB"] = parse_log(last_pass(rec["log_memory_lines"]))
        for kind in ("model", "kv", "compute"):
            meas = rec["measured_MiB"][kind].get("CUDA0", 0.0)
            pred = p["buffers"].get(kind, {}).get("CUDA0", 0)
            print(f"{rec['id']:40} {kind:8} {meas:10.2f} {pred / mib:10.2f}")
        print(
            f"{rec['id']:40} {'smi':8} {rec['smi_peak_MiB'] or 0:10.0f} "
            f"{p['device_total_bytes'] / mib:10.0f}  (oomkit device total; context "
            f"{p['overhead_bytes'] / mib:.0f})"
        )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", help="llama-completion built with GGML_CUDA=ON")
    ap.add_argument("--out", default="llamacpp_cuda_results.json")
    ap.add_argument("--score", metavar="RESULTS")
    args = ap.parse_args()
    if args.score:
        return score(args.score)
    if not args.bin:
        print("skipped: no --bin (a CUDA build of llama-completion) given")
        return 0
    if shutil.which("nvidia-smi") is None:
        print("skipped: no nvidia-smi (needs an NVIDIA GPU and driver)")
        return 0
    if not (os.path.isfile(args.bin) and os.access(args.bin, os.X_OK)):
        print(f"error: --bin '{args.bin}' is not an executable file")
        return 2
    return measure(args.bin, args.out)


if __name__ == "__main__":
    sys.exit(main())

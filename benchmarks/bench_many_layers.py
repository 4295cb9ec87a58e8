"""Time reading and estimating a GGUF with very many layers (issue 10: linear time).

Usage: python benchmarks/bench_many_layers.py [--layers 20000] [--repeat 3]

Writes a real GGUF with the ``gguf`` package (a Llama layout, 9 tensors per layer, small
dimensions so the file stays ~25 MB), then times ``load_model`` and ``estimate_model`` (llama.cpp
runtime, one RTX 4090) in-process; prints the median of ``--repeat`` runs. Then, in a fresh
process (cold: nothing imported or memoised yet, as in one ``oomkit estimate`` call), the CPU
time of each stage: reading the header (``load_gguf``), building the spec (``gguf_to_spec``) and
the estimate. Before issue 10 the layer scan was O(n^2): 8k layers took 5.7 s and 20k layers
25 s; with one Python object per tensor per stage 1.74 s; with the tensors kept as columns
(``GgufTensorTable``, ``TensorTable``, ``WeightRows``, ``PlacedColumns``) about 0.6 s of CPU.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gguf
import numpy as np

from oomkit.api import estimate_model, load_model
from oomkit.hardware.catalog import find_gpu
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def write_gguf(path: Path, n_layers: int, dim: int = 8) -> None:
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(n_layers)
    w.add_embedding_length(dim)
    w.add_feed_forward_length(2 * dim)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_context_length(4096)
    w.add_vocab_size(16)
    w.add_layer_norm_rms_eps(1e-5)

    def z(*shape: int) -> np.ndarray:
        return np.zeros(shape, np.float16)

    w.add_tensor("token_embd.weight", z(16, dim))
    w.add_tensor("output_norm.weight", np.zeros(dim, np.float32))
    for i in range(n_layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros(dim, np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", z(dim, dim))
        w.add_tensor(f"blk.{i}.attn_k.weight", z(dim // 2, dim))
        w.add_tensor(f"blk.{i}.attn_v.weight", z(dim // 2, dim))
        w.add_tensor(f"blk.{i}.attn_output.weight", z(dim, dim))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.zeros(dim, np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", z(2 * dim, dim))
        w.add_tensor(f"blk.{i}.ffn_up.weight", z(2 * dim, dim))
        w.add_tensor(f"blk.{i}.ffn_down.weight", z(dim, 2 * dim))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def cold_stages(path: Path) -> str:
    """CPU seconds of each stage of one estimate of ``path`` (run in a fresh process)."""
    from oomkit.loaders.gguf import load_gguf
    from oomkit.loaders.gguf_spec import gguf_to_spec

    hw = hardware_for((find_gpu("rtx-4090"),))
    c0 = time.process_time()
    header = load_gguf(path)
    c1 = time.process_time()
    spec = gguf_to_spec(header)
    c2 = time.process_time()
    estimate_model(spec, InferenceSettings(ctx=4096), hw)
    c3 = time.process_time()
    return (
        f"cold process: {c3 - c0:.2f} s CPU (read header {c1 - c0:.2f}, spec {c2 - c1:.2f}, "
        f"estimate {c3 - c2:.2f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold-stages", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cold_stages is not None:
        print(cold_stages(args.cold_stages))
        return
    hw = hardware_for((find_gpu("rtx-4090"),))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"llama-{args.layers}-layers.gguf"
        write_gguf(path, args.layers)
        size_mb = path.stat().st_size / 1e6
        loads, ests, cpus = [], [], []
        for _ in range(args.repeat):
            c0 = time.process_time()
            t0 = time.perf_counter()
            spec = load_model(path)
            t1 = time.perf_counter()
            est = estimate_model(spec, InferenceSettings(ctx=4096), hw)
            t2 = time.perf_counter()
            cpus.append(time.process_time() - c0)
            loads.append(t1 - t0)
            ests.append(t2 - t1)
        cold = subprocess.run(
            [sys.executable, __file__, "--cold-stages", str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    n_tensors = len(spec.tensors or ())
    print(f"{args.layers} layers, {n_tensors} tensors, {size_mb:.1f} MB GGUF")
    print(f"read header: median {statistics.median(loads):.2f} s")
    print(f"estimate:    median {statistics.median(ests):.2f} s (fits={est.fits})")
    total = statistics.median(a + b for a, b in zip(loads, ests, strict=True))
    print(f"total:       median {total:.2f} s wall, {statistics.median(cpus):.2f} s CPU")
    print(cold)


if __name__ == "__main__":
    main()

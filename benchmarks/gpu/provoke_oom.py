#!/usr/bin/env python3
"""Provoke real CUDA out-of-memory errors and save what torch reports, for oomkit's fixtures.

Run on a machine with a CUDA GPU (nothing else should be using it)::

    python benchmarks/gpu/provoke_oom.py --out benchmarks/gpu/results/$(hostname)

Scenarios (each writes ``<out>/<scenario>.json``):

* ``too_large_batch`` — an MLP forward pass whose batch doubles until it no longer fits.
* ``fragmentation`` — one huge block is cached, split into 64 MiB tensors, every other one freed;
  a 96 MiB request then fails although half the reserved memory is free (no hole is big enough).
  Also writes ``fragmentation_snapshot.pickle`` (``torch.cuda.memory._dump_snapshot``) so the
  snapshot reader can be checked on a real one.
* ``other_process`` — a child process holds most of the GPU; the parent's allocation then fails
  and torch's message names the other process.

Each JSON holds the exception type and message text verbatim, ``torch.cuda.memory_stats()``,
``torch.cuda.mem_get_info()``, the device name, torch/CUDA versions and the allocator env vars.
Without CUDA (or without torch) the script prints why and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MiB = 1 << 20
GiB = 1 << 30


def _record(
    torch: Any, scenario: str, exc: BaseException | None, extra: dict[str, Any]
) -> dict[str, Any]:
    free, total = torch.cuda.mem_get_info()
    return {
        "scenario": scenario,
        "exception_type": None
        if exc is None
        else f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": None if exc is None else str(exc),
        "memory_stats": {k: v for k, v in torch.cuda.memory_stats().items()},
        "mem_get_info": {"free_bytes": int(free), "total_bytes": int(total)},
        "device_name": torch.cuda.get_device_name(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "python": platform.python_version(),
        "alloc_conf_env": {
            k: os.environ.get(k) for k in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
        },
        **extra,
    }


def _reset(torch: Any) -> None:
    import gc

    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def too_large_batch(torch: Any) -> dict[str, Any]:
    """Double the batch of a 4-layer MLP forward (activations kept for backward) until OOM."""
    width = 8192
    model = torch.nn.Sequential(
        *[torch.nn.Linear(width, width, device="cuda", dtype=torch.float16) for _ in range(4)]
    )
    batch, last_ok, error = 256, None, None
    while batch < 1 << 24:
        try:
            x = torch.randn(batch, width, device="cuda", dtype=torch.float16, requires_grad=True)
            y = model(x).float().sum()
            del x, y
            last_ok = batch
            batch *= 2
        except torch.OutOfMemoryError as exc:  # noqa: PERF203 - the OOM ends the loop
            error = exc
            break
    out = _record(
        torch, "too_large_batch", error, {"failed_batch": batch, "last_ok_batch": last_ok}
    )
    del model, error
    return out


def fragmentation(torch: Any, out_dir: Path) -> dict[str, Any]:
    """Split one cached segment into 64 MiB pieces, free every other, ask for 96 MiB."""
    torch.cuda.memory._record_memory_history(max_entries=100_000)
    free, _ = torch.cuda.mem_get_info()
    piece = 64 * MiB
    big_bytes = (free - 512 * MiB) // piece * piece
    big = torch.empty(big_bytes, dtype=torch.uint8, device="cuda")
    del big  # the segment stays cached in the allocator
    pieces = [
        torch.empty(piece, dtype=torch.uint8, device="cuda") for _ in range(big_bytes // piece)
    ]
    # Fill what is left outside the cached segment so cudaMalloc cannot add a new one.
    filler: list[Any] = []
    while True:
        try:
            filler.append(torch.empty(32 * MiB, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:  # noqa: PERF203 - the OOM ends the loop
            break
    del pieces[::2]
    error = None
    try:
        torch.empty(96 * MiB, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError as exc:
        error = exc
    snap = out_dir / "fragmentation_snapshot.pickle"
    torch.cuda.memory._dump_snapshot(str(snap))
    torch.cuda.memory._record_memory_history(enabled=None)
    out = _record(
        torch,
        "fragmentation",
        error,
        {"piece_bytes": piece, "request_bytes": 96 * MiB, "snapshot": snap.name},
    )
    try:  # optional: oomkit's reader on the real snapshot
        from oomkit.inprocess.snapshot import snapshot_report

        rep = snapshot_report(snap)
        out["oomkit_snapshot_report"] = {
            "reserved_bytes": rep.reserved_bytes,
            "reserved_unallocated_bytes": rep.reserved_unallocated_bytes,
            "largest_free_block_bytes": rep.largest_free_block_bytes,
            "failed_request_bytes": rep.failed_request_bytes,
            "advice": list(rep.advice),
        }
    except ImportError:
        pass
    del pieces, filler, error
    return out


_HOLDER = """
import sys, torch
free, _ = torch.cuda.mem_get_info()
held = torch.empty(int(free * 0.8), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("holding", held.numel(), flush=True)
sys.stdin.read()
"""


def other_process(torch: Any) -> dict[str, Any]:
    """A child process holds 80% of the GPU; the parent then asks for half of the total."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        held = int(line.split()[1]) if line.startswith("holding") else None
        time.sleep(1.0)
        _, total = torch.cuda.mem_get_info()
        error = None
        try:
            torch.empty(total // 2, dtype=torch.uint8, device="cuda")
        except torch.OutOfMemoryError as exc:
            error = exc
        return _record(
            torch,
            "other_process",
            error,
            {"child_pid": child.pid, "child_held_bytes": held, "request_bytes": total // 2},
        )
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/gpu/results"))
    parser.add_argument(
        "--only", choices=("too_large_batch", "fragmentation", "other_process"), default=None
    )
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("skip: torch is not installed; nothing to provoke")
        return 0
    if not torch.cuda.is_available():
        print("skip: no CUDA device is available (torch.cuda.is_available() is False)")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "too_large_batch": lambda: too_large_batch(torch),
        "fragmentation": lambda: fragmentation(torch, args.out),
        "other_process": lambda: other_process(torch),
    }
    for name, run in runs.items():
        if args.only and name != args.only:
            continue
        _reset(torch)
        started = time.perf_counter()
        result = run()
        result["seconds"] = round(time.perf_counter() - started, 2)
        path = args.out / f"{name}.json"
        path.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
        first = (result["message"] or "no OOM").splitlines()[0]
        print(f"{name}: {result['exception_type']}: {first[:160]} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

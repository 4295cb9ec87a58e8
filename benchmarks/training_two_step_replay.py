"""Trace the two training steps of ``benchmarks/gpu/training_boundary.py`` on fake tensors and
replay them through the caching allocator model.

    PYTHONPATH=src python benchmarks/training_two_step_replay.py phi-2 --batch 2 --seq 1024 [--json]

``oomkit probe --train full`` traces one steady-state step after an emulated previous one (all
gradients made at once, one optimizer step): the segments the allocator cut before the traced
step are not the ones the real loop cut. This script runs the boundary script's own loop
(``_train``: fp32 parameters, ``torch.autocast`` bf16, the model's own loss, ``backward``,
``AdamW(foreach=True).step()``, ``zero_grad(set_to_none=True)``, twice; the first step creates
AdamW's states) under ``FakeTensorMode``, records every storage allocation and free
(:class:`oomkit.inprocess.probe_tracker.MemoryTracker`), and replays the trace
(:func:`oomkit.inprocess.probe_allocator.replay`): the allocated and reserved peaks and, with
``smallest_limit``, the smallest card (less the CUDA context) the trace survives on.
Full fine-tuning only (LoRA's adapters are a separate module the probe builds).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GiB = 1 << 30


@dataclass(frozen=True)
class Trace:
    events: list[tuple[int, int]]
    skip: set[int]
    #: (phase name, index in events where it starts), in order
    marks: list[tuple[str, int]]
    param_sizes: list[int]


def two_step_trace(
    model: str,
    batch: int,
    seq: int,
    steps: int = 2,
    grad_checkpointing: bool = False,
    foreach: bool = True,
) -> Trace:
    """The allocator events of ``steps`` full fine-tuning steps as ``_train`` runs them."""
    sys.path.insert(0, str(ROOT / "src"))
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from oomkit.inprocess import probe_model as pm
    from oomkit.inprocess.probe_autocast import cuda_autocast_policy, cuda_sdpa_dropout
    from oomkit.inprocess.probe_calls import enable_checkpointing
    from oomkit.inprocess.probe_tracker import MemoryTracker

    fake = FakeTensorMode(allow_non_fake_inputs=False)
    cfg = pm.load_config_dict(model)
    with fake:
        m = pm.build_from_config(cfg, dtype=torch.float32, attn_implementation="sdpa")
        ids = torch.randint(1, int(cfg["vocab_size"]), (batch, seq), dtype=torch.long)
    tracker = MemoryTracker(round_to_cuda_blocks=False)
    params = list(m.parameters())
    tracker.track_all(params, "parameters")
    tracker.track_all(m.buffers(), "buffers")
    tracker.track_all([ids], "inputs")
    marks: list[tuple[str, int]] = []
    with fake, tracker, pm.moe_grouped_mm_fallback(), cuda_autocast_policy(), cuda_sdpa_dropout():
        m.train()
        if grad_checkpointing:
            enable_checkpointing(m, model)
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=foreach)
        for k in range(steps):
            marks.append((f"forward{k + 1}", len(tracker.events)))
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = m(input_ids=ids, labels=ids, use_cache=False).loss
            marks.append((f"backward{k + 1}", len(tracker.events)))
            loss.backward()  # type: ignore[no-untyped-call]
            del loss
            marks.append((f"optimizer{k + 1}", len(tracker.events)))
            opt.step()
            opt.zero_grad(set_to_none=True)
    marks.append(("end", len(tracker.events)))
    return Trace(list(tracker.events), set(tracker.forgotten), marks, [p.nbytes for p in params])


@dataclass(frozen=True)
class Failure:
    """The request a replay under ``limit_bytes`` could not serve, and the allocator then."""

    index: int
    phase: str
    request_bytes: int
    allocated_bytes: int
    reserved_bytes: int
    #: free large-pool blocks (reserved but unallocated) after ``release_cached_blocks``
    free_block_sizes: list[int]


def first_failure(tr: Trace, limit_bytes: int) -> Failure | None:
    """Replay ``tr`` under ``limit_bytes`` (as :func:`replay` with the cuBLAS workspace) and
    describe the request that raised, as CUDA's OOM message does (None: it survived)."""
    sys.path.insert(0, str(ROOT / "src"))
    from oomkit.inprocess import probe_allocator as pa

    a = pa._Allocator()
    live: dict[int, Any] = {-1: a.malloc(pa.CUBLAS_WORKSPACE_BYTES)}
    a.limit = limit_bytes
    for i, (k, n) in enumerate(tr.events):
        if k in tr.skip or n == 0:
            continue
        if n < 0:
            b = live.pop(k, None)
            if b is not None:
                a.free(b)
            continue
        try:
            live[k] = a.malloc(n)
        except pa._OutOfMemory:
            phase = [name for name, j in tr.marks if j <= i][-1] if tr.marks[0][1] <= i else "setup"
            free = sorted(
                (size for (_, small), pool in a.pools.items() if not small for size, _ in pool),
                reverse=True,
            )
            return Failure(i, phase, n, a.allocated, a.reserved, free)
    return None


def boundary_full_rows() -> list[dict[str, Any]]:
    """The full fine-tuning rows of the default-allocator boundary files (whole models)."""
    files = sorted((ROOT / "benchmarks" / "gpu" / "results").glob("training_boundary*.json"))
    return [
        {**r, "source": f.name}
        for f in files
        if "expandable" not in f.name
        for r in json.loads(f.read_text())["results"]
        if r["method"] == "full" and not r.get("overrides") and "smallest_survived_bytes" in r
    ]


def table() -> None:
    """Each measured full fine-tuning step against its two-step replay (GiB)."""
    from oomkit.estimate.overhead import cuda_context_bytes
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for
    from oomkit.inprocess.probe_allocator import replay, smallest_limit

    print("step                          allocated real/replay  reserved real/replay  "
          "need real/replay  need-allocated real/replay")  # fmt: skip
    for r in boundary_full_rows():
        tr = two_step_trace(r["model"], r["batch"], r["seq"], 2, bool(r["grad_checkpointing"]))
        kw: dict[str, Any] = {"skip": tr.skip, "cublas_workspace": True}
        pk = replay(tr.events, **kw)
        need = smallest_limit(tr.events, step_bytes=32 << 20, **kw)
        gpu = hardware_for((find_gpu(str(r.get("gpu_catalog") or "h200")),)).devices[0]
        real = int(r["smallest_survived_bytes"]) - cuda_context_bytes("training", gpu)[0]
        alloc = int(r["full_card_max_allocated_bytes"])
        ck = " ckpt" if r["grad_checkpointing"] else ""
        print(
            f"{r['model']:13} b{r['batch']} s{r['seq']}{ck:5}      "
            f"{alloc / GiB:6.2f} {pk.allocated_peak_bytes / GiB:6.2f}        "
            f"{r['full_card_max_reserved_bytes'] / GiB:6.2f} {pk.reserved_peak_bytes / GiB:6.2f}"
            f"     {real / GiB:6.2f} {need / GiB:6.2f}       "
            f"{(real - alloc) / GiB:5.2f} {(need - pk.allocated_peak_bytes) / GiB:5.2f}",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="omit with --table")
    ap.add_argument("--table", action="store_true", help="every measured full step")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--grad-checkpointing", action="store_true")
    ap.add_argument("--forloop", action="store_true", help="AdamW(foreach=False)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from oomkit.inprocess.probe_allocator import replay, smallest_limit

    if args.table or not args.model:
        table()
        return 0
    tr = two_step_trace(
        args.model, args.batch, args.seq, args.steps, args.grad_checkpointing, not args.forloop
    )
    kw: dict[str, Any] = {"skip": tr.skip, "cublas_workspace": True}
    peaks = replay(tr.events, **kw)
    need = smallest_limit(tr.events, step_bytes=32 << 20, **kw)
    out = {
        "model": args.model,
        "batch": args.batch,
        "seq": args.seq,
        "steps": args.steps,
        "events": len(tr.events),
        "allocated_peak_bytes": peaks.allocated_peak_bytes,
        "reserved_peak_bytes": peaks.reserved_peak_bytes,
        "segments": peaks.segments,
        "smallest_limit_bytes": need,
    }
    fail = first_failure(tr, need - (32 << 20))
    if fail is not None:
        pieces = fail.free_block_sizes
        out["fails_32MiB_below"] = {
            "phase": fail.phase,
            "request_bytes": fail.request_bytes,
            "allocated_bytes": fail.allocated_bytes,
            "reserved_bytes": fail.reserved_bytes,
            "free_bytes": sum(pieces),
            "free_blocks": len(pieces),
            "largest_free_block_bytes": pieces[0] if pieces else 0,
        }
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for k, v in out.items():
            if isinstance(v, dict):
                v = ", ".join(
                    f"{a} {b / GiB:.2f} GiB" if a.endswith("bytes") else f"{a} {b}"
                    for a, b in v.items()
                )
                print(f"{k:24} {v}")
            else:
                print(f"{k:24} {v / GiB:.2f} GiB" if k.endswith("bytes") else f"{k:24} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""torchao AdamW8bit on CUDA: the first and the second step of one parameter, measured.

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python benchmarks/gpu/torchao_adamw8bit_first_step.py \
        [--rows 128256 --cols 3072] [--out results.json]

(best with torch 2.5.1 and torchao 0.6.1, the stack of torchtune's 2024-11 table; a fresh
Inductor cache, or the autotuning is skipped). Builds one bf16 parameter and its bf16 gradient,
steps ``torchao.prototype.low_bit_optim.AdamW8bit([p])`` twice and records
``active_bytes.all.peak`` above what was allocated before each step, next to what
:mod:`oomkit.estimate.training_torchao` says the step adds: the 8-bit states (first step), the
compiled call's fp32 buffer, and on the first call the autotuning clones and ``do_bench``'s flush
buffer. The probe's torchtune "+ adamw8bit" figure rests on that first-call term
(``tests/fixtures/training_measured.jsonl``). Exits 0 with a message without CUDA or torchao.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "src"))


def expected(n: int) -> dict[str, int]:
    """oomkit's bytes above the weights and gradient for each step of an n-element bf16 tensor."""
    from oomkit.estimate.training_torchao import (
        torchao_autotune_bytes,
        torchao_state_bytes,
        torchao_step_temporary_bytes,
    )

    states = torchao_state_bytes(n, 2)
    buf = torchao_step_temporary_bytes(n)
    return {
        "step1_bytes": states + buf + torchao_autotune_bytes(n, 2),
        "step2_bytes": buf,
        "states_bytes": states,
    }


def measure(rows: int, cols: int) -> dict[str, Any]:
    import torch
    from torchao.prototype.low_bit_optim import AdamW8bit

    p = torch.nn.Parameter(torch.randn(rows, cols, dtype=torch.bfloat16, device="cuda"))
    p.grad = torch.randn_like(p)
    opt = AdamW8bit([p], lr=1e-4)
    out: dict[str, Any] = {}
    for step in (1, 2):
        torch.cuda.synchronize()
        base = torch.cuda.memory_stats()["active_bytes.all.current"]
        torch.cuda.reset_peak_memory_stats()
        opt.step()
        torch.cuda.synchronize()
        out[f"step{step}_bytes"] = torch.cuda.memory_stats()["active_bytes.all.peak"] - base
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=128256)
    parser.add_argument("--cols", type=int, default=3072)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    want = expected(args.rows * args.cols)
    try:
        import torch
        import torchao
    except ImportError as exc:
        print(f"needs torch and torchao: {exc}; oomkit expects {want}")
        return 0
    if not torch.cuda.is_available():
        print(f"no CUDA device; oomkit expects {want}")
        return 0
    got = measure(args.rows, args.cols)
    doc = {
        "environment": {
            "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "torchao": torchao.__version__,
        },
        "parameter": [args.rows, args.cols],
        "measured": got,
        "oomkit": want,
    }
    text = json.dumps(doc, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

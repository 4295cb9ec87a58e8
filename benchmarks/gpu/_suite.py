"""The shared driver of the GPU validation scripts: environment record, cases, JSON output."""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
from collections.abc import Callable, Sequence
from typing import Any


def read_results(path: str, key: str) -> dict[str, Any] | None:
    """A results file written by these scripts, or None after printing one line saying why."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"error: cannot read results file '{path}': {type(e).__name__}: {e}"[:300])
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        print(f"error: '{path}' is not a results file of these scripts (no '{key}' list)")
        return None
    return doc


def gpu_modules() -> tuple[Any, Any] | None:
    """(torch, transformers) when both import and CUDA is visible; else print why and None."""
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"skipped: {e.name} is not installed (needs torch + transformers + CUDA)")
        return None
    if not torch.cuda.is_available():
        print("skipped: no CUDA GPU visible")
        return None
    return torch, transformers


def environment(torch: Any, transformers: Any) -> dict[str, Any]:
    """GPU, driver, CUDA, torch, transformers and Python versions of this machine."""
    return {
        "gpu": torch.cuda.get_device_name(0),
        "gpu_total_bytes": torch.cuda.get_device_properties(0).total_memory,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "driver": subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip(),
    }


def run_suite(
    description: str,
    default_out: str,
    cases: Sequence[tuple[Any, ...]],
    run_case: Callable[..., dict[str, Any]],
) -> int:
    """Run every case on the first CUDA GPU and write results with GPU/driver/torch versions;
    print "skipped: ..." and return 0 where torch, transformers or CUDA is missing."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", default=default_out)
    args = ap.parse_args()
    mods = gpu_modules()
    if mods is None:
        return 0
    torch, transformers = mods
    env = environment(torch, transformers)
    results = []
    for case in cases:
        try:
            results.append(run_case(*case))
        except Exception as e:  # a failing case is recorded, not fatal
            results.append({"model": case[0], "error": f"{type(e).__name__}: {e}"[:500]})
        print(json.dumps(results[-1]), flush=True)
    with open(args.out, "w") as f:
        json.dump({"environment": env, "results": results}, f, indent=1)
    print(f"wrote {args.out}")
    return 0

"""Shared readers for the tests on the committed GPU results (``benchmarks/gpu/results/``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "gpu" / "results"


def load_script(name: str) -> Any:
    """The module ``benchmarks/gpu/<name>.py`` (its own imports resolved from that folder)."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "gpu" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def replay_events(case: dict[str, Any]) -> list[tuple[int, int]]:
    """A compact allocator trace (n > 0 allocates n bytes under the next key, n < 0 frees key
    -n-1) as :func:`oomkit.inprocess.probe_allocator.replay` events."""
    out: list[tuple[int, int]] = []
    key = 0
    for n in case["events"]:
        if n > 0:
            out.append((key, n))
            key += 1
        else:
            out.append((-n - 1, -1))
    return out

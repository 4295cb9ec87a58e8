"""benchmarks/gpu/validate_training.py runs its real code path on the CPU (smoke); the memory
measurements need CUDA."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu" / "validate_training.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("validate_training", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_validate_training_cpu_smoke() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    # a real Qwen2.5 architecture (1 layer) trains two steps on the CPU; formula and probe agree
    out = _load().run_case("qwen2.5-0.5b", {"num_hidden_layers": 1}, 1, 32, False, "sdpa", "cpu")
    assert out["measured"]["max_memory_allocated_bytes"] is None
    formula, probe = out["formula_peak_allocated_bytes"], out["probe_peak_bytes"]
    assert abs(formula - probe) / probe < 0.05
    assert probe > out["measured"]["parameter_bytes"]


def test_skips_cleanly_without_cuda() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():  # pragma: no cover - only on a GPU machine
        pytest.skip("CUDA present: the script would really run")
    r = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, check=False
    )
    assert r.returncode == 0, r.stderr
    assert "skip" in r.stdout.lower()

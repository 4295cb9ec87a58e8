"""``-r llama-cpp-python``: llama.cpp's estimator with ``Llama(...)``'s own defaults, n_ctx 512
and n_batch 512 (llama_cpp/llama.py l.75-77 of v0.3.16-v0.3.35), not llama-cli's ``-c 4096``.

Real record: heldout31's ``nb-gemma-cookbook-llamacpp-gemma-2-2b-f32-t4-ngl-all-ok`` (the Gemma
cookbook's ``Llama(model_path=model_path, n_gpu_layers=-1)``, no n_ctx; the notebook's own
verbose load prints ``llama_new_context_with_model: n_ctx = 512``) on a T4."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from oomkit.estimate.llamacpp_outputs import C_API_APPS, server_default
from oomkit.estimate.llamacpp_python import N_BATCH, N_CTX, llama_cpp_python_defaults
from oomkit.estimate.registry import normalize_runtime
from oomkit.spec.settings import InferenceSettings

RECORD_ID = "nb-gemma-cookbook-llamacpp-gemma-2-2b-f32-t4-ngl-all-ok"
RECORDS = Path(__file__).parent / "fixtures" / "verdict_runs" / "heldout31.jsonl"


def _record() -> dict[str, Any]:
    for line in RECORDS.read_text().splitlines():
        if line.strip() and json.loads(line)["id"] == RECORD_ID:
            rec: dict[str, Any] = json.loads(line)
            return rec
    raise AssertionError(RECORD_ID)


def _estimate(*args: str) -> dict[str, Any]:
    rec = _record()
    ask = [rec["model"], "-q", rec["quant"], "-g", rec["gpu"], "-ngl", "99"]
    cmd = [sys.executable, "-m", "oomkit", "estimate", *ask, *args, "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def test_record_is_the_bindings_default_context() -> None:
    rec = _record()
    assert rec["ctx"] == N_CTX
    assert "n_ctx not passed" in rec["evidence"]
    assert "n_ctx = 512" in rec["evidence"]


def test_llama_cpp_python_runs_the_c_api_with_llama_defaults() -> None:
    doc = _estimate("-r", "llama-cpp-python")
    assert doc["settings"]["ctx"] == N_CTX
    assert doc["settings"]["batch_size"] == N_BATCH
    assert not doc["settings"].get("llama_server")  # the C API's output rows, no --fit
    assert any("llama-cpp-python's Llama(...) defaults" in a for a in doc["assumptions"])
    same = _estimate("-r", "llama.cpp", "--no-llama-server", "-c", "512", "-b", "512")
    assert [d["total_bytes"] for d in doc["devices"]] == [d["total_bytes"] for d in same["devices"]]
    assert doc["verdict"] == "fits"  # the record's outcome: ok


def test_given_values_are_kept() -> None:
    doc = _estimate("-r", "llama-cpp-python", "-c", "4096", "-b", "2048")
    assert (doc["settings"]["ctx"], doc["settings"]["batch_size"]) == (4096, 2048)
    assert not any("Llama(...) defaults" in a for a in doc["assumptions"])


def test_library_names() -> None:
    for name in ("llama-cpp-python", "llama_cpp_python", "LLAMA-CPP-PYTHON"):
        assert normalize_runtime(name) == "llama.cpp"
        filled, note = llama_cpp_python_defaults(InferenceSettings(runtime=name))
        assert (filled.ctx, filled.batch_size) == (N_CTX, N_BATCH)
        assert note is not None
        assert server_default(filled).llama_server is None
    assert "llama-cpp-python" in C_API_APPS
    plain, note = llama_cpp_python_defaults(InferenceSettings(runtime="llama.cpp"))
    assert note is None
    assert (plain.ctx, plain.batch_size) == (None, None)

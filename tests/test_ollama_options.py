"""What Ollama can set shapes its estimate, and what it cannot is ignored, as the CLI says.

Before: ``-ngl`` (Ollama's num_gpu) and ``--kv-dtype`` (OLLAMA_KV_CACHE_TYPE) were reported as
"ignored" while the estimate and the emitted command used them, and ``-ts``/``-sm``/
``--n-cpu-moe`` (no Ollama option) were reported as ignored while they moved the numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest


def _estimate(*args: str) -> tuple[int, dict[str, Any] | None, str]:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", "--runtime", "ollama", "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    doc = json.loads(res.stdout) if res.stdout.strip() else None
    return res.returncode, doc, res.stderr


def _totals(doc: dict[str, Any] | None) -> tuple[list[int], int]:
    assert doc is not None
    return [d["total_bytes"] for d in doc["devices"]], doc["host"]["total_bytes"]


@pytest.mark.parametrize(
    ("model", "gpu", "args", "flag"),
    [
        ("qwen3-30b-a3b", "rtx-4090", ("--n-cpu-moe", "10"), "--n-cpu-moe"),
        ("llama-3.1-70b", "2x3090", ("-ts", "3,1"), "--tensor-split"),
        ("llama-3.1-70b", "2x3090", ("-sm", "row"), "--split-mode"),
    ],
)
def test_llamacpp_only_options_are_ignored_for_real(
    model: str, gpu: str, args: tuple[str, ...], flag: str
) -> None:
    _, plain, _ = _estimate(model, "--gpu", gpu)
    code, doc, err = _estimate(model, "--gpu", gpu, *args)
    assert code in (0, 3, 4)
    assert f"ollama does not use {flag}: ignored" in err
    assert _totals(doc) == _totals(plain)


def test_num_gpu_and_kv_type_are_used_and_not_called_ignored() -> None:
    _, plain, _ = _estimate("qwen3-30b-a3b", "--gpu", "rtx-4090", "--ctx", "32k")
    _, ngl, err_ngl = _estimate("qwen3-30b-a3b", "--gpu", "rtx-4090", "--ctx", "32k", "-ngl", "10")
    _, kv, err_kv = _estimate(
        "qwen3-30b-a3b", "--gpu", "rtx-4090", "--ctx", "32k", "--kv-dtype", "q8_0"
    )
    assert "ignored" not in err_ngl + err_kv
    assert _totals(ngl)[0][0] < _totals(plain)[0][0]  # fewer layers on the GPU
    assert kv is not None
    assert plain is not None
    assert kv["devices"][0]["kv_cache_bytes"] < plain["devices"][0]["kv_cache_bytes"]
    assert kv["settings"]["cache_type_k"] == kv["settings"]["cache_type_v"] == "q8_0"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("-ctk", "q8_0", "-ctv", "f16"), "one KV cache type for K and V"),
        (("--kv-dtype", "q4_1"), "OLLAMA_KV_CACHE_TYPE takes f16, q8_0, q4_0, got q4_1"),
    ],
)
def test_kv_types_ollama_cannot_run_are_refused(args: tuple[str, ...], needle: str) -> None:
    code, doc, err = _estimate("llama-3.1-8b", "--gpu", "rtx-4090", *args)
    assert code == 2
    assert doc is None
    assert err.startswith("Error: ")
    assert needle in err

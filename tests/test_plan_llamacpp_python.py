"""``plan -r llama-cpp-python``: the binding's own ``Llama(...)`` call (keyword names of
llama_cpp/llama.py, ``GGML_TYPE_*`` constants of llama_cpp/llama_cpp.py) and ``Llama``'s
defaults (n_ctx 512, n_batch 512), not llama-server's ``-c 4096`` line."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from oomkit.planner.commands_llamacpp_python import llama_cpp_python_command
from oomkit.spec.settings import InferenceSettings


def _plan(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "oomkit", "plan", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def test_plan_emits_the_llama_call_with_the_bindings_context() -> None:
    res = _plan("llama-3.1-8b", "--gpu", "rtx-3060", "-r", "llama-cpp-python")
    assert res.returncode == 0, res.stderr
    assert "asked: runtime llama-cpp-python, context 512" in res.stdout
    assert "llama-server" not in res.stdout
    assert 'Llama(model_path="llama-3.1-8b-Q8_0.gguf", n_ctx=512, n_gpu_layers=-1, ' in res.stdout
    assert "python -m llama_cpp.server --model llama-3.1-8b-Q8_0.gguf --n_ctx 512" in res.stdout
    doc: dict[str, Any] = json.loads(
        _plan("llama-3.1-8b", "--gpu", "rtx-3060", "-r", "llama-cpp-python", "--json").stdout
    )
    best = doc["plans"][0]
    assert best["launcher"] == "llama-cpp-python"
    assert best["settings"]["batch_size"] == 512  # Llama(n_batch=512), not the C API's 2048
    assert best["settings"]["ctx"] == 512


def test_plan_takes_the_bindings_release() -> None:
    # 0.3.16 vendors llama.cpp of 2025-08-14, before -fa auto (PR #15434, 2025-08-30): the
    # estimate runs without flash attention and the call leaves Llama's flash_attn=False
    res = _plan(
        "llama-3.1-8b",
        "--gpu",
        "rtx-3060",
        "-r",
        "llama-cpp-python",
        "--runtime-version",
        "0.3.16",
    )
    assert res.returncode == 0, res.stderr
    assert "n_gpu_layers=-1)" in res.stdout
    assert "flash_attn" not in res.stdout.split("run:")[1].split("Alternative")[0]


def test_call_keywords() -> None:
    s = InferenceSettings(ctx=8192, n_gpu_layers=20, cache_type_k="q8_0", cache_type_v="q8_0")
    out = llama_cpp_python_command(s, "m.gguf", 33, True)
    assert "import llama_cpp\n" in out
    assert (
        'Llama(model_path="m.gguf", n_ctx=8192, n_gpu_layers=20, flash_attn=True, '
        "type_k=llama_cpp.GGML_TYPE_Q8_0, type_v=llama_cpp.GGML_TYPE_Q8_0)"
    ) in out
    assert "--n_gpu_layers 20 --flash_attn true --type_k 8 --type_v 8" in out  # GGML_TYPE_Q8_0 = 8
    many = llama_cpp_python_command(InferenceSettings(ctx=4096, parallel=4), "m.gguf", 33, False)
    assert many.startswith("# 4 parallel sequences: Llama(...) has no keyword")
    assert "n_gpu_layers=-1)" in many


def test_estimate_emit_is_the_call_estimated() -> None:
    # estimate's --emit same: Llama's own n_gpu_layers=0 / flash_attn=False, as estimated
    cmd = [sys.executable, "-m", "oomkit", "estimate", "llama-3.1-8b", "--gpu", "rtx-3060"]
    res = subprocess.run(
        [*cmd, "-r", "llama-cpp-python", "--emit", "same"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    run = res.stdout.split("run:\n", 1)[1]
    assert 'Llama(model_path="llama-3.1-8b-Q4_K_M.gguf", n_ctx=512, n_gpu_layers=0)' in run
    assert "llama-server" not in run

"""SGLang refuses a ``--context-length`` above the model's ``max_position_embeddings`` unless
``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`` (as vLLM does with its variable): oomkit
estimated a 1M-token pool for an engine that would not start. Usage errors that already name
their flag are not prefixed with it again ("--tp: --tp 3: ...")."""

from __future__ import annotations

import os
import subprocess
import sys


def _estimate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_LONG_MAX_MODEL_LEN")}
    full.pop("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", "llama-3.1-8b", "--gpu", "h100-sxm5", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=full,
    )


def test_sglang_refuses_a_context_above_the_model() -> None:
    res = _estimate("--runtime", "sglang", "--ctx", "1M")
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(
        "Error: --ctx 1048576 is greater than the model's max_position_embeddings (131072); "
        "SGLang refuses this unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
    )


def test_sglang_override_variable_makes_it_a_note() -> None:
    res = _estimate(
        "--runtime",
        "sglang",
        "--ctx",
        "256k",
        env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"},
    )
    assert res.returncode in (0, 3, 4), res.stderr
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set: SGLang only warns" in res.stdout


def test_an_error_naming_its_flag_is_not_prefixed_again() -> None:
    res = _estimate("--runtime", "vllm", "--tp", "3", "--gpu", "4xh100-sxm5")
    assert res.returncode == 2
    assert res.stderr.startswith("Error: --tp 3: vllm refuses it (the attention heads")

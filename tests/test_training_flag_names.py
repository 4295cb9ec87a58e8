"""Training usage errors name the flag typed, and LoRA options are refused with full
fine-tuning (``--train full --lora-rank 8`` was ignored silently)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--train", "full", "--lora-rank", "8"), "--lora-rank sizes LoRA adapters"),
        (("--train", "full", "--lora-targets", "q_proj"), "--lora-targets sizes LoRA adapters"),
        (("--train", "qlora", "--mixed-precision", "no"), "Invalid --mixed-precision 'no'"),
        (("--train", "full", "--sp"), "Invalid --sp: sequence parallelism"),
        (("--train", "full", "--zero", "2", "--offload-params"), "Invalid --offload-params"),
    ],
)
def test_training_usage_errors_name_the_flag(args: tuple[str, ...], needle: str) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", "llama-3.1-8b", "--gpu", "h100-sxm5", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert needle in res.stderr
    for field in ("mixed_precision", "offload_params", "lora_rank"):
        assert field not in res.stderr

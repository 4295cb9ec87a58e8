"""``estimate --emit TARGET``: a target that is not a runtime is refused before the estimate
(it printed the whole estimate and "run:", then "Unknown runtime", exit 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _estimate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", "llama-3.1-8b", "--gpu", "rtx-4090", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("nope", "Unknown runtime 'nope'"),
        ("deepspeed", "--emit deepspeed is a training launcher: add --train"),
    ],
)
def test_bad_emit_target_is_refused_before_the_estimate(target: str, needle: str) -> None:
    res = _estimate("--emit", target)
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert res.stderr.startswith("Error: ")
    assert needle in res.stderr


def test_a_runtime_target_still_emits() -> None:
    res = _estimate("--emit", "vllm")
    assert res.returncode == 0, res.stderr
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct" in res.stdout

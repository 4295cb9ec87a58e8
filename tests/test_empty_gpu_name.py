"""``--gpu ''`` (a script's unset ``$GPU``) is refused, not read as "no GPU named": it used to
give an estimate against a GPU of unknown capacity, exit 0 ("fits" for any model)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "args",
    [
        ("estimate", "llama-3.1-8b", "--gpu", ""),
        ("estimate", "llama-3.1-8b", "--gpu", "  "),
        ("estimate", "llama-3.1-8b", "--train", "lora", "--gpu", ""),
        ("plan", "llama-3.1-8b", "--gpu", ""),
        ("models", "--fits", ""),
        ("doctor", "CUDA out of memory. Tried to allocate 2.00 GiB", "--gpu", ""),
    ],
)
def test_empty_gpu_name_is_a_usage_error(args: tuple[str, ...]) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert res.stderr.startswith("Error: no GPU named in '")
    assert "Traceback" not in res.stderr


def test_no_gpu_option_still_estimates_without_a_capacity() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", "llama-3.1-8b", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert '"fits": null' in res.stdout

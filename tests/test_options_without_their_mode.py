"""Options documented "With --fits" / "With --for" given without it are usage errors: they
were ignored silently (``oomkit models --ctx 8k`` listed the catalog, ``oomkit gpus --tps 5``
went to live GPU detection)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _oomkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("models", "--ctx", "8k"), "--ctx is used with --fits GPU"),
        (("models", "--vram", "24GiB"), "--vram is used with --fits GPU"),
        (("models", "llama", "-r", "vllm"), "--runtime is used with --fits GPU"),
        (("gpus", "--tps", "5"), "--tps is used with --for MODEL"),
        (("gpus", "--catalog", "-q", "Q4_K_M"), "--quant is used with --for MODEL"),
        (("gpus", "--ctx", "4096"), "--ctx is used with --for MODEL"),
    ],
)
def test_option_without_its_mode_is_a_usage_error(args: tuple[str, ...], needle: str) -> None:
    res = _oomkit(*args)
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert res.stderr.startswith("Error: ")
    assert needle in res.stderr


@pytest.mark.parametrize(
    "args",
    [("models", "llama"), ("models", "--fits", "rtx-4090", "--ctx", "8k"), ("gpus", "--catalog")],
)
def test_the_modes_themselves_still_work(args: tuple[str, ...]) -> None:
    assert _oomkit(*args).returncode == 0

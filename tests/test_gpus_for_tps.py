"""``oomkit gpus --for MODEL --tps N``: a speed that is not a number is refused, not answered
(NaN filtered nothing and listed every GPU; inf listed none, exit 3)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from oomkit.errors import InvalidSettingError
from oomkit.planner.reverse import gpus_for


@pytest.mark.parametrize("value", ["nan", "inf", "NaN", "Infinity"])
def test_cli_refuses_a_non_finite_tps(value: str) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "gpus", "--for", "llama-3.1-8b", "--tps", value],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("Error: --tps must be a finite number")


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_library_refuses_a_non_finite_min_tps(value: float) -> None:
    with pytest.raises(InvalidSettingError, match="min_tps must be a finite number"):
        gpus_for("llama-3.1-8b", min_tps=value, offline=True)


def test_no_gpu_fast_enough_says_it_is_the_speed(capsys: pytest.CaptureFixture[str]) -> None:
    """--tps above every card: the answer names the speed, not "no GPU runs llama-3.1-8b"
    (every card from 12 GB up runs it)."""
    from oomkit.cli import main

    capsys.readouterr()
    assert main(["gpus", "--for", "llama-3.1-8b", "--tps", "100000"]) == 3
    err = capsys.readouterr().err
    assert "at 100000+ tok/s decode" in err
    assert "drop --tps" in err
    assert main(["gpus", "--for", "llama-3.1-8b"]) == 0

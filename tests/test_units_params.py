"""Parameter counts print in a unit that shows them (a tiny model printed "0.00 B params");
JSON keeps the integer."""

from __future__ import annotations

import json
import subprocess
import sys

from oomkit.units import format_params


def test_units_by_size() -> None:
    assert format_params(8_030_261_248) == "8.03 B"
    assert format_params(405_000_000_000) == "405.00 B"
    assert format_params(999_999_999) == "1000.00 M"
    assert format_params(124_439_808) == "124.44 M"
    assert format_params(1_000_000) == "1.00 M"
    assert format_params(202_048) == "202.05 K"
    assert format_params(12) == "12"
    assert format_params(0) == "0"


def _run(*args: str) -> str:
    cmd = [sys.executable, "-m", "oomkit", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode in (0, 3, 4), res.stderr
    return res.stdout


def test_estimate_and_plan_headers_of_a_small_model() -> None:
    doc = json.loads(_run("estimate", "pythia-70m", "--gpu", "rtx-4090", "--json"))
    n = doc["model"]["params"]
    assert isinstance(n, int)  # the JSON number is unchanged: an integer count
    assert 10**6 <= n < 10**9
    est = _run("estimate", "pythia-70m", "--gpu", "rtx-4090")
    assert f"(GPTNeoXForCausalLM, {format_params(n)} params)" in est
    assert "0.07 B params" not in est
    assert " M params)" in est
    plan = _run("plan", "pythia-70m", "--gpu", "rtx-4090")
    assert f"(GPTNeoXForCausalLM, {format_params(n)} params) on" in plan

"""vLLM plans raise --gpu-memory-utilization when the pool is short and the GPU has room."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.planner.core import plan
from oomkit.planner.request import PlanRequest


def _plans(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, object]]:
    capsys.readouterr()
    code = main(["plan", *argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    plans: list[dict[str, object]] = json.loads(out)["plans"]
    return plans


ARGS = ["llama-3.3-70b", "-r", "vllm", "--quant", "fp8", "--gpu", "h100-sxm", "--ctx", "32k"]


def test_review_plan_raises_util_to_keep_the_context(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 14: the plan cut the context to 14848 although 0.96 fits 32768."""
    best: dict[str, Any] = _plans(capsys, ARGS)[0]
    assert best["settings"]["ctx"] == 32768
    util = best["settings"]["gpu_memory_utilization"]
    assert 0.92 < util < 1.0
    assert f"--gpu-memory-utilization {util:g}" in best["command"]
    assert any("raised so the KV pool holds" in c for c in best["changes"])


def test_raised_util_verdict_fits_not_tight() -> None:
    hw = hardware_for(parse_gpu_list("h100-sxm"))
    r = plan("llama-3.3-70b", hw, PlanRequest(runtime="vllm", ctx=32768, quant="fp8"))
    for p in r.plans:
        util = p.estimate.settings.get("gpu_memory_utilization")
        default = p.estimate.runtime_details.get("default_util")
        if isinstance(util, float) and isinstance(default, float) and util > default:
            assert verdict(p.estimate).level == "fits"
            assert not p.estimate.blockers


def test_user_utilization_is_never_raised(capsys: pytest.CaptureFixture[str]) -> None:
    for p in _plans(capsys, [*ARGS, "--gpu-memory-utilization", "0.9"]):
        assert isinstance(p["settings"], dict)
        assert p["settings"].get("gpu_memory_utilization") in (None, 0.9)

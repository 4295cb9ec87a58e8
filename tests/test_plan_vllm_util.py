"""vLLM plans raise --gpu-memory-utilization when the pool is short and the GPU has room."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.verdict import Platform, device_segment, verdict
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
    """Review 14: the plan cut the context to 14848 although 0.96 fits 32768. With current vLLM's
    graph estimate charged to the budget (PR #38284) at its size, 1.79 GiB for 80 layers x 51
    PIECEWISE + 51 FULL sizes at the H100 default of 1024 sequences (oomkit.estimate.vllm_cudagraph;
    the fixed 512 MiB before), a raise alone no longer holds 32768 "fits" at 1024 sequences (0.96:
    a 29104-token pool; 0.97: the 1024-row sampler terms make the device margin tight), so the
    raise keeps the context together with a sequence cap (623).

    Session 21 re-derived the order (oomkit.planner.ranking): the user typed 32768, and a
    sequence cap costs throughput only while a shorter --max-model-len changes what the server
    can do, so the raise with the cap ranks first (it ranked second, behind the context cut to
    22016 at a raised 0.95, which stays as an alternative)."""
    plans = _plans(capsys, ARGS)
    kept = [p for p in plans if isinstance(p["settings"], dict) and p["settings"]["ctx"] == 32768]
    raised: dict[str, Any] = next(
        p for p in kept if p["settings"].get("gpu_memory_utilization", 0.92) > 0.92
    )
    util = raised["settings"]["gpu_memory_utilization"]
    assert 0.92 < util < 1.0
    assert f"--gpu-memory-utilization {util:g}" in raised["command"]
    assert any("raised so the KV pool holds" in c for c in raised["changes"])
    # the best plan keeps the asked context: a raised utilization and a sequence cap
    best: dict[str, Any] = plans[0]
    assert best["settings"]["ctx"] == 32768
    assert any("raised so the KV pool holds" in c for c in best["changes"])
    cap = best["settings"]["max_num_seqs"]
    assert 1 < cap < 1024
    assert f"--max-num-seqs {cap}" in best["command"]
    # the context cut is still offered, below it
    assert any(p["settings"]["ctx"] < 32768 for p in plans[1:])


def test_raised_util_verdict_fits_not_tight() -> None:
    """Judged as `oomkit estimate --gpu h100-sxm` judges it (cli/estimate_run.py: the card's
    catalog segment, no desktop-display share on a datacenter part)."""
    hw = hardware_for(parse_gpu_list("h100-sxm"))
    platform = Platform(segments=tuple(device_segment(d) for d in hw.devices))
    r = plan("llama-3.3-70b", hw, PlanRequest(runtime="vllm", ctx=32768, quant="fp8"))
    raised = 0
    for p in r.plans:
        util = p.estimate.settings.get("gpu_memory_utilization")
        default = p.estimate.runtime_details.get("default_util")
        if isinstance(util, float) and isinstance(default, float) and util > default:
            raised += 1
            assert verdict(p.estimate, platform).level == "fits"
            assert not p.estimate.blockers
    assert raised  # the promise is checked on a real raise


def test_user_utilization_is_never_raised(capsys: pytest.CaptureFixture[str]) -> None:
    for p in _plans(capsys, [*ARGS, "--gpu-memory-utilization", "0.9"]):
        assert isinstance(p["settings"], dict)
        assert p["settings"].get("gpu_memory_utilization") in (None, 0.9)


def test_lowered_util_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 19: the V0 plan proposed 0.81 and a shorter context than the 'largest that fits'
    at 0.9 in its rejected list, without saying why: at 0.9 what vLLM 0.5.4 leaves free is
    within the band of the CUDA graphs it captures after the KV cache (outside its budget)."""
    argv = ["llama-3.1-8b", "--gpu", "rtx-3090", "-r", "vllm", "--runtime-version", "0.5.4"]
    best: dict[str, Any] = _plans(capsys, argv)[0]
    util = best["settings"]["gpu_memory_utilization"]
    assert util < 0.9
    assert f"--gpu-memory-utilization {util:g}" in best["command"]
    note = next(c for c in best["changes"] if c.startswith(f"--gpu-memory-utilization {util:g}"))
    assert "default 0.9; lowered because at 0.9" in note
    assert "CUDA graphs captured after the KV cache" in note
    # the same note in the text the user reads
    capsys.readouterr()
    assert main(["plan", *argv]) == 0
    assert "lowered because at 0.9" in capsys.readouterr().out


def test_default_util_plan_has_no_lowered_note(capsys: pytest.CaptureFixture[str]) -> None:
    for p in _plans(capsys, ["llama-3.1-8b", "--gpu", "h100-sxm", "-r", "vllm", "--ctx", "32k"]):
        assert isinstance(p["changes"], list)
        assert not any("lowered because" in str(c) for c in p["changes"])

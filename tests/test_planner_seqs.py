"""The planner's concurrent-sequence lever: vLLM --max-num-seqs, SGLang --max-running-requests."""

from __future__ import annotations

import dataclasses

import pytest

import oomkit
from oomkit.cli import main
from oomkit.estimate.verdict import Platform, device_segment, verdict
from oomkit.planner.commands import parse_command
from oomkit.planner.core import plan, suggest_changes
from oomkit.planner.request import PlanRequest
from oomkit.planner.search import Searcher
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings

_VISION = "llama-3.2-11b-vision"


def _a100() -> Hardware:
    return Hardware(devices=(oomkit.find_gpu("a100-80gb-sxm4").to_device_target(),))


def test_v0_mllama_plan_caps_the_sequences() -> None:
    """vLLM 0.6.3 profiles 256 dummy images by default (vllm#9445): the plan lowers
    --max-num-seqs to the largest value that fits instead of giving up."""
    hw = _a100()
    base = InferenceSettings(runtime_version="0.6.3")
    r = plan(_VISION, hw, PlanRequest(runtime="vllm"), base=base)
    assert r.fits, r.impossible
    top = r.plans[0]
    n = top.settings.max_num_seqs
    assert n is not None
    assert 1 <= n < 256
    assert parse_command("vllm", top.command)["--max-num-seqs"] == [str(n)]
    assert any("--max-num-seqs" in c for c in top.changes)
    # the suggested setting really fits when estimated on its own, judged as `oomkit estimate
    # --gpu a100-80gb-sxm4` judges it (cli/estimate_run.py: the card's catalog segment, so no
    # desktop-display share on a datacenter part; Platform() assumes one may drive a display)
    est = oomkit.estimate_model(_VISION, top.settings, hw)
    assert est.fits is True
    assert verdict(est, Platform(segments=(device_segment(hw.devices[0]),))).level == "fits"
    # vLLM 0.6.3 runs Mllama eager (ModelConfig._verify_cuda_graph, until PR #14917): no graphs
    assert est.runtime_details["cudagraph_bytes"] == 0
    assert est.settings["enforce_eager"] is True
    # ... and it is the largest: one more sequence is not a plan the planner accepts
    s = Searcher(oomkit.load_model(_VISION), "vllm", hw, PlanRequest(runtime="vllm"), base)
    cand = next(e.cand for e in s.search() if e.cand.max_num_seqs == n)
    assert s.evaluate(cand).fits
    assert not s.evaluate(dataclasses.replace(cand, max_num_seqs=n + 1)).fits
    # the runtime's default (256) does not fit at any context: the cap is what helps
    assert s.seqs_default[cand.quant] == 256


def test_the_cap_never_goes_below_the_asked_parallel() -> None:
    hw = _a100()
    base = InferenceSettings(runtime_version="0.6.3")
    r = plan(_VISION, hw, PlanRequest(runtime="vllm", parallel=8), base=base)
    assert r.fits
    assert all((p.settings.max_num_seqs or 256) >= 8 for p in r.plans)


def test_text_models_keep_the_default_cap() -> None:
    """Where the default fits, the planner does not touch the cap."""
    hw = Hardware(devices=(oomkit.find_gpu("h100-sxm5-80gb").to_device_target(),))
    r = plan("llama-3.1-8b", hw, PlanRequest(runtime="vllm", ctx=32768))
    assert r.plans[0].settings.max_num_seqs is None
    assert "--max-num-seqs" not in r.plans[0].command


def test_estimate_suggests_the_cap_it_has() -> None:
    """estimate's suggestions consult the same levers: an explicit --max-num-seqs 256 is
    lowered, and the CLI no longer says nothing can make it fit."""
    hw = _a100()
    settings = InferenceSettings(runtime="vllm", runtime_version="0.6.3", max_num_seqs=256)
    plans = suggest_changes(_VISION, settings, hw, offline=True)
    assert plans
    assert (plans[0].settings.max_num_seqs or 256) < 256
    assert oomkit.estimate_model(_VISION, plans[0].settings, hw).fits is True


def test_cli_estimate_hint(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", _VISION, "-r", "vllm", "--gpu", "a100-80gb-sxm4"]
    rc = main([*argv, "--runtime-version", "0.6.3", "--offline"])
    out = capsys.readouterr().out
    assert rc == 3
    assert "Nothing the planner can change" not in out
    assert "--max-num-seqs" in out
    rc = main(
        [
            "plan",
            _VISION,
            "-r",
            "vllm",
            "--gpu",
            "a100-80gb-sxm4",
            "--runtime-version",
            "0.6.3",
            "--offline",
        ]
    )
    assert rc == 0
    assert "--max-num-seqs" in capsys.readouterr().out


def test_sglang_honours_max_running_requests() -> None:
    """init_memory_pool(max_num_reqs=server_args.max_running_requests): the req_to_token pool
    holds that many rows (+1) of context_len + 4 int32."""
    hw = _a100()
    ctx = 32768
    s = InferenceSettings(runtime="sglang", ctx=ctx, max_num_seqs=8)
    est = oomkit.estimate_model("llama-3.1-8b", s, hw)
    assert est.runtime_details["max_num_reqs"] == 8
    pool = next(c for c in est.devices[0].components if c.label == "req_to_token pool")
    assert pool.n_bytes == 9 * (ctx + 4) * 4
    cmd = parse_command(
        "sglang",
        plan("llama-3.1-8b", hw, PlanRequest(runtime="sglang", ctx=ctx, parallel=4))
        .plans[0]
        .command,
    )
    assert cmd["--max-running-requests"] == ["4"]


def test_nothing_fits_says_the_cap_was_tried() -> None:
    hw = Hardware(devices=(oomkit.find_gpu("rtx-4090").to_device_target(),))
    r = plan("llama-3.1-405b", hw, PlanRequest(runtime="vllm"))
    assert not r.fits
    assert r.impossible is not None
    assert "--max-num-seqs 1 needs" in r.impossible

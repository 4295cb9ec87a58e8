"""The flags of the llama-server command ``oomkit plan`` prints, pasted into ``oomkit estimate``,
estimate that run: ``-fa on`` (llama-server's valued form since b6325) failed with "Got
unexpected extra argument (on)"."""

from __future__ import annotations

import json
import shlex

import pytest

from conftest import run_cli


@pytest.mark.parametrize(
    ("model", "gpu", "ctx"),
    [("llama-3.1-8b", "rtx-3060", "32768"), ("qwen3-30b-a3b", "rtx-4060-ti-16gb", "32768")],
)
def test_plan_flags_estimate_as_planned(
    capsys: pytest.CaptureFixture[str], model: str, gpu: str, ctx: str
) -> None:
    code, out, _ = run_cli(
        capsys, "plan", model, "--gpu", gpu, "--ram", "32GiB", "-c", ctx, "--json"
    )
    assert code == 0
    for p in json.loads(out)["plans"]:
        argv = shlex.split(p["command"])
        assert argv[:2] == ["llama-server", "-m"]
        flags = argv[3:]  # after `llama-server -m FILE`
        assert "-fa" in flags
        quant = p["settings"]["quant"]
        code, out, err = run_cli(
            capsys, "estimate", model, "--gpu", gpu, "--ram", "32GiB", "-q", quant, *flags, "--json"
        )
        assert code in (0, 4), (p["command"], err)
        est = json.loads(out)
        assert est["settings"]["flash_attn"] is (flags[flags.index("-fa") + 1] == "on")
        assert est["settings"]["ctx"] == int(flags[flags.index("-c") + 1])


@pytest.mark.parametrize(("value", "expected"), [("on", True), ("off", False), ("auto", True)])
def test_fa_value_forms(capsys: pytest.CaptureFixture[str], value: str, expected: bool) -> None:
    for form in (["-fa", value], [f"--flash-attn={value}"]):
        code, out, err = run_cli(
            capsys, "estimate", "llama-3.1-8b", "--gpu", "rtx-4090", *form, "--json"
        )
        assert code == 0, err
        assert json.loads(out)["settings"]["flash_attn"] is expected

"""Review 19: ``--ctx max`` is shown as asked ("max"), finds at least the default plan's context,
and a context that is neither a count nor ``max`` says ``max`` is accepted (CLI and web)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from oomkit.cli import cli
from oomkit.cli.params import parse_gpu_list
from oomkit.hardware.targets import hardware_for
from oomkit.planner.core import plan
from oomkit.planner.request import PlanRequest
from oomkit.units import CONTEXT_FORMS, is_context_max
from oomkit.web.app import create_app

ARGS = ["plan", "llama-3.1-8b", "--gpu", "rtx-4090", "-r", "vllm"]


def test_header_says_max_was_asked() -> None:
    res = CliRunner().invoke(cli, [*ARGS, "--ctx", "max"])
    assert res.exit_code == 0, res.output
    asked = next(x for x in res.output.splitlines() if x.startswith("asked:"))
    assert "context max (the model's 131072)" in asked
    head = next(x for x in res.output.splitlines() if x.startswith("Plan ["))
    assert "(asked 131072)" not in head
    assert "asked max, the model's 131072" in head
    doc = json.loads(CliRunner().invoke(cli, [*ARGS, "--ctx", "max", "--json"]).output)
    assert doc["request"]["ctx_from_max"] is True


@pytest.mark.parametrize("gpu", ["rtx-4090", "rtx-3090", "l4"])
def test_ctx_max_is_at_least_the_default_plan(gpu: str) -> None:
    hw = hardware_for(parse_gpu_list(gpu))
    default = plan("llama-3.1-8b", hw, PlanRequest(runtime="vllm")).plans[0]
    largest = plan("llama-3.1-8b", hw, PlanRequest(runtime="vllm", ctx_max=True)).plans[0]
    ctx_default = default.estimate.settings["ctx"]
    ctx_max = largest.estimate.settings["ctx"]
    assert isinstance(ctx_default, int)
    assert isinstance(ctx_max, int)
    assert ctx_max >= ctx_default


def test_cli_error_names_max() -> None:
    for command in (ARGS, ["estimate", "llama-3.1-8b", "--gpu", "rtx-4090"]):
        res = CliRunner().invoke(cli, [*command, "--ctx", "maximum"])
        assert res.exit_code == 2
        assert "cannot read context 'maximum'" in res.output
        assert "or max" in res.output
    assert is_context_max(" Max ")
    with pytest.raises(ValueError, match="or max"):
        is_context_max("maximum")


def test_web_error_names_max() -> None:
    client = TestClient(create_app())
    for path in ("/api/estimate", "/api/plan"):
        body = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": "maximum"}
        res = client.post(path, json=body)
        assert res.status_code == 422
        detail = res.json()["detail"]
        assert CONTEXT_FORMS in detail
        assert "valid integer" not in detail
        ok = client.post(path, json={**body, "ctx": "max"})
        assert ok.status_code == 200, ok.text


def test_draft_ctx_is_a_count_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """--draft-ctx has no 'largest that fits' (the draft's context follows the main one): its
    error is the count's, on the click path and on the fast --json path alike."""
    from oomkit.cli import main

    for extra in ((), ("--json",)):
        code = main(
            ["estimate", "llama-3.1-8b", "--gpu", "rtx-4090", "--model-draft", "llama-3.2-1b",
             "--draft-ctx", "max", *extra]
        )  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2
        assert "cannot read count 'max'" in err
        assert "or max" not in err

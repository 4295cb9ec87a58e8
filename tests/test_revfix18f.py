"""Review 18f: estimate --pooling suggests what plan --pooling finds, a config's absurd context
is named by its own key and file, --tp refusals list only sizes the GPUs given can run, and
settings.quant has one spelling (CLI end to end, real catalog models and config files).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.cli import main


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    code, out, err = _run(capsys, [*argv, "--json"])
    assert out, err
    return code, json.loads(out)


# -- 1. estimate --pooling searches as plan --pooling does ------------------------------------

_POOL = ["qwen3-8b", "-r", "vllm", "--gpu", "rtx-4090", "--pooling", "--offline"]


def test_pooling_estimate_suggests_what_plan_finds(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, ["estimate", *_POOL])
    assert code == 3
    assert doc["fits"] is False
    assert doc["suggestions"], "no suggestion where plan --pooling finds a plan"
    first = doc["suggestions"][0]
    assert first["changes"][0].startswith("--enforce-eager")
    assert "--enforce-eager" in first["command"]
    assert "--runner pooling" in first["command"]
    assert first["settings"]["enforce_eager"] is True
    pcode, plan = _json(capsys, ["plan", *_POOL])
    assert pcode == 0
    assert plan["plans"]
    assert first["settings"]["ctx"] == plan["plans"][0]["settings"]["ctx"]
    _, out, _ = _run(capsys, ["estimate", *_POOL])
    assert "Nothing the planner can change" not in out
    assert "1. --enforce-eager" in out


def test_eager_pooling_estimate_adds_no_eager_change(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "qwen3-8b", "-r", "vllm", "--gpu", "rtx-3060", "--pooling"]
    _, doc = _json(capsys, [*argv, "--enforce-eager", "--offline"])
    assert doc["fits"] is False
    assert doc["suggestions"]
    for s in doc["suggestions"]:
        assert not any(c.startswith("--enforce-eager") for c in s["changes"])

"""review21 finding 18: ``models --fits`` without ``--ctx`` no longer shows a quant capped at
the 4096-token default when a smaller one runs far more context (the rule:
``planner.reverse._roomier``); with ``--ctx N`` the best quant at N is still shown."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def _fits(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict]:
    code, out, err = run_cli(capsys, "models", "qwen2.5-14b", "--fits", "rtx-3060", *argv, "--json")
    assert code == 0, err
    return {m["model"]: m for m in json.loads(out)["models"]}


def test_default_prefers_the_quant_with_room(capsys: pytest.CaptureFixture[str]) -> None:
    m = _fits(capsys)["qwen2.5-14b"]
    assert m["quant"] == "Q4_K_M"
    assert m["max_ctx"] >= 8192  # Q5_K_M stopped at 4096 on this card


def test_asked_context_keeps_the_best_quant_at_it(capsys: pytest.CaptureFixture[str]) -> None:
    m = _fits(capsys, "--ctx", "4096")["qwen2.5-14b"]
    assert m["quant"] == "Q5_K_M"
    assert m["max_ctx"] == 4096

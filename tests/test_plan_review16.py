"""The planner defects a new-user review left open (session 16): koboldcpp's command, the KV
cache's cost on the quality line, ``-ngl`` as a constraint, Gemma 3's projector under Ollama."""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main
from oomkit.planner.quality import KV_KLD_INCREASE, kv_quality_text


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = _run(capsys, "plan", *args, "--json")
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


# -- 2. the quality line names the KV cache and its published cost ----------------------------


def test_kv_cost_is_pr7412s_q8_0_row() -> None:
    # f16/q8_0/q8_0 0.000980 minus f16/f16/f16 0.000189 (llama.cpp PR #7412)
    assert KV_KLD_INCREASE["q8_0"] == pytest.approx(0.000791)
    assert kv_quality_text("q8_0") == "KV q8_0 +0.0008 KLD (llama.cpp PR #7412, LLaMA-3-8B)"
    assert kv_quality_text(None) is None
    assert kv_quality_text("f16") is None
    q4 = kv_quality_text("q4_0")
    assert q4 is not None
    assert q4.startswith("KV q4_0")
    assert "KLD" not in q4  # no made-up figure


def test_plan_quality_line_names_a_q8_0_cache(capsys: pytest.CaptureFixture[str]) -> None:
    # qwen3-14b at 32k on a 16 GB card: the plan picks a q8_0 cache (planfix15)
    code, out, err = _run(capsys, "plan", "qwen3-14b", "--gpu", "rtx-4080", "--ctx", "32768")
    assert code == 0, err
    assert "-ctk q8_0" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("quality:"))
    assert line.endswith("; KV q8_0 +0.0008 KLD (llama.cpp PR #7412, LLaMA-3-8B)"), line


def test_plan_quality_line_is_silent_on_an_f16_cache(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "plan", "qwen3-8b", "--gpu", "rtx-4090", "--ctx", "8192")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.strip().startswith("quality:"))
    assert "KV " not in line

"""review22 finding 7 (brief: 6): ``models --fits`` without ``--ctx`` sizes every model at the
4096-token default; a model trained for fewer positions (TinyLlama's 2048) is listed as not
fitting, and the reason must say that default, not "the asked 4096" when nothing was asked."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def _reason(capsys: pytest.CaptureFixture[str], *ctx: str) -> tuple[str, str]:
    code, out, err = run_cli(
        capsys, "models", "tinyllama-1.1b", "--fits", "rtx-3060", "--json", *ctx
    )
    assert code in (0, 3), err
    doc = json.loads(out)
    miss = next(m for m in doc["not_fitting"] if m["model"] == "tinyllama-1.1b")
    return str(miss["reason"]), err


def test_default_context_is_named_as_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    reason, _ = _reason(capsys)
    assert "asked" not in reason
    assert "4096-token default" in reason
    assert "--ctx 2048" in reason


def test_an_asked_context_is_named_as_asked(capsys: pytest.CaptureFixture[str]) -> None:
    reason, _ = _reason(capsys, "--ctx", "8192")
    assert "the asked 8192" in reason


def test_summary_line_says_default_or_asked(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "models", "tinyllama-1.1b", "--fits", "rtx-3060")
    assert "trained for a shorter context than the 4096-token default" in err, (code, err)
    code, _, err = run_cli(capsys, "models", "tinyllama-1.1b", "--fits", "rtx-3060", "-c", "4k")
    assert "trained for a shorter context than asked" in err, (code, err)

"""A device block never says "fits" above the verdict "Does not fit." (vLLM at the model's full
context on an RTX 4090: the totals are within the card, the KV pool is not one request)."""

from __future__ import annotations

import pytest

from conftest import run_cli


def test_kv_pool_refusal_is_not_called_fits(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "estimate", "llama-3.1-8b", "-r", "vllm", "--gpu", "rtx-4090")
    assert code == 3
    assert "Does not fit." in out
    totals = [ln for ln in out.splitlines() if ln.strip().startswith("total ")]
    assert totals
    assert all(" fits (" not in ln for ln in totals), totals
    assert any("within capacity (" in ln for ln in totals), totals


def test_a_fitting_run_still_says_fits(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "estimate", "llama-3.1-8b", "-r", "vllm", "--gpu", "rtx-4090", "--ctx", "16384"
    )
    assert code == 0
    assert any(" fits (" in ln for ln in out.splitlines() if ln.strip().startswith("total "))
    assert "within capacity" not in out


def test_an_over_full_device_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # -ngl 99: every layer (without it llama.cpp's --fit moves layers off until it fits)
    code, out, _ = run_cli(capsys, "estimate", "llama-3.1-70b", "--gpu", "rtx-4090", "-ngl", "99")
    assert code == 3
    assert "DOES NOT FIT (" in out

"""``models --fits`` without ``--ctx`` sizes every model at the 4096-token default; a model
trained for fewer positions (TinyLlama's 2048) is sized at its own trained context instead,
as the runtime runs it (llama-server caps each slot at ``n_ctx_train``, Ollama caps
``num_ctx``), and the listing says so (planner23; it used to be dropped as not fitting,
review22 finding 7). With ``--ctx N`` above its trained context it stays out, "the asked N"."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def _doc(capsys: pytest.CaptureFixture[str], *ctx: str) -> dict[str, list[dict[str, object]]]:
    code, out, err = run_cli(
        capsys, "models", "tinyllama-1.1b", "--fits", "rtx-3060", "--json", *ctx
    )
    assert code in (0, 3), err
    doc: dict[str, list[dict[str, object]]] = json.loads(out)
    return doc


def test_default_context_sizes_a_short_model_at_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _doc(capsys)
    assert not any(m["model"] == "tinyllama-1.1b" for m in doc["not_fitting"])
    row = next(m for m in doc["models"] if m["model"] == "tinyllama-1.1b")
    assert row["ctx"] == 2048
    assert row["max_ctx"] == 2048
    reason = str(row["ctx_reason"])
    assert "trained context 2048" in reason
    assert "4096-token default" in reason


def test_an_asked_context_is_named_as_asked(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _doc(capsys, "--ctx", "8192")
    miss = next(m for m in doc["not_fitting"] if m["model"] == "tinyllama-1.1b")
    assert "the asked 8192" in str(miss["reason"])
    assert not any(m["model"] == "tinyllama-1.1b" for m in doc["models"])


def test_summary_line_says_own_or_asked(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "models", "tinyllama-1.1b", "--fits", "rtx-3060")
    assert code == 0, err
    assert "tinyllama-1.1b" in out
    assert "1 sized at its own trained context (under the 4096-token default)" in err, err
    code, _, err = run_cli(capsys, "models", "tinyllama-1.1b", "--fits", "rtx-3060", "-c", "4k")
    assert "trained for a shorter context than asked" in err, (code, err)


def test_a_long_model_has_no_ctx_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "models", "llama-3.1-8b", "--fits", "rtx-3060", "--json")
    assert code == 0, err
    row = next(m for m in json.loads(out)["models"] if m["model"] == "llama-3.1-8b")
    assert row["ctx_reason"] is None
    assert row["ctx"] >= 4096

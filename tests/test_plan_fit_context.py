"""planner23: ``plan`` without ``--ctx`` on a llama.cpp build with ``--fit`` (PR #16653).

llama-server given no ``-c`` starts at the model's trained context (``n_ctx = 0``, "loaded
from model", common/arg.cpp) and ``common_fit_params`` lowers it, then the layers, until 1 GiB
stays free per device, never below 4096 tokens. The plan keeps the quant its quality-first
search picks at that 4096-token floor and runs, with every layer on the GPU, the largest
context up to the trained one that fits (it planned ``-c 4096`` while 131072 fit). Builds
before the fit, the C API, Ollama and ``--ctx N`` keep their own contexts."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

_GPT = ("gpt-oss-20b", "--gpu", "rtx-4060-ti-16gb", "--offline")
_LLAMA = ("llama-3.1-8b", "--gpu", "rtx-4060-ti-16gb", "--offline")


def _plans(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, object], list]:  # type: ignore[type-arg]
    code, out, err = run_cli(capsys, "plan", *args, "--json")
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    plans = doc["plans"]
    assert isinstance(plans, list)
    assert plans
    return doc, plans


def test_no_ctx_runs_the_trained_context_that_fits(capsys: pytest.CaptureFixture[str]) -> None:
    doc, plans = _plans(capsys, *_GPT)
    top = plans[0]
    assert top["settings"]["ctx"] == 131072
    assert " -c 131072 " in top["command"]
    assert doc["target_ctx"] == 4096
    assert doc["fit_ctx_top"] == 131072


def test_the_quant_is_the_one_chosen_at_the_floor(capsys: pytest.CaptureFixture[str]) -> None:
    _, floor = _plans(capsys, *_LLAMA, "--ctx", "4096")
    _, plans = _plans(capsys, *_LLAMA)
    top, at_floor = plans[0]["settings"], floor[0]["settings"]
    assert top["quant"] == at_floor["quant"] == "Q8_0"
    assert top["cache_type_k"] == at_floor["cache_type_k"] == "f16"
    ctx = top["ctx"]
    assert 4096 < ctx < 131072
    # the largest that fits: one step more does not
    code, _, _ = run_cli(
        capsys, "estimate", "llama-3.1-8b", "--gpu", "rtx-4060-ti-16gb", "--offline",
        "--quant", "Q8_0", "--ctx", str(ctx + 4096), "-ngl", "99", "-fa", "on",
    )  # fmt: skip
    assert code != 0


def test_the_asked_line_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "plan", *_GPT)
    assert code == 0, err
    assert "context 4096-131072 (not given: llama-server's --fit starts at the model's" in out
    assert "-c 131072" in out


def test_others_keep_their_contexts(capsys: pytest.CaptureFixture[str]) -> None:
    # --ctx N is unchanged
    doc, plans = _plans(capsys, *_GPT, "--ctx", "4096")
    assert plans[0]["settings"]["ctx"] == 4096
    assert doc["fit_ctx_top"] is None
    # a build before --fit: llama-server's -c default 4096 (b6097 loads gpt-oss)
    doc, plans = _plans(capsys, *_GPT, "--runtime-version", "b6097")
    assert plans[0]["settings"]["ctx"] == 4096
    assert doc["fit_ctx_top"] is None
    # the C API (llama-cpp-python) runs no --fit
    doc, _ = _plans(capsys, *_LLAMA, "-r", "llama-cpp-python")
    assert doc["fit_ctx_top"] is None
    # Ollama: its own num_ctx by release (2048 before 0.6.7, 4096, then by total VRAM)
    for version, want in (("0.5.0", 2048), ("0.9.0", 4096), ("0.16.0", 4096)):
        doc, plans = _plans(capsys, *_LLAMA, "-r", "ollama", "--runtime-version", version)
        assert doc["target_ctx"] == want, version
        assert doc["fit_ctx_top"] is None
    doc, _ = _plans(
        capsys, "llama-3.1-8b", "--gpu", "rtx-4090", "--offline", "-r", "ollama",
        "--runtime-version", "0.16.0",
    )  # fmt: skip
    assert doc["target_ctx"] == 32768  # 23-47 GiB of total VRAM

"""Planner defects from the session-15 new-user review: the quant x KV grid, the asked context
kept in the request, ``models --fits`` and ``plan`` agreeing, llama.cpp flags, Windows commands."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.cli import main
from oomkit.planner.knobs import kv_ladder, upgrade_kvs

QWEN_4080 = ["qwen3-14b", "--gpu", "rtx-4080", "--os", "windows"]


def _json(capsys: pytest.CaptureFixture[str], argv: list[str], rc: int = 0) -> dict[str, Any]:
    assert main([*argv, "--json"]) == rc
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_upgrade_kv_types_stop_at_q8_0() -> None:
    assert upgrade_kvs("llama.cpp", kv_ladder("llama.cpp")) == ("f16", "q8_0")
    assert upgrade_kvs("llama.cpp", kv_ladder("llama.cpp", flash_off=True)) == (
        "f16",
        "f16+fa",
        "q8_0",
    )
    assert upgrade_kvs("vllm", kv_ladder("vllm")) == ("auto",)


def test_plan_tries_a_better_quant_with_a_q8_0_kv_cache(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Q6_K with a q8_0 cache fits a 4080 at 40960 (estimate says "Fits"): the plan must not
    fall back to Q4_K_M because it only tried Q6_K with an f16 cache."""
    doc = _json(capsys, ["plan", *QWEN_4080, "--ctx", "40960"])
    best = doc["plans"][0]["settings"]
    assert (best["quant"], best["cache_type_k"], best["ctx"]) == ("Q6_K", "q8_0", 40960)
    argv = ["estimate", "qwen3-14b", "--gpu", "rtx-4080", "--os", "windows", "-q", "Q6_K"]
    est = _json(capsys, [*argv, "-ctk", "q8_0", "-ctv", "q8_0", "--ctx", "40960"])
    assert est["fits"] is True
    # no plan proposes an upgrade quant with a q4_0 cache (its quality cost is the default's)
    for p in doc["plans"]:
        if p["settings"]["quant"] in ("Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S"):
            assert p["settings"]["cache_type_k"] in (None, "f16", "q8_0")


def test_models_fits_and_plan_pick_the_same_quant_and_kv(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One search decides both: ``models --fits`` used to compare only Q8_0/Q6_K/Q5_K_M/Q4_K_M
    with an f16 cache (Q4_K_M, 13.42 GiB) while ``plan`` found Q5_K_S (14.51 GiB)."""
    fits = _json(capsys, ["models", "--fits", "rtx-4080", "--ctx", "32k", "qwen3-14b"])
    row = next(m for m in fits["models"] if m["model"] == "qwen3-14b")
    best = _json(capsys, ["plan", "qwen3-14b", "--gpu", "rtx-4080", "--ctx", "32k"])["plans"][0]
    settings = best["settings"]
    assert (row["quant"], row["kv"]) == (settings["quant"], settings["cache_type_k"])
    assert row["gpu_bytes"] == best["devices"][0]["total_bytes"]


def test_models_fits_leaves_out_models_trained_for_a_shorter_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(capsys, ["models", "--fits", "rtx-4080", "--ctx", "32k"])
    listed = {m["model"]: m for m in doc["models"]}
    assert not {"gpt-neox-20b", "roberta-base", "bert-base-uncased"} & set(listed)
    assert all(m["max_ctx"] >= 32768 for m in listed.values())
    why = {m["model"]: m["reason"] for m in doc["not_fitting"]}
    assert why["gpt-neox-20b"].startswith("trained context 2048 tokens")
    # an encoder (BERT family, 512 positions) generates nothing: no decode speed
    enc = _json(capsys, ["models", "--fits", "rtx-4080", "--ctx", "512", "bert"])["models"]
    assert enc
    assert all(m["decode_tokens_per_s"] is None for m in enc)


def test_plan_keeps_the_asked_context_and_says_the_trained_one_caps_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(capsys, ["plan", *QWEN_4080, "--ctx", "64k"])
    assert doc["request"]["ctx"] == 65536  # the user's request, as asked
    assert doc["target_ctx"] == 40960
    assert any("trained context 40960" in n for n in doc["notes"])
    assert main(["plan", *QWEN_4080, "--ctx", "64k"]) == 0
    out = capsys.readouterr().out
    assert "asked: runtime llama.cpp, context 65536 (capped at 40960)" in out
    assert "trained context 40960 (max_position_embeddings)" in out


@pytest.mark.parametrize(
    ("flags", "kv"),
    [(["-ctk", "q8_0"], "q8_0"), (["-ctk", "q4_0", "-ctv", "q4_0"], "q4_0"),
     (["--kv-dtype", "f16", "-fa", "on"], "f16")],
)  # fmt: skip
def test_plan_reads_llama_cpp_kv_and_fa_flags(
    capsys: pytest.CaptureFixture[str], flags: list[str], kv: str
) -> None:
    """``-ctk q8_0`` was read as ``-c tk`` ("cannot read count 'tk'"): it pins the KV type."""
    doc = _json(capsys, ["plan", *QWEN_4080, "--ctx", "40960", *flags])
    assert doc["request"]["kv"] == kv
    assert {p["settings"]["cache_type_k"] for p in doc["plans"]} == {kv}


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", *QWEN_4080, "-ngl", "-1"],  # a constraint since planleft16: only N < 0 is refused
        ["plan", *QWEN_4080, "-ctk", "q8_0", "-ctv", "f16"],
        ["plan", *QWEN_4080, "--kv-dtype", "fp8"],
        ["models", "--fits", "rtx-4080", "-ngl", "99"],
        ["models", "--fits", "rtx-4080", "-fa", "on"],
        ["models", "qwen3", "--os", "windows"],
    ],
)
def test_flags_a_plan_cannot_take_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("Error:")]
    assert len(lines) == 1
    assert "cannot read count" not in err
    assert "No such option" not in err


def test_models_fits_takes_os_like_plan(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["models", "--fits", "rtx-4080", "--ctx", "32k", "qwen3-14b"]
    linux = _json(capsys, [*argv, "--os", "linux"])
    windows = _json(capsys, [*argv, "--os", "windows"])
    assert linux["gpu"] == windows["gpu"]
    assert windows["models"][0]["quant"] == "Q6_K"


def test_windows_ollama_lines_are_powershell(capsys: pytest.CaptureFixture[str]) -> None:
    """``--os windows`` printed ``OLLAMA_FLASH_ATTENTION=1 ... ollama serve`` and ``printf ...
    > Modelfile``, which PowerShell cannot run."""
    argv = ["plan", "llama-3.1-8b", "-r", "ollama", "--gpu", "rtx-4080", "--ctx", "32k"]
    win = _json(capsys, [*argv, "--os", "windows"])["plans"][0]["command"]
    assert '$env:OLLAMA_FLASH_ATTENTION="1"; ' in win
    assert "Set-Content -Path Modelfile -Value " in win
    assert "`nPARAMETER num_ctx 32768" in win
    assert "printf" not in win
    assert "&&" not in win
    linux = _json(capsys, [*argv, "--os", "linux"])["plans"][0]["command"]
    assert linux.startswith("OLLAMA_FLASH_ATTENTION=1 ")
    assert "printf 'FROM " in linux
    # an unknown tag stops loudly in PowerShell too, as ${OLLAMA_TAG:?...} does in sh
    unknown = _json(capsys, ["plan", *QWEN_4080, "-r", "ollama", "--ctx", "32k"])
    lines = unknown["plans"][0]["command"]
    if "OLLAMA_TAG" in lines:
        assert "if (-not $env:OLLAMA_TAG) { throw " in lines
        assert "FROM $env:OLLAMA_TAG`n" in lines


def test_plan_drops_alternatives_worse_on_every_axis(capsys: pytest.CaptureFixture[str]) -> None:
    """Q4_K_M with 40/41 layers on the GPU (~27 tok/s, f16 KV) next to Q4_K_M all on the GPU
    with a q8_0 cache (~46 tok/s) at the same context offers nothing: it is gone."""
    from oomkit.planner.dominated import drop_dominated

    doc = _json(capsys, ["plan", *QWEN_4080, "--ctx", "40960", "-q", "Q4_K_M"])
    best = doc["plans"][0]
    assert (best["settings"]["quant"], best["level"]) == ("Q4_K_M", 0)
    for alt in doc["plans"][1:]:
        same = alt["settings"]["quant"] == "Q4_K_M" and alt["settings"]["ctx"] == 40960
        assert not (same and alt["level"] > 0)
    from oomkit.cli.gpu_choice import choose_hardware
    from oomkit.planner.core import plan
    from oomkit.planner.request import PlanRequest

    hw = choose_hardware("rtx-3060").hardware
    result = plan("llama-3.1-8b", hw, PlanRequest(ctx=131072), offline=True)
    assert drop_dominated(list(result.plans)) == list(result.plans)  # idempotent on a result

"""Planner policy findings of review 22: a better weight quant with the q4_0 cache the plan
uses anyway; fp8 W8A8 weights before a bf16 plan that needs an fp8 KV cache; the "asked:" line
of a llama.cpp plan without ``--ctx``."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from oomkit.planner.knobs import upgrade_kvs


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = run_cli(capsys, "plan", *args, "--json")
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def _top(doc: dict[str, object]) -> dict[str, object]:
    plans = doc["plans"]
    assert isinstance(plans, list)
    assert plans
    settings = plans[0]["settings"]
    assert isinstance(settings, dict)
    return settings


# -- 1. an upgrade quant may take the q4_0 cache the default quant needs --------------------


def test_upgrade_kvs_floor_follows_the_default_quant() -> None:
    kvs = ("f16", "q8_0", "q4_0")
    assert upgrade_kvs("llama.cpp", kvs) == ("f16", "q8_0")
    assert upgrade_kvs("llama.cpp", kvs, lambda kv: True) == ("f16", "q8_0")
    assert upgrade_kvs("llama.cpp", kvs, lambda kv: False) == kvs
    assert upgrade_kvs("vllm", ("auto", "fp8"), lambda kv: False) == ("auto",)


def test_q4_0_plan_takes_the_better_quant(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 22: Llama-3.1-8B on an RTX 3060 at 131072 tokens planned Q4_K_M + q4_0 while
    Q5_K_M + q4_0 fits all on the GPU (same KV cache, better weights)."""
    top = _top(_plan(capsys, "llama-3.1-8b", "--gpu", "rtx-3060", "--ctx", "131072"))
    assert top["cache_type_k"] == "q4_0"
    assert top["ctx"] == 131072
    assert top["quant"] == "Q5_K_M"


def test_q8_0_plan_keeps_its_floor(capsys: pytest.CaptureFixture[str]) -> None:
    """Where the default quant fits with q8_0, no upgrade is proposed with q4_0."""
    doc = _plan(capsys, "llama-3.1-8b", "--gpu", "rtx-3060", "--ctx", "65536")
    plans = doc["plans"]
    assert isinstance(plans, list)
    for p in plans:
        s = p["settings"]
        if s["quant"] in ("Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S"):
            assert s["cache_type_k"] != "q4_0", s


# -- 2. fp8 W8A8 weights before a bf16 plan that needs an fp8 KV cache ----------------------


def test_fp8_weights_before_bf16_with_an_fp8_cache(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 22: a 70B on 2 x H100 at --ctx 32k with a draft model planned bf16 + fp8 KV +
    --max-num-seqs 31 + utilization 0.96 above fp8 W8A8 with the 16-bit cache. In fp8's shared
    tier an (uncalibrated) fp8 KV cache ranks after fp8 weights; without the draft, bf16 at the
    16-bit cache with a sequence cap stays first (throughput levers cost no quality)."""
    spec = '{"method":"draft_model","model":"llama-3.2-1b","num_speculative_tokens":4}'
    argv = ("llama-3.1-70b", "-r", "vllm", "--gpu", "2xh100-sxm", "--ctx", "32k")
    top = _top(_plan(capsys, *argv, "--speculative-config", spec, "--offline"))
    assert top["quant"] == "fp8"
    assert top.get("cache_type_k") is None
    assert top["ctx"] == 32768
    plain = _top(_plan(capsys, *argv, "--offline"))
    assert plain["quant"] == "bf16"
    assert plain.get("cache_type_k") is None


def test_rank_key_kv_inside_the_fp8_tier() -> None:
    from oomkit.planner.knobs import Candidate
    from oomkit.planner.ranking import rank_key

    ladder, kvs = ("bf16", "fp8", "awq"), ("auto", "fp8")

    def key(c: Candidate, tier: dict[str, int]) -> tuple[int, ...]:
        return rank_key(
            c,
            prefer="quality",
            ladder=ladder,
            kvs=kvs,
            target_ctx=32768,
            n_layer=80,
            ctx_asked=True,
            quant_tier=tier,
        )

    bf16_kv = Candidate("bf16", "fp8", 32768, max_num_seqs=31)
    fp8 = Candidate("fp8", "auto", 32768)
    bf16_cap = Candidate("bf16", "auto", 32768, max_num_seqs=59)
    assert key(fp8, {"fp8": 0}) < key(bf16_kv, {"fp8": 0})
    assert key(bf16_cap, {"fp8": 0}) < key(fp8, {"fp8": 0})
    # no shared tier (an A100, or no typed context): the exact quant first, as before
    assert key(bf16_kv, {}) < key(fp8, {})
    # a shorter context still loses to the typed one
    assert key(bf16_kv, {"fp8": 0}) < key(Candidate("fp8", "auto", 16384), {"fp8": 0})


# -- 3. a llama.cpp plan without --ctx says the context was not given -----------------------


def test_untyped_llamacpp_context_is_not_called_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Review 22: ``plan gpt-oss-20b --gpu rtx-4060-ti-16gb`` said "asked: ... context 4096"
    though nothing was asked. A --fit build's llama-server starts at the trained context and
    lowers it to fit, never below 4096 (fit_params_min_ctx): the plan aims at that floor and
    says why; a pre-fit build's -c default is 4096 itself."""
    argv = ("plan", "gpt-oss-20b", "--gpu", "rtx-4060-ti-16gb", "--offline")
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    # planner23: each plan then runs the largest context up to the trained one that fits
    assert (
        "asked: runtime llama.cpp, context 4096-131072 (not given: llama-server's --fit starts "
        "at the model's trained 131072"
    ) in out
    # a pre-fit build that loads gpt-oss (b6097, llamacpp_support; b5000 cannot load it)
    code, out, _ = run_cli(capsys, *argv, "--runtime-version", "b6097")
    assert code == 0
    assert "context 4096 (not given: llama-server's default -c on builds before --fit)" in out
    code, out, _ = run_cli(capsys, *argv, "--ctx", "8k")
    assert code == 0
    assert "asked: runtime llama.cpp, context 8192; prefer quality" in out
    # the JSON contract is kept: target_ctx stays the fit's floor, fit_ctx_top is added
    doc = _plan(capsys, "gpt-oss-20b", "--gpu", "rtx-4060-ti-16gb", "--offline")
    assert doc["target_ctx"] == 4096
    assert doc["fit_ctx_top"] == 131072


def test_untyped_reason_by_runtime() -> None:
    from oomkit.planner.target_ctx import untyped_ctx_reason

    def why(runtime: str, target: int = 4096, prefer: str = "quality") -> str:
        return untyped_ctx_reason(runtime, prefer, target, version=None, server=None)

    assert why("llama-cpp-python", 512) == "Llama(n_ctx=512)'s default"
    assert why("vllm", 131072) == "the model's own maximum, the runtime's default"
    assert why("any", 8192) == "one context for every runtime compared"
    assert why("llama.cpp", 2048) == "the model's trained context"
    assert "--fit" in why("llama.cpp")
    assert untyped_ctx_reason("llama.cpp", "quality", 4096, version=None, server=False) == (
        "the planner's default (the C API runs no --fit)"
    )

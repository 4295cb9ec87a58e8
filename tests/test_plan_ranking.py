"""The planner's ranking policy (oomkit.planner.ranking): a context the user typed is kept by a
throughput lever before it is cut; a context the planner chose is not worth an offload."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.cli import main
from oomkit.planner.knobs import Candidate
from oomkit.planner.ranking import rank_key


def _plans(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    code = main(["plan", *argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    plans: list[dict[str, Any]] = json.loads(out)["plans"]
    return plans


#: Llama-3.1-8B on an 8 GB card at 128k: all on the GPU, Q4_K_M with a q4_0 cache holds about
#: 58k tokens; with layers on the CPU the whole 131072 fits
_8B_128K = ["llama-3.1-8b", "--gpu", "rtx-4060", "--ram", "32GiB", "--ctx", "128k"]


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
def test_typed_context_kept_by_offload_before_a_cut(
    capsys: pytest.CaptureFixture[str], runtime: str
) -> None:
    """Before session 21 the plan cut the typed 131072 to the ~50-58k the GPU holds and put the
    -ngl offload that keeps it second; the offload costs decode speed only (the brief's order:
    -ngl/-ot before the context, before the quant)."""
    plans = _plans(capsys, [*_8B_128K, "-r", runtime])
    best = plans[0]
    assert best["settings"]["ctx"] == 131072
    assert best["settings"]["quant"] == "Q4_K_M"
    assert best["level"] == 2  # layers on the CPU
    # the GPU-only plan at a shorter context is still offered, right below it
    cut = plans[1]
    assert cut["settings"]["quant"] == "Q4_K_M"
    assert cut["settings"]["ctx"] < 131072
    assert cut["level"] == 0


def test_context_max_keeps_the_gpu_plan_first(capsys: pytest.CaptureFixture[str]) -> None:
    """--ctx max asks for no particular context (each plan runs the largest its settings fit):
    the all-on-GPU plan stays first, the offload that reaches 131072 second."""
    argv = ["llama-3.1-8b", "--gpu", "rtx-4060", "--ram", "32GiB", "--ctx", "max"]
    plans = _plans(capsys, [*argv, "-r", "llama.cpp"])
    assert plans[0]["level"] == 0
    assert plans[0]["settings"]["ctx"] < 131072
    assert any(p["level"] == 2 and p["settings"]["ctx"] == 131072 for p in plans[1:])


def test_typed_quant_and_context_vllm_sequence_cap_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A 70B on one H100 with no --quant: bf16 does not fit, so fp8 is the quant; at fp8 the
    sequence cap that keeps 32768 ranks above the cut to ~22k (same quant, context first)."""
    argv = ["llama-3.3-70b", "-r", "vllm", "--gpu", "h100-sxm", "--ctx", "32k"]
    best = _plans(capsys, argv)[0]
    assert best["settings"]["quant"] == "fp8"
    assert best["settings"]["ctx"] == 32768
    assert 1 < best["settings"]["max_num_seqs"] < 1024
    assert "--max-model-len 32768" in best["command"]


def _key(cand: Candidate, *, margin: int, ctx_asked: bool = True) -> tuple[int, ...]:
    return rank_key(
        cand,
        prefer="quality",
        ladder=("Q4_K_M",),
        kvs=("f16", "q8_0", "q4_0"),
        target_ctx=32768,
        n_layer=32,
        ctx_asked=ctx_asked,
        margin_bytes=margin,
    )


def test_ties_go_to_the_larger_margin() -> None:
    a = Candidate("Q4_K_M", "f16", 32768, 2, n_gpu_layers=20)
    assert _key(a, margin=2 * 1024**3) < _key(a, margin=1024**3)


def test_cut_context_versus_offload_depends_on_who_chose_the_context() -> None:
    cut = Candidate("Q4_K_M", "q4_0", 16384)
    offload = Candidate("Q4_K_M", "f16", 32768, 2, n_gpu_layers=20)
    assert _key(offload, margin=0) < _key(cut, margin=0)  # typed: keep it
    assert _key(cut, margin=0, ctx_asked=False) < _key(offload, margin=0, ctx_asked=False)


_QWEN_3060 = ["qwen3-30b-a3b", "--gpu", "rtx-3060", "--ram", "32GiB", "--ctx", "32k"]


def test_offload_takes_a_q8_0_cache_that_keeps_more_on_the_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Qwen3-30B-A3B Q4_K_M on a 12 GB card at 32768: with an f16 cache the experts of the
    first 30 layers go to the CPU; a q8_0 cache (+0.0008 KLD, llama.cpp PR #7412) keeps more
    expert blocks on the GPU, so the plan takes it (before session 21 it kept f16)."""
    best = _plans(capsys, _QWEN_3060)[0]
    f16 = _plans(capsys, [*_QWEN_3060, "-ctk", "f16", "-ctv", "f16"])[0]
    assert best["settings"]["quant"] == f16["settings"]["quant"] == "Q4_K_M"
    assert best["settings"]["cache_type_k"] == "q8_0"
    assert "-ctk q8_0 -ctv q8_0" in best["command"]
    assert best["settings"]["n_cpu_moe"] < f16["settings"]["n_cpu_moe"]
    assert f16["settings"].get("cache_type_k") in (None, "f16")  # a pinned type stays


def test_offload_keeps_f16_when_q8_0_moves_nothing_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama-3.1-70B Q4_K_M on a 24 GB card at 2048 tokens: the cache is small, q8_0 keeps no
    more layers on the GPU than f16 (the same -ngl), so the plan keeps the f16 cache."""
    argv = ["llama-3.1-70b", "--gpu", "rtx-4090", "--ram", "64GiB", "--ctx", "2k"]
    best = _plans(capsys, [*argv, "-q", "Q4_K_M"])[0]
    q8 = _plans(capsys, [*argv, "-q", "Q4_K_M", "-ctk", "q8_0", "-ctv", "q8_0"])[0]
    assert best["settings"].get("cache_type_k") in (None, "f16")
    assert "-ctk" not in best["command"]
    assert best["settings"]["n_gpu_layers"] == q8["settings"]["n_gpu_layers"]

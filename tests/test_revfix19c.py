"""Review 19 (revfix19c): serving plans, the CLI and the web API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import run_cli

import oomkit
from oomkit.planner.core import plan
from oomkit.planner.knobs import fp8_marlin_ok
from oomkit.planner.request import PlanRequest
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings


def _hw(key: str) -> Hardware:
    return Hardware(devices=(oomkit.find_gpu(key).to_device_target(),))


# -- 1. vLLM fp8 weights on Ampere run weight-only through FP8 Marlin (vLLM PR #5975) ---------


def test_vllm_plan_proposes_fp8_marlin_on_ampere(capsys: pytest.CaptureFixture[str]) -> None:
    """The reviewer's command: a bf16 checkpoint quantized online, no placeholder AWQ repo."""
    code, out, _ = run_cli(
        capsys, "plan", "qwen3-14b", "--gpu", "rtx-3090", "-r", "vllm", "--ctx", "16k"
    )
    assert code == 0
    assert "Plan [vllm]: weights fp8" in out
    assert "vllm serve Qwen/Qwen3-14B " in out
    assert "--quantization fp8" in out
    assert "weight-only (W8A16, FP8 Marlin" in out
    assert "fp8 weights not proposed" not in out
    # priced as the estimate prices --quant fp8 on the same card, at the utilization the plan
    # chose (it may lower the default when vLLM's outside-the-budget band leaves it tight)
    util = out.split("--gpu-memory-utilization ", 1)[1].split()[0]
    code, est, _ = run_cli(
        capsys, "estimate", "qwen3-14b", "--gpu", "rtx-3090", "-r", "vllm", "--ctx", "16k",
        "--quant", "fp8", "--gpu-memory-utilization", util,
    )  # fmt: skip
    assert code == 0
    total = next(ln for ln in est.splitlines() if ln.strip().startswith("total")).split()[1:3]
    plan_bar = next(ln for ln in out.splitlines() if ln.strip().startswith("cuda:0"))
    assert " ".join(total) in plan_bar


def test_fp8_marlin_floor_and_releases() -> None:
    a100 = [oomkit.find_gpu("a100-40gb").to_device_target()]
    t4 = [oomkit.find_gpu("t4").to_device_target()]
    assert fp8_marlin_ok("vllm", a100, moe=False, version=None)
    assert not fp8_marlin_ok("vllm", t4, moe=False, version=None)  # SM 7.5 < 8.0
    assert not fp8_marlin_ok("sglang", a100, moe=False, version=None)
    assert not fp8_marlin_ok("vllm", a100, moe=False, version="0.5.0")
    assert fp8_marlin_ok("vllm", a100, moe=False, version="0.5.1")
    assert not fp8_marlin_ok("vllm", a100, moe=True, version="0.8.5")  # MoE: PR #16850
    assert fp8_marlin_ok("vllm", a100, moe=True, version="0.9.0")


def test_moe_before_fp8_marlin_moe_says_why() -> None:
    req = PlanRequest(runtime="vllm", ctx=16384)
    base = InferenceSettings(runtime="vllm", runtime_version="0.8.5")
    r = plan("qwen3-30b-a3b", _hw("a100-40gb"), req, base=base)
    assert all(p.settings.quant != "fp8" for p in r.plans)
    assert any("0.8.5 has no FP8 Marlin for MoE layers" in n for n in r.notes)


# -- 2. --ctx max on plan and on the web API ---------------------------------------------------


def test_plan_ctx_max(capsys: pytest.CaptureFixture[str]) -> None:
    """Was "cannot read count 'max'": the plan aims for the model's whole context."""
    code, out, err = run_cli(
        capsys, "plan", "qwen3-30b-a3b", "-r", "vllm", "--gpu", "a100-40gb", "--ctx", "max"
    )
    assert code == 0, err
    assert "--ctx max: aiming for the model's whole context (40960)" in out
    assert "--max-model-len 40960" in out


def test_api_accepts_ctx_max() -> None:
    from fastapi.testclient import TestClient

    from oomkit.web.app import create_app

    client = TestClient(create_app())
    body = {"model": "qwen3-30b-a3b", "runtime": "vllm", "gpu": "a100-40gb", "ctx": "max"}
    r = client.post("/api/estimate", json=body)
    assert r.status_code == 200, r.text
    assert any(a.startswith("--ctx max:") for a in r.json()["assumptions"])
    r = client.post("/api/plan", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["plans"][0]["settings"]["ctx"] == 40960
    r = client.post("/api/doctor", json={"log": "CUDA out of memory", "ctx": "max"})
    assert r.status_code == 422  # doctor reads a run's context: 'max' names none


# -- 3. the KV pool's spare is not free card memory (SGLang and vLLM, one wording) ------------


def test_sglang_verdict_names_the_pool_spare(capsys: pytest.CaptureFixture[str]) -> None:
    """Was 'Fits. 5.60 GiB free on cuda:0 (KV pool vs ...)' under a full 79.10/79.10 bar."""
    argv = ("estimate", "qwen3-30b-a3b", "-r", "sglang", "--gpu", "h100-sxm", "--ctx", "32k")
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("Fits."))
    assert "GiB free on cuda:0" not in line
    assert "cuda:0's KV pool holds " in line
    assert "more than one request of the full context needs" in line
    assert "not free card memory" in line
    code, out, _ = run_cli(capsys, *argv, "--json")
    margin = json.loads(out)["verdict_details"]["margins"][0]
    assert margin["spare_tokens"] > 0


def test_vllm_pool_margin_uses_the_same_words() -> None:
    from oomkit.estimate.verdict_runtime import free_phrase

    what = "KV pool vs one request of the full context"
    assert free_phrase(what, "cuda:0", 1 << 30, 8192) == (
        "cuda:0's KV pool holds 8192 tokens (1.00 GiB) more than one request of the full "
        "context needs (the pool fills its share of the card by design: not free card memory)"
    )
    assert free_phrase("device memory", "cuda:0", 1 << 30, None) == "1.00 GiB free on cuda:0"


# -- 4. Ollama 0.30+: one engine named (llama-server), not the Ollama engine as well ----------


def test_ollama_030_assumptions_name_llama_server_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("estimate", "llama-3.1-70b", "--gpu", "rtx-3060", "-r", "ollama", "--ctx", "32k")
    code, out, _ = run_cli(capsys, *argv)
    assert code in (0, 4)  # fits or tight: the wording is what is checked
    assert "runs on llama-server" in out
    assert "ollamarunner" not in out
    assert "the Ollama engine enables it" not in out
    assert "on (llama-server as Ollama 0.30+ starts it" in out
    # 0.30.0-0.30.4: still llama-server's words
    code, out, _ = run_cli(capsys, *argv, "--runtime-version", "0.30.2")
    assert "ollamarunner" not in out
    assert "llama-server (Ollama 0.30.0-0.30.4): num_parallel output rows" in out
    # 0.12.x: the Ollama engine runs gemma3, and its wording stays
    code, out, _ = run_cli(
        capsys, "estimate", "gemma-3-12b", "--gpu", "rtx-3060", "-r", "ollama",
        "--runtime-version", "0.12.6",
    )  # fmt: skip
    assert "runs on the Ollama engine" in out
    assert "Ollama engine (ollamarunner): worst-case graph" in out


# -- 5. `oomkit --help`'s exit codes are README's "Exit codes" section -----------------------


def _words(text: str) -> str:
    return " ".join(text.replace("`", "").replace("*", "").split())


def test_help_exit_codes_match_the_readme(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = _words(readme.split("## Exit codes", 1)[1].split("\n#", 1)[0])
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0
    helped = _words(out.split("Exit codes", 1)[1].split("Options:", 1)[0])
    for item in (
        "0 success (it fits / a diagnosis was made)",
        "1 error (bad input file, unknown model or quant, offline)",
        "2 usage error (a bad option value, an unknown --gpu or --runtime, no input at all: no"
        " file and nothing piped)",
        "3 a valid negative answer (does not fit, nothing fits (plan, models --fits, gpus --for),"
        " nothing matches, no OOM in the log)",
        "4 estimate only: tight",
        "it fits, but the free memory on some GPU is inside the band real runs sit from "
        "oomkit's numbers",
    ):
        assert item in helped, item
        assert item in section, item


def test_exit_codes_as_documented(capsys: pytest.CaptureFixture[str]) -> None:
    est = ("estimate", "--gpu", "rtx-4090")
    assert run_cli(capsys, *est, "no-such-model-xyz", "--offline")[0] == 1
    assert run_cli(capsys, *est, "llama-3.1-8b", "-q", "Q9_Z")[0] == 1
    assert run_cli(capsys, "estimate", "llama-3.1-8b", "--gpu", "rtx-9999")[0] == 2
    assert run_cli(capsys, *est, "llama-3.1-8b", "-r", "nosuchruntime")[0] == 2

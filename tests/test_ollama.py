"""Ollama: its defaults on top of the llama.cpp model, checked against Ollama's own logs."""

from __future__ import annotations

import pytest

from oomkit.catalog.models import find_model
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.ollama import OLLAMA_DEFAULT_NUM_CTX, estimate_ollama, ollama_settings
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

GPU = Hardware(devices=(DeviceTarget(name="RTX 4090", capacity_bytes=24 * GiB),))


def test_defaults() -> None:
    spec = find_model("llama-3.1-8b").spec()
    mapped, notes = ollama_settings(spec, InferenceSettings(runtime="ollama"))
    assert mapped.ctx == OLLAMA_DEFAULT_NUM_CTX == 4096
    assert mapped.flash_attn is True  # llama runs on the Ollama engine, FA where supported
    assert mapped.batch_size == 512
    assert mapped.quant == "Q4_K_M"
    assert any("num_ctx" in n for n in notes)


def test_parallel_multiplies_context() -> None:
    spec = find_model("llama-3.1-8b").spec()
    one = estimate_ollama(spec, InferenceSettings(ctx=4096), GPU)
    four = estimate_ollama(spec, InferenceSettings(ctx=4096, parallel=4), GPU)
    assert four.devices[0].kv_cache_bytes == 4 * one.devices[0].kv_cache_bytes
    details = four.runtime_details["ollama"]
    assert isinstance(details, dict)
    assert details["num_parallel"] == 4


def test_kv_matches_ollama_log() -> None:
    # ollama/ollama#6348: mistral (Q4_0), num_ctx 2048: "memory.required.kv=256.0 MiB"
    spec = find_model("mistral-7b-v0.3").spec()
    est = estimate_ollama(spec, InferenceSettings(ctx=2048, quant="Q4_0"), GPU)
    assert est.devices[0].kv_cache_bytes == 256 * MiB


def test_reserve_per_gpu() -> None:
    spec = find_model("qwen2.5-7b").spec()
    est = estimate_ollama(spec, InferenceSettings(ctx=4096), GPU)
    assert est.runtime == "ollama"
    details = est.runtime_details["ollama"]
    assert isinstance(details, dict)
    assert details["reserve_bytes"] == {"cuda:0": 457 * MiB}
    assert est.devices[0].overhead_bytes == 300 * MiB  # the context a process uses
    custom = estimate_ollama(spec, InferenceSettings(ctx=4096, overhead_bytes=GiB), GPU)
    assert custom.devices[0].overhead_bytes == GiB


def test_ollama_engine_reserves_few_outputs() -> None:
    # a user's log (ollama qwen2.5:7b-instruct on an RTX 5070, 29/29 layers, KV 224 MiB at
    # num_ctx 4096): "model buffer 4168 MiB, KV 224 MiB, compute 136 MiB"
    spec = find_model("qwen2.5-7b").spec()
    est = estimate_ollama(spec, InferenceSettings(ctx=4096, quant="Q4_K_M"), GPU)
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    assert round(b["model"]["CUDA0"] / MiB) == 4168
    assert b["kv"]["CUDA0"] == 224 * MiB
    assert abs(b["compute"]["CUDA0"] / MiB - 136) < 1


def test_runtime_details_name_the_generation_asked_for() -> None:
    """--runtime-version 0.5.7: runtime_details.ollama says the release modelled (not the
    newest one), and the KV note names the llama.cpp that release vendors."""
    spec = find_model("llama-3.1-8b").spec()
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=12 * GiB),))
    old = estimate_ollama(spec, InferenceSettings(runtime_version="0.5.7"), hw)
    rd = old.runtime_details
    assert isinstance(rd["ollama"], dict)
    assert rd["ollama"]["version_modelled"].startswith(resolve_generation("ollama", "0.5.7").label)
    assert rd["ollama"]["version_modelled"].startswith("Ollama 0.4.0-0.6.3")
    assert rd["ollama"]["llamacpp_vendored"] == "2025-01-06"  # 0.5.5-0.5.12 pin 46e3556 (b4419)
    assert not any("named above" in a for a in old.assumptions)
    assert any("vendored by this Ollama release: 2025-01-06" in a for a in old.assumptions)
    new = estimate_ollama(spec, InferenceSettings(), hw)
    nd = new.runtime_details["ollama"]
    assert isinstance(nd, dict)
    assert nd["version_modelled"] == (
        "Ollama 0.30+ (llama-server for every GGUF model); llama-3.1-8b runs on llama-server"
    )


def test_the_modelled_line_says_which_runner_this_model_gets_apart_from_the_release(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--runtime-version 0.13.4: the release's row is about the llama runner's flash attention,
    but Gemma 3 runs on the Ollama engine there (OllamaEngineRequired): the "modelled:" line
    printed to the user named only the row ("llama runner: flash attention auto") while the
    assumptions said "Ollama engine". It now names the runner this model gets, and the row's
    range is written out (0.29, not "0.2x")."""
    from oomkit.cli import main

    def modelled(model: str, version: str) -> str:
        args = ["estimate", model, "--runtime", "ollama", "--vram", "12GiB"]
        assert main([*args, "--runtime-version", version]) == 0
        out = capsys.readouterr().out
        return next(ln for ln in out.splitlines() if ln.startswith("modelled: "))

    gemma = modelled("gemma-3-12b", "0.13.4")
    assert gemma.startswith("modelled: Ollama 0.13.4-0.15.4 (")
    assert gemma.endswith("; gemma-3-12b runs on the Ollama engine")
    llama = modelled("llama-3.1-8b", "0.13.4")
    assert llama.endswith("; llama-3.1-8b runs on the llama.cpp runner")
    # a default that the user's --ctx overrides is called a default, not the context modelled
    old = modelled("llama-3.1-8b", "0.5.7")
    assert "default num_ctx 2048" in old

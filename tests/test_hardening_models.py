"""Issue 10 item 5: the known model errors and catalog additions."""

from __future__ import annotations

import json

import pytest

from oomkit.api import estimate_model, load_model
from oomkit.cli import main
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import model_tensors


def _params(name: str) -> int:
    spec = load_model(name)
    return sum(t.n_params for t in model_tensors(spec)) + spec.multimodal_params


def test_phi35_moe_counts_its_experts() -> None:
    # published: 41,873,153,024 (safetensors); was ~3.4B when read as a dense Llama
    assert _params("phi-3.5-moe") == pytest.approx(41_873_153_024, rel=1e-5)
    est = estimate_model("phi-3.5-moe", InferenceSettings(runtime="transformers"))
    assert est.devices[0].weights_bytes == pytest.approx(2 * 41_873_153_024, rel=1e-3)


def test_phi2_is_not_a_gated_llama() -> None:
    # published: 2,779,683,840; the lm_head bias (51,200) is the only difference
    assert _params("phi-2") == pytest.approx(2_779_683_840, rel=1e-4)
    est = estimate_model("phi-2", InferenceSettings(runtime="transformers"))
    assert est.devices[0].weights_bytes == pytest.approx(2 * 2_779_683_840, rel=1e-3)


@pytest.mark.parametrize("runtime", ["llama.cpp", "transformers", "vllm", "ollama"])
def test_falcon_mamba_loads(runtime: str) -> None:
    est = estimate_model("falcon-mamba-7b", InferenceSettings(runtime=runtime))
    assert est.model.params == pytest.approx(7.27e9, rel=0.01)
    assert est.devices[0].total_bytes > 0


@pytest.mark.parametrize("runtime", ["llama.cpp", "vllm"])
def test_llama4_scout_chunked_layers_keep_chunk_kv(runtime: str) -> None:
    """36 of 48 layers use 8192-token chunked attention: at 1M tokens only the 12 global layers
    hold the whole context (8 KV heads x 128 x K+V x bf16 = 4 KiB per token per layer)."""
    est = estimate_model("llama-4-scout", InferenceSettings(runtime=runtime, ctx=1 << 20))
    kv = sum(d.kv_cache_bytes for d in est.devices)
    global_only = 12 * (1 << 20) * 4096
    assert global_only <= kv < global_only * 1.05
    assert kv < 48 * (1 << 20) * 4096 / 3


def test_gpt_oss_on_ollama_is_mxfp4() -> None:
    est = estimate_model("gpt-oss-20b", InferenceSettings(runtime="ollama"))
    assert est.settings["quant"] == "MXFP4"


@pytest.mark.parametrize(
    ("ref", "model", "quant"),
    [
        ("hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q8_0", "llama-3.2-1b", "Q8_0"),
        ("hf.co/unsloth/Qwen3-30B-A3B-GGUF:UD-Q4_K_XL", "qwen3-30b-a3b", "UD-Q4_K_XL"),
    ],
)
def test_ollama_hf_co_tags(ref: str, model: str, quant: str) -> None:
    est = estimate_model(ref, InferenceSettings(runtime="ollama"))
    assert est.model.name == model
    assert est.settings["quant"] == quant


@pytest.mark.parametrize(("ud", "base"), [("UD-Q4_K_XL", "Q4_K_M"), ("UD-Q3_K_XL", "Q3_K_M")])
def test_unsloth_dynamic_quants(ud: str, base: str) -> None:
    a = estimate_model("llama-3.1-8b", InferenceSettings(quant=ud))
    b = estimate_model("llama-3.1-8b", InferenceSettings(quant=base))
    assert a.devices[0].weights_bytes == b.devices[0].weights_bytes
    assert any("Unsloth Dynamic" in n and base in n for n in a.assumptions)


def test_gemma3_270m_in_catalog() -> None:
    # 268,098,176 parameters (Hugging Face model card "268M params")
    assert _params("gemma-3-270m") == 268_098_176
    est = estimate_model("gemma3:270m", InferenceSettings(runtime="ollama"))
    assert est.settings["quant"] == "Q8_0"


def test_models_lists_no_unknown_params(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert " ? " not in out
    assert main(["models", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)["models"]
    assert all(d["params"] or d["params_computed"] for d in docs)

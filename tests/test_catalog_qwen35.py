"""Qwen3.5 (``qwen3_5`` / ``qwen3_5_moe``) in the catalog: the stored configs equal the cited
copies, the loader models the hybrid stack and the vision tower, and every runtime estimates it.

Cited copies (see PROVENANCE.md): Qwen/Qwen3.5-0.8B config.json printed verbatim by ``curl`` in an
auto-round session log; Qwen3.5-35B-A3B from a checkpoint validator's Qwen3.6-35B-A3B config and a
DeltaNet inventory of the Qwen3.5-35B-A3B snapshot ec2d4ece (identical text fields).
"""

from __future__ import annotations

import pytest

from oomkit.catalog.models import find_model, ollama_default_quant
from oomkit.cli import main
from oomkit.estimate.llamacpp import gguf_arch
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.model import LAYER_FULL, LAYER_LINEAR
from oomkit.spec.tensors import count_params, derive_tensors

#: the cited values of each entry (text_config, then vision_config)
CITED = {
    "qwen3.5-0.8b": (
        {
            "hidden_size": 1024,
            "intermediate_size": 3584,
            "num_hidden_layers": 24,
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 16,
            "linear_key_head_dim": 128,
            "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4,
            "full_attention_interval": 4,
            "vocab_size": 248320,
            "max_position_embeddings": 262144,
            "tie_word_embeddings": True,
            "mtp_num_hidden_layers": 1,
        },
        {"depth": 12, "hidden_size": 768, "intermediate_size": 3072, "out_hidden_size": 1024},
    ),
    "qwen3.5-35b-a3b": (
        {
            "hidden_size": 2048,
            "num_hidden_layers": 40,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "num_experts": 256,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 32,
            "linear_key_head_dim": 128,
            "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4,
            "full_attention_interval": 4,
            "vocab_size": 248320,
            "max_position_embeddings": 262144,
            "tie_word_embeddings": False,
            "mtp_num_hidden_layers": 1,
        },
        {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "out_hidden_size": 2048},
    ),
}


@pytest.mark.parametrize("key", sorted(CITED))
def test_stored_config_equals_the_cited_copy(key: str) -> None:
    entry = find_model(key)
    text, vision = CITED[key]
    stored = entry.config
    assert {k: stored["text_config"][k] for k in text} == text
    assert {k: stored["vision_config"][k] for k in vision} == vision
    n = text["num_hidden_layers"]
    assert list(stored["text_config"]["layer_types"]) == [
        "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)
    ]
    assert entry.checked_against  # the copy it was compared with is recorded


def test_parameter_counts_round_to_the_published_sizes() -> None:
    """Qwen names the sizes "0.8B" and "35B-A3B" (text + vision, MTP layer not counted)."""
    small = parse_config(find_model("qwen3.5-0.8b").config, name="qwen3.5-0.8b")
    moe = parse_config(find_model("qwen3.5-35b-a3b").config, name="qwen3.5-35b-a3b")
    assert count_params(small) == 852_985_920
    assert abs(count_params(small) - 800_000_000) < 100_000_000
    assert count_params(moe) == 35_107_181_936
    assert round(count_params(moe) / 1e9) == 35


def test_vision_tower_counts_the_qwen3_5_vision_model() -> None:
    """Qwen3_5VisionModel of the 0.8B by hand: Conv3d patch embed + bias, 2304 position rows,
    12 blocks (2 LayerNorms, qkv, proj, fc1, fc2 with biases), merger (LayerNorm(768),
    3072 -> 3072 -> 1024 with biases)."""
    h, inter, merged, out = 768, 3072, 768 * 4, 1024
    embed = 3 * 2 * 16 * 16 * h + h + 2304 * h
    block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    merger = 2 * h + (merged * merged + merged) + (merged * out + out)
    spec = parse_config(find_model("qwen3.5-0.8b").config, name="qwen3.5-0.8b")
    assert spec.multimodal_params == embed + 12 * block + merger == 100_592_896


def test_hybrid_stack_and_llamacpp_tensors() -> None:
    spec = parse_config(find_model("qwen3.5-35b-a3b").config, name="qwen3.5-35b-a3b")
    assert spec.layer_types.count(LAYER_FULL) == 10
    assert spec.layer_types.count(LAYER_LINEAR) == 30
    rec = spec.recurrent
    assert rec is not None
    assert rec.kind == "gated_delta_net"
    # llama.cpp n_embd_r: (d_conv-1) * (2*16*128 + 32*128); n_embd_s: 128 * 32*128
    assert rec.conv_state_elements == 3 * (2 * 16 * 128 + 32 * 128)
    assert rec.ssm_state_elements == 128 * 32 * 128
    assert spec.moe is not None
    assert spec.moe.num_experts == 256
    assert spec.moe.shared_expert_gate
    assert spec.moe.dense_layers == ()
    assert gguf_arch(spec) == "qwen35moe"
    names = {t.name: t.shape for t in derive_tensors(spec)}
    # llama.cpp src/models/qwen35.cpp: gated query (2 x heads x head_dim), alpha/beta apart
    assert names["blk.3.attn_q.weight"] == (2 * 16 * 256, 2048)
    assert names["blk.0.ssm_alpha.weight"] == (32, 2048)
    assert names["blk.0.ssm_beta.weight"] == (32, 2048)
    assert "blk.0.ssm_ba.weight" not in names
    dense = parse_config(find_model("qwen3.5-0.8b").config, name="qwen3.5-0.8b")
    assert gguf_arch(dense) == "qwen35"
    assert dense.moe is None
    assert dense.intermediate_size == 3584


def test_hf_repo_ids_and_ollama_tags_resolve() -> None:
    assert find_model("Qwen/Qwen3.5-35B-A3B").key == "qwen3.5-35b-a3b"
    assert find_model("Qwen/Qwen3.5-0.8B").key == "qwen3.5-0.8b"
    assert find_model("qwen3.5:35b").key == "qwen3.5-35b-a3b"
    assert ollama_default_quant("qwen3.5:35b") == "Q4_K_M"


@pytest.mark.parametrize("runtime", ["llamacpp", "vllm", "ollama", "transformers"])
def test_cli_estimate_on_every_runtime(capsys: pytest.CaptureFixture[str], runtime: str) -> None:
    code = main(
        ["estimate", "qwen3.5-35b-a3b", "--gpu", "rtx-4090", "--ctx", "32768", "-r", runtime]
    )
    out, err = capsys.readouterr()
    fits = runtime in ("llamacpp", "ollama")  # Q4_K_M GGUF; vLLM/transformers load bf16 (~65 GiB)
    assert code == (0 if fits else 3), err  # 3: EXIT_NEGATIVE (does not fit)
    assert "qwen3.5-35b-a3b (Qwen3_5MoeForConditionalGeneration" in out
    assert "KV cache" in out

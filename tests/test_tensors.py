"""Exact parameter counts and the GGUF tensor layout derived from config.json.

Every exact count below is a published figure (see tests/fixtures/configs/PROVENANCE.md); a layout
that drops or double-counts one bias vector fails these tests.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from oomkit.loaders.hf_config import load_config, parse_config
from oomkit.spec.model import LAYER_FULL, LAYER_LINEAR, ModelSpec, TensorInfo
from oomkit.spec.tensors import (
    NON_PARAMETER_ROLES,
    active_params,
    count_params,
    derive_tensors,
    is_parameter,
    model_tensors,
    mtp_params,
)

FIXTURES = Path(__file__).parent / "fixtures" / "configs"

# fixture file -> published exact parameter count (HF safetensors "total")
EXACT_COUNTS = {
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.2-3b": 3_212_749_824,
    "llama-3.2-1b": 1_235_814_400,  # tied embeddings counted once
    "qwen2.5-3b": 3_085_938_688,
    "qwen2.5-7b": 7_615_616_512,  # q/k/v biases
    "qwen2.5-14b": 14_770_033_664,
    "qwen2.5-32b": 32_763_876_352,
    "qwen3-4b": 4_022_468_096,
    "qwen3-8b": 8_190_735_360,  # q/k norms
    "qwen3-14b": 14_768_307_200,
    "qwen3-32b": 32_762_123_264,
    "qwen3-30b-a3b": 30_532_122_624,  # 128 experts
    "qwen2-0.5b-instruct": 494_032_768,
    "mixtral-8x7b-v0.1": 46_702_792_704,
    "gemma-2-9b": 9_241_705_984,  # post norms, head_dim 256 != 3584/16
    "gemma-2b": 2_506_172_416,  # multi-query
    "gemma-3-1b-it": 999_885_952,
    "phi-3-mini-4k-instruct": 3_821_079_552,  # fused qkv and gate/up
    "deepseek-v2-lite": 15_706_484_224,  # MLA without q_lora, dense layer 0
    "deepseek-r1": 671_026_419_200,  # main model; MTP separate
    "qwen1.5-moe-a2.7b": 14_315_784_192,  # gated shared expert
    "deepseek-moe-16b": 16_375_728_128,  # DeepSeek MoE without MLA
    "internlm2_5-7b-chat": 7_737_708_544,
    "smollm2-135m": 134_515_008,
    "gpt2": 124_439_808,  # learned positions, LayerNorm biases
    "gpt-oss-20b": 20_914_757_184,  # sinks, expert and router biases
    "gpt-oss-120b": 116_829_156_672,
}


def _load(name: str) -> ModelSpec:
    return load_config(FIXTURES / f"{name}.json")


def _by_name(spec: ModelSpec) -> dict[str, TensorInfo]:
    return {t.name: t for t in derive_tensors(spec)}


@pytest.mark.parametrize(("name", "expected"), sorted(EXACT_COUNTS.items()))
def test_count_params_equals_published_count(name: str, expected: int) -> None:
    assert count_params(_load(name)) == expected


_LLAMA4_TEXT = {"hidden_size": 5120, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
                "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
                "num_hidden_layers": 48, "num_local_experts": 16, "num_experts_per_tok": 1,
                "interleave_moe_layer_step": 1, "vocab_size": 202048,
                "attention_chunk_size": 8192, "use_qk_norm": True}  # fmt: skip
_LLAMA4_VISION = {"hidden_size": 1408, "image_size": 336, "intermediate_size": 5632,
                  "num_hidden_layers": 34, "patch_size": 14, "projector_input_dim": 4096,
                  "projector_output_dim": 4096, "vision_output_dim": 4096}  # fmt: skip

# Minimal configs: only the keys that matter, copied from each model's config.json.
MINIMAL: dict[str, tuple[dict[str, Any], int]] = {
    # EleutherAI/pythia-160m: fused biased qkv, LayerNorm biases, untied embed_out
    "pythia-160m": (
        {
            "architectures": ["GPTNeoXForCausalLM"],
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 50304,
            "tie_word_embeddings": False,
        },
        162_322_944,
    ),
    # facebook/opt-125m: 2048 + 2 learned position rows (OPT offset)
    "opt-125m": (
        {
            "architectures": ["OPTForCausalLM"],
            "hidden_size": 768,
            "ffn_dim": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "max_position_embeddings": 2048,
            "vocab_size": 50272,
            "word_embed_proj_dim": 768,
        },
        125_239_296,
    ),
    # mistralai/Mistral-7B-v0.1
    "mistral-7b-v0.1": (
        {
            "architectures": ["MistralForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "vocab_size": 32000,
            "sliding_window": 4096,
            "tie_word_embeddings": False,
        },
        7_241_732_096,
    ),
    # allenai/OLMo-2-1124-7B: no pre-norms, post norms, full-width q/k norms
    "olmo-2-1124-7b": (
        {
            "architectures": ["Olmo2ForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "vocab_size": 100352,
            "tie_word_embeddings": False,
        },
        7_298_617_344,
    ),
    # state-spaces/mamba-130m-hf
    "mamba-130m-hf": (
        {
            "architectures": ["MambaForCausalLM"],
            "hidden_size": 768,
            "intermediate_size": 1536,
            "num_hidden_layers": 24,
            "state_size": 16,
            "conv_kernel": 4,
            "time_step_rank": 48,
            "vocab_size": 50280,
        },
        129_135_360,
    ),
    # google/gemma-3-4b-it: text_config leaves heads/vocab to Gemma3TextConfig defaults;
    # the count includes the SigLIP tower and the projector
    "gemma-3-4b-it": (
        {
            "architectures": ["Gemma3ForConditionalGeneration"],
            "text_config": {
                "hidden_size": 2560,
                "intermediate_size": 10240,
                "model_type": "gemma3_text",
                "num_hidden_layers": 34,
                "sliding_window": 1024,
            },
            "vision_config": {
                "hidden_size": 1152,
                "image_size": 896,
                "intermediate_size": 4304,
                "num_hidden_layers": 27,
                "patch_size": 14,
                "vision_use_head": False,
            },
        },
        4_300_079_472,
    ),
    # meta-llama/Llama-4-Scout-17B-16E: MoE on every layer, vision encoder + projector counted
    "llama-4-scout-17b-16e": (
        {
            "architectures": ["Llama4ForConditionalGeneration"],
            "text_config": _LLAMA4_TEXT,
            "vision_config": _LLAMA4_VISION,
        },
        108_641_793_536,
    ),
    # meta-llama/Llama-4-Maverick-17B-128E: 128 experts on every other layer
    "llama-4-maverick-17b-128e": (
        {
            "architectures": ["Llama4ForConditionalGeneration"],
            "text_config": {
                **_LLAMA4_TEXT,
                "num_local_experts": 128,
                "interleave_moe_layer_step": 2,
            },
            "vision_config": _LLAMA4_VISION,
        },
        401_583_781_376,
    ),
    # Qwen/Qwen3-Coder-Next (Qwen3-Next architecture): 36 gated-delta-net + 12 attention layers
    "qwen3-coder-next": (
        {
            "architectures": ["Qwen3NextForCausalLM"],
            "hidden_size": 2048,
            "num_hidden_layers": 48,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "intermediate_size": 5120,
            "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512,
            "num_experts": 512,
            "num_experts_per_tok": 10,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
            "full_attention_interval": 4,
            "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 128,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 32,
            "linear_value_head_dim": 128,
        },
        79_674_391_296,
    ),
}


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_minimal_configs_give_published_counts(name: str) -> None:
    config, expected = MINIMAL[name]
    assert count_params(parse_config(config, name=name)) == expected


def test_deepseek_mtp_layer_is_counted_separately() -> None:
    # HF lists DeepSeek-R1 at 684,489,845,504: the 671B main model + the MTP layer 61
    spec = _load("deepseek-r1")
    assert spec.num_nextn_predict_layers == 1
    assert count_params(spec) + mtp_params(spec) == 684_489_845_504
    assert mtp_params(_load("llama-3.1-8b")) == 0


def test_llama31_8b_has_the_292_tensors_of_its_gguf() -> None:
    # 32 layers x 9 + token_embd + output_norm + output + rope_freqs (llama3 rope scaling)
    spec = _load("llama-3.1-8b")
    tensors = _by_name(spec)
    assert len(tensors) == 292
    assert tensors["rope_freqs.weight"].shape == (64,)
    assert tensors["token_embd.weight"].shape == (128256, 4096)
    assert tensors["output.weight"].shape == (128256, 4096)
    assert tensors["blk.0.attn_k.weight"].shape == (1024, 4096)
    assert tensors["blk.31.ffn_down.weight"].shape == (4096, 14336)
    assert tensors["blk.31.ffn_gate.weight"].shape == (14336, 4096)
    roles = {t.role for t in tensors.values() if t.layer == 0}
    assert roles == {
        "attn_norm.weight",
        "attn_q.weight",
        "attn_k.weight",
        "attn_v.weight",
        "attn_output.weight",
        "ffn_norm.weight",
        "ffn_gate.weight",
        "ffn_up.weight",
        "ffn_down.weight",
    }


def test_rope_freqs_is_in_the_layout_but_not_a_parameter() -> None:
    spec = _load("llama-3.1-8b")
    rope = _by_name(spec)["rope_freqs.weight"]
    assert rope.role in NON_PARAMETER_ROLES
    assert not is_parameter(rope)
    total = sum(t.n_params for t in derive_tensors(spec))
    assert total - count_params(spec) == 64


def test_tied_model_has_no_output_tensor() -> None:
    tensors = _by_name(_load("llama-3.2-1b"))
    assert "output.weight" not in tensors
    assert len(tensors) == 16 * 9 + 3  # + rope_freqs


def test_role_and_layer_follow_the_name() -> None:
    for t in derive_tensors(_load("qwen3-30b-a3b")):
        if t.layer is None:
            assert t.role == t.name
        else:
            assert t.name == f"blk.{t.layer}.{t.role}"
        assert t.dtype is None
        assert t.n_bytes is None


def test_qwen2_biases_on_qkv_not_output() -> None:
    tensors = _by_name(_load("qwen2.5-7b"))
    assert tensors["blk.0.attn_q.bias"].shape == (3584,)
    assert tensors["blk.0.attn_k.bias"].shape == (512,)
    assert "blk.0.attn_output.bias" not in tensors


def test_qwen3_has_per_head_qk_norms() -> None:
    tensors = _by_name(_load("qwen3-8b"))
    assert tensors["blk.0.attn_q_norm.weight"].shape == (128,)
    assert tensors["blk.0.attn_k_norm.weight"].shape == (128,)


def test_mixtral_stacks_experts_out_in() -> None:
    tensors = _by_name(_load("mixtral-8x7b-v0.1"))
    assert tensors["blk.0.ffn_gate_inp.weight"].shape == (8, 4096)
    assert tensors["blk.0.ffn_gate_exps.weight"].shape == (8, 14336, 4096)
    assert tensors["blk.0.ffn_down_exps.weight"].shape == (8, 4096, 14336)
    assert "blk.0.ffn_gate.weight" not in tensors


def test_active_params() -> None:
    # Mixtral "12.9B active"; Qwen3-30B-A3B "3.3B activated"; dense models: all of them
    assert active_params(_load("mixtral-8x7b-v0.1")) == 12_879_925_248
    assert active_params(_load("qwen3-30b-a3b")) == 3_353_032_704
    dense = _load("qwen3-8b")
    assert active_params(dense) == count_params(dense)
    # deepseek-moe-16b: published num_params_active 2,828,650,496 (same definition as ours)
    assert active_params(_load("deepseek-moe-16b")) == 2_828_650_496
    # DeepSeek-V3/R1 "37B activated"
    assert 37_000_000_000 < active_params(_load("deepseek-r1")) < 38_000_000_000


def test_gemma2_sandwich_norms_and_tied_output() -> None:
    tensors = _by_name(_load("gemma-2-9b"))
    for role in ("attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"):
        assert tensors[f"blk.0.{role}.weight"].shape == (3584,)
    assert tensors["blk.0.attn_q.weight"].shape == (16 * 256, 3584)
    assert "output.weight" not in tensors


def test_phi3_fused_qkv_and_gate_up() -> None:
    tensors = _by_name(_load("phi-3-mini-4k-instruct"))
    assert tensors["blk.0.attn_qkv.weight"].shape == (9216, 3072)
    assert tensors["blk.0.ffn_up.weight"].shape == (16384, 3072)
    assert "blk.0.ffn_gate.weight" not in tensors
    assert len(tensors) == 32 * 6 + 3


def test_phi3_longrope_factors_are_listed_not_counted() -> None:
    config = json.loads((FIXTURES / "phi-3-mini-4k-instruct.json").read_text())
    config["rope_scaling"] = {"type": "longrope", "long_factor": [1.0], "short_factor": [1.0]}
    spec = parse_config(config, name="phi-3-mini-128k-like")
    tensors = _by_name(spec)
    assert tensors["rope_factors_long.weight"].shape == (48,)
    assert "rope_factors_short.weight" in tensors
    assert count_params(spec) == 3_821_079_552


def test_deepseek_v2_lite_mla_and_moe_layout() -> None:
    tensors = _by_name(_load("deepseek-v2-lite"))
    # no q_lora_rank: a plain attn_q of n_head * (nope + rope)
    assert tensors["blk.0.attn_q.weight"].shape == (16 * 192, 2048)
    assert "blk.0.attn_q_a.weight" not in tensors
    assert tensors["blk.0.attn_kv_a_mqa.weight"].shape == (512 + 64, 2048)
    assert tensors["blk.0.attn_k_b.weight"].shape == (16, 512, 128)
    assert tensors["blk.0.attn_v_b.weight"].shape == (16, 128, 512)
    # first_k_dense_replace = 1: layer 0 dense, layer 1 routed + 2 shared experts
    assert tensors["blk.0.ffn_gate.weight"].shape == (10944, 2048)
    assert tensors["blk.1.ffn_gate_exps.weight"].shape == (64, 1408, 2048)
    assert tensors["blk.1.ffn_gate_shexp.weight"].shape == (2 * 1408, 2048)
    assert "blk.1.exp_probs_b.bias" not in tensors


def test_deepseek_r1_q_lora_and_score_bias() -> None:
    spec = _load("deepseek-r1")
    tensors = _by_name(spec)
    assert tensors["blk.0.attn_q_a.weight"].shape == (1536, 7168)
    assert tensors["blk.0.attn_q_b.weight"].shape == (128 * 192, 1536)
    assert tensors["blk.3.exp_probs_b.bias"].shape == (256,)
    assert "blk.2.exp_probs_b.bias" not in tensors
    assert "blk.61.attn_norm.weight" not in tensors  # MTP layer not in the GGUF layout
    assert len(tensors) == 1086


def test_gpt_oss_layout_matches_its_459_tensor_gguf() -> None:
    tensors = _by_name(_load("gpt-oss-20b"))
    assert len(tensors) == 459
    assert tensors["blk.0.attn_sinks.weight"].shape == (64,)
    assert tensors["blk.0.ffn_gate_inp.bias"].shape == (32,)
    assert tensors["blk.0.ffn_up_exps.bias"].shape == (32, 2880)
    assert tensors["blk.0.ffn_down_exps.weight"].shape == (32, 2880, 2880)
    assert tensors["blk.0.attn_output.bias"].shape == (2880,)
    assert "blk.0.ffn_norm.weight" not in tensors
    assert "blk.0.post_attention_norm.weight" in tensors


def test_gpt2_positions_and_fused_biased_qkv() -> None:
    tensors = _by_name(_load("gpt2"))
    assert tensors["position_embd.weight"].shape == (1024, 768)
    assert tensors["blk.0.attn_qkv.bias"].shape == (2304,)
    assert tensors["blk.0.attn_norm.bias"].shape == (768,)
    assert tensors["output_norm.bias"].shape == (768,)
    assert "output.weight" not in tensors


def test_mamba_layout_names() -> None:
    config, _ = MINIMAL["mamba-130m-hf"]
    tensors = _by_name(parse_config(config, name="mamba-130m"))
    assert len(tensors) == 242
    assert tensors["blk.0.ssm_a"].shape == (1536, 16)
    assert tensors["blk.0.ssm_d"].shape == (1536,)
    assert tensors["blk.0.ssm_x.weight"].shape == (48 + 32, 1536)
    assert tensors["blk.0.ssm_conv1d.weight"].shape == (1536, 4)
    assert tensors["blk.0.ssm_in.weight"].shape == (3072, 768)


def test_qwen3_next_hybrid_layout() -> None:
    config, _ = MINIMAL["qwen3-coder-next"]
    spec = parse_config(config, name="qwen3-next")
    assert spec.layer_types[:4] == (LAYER_LINEAR, LAYER_LINEAR, LAYER_LINEAR, LAYER_FULL)
    tensors = _by_name(spec)
    # gated attention: attn_q emits query and gate
    assert tensors["blk.3.attn_q.weight"].shape == (2 * 16 * 256, 2048)
    assert tensors["blk.3.attn_k.weight"].shape == (2 * 256, 2048)
    assert "blk.3.ssm_out.weight" not in tensors
    # gated delta net: q,k (16 x 128 each) and v (32 x 128) through one conv
    assert tensors["blk.0.attn_qkv.weight"].shape == (8192, 2048)
    assert tensors["blk.0.attn_gate.weight"].shape == (4096, 2048)
    assert tensors["blk.0.ssm_conv1d.weight"].shape == (8192, 4)
    assert tensors["blk.0.ssm_ba.weight"].shape == (64, 2048)
    assert "blk.0.attn_q.weight" not in tensors
    assert tensors["blk.0.ffn_gate_inp_shexp.weight"].shape == (1, 2048)


def test_encoder_layout() -> None:
    tensors = _by_name(_load("snowflake-arctic-embed-m"))
    assert tensors["token_types.weight"].shape == (2, 768)
    assert tensors["position_embd.weight"].shape == (512, 768)
    assert "token_embd_norm.bias" in tensors
    assert "blk.0.layer_output_norm.weight" in tensors
    assert "output.weight" not in tensors
    assert "output_norm.weight" not in tensors


def test_model_tensors_prefers_header_tensors_and_skips_sidecars() -> None:
    spec = _load("llama-3.2-1b")
    header = (
        TensorInfo(name="token_embd.weight", shape=(10, 4), role="token_embd.weight"),
        TensorInfo(name="blk.0.attn_q.weight", shape=(4, 4), role="attn_q.weight", layer=0),
        TensorInfo(name="blk.0.attn_q.scales", shape=(4, 1), role="attn_q.scales", layer=0),
    )
    with_header = replace(spec, tensors=header, multimodal_params=7)
    assert model_tensors(with_header) == header
    assert count_params(with_header) == 40 + 16 + 7


def test_falcon_variants() -> None:
    # falcon-7b: multi-query, one LayerNorm per layer; falcon-40b: 8 KV heads, two LayerNorms
    f7 = parse_config(
        {
            "architectures": ["FalconForCausalLM"],
            "hidden_size": 4544,
            "num_attention_heads": 71,
            "num_hidden_layers": 32,
            "vocab_size": 65024,
        },
        name="falcon-7b",
    )
    t7 = _by_name(f7)
    assert t7["blk.0.attn_qkv.weight"].shape == ((71 + 2) * 64, 4544)
    assert "blk.0.attn_norm_2.weight" not in t7
    # no linear biases (bias=false); LayerNorms carry a bias; output tied to the embedding
    assert not any(t.role.endswith(".bias") and "norm" not in t.role for t in t7.values())
    assert "output.weight" not in t7
    f40 = parse_config(
        {
            "architectures": ["FalconForCausalLM"],
            "hidden_size": 8192,
            "num_attention_heads": 128,
            "num_hidden_layers": 60,
            "num_kv_heads": 8,
            "new_decoder_architecture": True,
            "vocab_size": 65024,
        },
        name="falcon-40b",
    )
    t40 = _by_name(f40)
    assert t40["blk.0.attn_qkv.weight"].shape == ((128 + 16) * 64, 8192)
    assert t40["blk.0.attn_norm_2.bias"].shape == (8192,)


def test_opt_350m_projections_and_no_final_norm() -> None:
    spec = parse_config(
        {
            "architectures": ["OPTForCausalLM"],
            "hidden_size": 1024,
            "ffn_dim": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "max_position_embeddings": 2048,
            "vocab_size": 50272,
            "word_embed_proj_dim": 512,
            "do_layer_norm_before": False,
        },
        name="opt-350m",
    )
    tensors = _by_name(spec)
    assert tensors["token_embd.weight"].shape == (50272, 512)
    assert tensors["project_in.weight"].shape == (1024, 512)
    assert tensors["position_embd.weight"].shape == (2050, 1024)
    assert "output_norm.weight" not in tensors


def test_cohere_per_head_qk_norm_matrix() -> None:
    # command-r-plus: use_qk_norm -> q_norm [n_head, head_dim], k_norm [n_kv_head, head_dim]
    spec = parse_config(
        {
            "architectures": ["CohereForCausalLM"],
            "hidden_size": 12288,
            "num_attention_heads": 96,
            "num_key_value_heads": 8,
            "num_hidden_layers": 2,
            "intermediate_size": 33792,
            "vocab_size": 256000,
            "use_qk_norm": True,
        },
        name="command-r-plus-like",
    )
    tensors = _by_name(spec)
    assert tensors["blk.0.attn_q_norm.weight"].shape == (96, 128)
    assert tensors["blk.0.attn_k_norm.weight"].shape == (8, 128)
    assert "blk.0.attn_norm.bias" not in tensors  # LayerNorm without bias
    assert "blk.0.ffn_norm.weight" not in tensors  # parallel block


def test_olmo2_full_width_qk_norm() -> None:
    config, _ = MINIMAL["olmo-2-1124-7b"]
    tensors = _by_name(parse_config(config, name="olmo2"))
    assert tensors["blk.0.attn_q_norm.weight"].shape == (4096,)
    assert "blk.0.attn_norm.weight" not in tensors
    assert "blk.0.post_ffw_norm.weight" in tensors


def test_mamba2_layout() -> None:
    spec = parse_config(
        {
            "architectures": ["Mamba2ForCausalLM"],
            "hidden_size": 768,
            "num_hidden_layers": 2,
            "vocab_size": 50288,
            "state_size": 128,
            "num_heads": 24,
            "head_dim": 64,
            "n_groups": 1,
        },
        name="mamba2-130m",
    )
    tensors = _by_name(spec)
    assert tensors["blk.0.ssm_in.weight"].shape == (2 * 1536 + 2 * 128 + 24, 768)
    assert tensors["blk.0.ssm_conv1d.weight"].shape == (1536 + 256, 4)
    assert tensors["blk.0.ssm_conv1d.bias"].shape == (1536 + 256,)
    assert tensors["blk.0.ssm_a"].shape == (24, 1)
    assert tensors["blk.0.ssm_norm.weight"].shape == (1, 1536)
    assert "blk.0.ffn_up.weight" not in tensors  # no MLP in Mamba-2 blocks


def test_granite_hybrid_mamba_and_moe_layout() -> None:
    kinds = ["mamba"] * 3 + ["attention"]
    spec = parse_config(
        {
            "architectures": ["GraniteMoeHybridForCausalLM"],
            "hidden_size": 1536,
            "intermediate_size": 512,
            "shared_intermediate_size": 1024,
            "num_local_experts": 64,
            "num_experts_per_tok": 6,
            "num_attention_heads": 12,
            "num_key_value_heads": 4,
            "num_hidden_layers": 4,
            "vocab_size": 100352,
            "mamba_d_head": 64,
            "mamba_d_state": 128,
            "mamba_n_heads": 48,
            "layer_types": kinds,
        },
        name="granite-like",
    )
    tensors = _by_name(spec)
    assert tensors["blk.0.ssm_in.weight"].shape == (2 * 3072 + 2 * 128 + 48, 1536)
    assert "blk.0.attn_q.weight" not in tensors
    assert tensors["blk.3.attn_q.weight"].shape == (1536, 1536)
    assert tensors["blk.0.ffn_gate_exps.weight"].shape == (64, 512, 1536)
    assert tensors["blk.0.ffn_up_shexp.weight"].shape == (1024, 1536)
    assert tensors["blk.0.ffn_norm.weight"].shape == (1536,)


# architectures[0] -> gguf-py MODEL_ARCH member whose tensor list llama.cpp loads
_GGUF_ARCH = {
    "LlamaForCausalLM": "LLAMA",
    "MistralForCausalLM": "LLAMA",
    "MixtralForCausalLM": "LLAMA",
    "Qwen2ForCausalLM": "QWEN2",
    "Qwen2MoeForCausalLM": "QWEN2MOE",
    "Qwen3ForCausalLM": "QWEN3",
    "Qwen3MoeForCausalLM": "QWEN3MOE",
    "Qwen3NextForCausalLM": "QWEN3NEXT",
    "GemmaForCausalLM": "GEMMA",
    "Gemma2ForCausalLM": "GEMMA2",
    "Gemma3ForCausalLM": "GEMMA3",
    "Gemma3ForConditionalGeneration": "GEMMA3",
    "Phi3ForCausalLM": "PHI3",
    "DeepseekV2ForCausalLM": "DEEPSEEK2",
    "DeepseekV3ForCausalLM": "DEEPSEEK2",
    "GptOssForCausalLM": "GPT_OSS",
    "InternLM2ForCausalLM": "INTERNLM2",
    "Starcoder2ForCausalLM": "STARCODER2",
    "CohereForCausalLM": "COMMAND_R",
    "Cohere2ForCausalLM": "COHERE2",
    "GPT2LMHeadModel": "GPT2",
    "GPTNeoXForCausalLM": "GPTNEOX",
    "FalconForCausalLM": "FALCON",
    "MambaForCausalLM": "MAMBA",
    "Olmo2ForCausalLM": "OLMO2",
    "BertModel": "BERT",
    "Glm4ForCausalLM": "GLM4",
    "Glm4MoeForCausalLM": "GLM4_MOE",
    "Llama4ForConditionalGeneration": "LLAMA4",
    "GraniteMoeForCausalLM": "GRANITE_MOE",
    "OlmoeForCausalLM": "OLMOE",
    "DeepseekForCausalLM": "DEEPSEEK",
}

_SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
          "num_hidden_layers": 4, "intermediate_size": 96, "vocab_size": 100}  # fmt: skip
_SYNTHETIC = {
    "glm4": {**_SMALL, "architectures": ["Glm4ForCausalLM"]},
    "cohere2": {**_SMALL, "architectures": ["Cohere2ForCausalLM"], "sliding_window": 8},
    "glm4-moe": {**_SMALL, "architectures": ["Glm4MoeForCausalLM"], "n_routed_experts": 4,
                 "num_nextn_predict_layers": 1,
                 "num_experts_per_tok": 2, "moe_intermediate_size": 32, "n_shared_experts": 1,
                 "first_k_dense_replace": 1, "use_qk_norm": True},
    "granite-moe": {**_SMALL, "architectures": ["GraniteMoeForCausalLM"], "num_local_experts": 4,
                    "num_experts_per_tok": 2},
    "olmoe": {**_SMALL, "architectures": ["OlmoeForCausalLM"], "num_experts": 4,
              "num_experts_per_tok": 2},
    "llama4": {"architectures": ["Llama4ForConditionalGeneration"],
               "text_config": {**_SMALL, "num_local_experts": 4, "interleave_moe_layer_step": 2,
                               "intermediate_size_mlp": 128, "attention_chunk_size": 16}},
}  # fmt: skip


def _gguf_layouts() -> list[tuple[str, ModelSpec]]:
    specs = [(p.stem, load_config(p)) for p in sorted(FIXTURES.glob("*.json"))]
    specs += [(name, parse_config(cfg, name=name)) for name, (cfg, _) in sorted(MINIMAL.items())]
    specs += [(name, parse_config(cfg, name=name)) for name, cfg in sorted(_SYNTHETIC.items())]
    return specs


@pytest.mark.parametrize(
    ("name", "spec"), _gguf_layouts(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_every_name_is_a_tensor_llama_cpp_knows_for_the_arch(name: str, spec: ModelSpec) -> None:
    # gguf-py's MODEL_TENSORS[arch] lists the tensors llama.cpp's converter may write for an arch;
    # a misspelt or foreign name (e.g. "ffn_norm" for gpt-oss) would not be in it.
    gguf = pytest.importorskip("gguf")
    if spec.architecture not in _GGUF_ARCH:
        pytest.skip(f"{spec.architecture} has no llama.cpp architecture")
    arch = gguf.MODEL_ARCH[_GGUF_ARCH[spec.architecture]]
    allowed = {
        gguf.TENSOR_NAMES[t].format(bid=i)
        for t in gguf.MODEL_TENSORS[arch]
        for i in range(spec.num_hidden_layers + spec.num_nextn_predict_layers)
    }
    unknown = [
        t.name
        for t in derive_tensors(spec)
        if t.name.removesuffix(".weight").removesuffix(".bias") not in allowed
    ]
    assert unknown == [], f"{name}: {unknown[:5]}"


_TRANSFORMERS_CASES = [
    "llama-3.2-1b", "qwen2-0.5b-instruct", "gpt2", "smollm2-135m", "gemma-3-1b-it",
    "phi-3-mini-4k-instruct", "qwen1.5-moe-a2.7b", "deepseek-v2-lite", "gpt-oss-20b",
    "mixtral-8x7b-v0.1", "starcoder2-7b", "aya-23-8b", "qwen3-30b-a3b", "gemma-2-9b",
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", _TRANSFORMERS_CASES)
def test_count_matches_transformers_model_on_meta_device(name: str) -> None:
    # Builds the transformers model without memory (meta device) and counts its parameters;
    # skipped where torch/transformers are not installed. Covers files whose count is not
    # published (starcoder2-7b, aya-23-8b) as well.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = json.loads((FIXTURES / f"{name}.json").read_text())
    arch = config.pop("architectures")[0]
    for key in ("auto_map", "quantization_config"):
        config.pop(key, None)
    model_type = config.pop("model_type")
    hf_config = transformers.CONFIG_MAPPING[model_type](**config)
    with torch.device("meta"):
        model = getattr(transformers, arch)(hf_config)
    expected = sum(p.numel() for p in model.parameters())
    assert count_params(_load(name)) == expected


def test_glm45_air_keeps_its_mtp_block_in_the_gguf_layout() -> None:
    # zai-org/GLM-4.5-Air config.json shapes; HF lists 110,468,824,832 parameters, MTP included
    spec = parse_config(
        {
            "architectures": ["Glm4MoeForCausalLM"],
            "hidden_size": 4096,
            "num_hidden_layers": 46,
            "num_attention_heads": 96,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "intermediate_size": 10944,
            "moe_intermediate_size": 1408,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "first_k_dense_replace": 1,
            "vocab_size": 151552,
            "attention_bias": True,
            "num_nextn_predict_layers": 1,
            "tie_word_embeddings": False,
        },
        name="glm-4.5-air",
    )
    assert count_params(spec) + mtp_params(spec) == 110_468_824_832
    tensors = _by_name(spec)
    assert tensors["blk.46.nextn.eh_proj.weight"].shape == (4096, 8192)
    assert tensors["blk.46.ffn_gate_exps.weight"].shape == (128, 1408, 4096)
    mtp_block = sum(t.n_params for t in tensors.values() if t.layer == 46)
    assert mtp_block == mtp_params(spec)
    total = sum(t.n_params for t in tensors.values())
    assert total - count_params(spec) == mtp_params(spec)
    # zai-org/GLM-4.5: 92 layers, 3 dense, 160 experts, q/k norms; HF lists 358,337,791,296
    glm45 = parse_config(
        {
            "architectures": ["Glm4MoeForCausalLM"],
            "hidden_size": 5120,
            "num_hidden_layers": 92,
            "num_attention_heads": 96,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "intermediate_size": 12288,
            "moe_intermediate_size": 1536,
            "n_routed_experts": 160,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "first_k_dense_replace": 3,
            "vocab_size": 151552,
            "attention_bias": True,
            "use_qk_norm": True,
            "num_nextn_predict_layers": 1,
            "tie_word_embeddings": False,
        },
        name="glm-4.5",
    )
    assert count_params(glm45) + mtp_params(glm45) == 358_337_791_296

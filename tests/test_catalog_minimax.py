"""MiniMax-M2 / M2.5 / M2.7 (``MiniMaxM2ForCausalLM``): the loader and the catalog entries.

Cited copies (see PROVENANCE.md): the MiniMax-M2 config arch block, byte for byte, in a Rust
test (code search id 60488407499); the MiniMax-M2.7 config.json printed verbatim with its
safetensors tensor listing (id 62693775865), whose element total checks every weight-bearing
dimension; MiniMax-M2.5's config.json as an Ascend guide prints it (id 62530921554).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.loaders.gguf_spec import ARCHITECTURES
from oomkit.loaders.hf_config import SUPPORTED_ARCHITECTURES, parse_config
from oomkit.spec.model import LAYER_FULL
from oomkit.spec.tensors import count_params, derive_tensors

NEW = ("minimax-m2", "minimax-m2.5", "minimax-m2.7")

# MiniMaxAI/MiniMax-M2.7 config.json as the cited report prints it ("原始 config.json"), every key
M27_CONFIG: dict[str, Any] = json.loads(
    '{"architectures": ["MiniMaxM2ForCausalLM"], "attn_type_list": ' + json.dumps([1] * 62) + ","
    ' "auto_map": {"AutoConfig": "configuration_minimax_m2.MiniMaxM2Config",'
    ' "AutoModelForCausalLM": "modeling_minimax_m2.MiniMaxM2ForCausalLM"}, "dtype": "bfloat16",'
    ' "head_dim": 128, "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 1536,'
    ' "max_position_embeddings": 204800, "model_type": "minimax_m2", "mtp_transformer_layers": 1,'
    ' "num_attention_heads": 48, "num_experts_per_tok": 8, "num_hidden_layers": 62,'
    ' "num_key_value_heads": 8, "num_local_experts": 256, "num_mtp_modules": 3,'
    ' "qk_norm_type": "per_layer", "quantization_config": {"activation_scheme": "dynamic",'
    ' "fmt": "float8_e4m3fn", "quant_method": "fp8", "weight_block_size": [128, 128],'
    ' "modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head"]},'
    ' "rms_norm_eps": 1e-06, "rope_theta": 5000000, "rotary_dim": 64, "scoring_func": "sigmoid",'
    ' "shared_intermediate_size": 0, "tie_word_embeddings": false,'
    ' "transformers_version": "4.46.1", "use_cache": true, "use_mtp": true, "use_qk_norm": true,'
    ' "use_routing_bias": true,'
    ' "vocab_size": 200064}'
)

#: the cited listing: 125 safetensors files, "参数总量" (total elements) 228,703,644,928
M27_LISTING_ELEMENTS = 228_703_644_928


def _fp8_block_scales(config: dict[str, Any]) -> int:
    """``weight_scale_inv`` elements: one float32 per 128x128 block of q/k/v/o and of every
    expert's w1/w2/w3 (the router, norms, embeddings and lm_head stay unquantized:
    ``modules_to_not_convert``). The listing's shapes: w1 [12, 24], q_proj [48, 24], k/v [8, 24]."""
    h, e, ff = (int(config[k]) for k in ("hidden_size", "num_local_experts", "intermediate_size"))
    q = int(config["num_attention_heads"]) * int(config["head_dim"])
    kv = int(config["num_key_value_heads"]) * int(config["head_dim"])

    def blocks(rows: int, cols: int) -> int:
        return -(-rows // 128) * -(-cols // 128)

    attn = 2 * blocks(q, h) + 2 * blocks(kv, h)
    experts = e * (2 * blocks(ff, h) + blocks(h, ff))
    return int(config["num_hidden_layers"]) * (attn + experts)


def test_adapter_reads_the_real_config() -> None:
    assert "MiniMaxM2ForCausalLM" in SUPPORTED_ARCHITECTURES
    spec = parse_config(M27_CONFIG, name="MiniMax-M2.7")
    assert spec.architecture == "MiniMaxM2ForCausalLM"
    assert (spec.num_hidden_layers, spec.hidden_size, spec.head_dim) == (62, 3072, 128)
    assert (spec.num_attention_heads, spec.num_key_value_heads) == (48, 8)
    assert spec.layer_types == (LAYER_FULL,) * 62  # no sliding, no linear attention
    assert spec.sliding_window is None
    assert spec.qk_norm
    assert not spec.attention_bias
    assert not spec.tie_word_embeddings
    moe = spec.moe
    assert moe is not None
    assert (moe.num_experts, moe.num_experts_per_tok) == (256, 8)
    assert moe.expert_intermediate_size == 1536
    assert moe.num_shared_experts == 0
    assert moe.dense_layers == ()
    assert moe.score_correction_bias
    assert not moe.router_bias
    assert spec.num_nextn_predict_layers == 0  # the MTP modules are not in the checkpoint
    assert spec.quantization is not None
    assert spec.quantization.method == "fp8"
    assert any("MTP" in a for a in spec.assumptions)


def test_derived_count_meets_the_checkpoint_listing() -> None:
    """Derived parameters + FP8 block scales = the M2.7 safetensors element total, exactly."""
    spec = parse_config(M27_CONFIG, name="MiniMax-M2.7")
    derived = count_params(spec)
    assert derived == 228_689_764_864
    assert _fp8_block_scales(M27_CONFIG) == 13_880_064
    assert derived + _fp8_block_scales(M27_CONFIG) == M27_LISTING_ELEMENTS


def test_tensor_layout_is_llama_cpp_minimax_m2() -> None:
    """q/k norms over the whole projection ([48*128], [8*128]) as transformers' q_norm/k_norm
    and llama.cpp's attn_q_norm/attn_k_norm; the router bias as exp_probs_b."""
    spec = parse_config(M27_CONFIG, name="MiniMax-M2.7")
    shapes = {t.name: t.shape for t in derive_tensors(spec)}
    assert shapes["blk.0.attn_q_norm.weight"] == (6144,)
    assert shapes["blk.0.attn_k_norm.weight"] == (1024,)
    assert shapes["blk.61.exp_probs_b.bias"] == (256,)
    assert shapes["blk.0.ffn_gate_exps.weight"] == (256, 1536, 3072)
    assert "blk.0.ffn_gate_shexp.weight" not in shapes
    assert "blk.62.attn_q.weight" not in shapes
    assert ARCHITECTURES["minimax-m2"] == ("MiniMaxM2ForCausalLM", "minimax_m2")


def test_model_type_alone_selects_the_adapter() -> None:
    config = {k: v for k, v in M27_CONFIG.items() if k != "architectures"}
    assert parse_config(config, name="m").architecture == "MiniMaxM2ForCausalLM"


def test_catalog_m27_equals_the_verbatim_copy() -> None:
    config = json.loads(json.dumps(find_model("minimax-m2.7").config, default=dict))
    left_out = {"auto_map", "transformers_version", "use_cache"}
    assert config == {k: v for k, v in M27_CONFIG.items() if k not in left_out}


@pytest.mark.parametrize("key", NEW)
def test_every_entry_derives_the_same_count(key: str) -> None:
    entry = find_model(key)
    assert entry.params is None  # published only as "230B"
    spec = entry.spec()
    assert count_params(spec) == 228_689_764_864
    assert spec.quantization is not None
    assert spec.quantization.method == "fp8"


def test_names_users_type_resolve() -> None:
    assert find_model("MiniMaxAI/MiniMax-M2").key == "minimax-m2"
    assert find_model("MiniMaxAI/MiniMax-M2.5").key == "minimax-m2.5"
    assert find_model("MiniMaxAI/MiniMax-M2.7").key == "minimax-m2.7"
    assert find_model("minimax-m2-230b-a10b").key == "minimax-m2"


def test_cli_vllm_tp4_kv_cache(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["estimate", "minimax-m2", "--gpu", "4xh100-sxm", "-r", "vllm", "--tp", "4"])
    out, err = capsys.readouterr()
    assert code in (0, 3, 4), err  # 3: does not fit, 4: tight
    assert "minimax-m2 (MiniMaxM2ForCausalLM" in out
    assert "quant=fp8" in out


def test_cli_llamacpp_q4_k_m_cpu_moe(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["estimate", "minimax-m2.7", "--gpu", "2xrtx-4090", "-r", "llamacpp"]
    args += ["--quant", "Q4_K_M", "--n-cpu-moe", "58", "--ctx", "32768"]
    code = main(args)
    out, err = capsys.readouterr()
    assert code in (0, 3, 4), err
    assert "cpu  (host RAM)" in out

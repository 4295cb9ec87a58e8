"""config.json -> ModelSpec: every family, the layer patterns, MLA/MoE/SSM fields and the errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oomkit.errors import ConfigFormatError, SourceNotFoundError, UnsupportedModelError
from oomkit.loaders.hf_config import SUPPORTED_ARCHITECTURES, load_config, parse_config
from oomkit.spec.model import LAYER_FULL, LAYER_LINEAR, LAYER_MAMBA, LAYER_SLIDING, ModelSpec

FIXTURES = Path(__file__).parent / "fixtures" / "configs"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))

LLAMA_MIN = {
    "architectures": ["LlamaForCausalLM"],
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 1000,
}


def _load(name: str) -> ModelSpec:
    return load_config(FIXTURES / f"{name}.json")


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**base, **changes}


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_every_fixture_parses_with_a_dedicated_adapter(path: Path) -> None:
    spec = load_config(path)
    raw = json.loads(path.read_text())
    assert spec.architecture == raw["architectures"][0]
    assert spec.architecture in SUPPORTED_ARCHITECTURES
    assert spec.name == path.stem  # file name, not a directory name, for a loose file
    assert len(spec.layer_types) == spec.num_hidden_layers
    assert spec.source == "config"
    assert not any("not known to oomkit" in a for a in spec.assumptions)


def test_supported_architectures_cover_the_required_families() -> None:
    required = {
        "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
        "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM",
        "GemmaForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM",
        "Gemma3ForConditionalGeneration", "Phi3ForCausalLM", "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM", "GptOssForCausalLM", "Glm4ForCausalLM", "GlmForCausalLM",
        "Glm4MoeForCausalLM", "CohereForCausalLM", "Cohere2ForCausalLM", "FalconForCausalLM",
        "GPT2LMHeadModel", "GPTNeoXForCausalLM", "OPTForCausalLM", "GraniteForCausalLM",
        "GraniteMoeHybridForCausalLM", "MambaForCausalLM", "Mamba2ForCausalLM",
        "Olmo2ForCausalLM", "Llama4ForConditionalGeneration", "InternLM2ForCausalLM",
        "BaichuanForCausalLM", "Starcoder2ForCausalLM", "BertModel", "RobertaModel",
        "XLMRobertaModel",
    }  # fmt: skip
    assert required <= SUPPORTED_ARCHITECTURES


def test_load_config_from_directory_uses_directory_name(tmp_path: Path) -> None:
    model_dir = tmp_path / "Llama-3.1-8B"
    model_dir.mkdir()
    (model_dir / "config.json").write_text((FIXTURES / "llama-3.1-8b.json").read_text())
    spec = load_config(model_dir)
    assert spec.name == "Llama-3.1-8B"
    assert spec.num_key_value_heads == 8
    assert spec.rope_scaling_type == "llama3"
    assert spec.torch_dtype == "bfloat16"


def test_missing_path_raises_source_not_found(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError, match="does not exist"):
        load_config(tmp_path / "nope.json")
    with pytest.raises(SourceNotFoundError, match=r"no config\.json"):
        load_config(tmp_path)
    with pytest.raises(FileNotFoundError):  # dual inheritance keeps builtin handlers working
        load_config(tmp_path)


def test_bad_json_names_path_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{\n  "hidden_size": 64,\n  "num_hidden_layers": ,\n}\n')
    with pytest.raises(ConfigFormatError) as info:
        load_config(bad)
    assert str(bad) in str(info.value)
    assert "line 3" in str(info.value)
    assert info.value.path == str(bad)
    assert info.value.offset is not None


def test_top_level_must_be_an_object() -> None:
    with pytest.raises(ConfigFormatError, match="not a JSON object"):
        parse_config([1, 2], name="list")  # type: ignore[arg-type]


def test_missing_required_field_names_it() -> None:
    config = {k: v for k, v in LLAMA_MIN.items() if k != "num_hidden_layers"}
    with pytest.raises(UnsupportedModelError) as info:
        parse_config(config, name="x")
    message = str(info.value)
    assert message.startswith("Cannot model 'x' (LlamaForCausalLM): config.json has no")
    assert "'num_hidden_layers'" in message
    assert info.value.feature == "num_hidden_layers"
    assert info.value.architecture == "LlamaForCausalLM"


def test_missing_moe_field_names_it() -> None:
    config = {k: v for k, v in json.loads((FIXTURES / "mixtral-8x7b-v0.1.json").read_text()).items()
              if k != "num_local_experts"}  # fmt: skip
    with pytest.raises(UnsupportedModelError, match="'num_local_experts'"):
        parse_config(config, name="mixtral")


def test_wrong_type_is_a_format_error_naming_the_key() -> None:
    with pytest.raises(ConfigFormatError) as info:
        parse_config(_with(LLAMA_MIN, hidden_size="64"), name="x")
    assert info.value.key == "hidden_size"
    with pytest.raises(ConfigFormatError, match="tie_word_embeddings"):
        parse_config(_with(LLAMA_MIN, tie_word_embeddings="yes"), name="x")
    with pytest.raises(ConfigFormatError, match="vocab_size"):
        parse_config(_with(LLAMA_MIN, vocab_size=True), name="x")


def test_unknown_architecture_falls_back_to_llama_with_a_note() -> None:
    spec = parse_config(_with(LLAMA_MIN, architectures=["MysteryForCausalLM"]), name="m")
    assert spec.architecture == "MysteryForCausalLM"
    assert any("not known to oomkit" in note for note in spec.assumptions)
    assert spec.mlp_gated
    assert spec.norm_type == "rms"


def test_model_type_alone_selects_the_adapter() -> None:
    config = {k: v for k, v in LLAMA_MIN.items() if k != "architectures"}
    spec = parse_config(_with(config, model_type="qwen2"), name="q")
    assert spec.architecture == "Qwen2ForCausalLM"
    assert spec.attention_bias  # Qwen2 default: q/k/v biases


def test_explicit_head_dim_wins() -> None:
    # Gemma-2-9B: 3584 / 16 = 224, but head_dim is 256
    spec = _load("gemma-2-9b")
    assert spec.head_dim == 256
    assert parse_config(_with(LLAMA_MIN, head_dim=32), name="x").head_dim == 32
    assert parse_config(LLAMA_MIN, name="x").head_dim == 16


def test_gemma2_even_layers_slide() -> None:
    spec = _load("gemma-2-9b")
    assert spec.sliding_window == 4096
    assert spec.layer_types[:4] == (LAYER_SLIDING, LAYER_FULL, LAYER_SLIDING, LAYER_FULL)


def test_gemma3_five_local_one_global() -> None:
    spec = _load("gemma-3-1b-it")
    assert spec.sliding_window == 512
    expected = tuple(LAYER_FULL if (i + 1) % 6 == 0 else LAYER_SLIDING for i in range(26))
    assert spec.layer_types == expected
    assert spec.qk_norm
    assert spec.tie_word_embeddings


def test_gemma3_multimodal_uses_text_config_and_counts_the_tower() -> None:
    config = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34},
        "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27},
    }
    spec = parse_config(config, name="gemma-3-4b-it")
    assert (spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim) == (8, 4, 256)
    assert spec.vocab_size == 262_208
    # SigLIP 896px/14 tower (416,866,032) + projector 1152 x 2560 + norm (2,950,272)
    assert spec.multimodal_params == 419_816_304


def test_mistral_v01_slides_on_every_layer() -> None:
    spec = parse_config(
        _with(LLAMA_MIN, architectures=["MistralForCausalLM"], sliding_window=4096), name="m"
    )
    assert spec.layer_types == (LAYER_SLIDING, LAYER_SLIDING)
    assert spec.sliding_window == 4096
    # Mistral v0.2+/Mixtral: "sliding_window": null -> full attention
    spec = _load("mixtral-8x7b-v0.1")
    assert set(spec.layer_types) == {LAYER_FULL}
    assert spec.sliding_window is None


def test_qwen2_sliding_window_only_when_enabled() -> None:
    spec = _load("qwen2.5-7b")  # sliding_window 131072 but use_sliding_window false
    assert spec.sliding_window is None
    assert set(spec.layer_types) == {LAYER_FULL}
    config = json.loads((FIXTURES / "qwen2.5-7b.json").read_text())
    config.update(use_sliding_window=True, sliding_window=4096, max_window_layers=20)
    spec = parse_config(config, name="q")
    assert spec.layer_types[19] == LAYER_FULL
    assert spec.layer_types[20] == LAYER_SLIDING
    assert spec.sliding_window == 4096


def test_explicit_layer_types_win() -> None:
    spec = _load("gpt-oss-20b")
    assert spec.layer_types[:2] == (LAYER_SLIDING, LAYER_FULL)
    assert spec.sliding_window == 128
    with pytest.raises(UnsupportedModelError, match="unknown layer kind 'weird'"):
        parse_config(_with(LLAMA_MIN, layer_types=["weird", "full_attention"]), name="x")
    with pytest.raises(ConfigFormatError, match="one per layer"):
        parse_config(_with(LLAMA_MIN, layer_types=["full_attention"]), name="x")


def test_cohere_and_cohere2() -> None:
    spec = _load("aya-23-8b")
    assert spec.tie_word_embeddings  # CohereConfig default: tied
    assert spec.norm_type == "layer_no_bias"
    assert spec.parallel_attn
    cohere2 = parse_config(
        _with(LLAMA_MIN, architectures=["Cohere2ForCausalLM"], num_hidden_layers=8,
              sliding_window=4096),
        name="command-r7b",
    )  # fmt: skip
    assert cohere2.layer_types[:4] == (LAYER_SLIDING,) * 3 + (LAYER_FULL,)


def test_llama4_chunked_attention_as_sliding_and_interleaved_moe() -> None:
    config = {
        "architectures": ["Llama4ForConditionalGeneration"],
        "text_config": {
            "num_hidden_layers": 8,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "intermediate_size": 32,
            "intermediate_size_mlp": 96,
            "vocab_size": 100,
            "num_local_experts": 16,
            "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 2,
            "attention_chunk_size": 8192,
        },
    }
    spec = parse_config(config, name="llama4")
    assert spec.multimodal_params == 0
    assert any("vision encoder is not counted" in a for a in spec.assumptions)
    assert spec.sliding_window == 8192
    assert spec.layer_types[:4] == (LAYER_SLIDING,) * 3 + (LAYER_FULL,)
    assert spec.moe is not None
    assert spec.moe.dense_layers == (0, 2, 4, 6)
    assert spec.intermediate_size == 96
    assert spec.moe.shared_expert_intermediate_size == 32
    assert any("chunked attention" in a for a in spec.assumptions)


def test_mla_and_moe_fields() -> None:
    lite = _load("deepseek-v2-lite")
    assert lite.mla is not None
    assert lite.mla.q_lora_rank is None
    assert lite.mla.latent_dim == 576
    assert (lite.head_dim, lite.v_head_dim) == (192, 128)
    assert lite.moe is not None
    assert lite.moe.dense_layers == (0,)
    assert lite.moe.shared_expert_intermediate_size == 2 * 1408
    r1 = _load("deepseek-r1")
    assert r1.mla is not None
    assert r1.mla.q_lora_rank == 1536
    assert r1.moe is not None
    assert r1.moe.dense_layers == (0, 1, 2)
    assert r1.moe.score_correction_bias
    assert r1.num_nextn_predict_layers == 1
    qwen_moe = _load("qwen1.5-moe-a2.7b")
    assert qwen_moe.moe is not None
    assert qwen_moe.moe.shared_expert_gate
    assert qwen_moe.moe.shared_expert_intermediate_size == 5632


def test_quantization_config() -> None:
    oss = _load("gpt-oss-20b").quantization
    assert oss is not None
    assert oss.method == "mxfp4"
    assert "lm_head" in oss.modules_to_not_convert
    fp8 = _load("deepseek-r1").quantization
    assert fp8 is not None
    assert fp8.method == "fp8"
    assert fp8.weight_block_size == (128, 128)
    gptq = parse_config(
        _with(
            LLAMA_MIN, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 128}
        ),
        name="x",
    ).quantization
    assert gptq is not None
    assert (gptq.method, gptq.bits, gptq.group_size) == ("gptq", 4, 128)
    bnb = parse_config(
        _with(
            LLAMA_MIN, quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True}
        ),
        name="x",
    ).quantization
    assert bnb is not None
    assert (bnb.method, bnb.bits) == ("bitsandbytes_4bit", 4)
    assert parse_config(LLAMA_MIN, name="x").quantization is None


def test_dtype_key_of_newer_configs() -> None:
    assert parse_config(_with(LLAMA_MIN, dtype="float16"), name="x").torch_dtype == "float16"


def test_recurrent_state_sizes_match_llama_cpp() -> None:
    # llama_hparams::n_embd_r = (d_conv-1) * (d_inner + 2*n_group*d_state)
    # llama_hparams::n_embd_s = d_state * d_inner
    mamba = parse_config(
        {"architectures": ["MambaForCausalLM"], "hidden_size": 768, "num_hidden_layers": 24,
         "vocab_size": 50280, "state_size": 16},
        name="mamba-130m",
    )  # fmt: skip
    assert mamba.recurrent is not None
    assert mamba.recurrent.d_inner == 1536
    assert mamba.recurrent.dt_rank == 48
    assert mamba.recurrent.conv_state_elements == 3 * 1536
    assert mamba.recurrent.ssm_state_elements == 16 * 1536
    assert set(mamba.layer_types) == {LAYER_MAMBA}
    mamba2 = parse_config(
        {"architectures": ["Mamba2ForCausalLM"], "hidden_size": 768, "num_hidden_layers": 24,
         "vocab_size": 50288, "state_size": 128, "num_heads": 24, "head_dim": 64, "n_groups": 1},
        name="mamba2-130m",
    )  # fmt: skip
    assert mamba2.recurrent is not None
    assert mamba2.recurrent.conv_state_elements == 3 * (1536 + 2 * 128)
    assert mamba2.recurrent.ssm_state_elements == 128 * 1536


def test_granite4_hybrid_layers_and_state() -> None:
    kinds = ["mamba"] * 5 + ["attention"] + ["mamba"] * 2
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
            "num_hidden_layers": 8,
            "vocab_size": 100352,
            "mamba_d_conv": 4,
            "mamba_d_head": 64,
            "mamba_d_state": 128,
            "mamba_n_heads": 48,
            "layer_types": kinds,
        },
        name="granite-4.0-h-tiny-like",
    )
    assert spec.layer_types[5] == LAYER_FULL
    assert spec.layer_types[0] == LAYER_MAMBA
    assert spec.recurrent_layers() == (0, 1, 2, 3, 4, 6, 7)
    assert spec.recurrent is not None
    assert spec.recurrent.kind == "mamba2"
    assert spec.recurrent.conv_state_elements == 3 * (3072 + 2 * 128)
    assert spec.moe is not None
    assert spec.moe.shared_expert_intermediate_size == 1024


def test_qwen3_next_gated_delta_net_state() -> None:
    spec = parse_config(
        {
            "architectures": ["Qwen3NextForCausalLM"], "hidden_size": 2048,
            "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 2,
            "head_dim": 256, "intermediate_size": 5120, "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512, "num_experts": 512,
            "num_experts_per_tok": 10, "vocab_size": 151936, "linear_key_head_dim": 128,
            "linear_num_key_heads": 16, "linear_num_value_heads": 32,
            "linear_value_head_dim": 128,
        },
        name="qwen3-next",
    )  # fmt: skip
    assert spec.layer_types == (LAYER_LINEAR,) * 3 + (LAYER_FULL,) + (LAYER_LINEAR,) * 3 + (
        LAYER_FULL,
    )
    rec = spec.recurrent
    assert rec is not None
    assert rec.kind == "gated_delta_net"
    assert rec.conv_state_elements == 3 * (2 * 16 * 128 + 32 * 128)  # 24,576
    assert rec.ssm_state_elements == 32 * 128 * 128  # a 128x128 state per value head
    assert spec.attention_layers() == (3, 7)


def test_encoders_and_old_layouts() -> None:
    bert = _load("snowflake-arctic-embed-m")
    assert bert.is_encoder
    assert bert.position_embedding_rows == 512
    assert bert.type_vocab_size == 2
    gpt2 = _load("gpt2")
    assert gpt2.position_embedding_rows == 1024
    assert gpt2.intermediate_size == 3072
    assert gpt2.norm_type == "layer"
    assert not gpt2.mlp_gated
    assert gpt2.tie_word_embeddings
    falcon = parse_config(
        {"architectures": ["FalconForCausalLM"], "hidden_size": 4544,
         "num_attention_heads": 71, "num_hidden_layers": 32, "vocab_size": 65024},
        name="falcon-7b",
    )  # fmt: skip
    assert falcon.num_key_value_heads == 1
    assert falcon.intermediate_size == 4 * 4544
    starcoder = _load("starcoder2-7b")
    assert starcoder.attention_bias
    assert starcoder.mlp_bias
    assert starcoder.norm_type == "layer"
    assert set(starcoder.layer_types) == {LAYER_SLIDING}


def test_phi3_sliding_window_and_internlm_note() -> None:
    phi = _load("phi-3-mini-4k-instruct")
    assert phi.sliding_window == 2047
    assert set(phi.layer_types) == {LAYER_SLIDING}
    internlm = _load("internlm2_5-7b-chat")
    assert internlm.rope_scaling_type == "dynamic"
    assert any("wqkv" in a for a in internlm.assumptions)


def test_glm_families() -> None:
    glm4 = parse_config(_with(LLAMA_MIN, architectures=["Glm4ForCausalLM"]), name="glm4")
    assert glm4.attention_bias
    assert not glm4.attention_out_bias
    glm_moe = parse_config(
        _with(LLAMA_MIN, architectures=["Glm4MoeForCausalLM"], n_routed_experts=8,
              num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1,
              first_k_dense_replace=1, num_nextn_predict_layers=1),
        name="glm-4.5-like",
    )  # fmt: skip
    assert glm_moe.moe is not None
    assert glm_moe.moe.dense_layers == (0,)
    assert glm_moe.moe.score_correction_bias
    assert glm_moe.num_nextn_predict_layers == 1


def test_architecture_from_text_config_model_type_or_unknown() -> None:
    nested = {"text_config": _with(LLAMA_MIN, model_type="gemma3_text"), "architectures": None}
    assert parse_config(nested, name="g").architecture == "Gemma3ForCausalLM"
    bare = {k: v for k, v in LLAMA_MIN.items() if k != "architectures"}
    unknown = parse_config(bare, name="u")
    assert unknown.architecture == "unknown"
    assert any("not known to oomkit" in a for a in unknown.assumptions)
    assert parse_config(_with(bare, model_type="zeta"), name="z").architecture == "zeta"


def test_unreadable_file_is_a_format_error(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_bytes(b"\xff\xfe{")
    with pytest.raises(ConfigFormatError, match="readable UTF-8"):
        load_config(bad)


def test_field_type_checks() -> None:
    assert parse_config(_with(LLAMA_MIN, hidden_size=64.0), name="x").hidden_size == 64
    with pytest.raises(ConfigFormatError, match="non-negative"):
        parse_config(_with(LLAMA_MIN, num_hidden_layers=-1), name="x")
    with pytest.raises(ConfigFormatError, match="torch_dtype"):
        parse_config(_with(LLAMA_MIN, torch_dtype=16), name="x")
    qwen_moe = json.loads((FIXTURES / "qwen1.5-moe-a2.7b.json").read_text())
    with pytest.raises(ConfigFormatError, match="mlp_only_layers"):
        parse_config(_with(qwen_moe, mlp_only_layers="1,2"), name="x")
    with pytest.raises(ConfigFormatError, match="mlp_only_layers"):
        parse_config(_with(qwen_moe, mlp_only_layers=[1, "2"]), name="x")
    with pytest.raises(ConfigFormatError, match="layer kinds"):
        parse_config(_with(LLAMA_MIN, layer_types="full_attention"), name="x")


def test_qwen_moe_dense_layers_from_mlp_only_layers_and_step() -> None:
    qwen_moe = json.loads((FIXTURES / "qwen1.5-moe-a2.7b.json").read_text())
    spec = parse_config(_with(qwen_moe, mlp_only_layers=[0], decoder_sparse_step=2), name="q")
    assert spec.moe is not None
    assert spec.moe.dense_layers[:3] == (0, 2, 4)


def test_bitsandbytes_8bit_and_awq() -> None:
    bnb = parse_config(
        _with(
            LLAMA_MIN, quantization_config={"quant_method": "bitsandbytes", "load_in_8bit": True}
        ),
        name="x",
    ).quantization
    assert bnb is not None
    assert (bnb.method, bnb.bits) == ("bitsandbytes_8bit", 8)
    awq = parse_config(
        {**LLAMA_MIN, "text_config": None, "quantization_config": {"quant_method": "awq",
         "w_bit": 4, "q_group_size": 128, "modules_to_not_convert": None}},
        name="x",
    ).quantization  # fmt: skip
    assert awq is not None
    assert (awq.method, awq.bits, awq.group_size) == ("awq", 4, 128)


def test_family_notes() -> None:
    baichuan = parse_config(_with(LLAMA_MIN, architectures=["BaichuanForCausalLM"]), name="b")
    assert any("W_pack" in a for a in baichuan.assumptions)
    granite = parse_config(
        _with(LLAMA_MIN, architectures=["GraniteMoeHybridForCausalLM"], mamba_d_state=128,
              mamba_n_heads=8, mamba_d_head=16, shared_intermediate_size=96),
        name="granite-no-kinds",
    )  # fmt: skip
    assert set(granite.layer_types) == {LAYER_FULL}
    assert any("no layer_types" in a for a in granite.assumptions)
    # num_local_experts 0 (granite-4.0-h-micro style): a dense MLP of shared_intermediate_size
    assert granite.moe is None
    assert granite.intermediate_size == 96
    rw = parse_config(
        {"architectures": ["FalconForCausalLM"], "hidden_size": 64, "n_head": 4, "n_layer": 2,
         "vocab_size": 100, "multi_query": False, "alibi": True, "ffn_hidden_size": 96},
        name="falcon-rw-like",
    )  # fmt: skip
    assert rw.num_key_value_heads == 4
    assert rw.intermediate_size == 96
    assert any("ALiBi" in a for a in rw.assumptions)


def test_gemma3_vision_notes() -> None:
    no_tower = parse_config(
        {"architectures": ["Gemma3ForConditionalGeneration"], "text_config": {}}, name="g"
    )
    assert no_tower.multimodal_params == 0
    assert any("No vision_config" in a for a in no_tower.assumptions)
    with_head = parse_config(
        {"architectures": ["Gemma3ForConditionalGeneration"], "text_config": {},
         "vision_config": {"vision_use_head": True}},
        name="g",
    )  # fmt: skip
    assert with_head.multimodal_params == 419_816_304 - 2560 * 1152 + 2304 * 1152
    assert any("pooling head" in a for a in with_head.assumptions)


def test_transformers_config_defaults_for_omitted_keys() -> None:
    # DeepseekV2Config: a missing q_lora_rank means 1536; an explicit null means none
    lite = json.loads((FIXTURES / "deepseek-v2-lite.json").read_text())
    without = {k: v for k, v in lite.items() if k != "q_lora_rank"}
    spec = parse_config(without, name="v2-default-q-lora")
    assert spec.mla is not None
    assert spec.mla.q_lora_rank == 1536
    # Glm4Config / Llama4TextConfig: head_dim 128 whatever hidden/heads give
    glm4 = parse_config(_with(LLAMA_MIN, architectures=["Glm4ForCausalLM"]), name="glm4")
    assert glm4.head_dim == 128
    # Mamba2Config does not tie embeddings by default; MambaConfig does
    mamba2 = parse_config(
        {"architectures": ["Mamba2ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
         "vocab_size": 100, "state_size": 16, "num_heads": 2, "head_dim": 64},
        name="m2",
    )  # fmt: skip
    assert not mamba2.tie_word_embeddings


def test_moe_families_without_mla() -> None:
    # granite-3.1-1b-a400m shapes: 32 experts of 512, top-8, tied embeddings
    granite = parse_config(
        _with(LLAMA_MIN, architectures=["GraniteMoeForCausalLM"], num_local_experts=32,
              num_experts_per_tok=8),
        name="granite-moe",
    )  # fmt: skip
    assert granite.moe is not None
    assert (granite.moe.num_experts, granite.moe.expert_intermediate_size) == (32, 128)
    assert granite.moe.shared_expert_intermediate_size == 0
    olmoe = parse_config(
        _with(LLAMA_MIN, architectures=["OlmoeForCausalLM"], num_experts=64, num_experts_per_tok=8),
        name="olmoe",
    )
    assert olmoe.qk_norm
    assert olmoe.moe is not None
    assert olmoe.moe.num_experts == 64
    dsmoe = _load("deepseek-moe-16b")
    assert dsmoe.mla is None
    assert dsmoe.moe is not None
    assert dsmoe.moe.dense_layers == (0,)
    assert dsmoe.moe.shared_expert_intermediate_size == 2 * 1408

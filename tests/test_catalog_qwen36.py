"""The 2026 Qwen hybrid models in the catalog (Qwen3.5 9B/27B/122B/397B, Qwen3.6, Qwen3.8).

All of them are the Qwen3.5 architecture (``Qwen3_5ForConditionalGeneration`` /
``Qwen3_5MoeForConditionalGeneration`` / ``Qwen3_5MoeForCausalLM``) that
``oomkit.loaders.hf_config_qwen35`` already models. Cited copies (see PROVENANCE.md):

- Qwen3.6-27B: a test embedding the "Verbatim config.json of Qwen/Qwen3.6-27B at revision 6a9e13bd"
  (code search id 70270571784), compared key by key below.
- Qwen3.8-27B, Qwen3.5-122B-A10B, Qwen3.5-397B-A17B, Qwen3.8-2.4T-A95B: a serving study's table of
  the config.json values with the HF API ``safetensors.parameters`` totals (id 61189848735). The
  derived count plus the multi-token-prediction layer equals each published total exactly.
- Qwen3.5-9B: a validator's config (id 57938394977) + an agent log's curl of the Hub file, whose
  ``model.safetensors.index.json`` ``total_size`` is 19,306,216,416 bytes (id 54688007458).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.catalog.models import find_model, ollama_default_quant
from oomkit.cli import main
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.model import LAYER_FULL, LAYER_LINEAR
from oomkit.spec.tensors import count_params

NEW = (
    "qwen3.6-35b-a3b",
    "qwen3.6-27b",
    "qwen3.5-27b",
    "qwen3.5-9b",
    "qwen3.5-122b-a10b",
    "qwen3.5-397b-a17b",
    "qwen3.8-27b",
    "qwen3.8-2.4t-a95b",
)

# text_config of Qwen/Qwen3.6-27B config.json at 6a9e13bd6fc8f0983b9b99948120bc37f49c13e9, as the
# cited copy prints it (token ids, initializer_range, attention_dropout, use_cache left out).
QWEN36_27B_TEXT = json.loads(
    '{"attention_bias": false, "attn_output_gate": true, "dtype": "bfloat16",'
    ' "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 5120,'
    ' "intermediate_size": 17408, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,'
    ' "linear_num_key_heads": 16, "linear_num_value_heads": 48, "linear_value_head_dim": 128,'
    ' "mamba_ssm_dtype": "float32", "max_position_embeddings": 262144,'
    ' "model_type": "qwen3_5_text", "mtp_num_hidden_layers": 1,'
    ' "mtp_use_dedicated_embeddings": false, "num_attention_heads": 24, "num_hidden_layers": 64,'
    ' "num_key_value_heads": 4, "output_gate_type": "swish", "partial_rotary_factor": 0.25,'
    ' "rms_norm_eps": 1e-06, "rope_parameters": {"mrope_interleaved": true, "mrope_section":'
    ' [11, 11, 10], "partial_rotary_factor": 0.25, "rope_theta": 10000000, "rope_type": "default"},'
    ' "tie_word_embeddings": false, "vocab_size": 248320}'
)
QWEN36_27B_VISION = json.loads(
    '{"deepstack_visual_indexes": [], "depth": 27, "hidden_act": "gelu_pytorch_tanh",'
    ' "hidden_size": 1152, "in_channels": 3, "intermediate_size": 4304, "model_type": "qwen3_5",'
    ' "num_heads": 16, "num_position_embeddings": 2304, "out_hidden_size": 5120, "patch_size": 16,'
    ' "spatial_merge_size": 2, "temporal_patch_size": 2}'
)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=dict))


def _text(key: str) -> dict[str, Any]:
    config = _plain(find_model(key).config)
    return dict(config.get("text_config", config))


def test_qwen3_6_27b_equals_the_verbatim_copy() -> None:
    config = _plain(find_model("qwen3.6-27b").config)
    text = dict(config["text_config"])
    layer_types = text.pop("layer_types")
    assert text == QWEN36_27B_TEXT
    assert layer_types == [
        "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(64)
    ]
    assert config["vision_config"] == QWEN36_27B_VISION
    assert config["architectures"] == ["Qwen3_5ForConditionalGeneration"]


def test_same_architecture_sizes_share_the_27b_text_config() -> None:
    """Qwen3.5-27B and Qwen3.8-27B: the same 27B dimensions in every cited copy."""
    ref = _text("qwen3.6-27b")
    weights = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    weights += ("num_key_value_heads", "head_dim", "linear_num_value_heads", "vocab_size")
    for key in ("qwen3.5-27b", "qwen3.8-27b"):
        assert {k: _text(key)[k] for k in weights} == {k: ref[k] for k in weights}


def _mtp_layer(key: str) -> int:
    """The Hub checkpoints hold one MTP layer that transformers skips (``^mtp.*``): a decoder block
    of the full-attention kind (gated q of 2 x heads x head_dim, q/k norms), ``fc`` [H, 2H] and
    three RMSNorms (pre_fc_norm_embedding, pre_fc_norm_hidden, norm); it shares embed_tokens and
    lm_head (``mtp_use_dedicated_embeddings`` false). Written out by hand from the config."""
    t = _text(key)
    h, hd, heads, kv = (
        t["hidden_size"],
        t["head_dim"],
        t["num_attention_heads"],
        t["num_key_value_heads"],
    )
    attn = 2 * heads * hd * h + 2 * kv * hd * h + heads * hd * h + 2 * hd + 2 * h
    if "num_experts" in t:
        e, mi, si = (
            t["num_experts"],
            t["moe_intermediate_size"],
            t["shared_expert_intermediate_size"],
        )
        ffn = e * h + e * 3 * h * mi + 3 * h * si + h  # router, experts, shared expert, its gate
    else:
        ffn = 3 * h * t["intermediate_size"]
    return attn + ffn + 2 * h * h + 3 * h


@pytest.mark.parametrize(
    ("key", "published", "mtp"),
    [
        ("qwen3.8-27b", 27_781_427_952, 424_699_392),
        ("qwen3.5-122b-a10b", 125_086_497_008, 2_523_679_232),
        ("qwen3.5-397b-a17b", 403_397_928_944, 6_595_568_128),
        ("qwen3.8-2.4t-a95b", 2_446_182_725_504, 26_378_027_520),
    ],
)
def test_derived_count_plus_mtp_layer_is_the_published_count(
    key: str, published: int, mtp: int
) -> None:
    entry = find_model(key)
    assert entry.params == published
    assert entry.params_tolerance == mtp == _mtp_layer(key)
    assert count_params(entry.spec()) + mtp == published


def test_qwen3_5_9b_matches_the_safetensors_index_bytes() -> None:
    """total_size 19,306,216,416 bytes = 2 x (text + vision + MTP layer) + 3,840. The remainder is
    24 linear-attention layers x (32 + 128) x 2 bytes: consistent with A_log (32 values) and the
    gated norm weight (128 values) kept in float32 (an inference from the bytes, not read from
    the checkpoint). No dimension of the config could change and still meet this sum."""
    spec = find_model("qwen3.5-9b").spec()
    derived = count_params(spec)
    assert derived == 9_409_813_744
    linear = spec.layer_types.count(LAYER_LINEAR)
    fp32_extra = linear * (32 + 128) * 2
    assert 2 * (derived + _mtp_layer("qwen3.5-9b")) + fp32_extra == 19_306_216_416


def test_text_only_flagship_and_hybrid_layout() -> None:
    spec = find_model("qwen3.8-2.4t-a95b").spec()
    assert spec.multimodal_params == 0
    assert spec.layer_types.count(LAYER_FULL) == 23
    assert spec.layer_types.count(LAYER_LINEAR) == 69
    assert spec.moe is not None
    assert spec.moe.num_experts == 512
    rec = spec.recurrent
    assert rec is not None
    assert rec.ssm_state_elements == 128 * 128 * 128  # 128 value heads x 128 x 128 per layer
    big = parse_config(find_model("qwen3.5-397b-a17b").config, name="qwen3.5-397b-a17b")
    assert big.layer_types.count(LAYER_FULL) == 15
    assert big.multimodal_params > 0


def test_names_users_type_resolve() -> None:
    assert find_model("Qwen/Qwen3.6-27B").key == "qwen3.6-27b"
    assert find_model("Qwen/Qwen3.6-35B-A3B").key == "qwen3.6-35b-a3b"
    assert find_model("qwen3.6-35b").key == "qwen3.6-35b-a3b"
    assert find_model("Qwen/Qwen3.5-122B-A10B").key == "qwen3.5-122b-a10b"
    assert find_model("Qwen3.5-397B-A17B-FP8").key == "qwen3.5-397b-a17b"
    assert find_model("Qwen/Qwen3.8-27B").key == "qwen3.8-27b"
    assert find_model("qwen3.5:9b").key == "qwen3.5-9b"
    assert ollama_default_quant("qwen3.5:9b") == "Q4_K_M"


@pytest.mark.parametrize("key", NEW)
@pytest.mark.parametrize("runtime", ["llamacpp", "vllm"])
def test_cli_estimate(capsys: pytest.CaptureFixture[str], key: str, runtime: str) -> None:
    gpu = "rtx-4090" if runtime == "llamacpp" else "h100-sxm"
    code = main(["estimate", key, "--gpu", gpu, "--ctx", "32768", "-r", runtime])
    out, err = capsys.readouterr()
    assert code in (0, 3), err  # 3: EXIT_NEGATIVE (does not fit)
    assert f"{key} (Qwen3_5" in out
    assert "KV cache" in out

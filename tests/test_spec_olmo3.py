"""OLMo 3 (transformers ``models/olmo3/modeling_olmo3.py``): OLMo 2's block (no pre-norms,
post-attention and post-feedforward RMSNorms, q/k RMSNorm over all heads) plus sliding-window
layers (``configuration_olmo3.py``: layer i full when ``(i + 1) % 4 == 0``, else a 4096-token
window). Before, ``Olmo3ForCausalLM`` fell back to Llama's layout: pre-norms, no q/k norms and no
sliding layers. The inventory is checked against a real tiny model built on the CPU."""

from __future__ import annotations

import re

import pytest

from oomkit.estimate.training_activations import layer_activations
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING
from oomkit.spec.settings import TrainingSettings
from oomkit.spec.tensors import model_tensors
from oomkit.spec.tensors_blocks import block_norms

#: transformers' OLMo 2/3 state_dict names -> oomkit's (GGUF) block tensor names
_HF_TO_GGUF = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "post_attention_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_TOP = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


def _gguf_name(hf: str) -> str:
    if hf in _TOP:
        return _TOP[hf]
    m = re.fullmatch(r"model\.layers\.(\d+)\.(.+)\.(weight|bias)", hf)
    assert m is not None, hf
    return f"blk.{m[1]}.{_HF_TO_GGUF[m[2]]}.{m[3]}"


@pytest.mark.parametrize("window", [16, None])
def test_olmo3_inventory_matches_a_real_tiny_model(window: int | None) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "Olmo3ForCausalLM"):
        pytest.skip("transformers without OLMo 3")
    cfg = transformers.Olmo3Config(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=8,
        intermediate_size=96, vocab_size=128, sliding_window=window, eos_token_id=1,
        pad_token_id=0,
    )  # fmt: skip
    with torch.device("cpu"):
        model = transformers.Olmo3ForCausalLM(cfg)
    want = {_gguf_name(k): tuple(v.shape) for k, v in model.state_dict().items()}
    config = {**cfg.to_dict(), "architectures": ["Olmo3ForCausalLM"]}
    spec = parse_config(config, name="olmo3-tiny")
    got = {t.name: tuple(t.shape) for t in model_tensors(spec)}  # [out, in], as torch's Linear
    assert got == want
    assert spec.qk_norm
    kinds = {
        "full_attention": LAYER_FULL,
        "sliding_attention": LAYER_SLIDING if window else LAYER_FULL,
    }
    assert spec.layer_types == tuple(kinds[kind] for kind in cfg.layer_types)
    assert spec.sliding_window == window
    bn = block_norms(spec)
    assert (bn.pre_attn, bn.pre_ffn, bn.post_attn, bn.post_ffn, bn.qk) == (
        False, False, True, True, "full",
    )  # fmt: skip


def test_olmo3_defaults_and_training_layout_are_olmo2s() -> None:
    """A config without ``sliding_window``/``layer_types`` takes transformers' defaults (4096,
    every fourth layer full); the training activations of OLMo 3 equal OLMo 2's at a sequence
    inside the window (the same block, the same fp32 norm-weight multiply)."""
    base = {
        "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 8, "intermediate_size": 96, "vocab_size": 128,
    }  # fmt: skip
    olmo3 = parse_config(
        {**base, "architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3"}, name="o3"
    )
    olmo2 = parse_config(
        {**base, "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2"}, name="o2"
    )
    assert olmo3.sliding_window == 4096
    assert olmo3.layer_types == (LAYER_SLIDING,) * 3 + (LAYER_FULL,) + (LAYER_SLIDING,) * 3 + (
        LAYER_FULL,
    )
    assert olmo2.sliding_window is None
    assert set(olmo2.layer_types) == {LAYER_FULL}
    assert block_norms(olmo3) == block_norms(olmo2)
    s = TrainingSettings(method="full", seq=512)
    a3 = [
        (a.saved_bytes, a.backward_working_bytes)
        for a in layer_activations(olmo3, s, trainable_roles=None)
    ]
    a2 = [
        (a.saved_bytes, a.backward_working_bytes)
        for a in layer_activations(olmo2, s, trainable_roles=None)
    ]
    assert a3 == a2


def test_llamacpp_keeps_olmo3_sliding_layers() -> None:
    # convert_hf_to_gguf.py converts Olmo3ForCausalLM as OLMo 2 (GGUF arch olmo2) with its
    # window, and llama.cpp's LLM_ARCH_OLMO2 then runs SWA with set_swa_pattern(4): the KV of
    # three layers in four stays at the window; before, every layer was counted full
    from oomkit.estimate.llamacpp import estimate_llamacpp, llamacpp_view
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.settings import InferenceSettings

    config = {
        "architectures": ["Olmo3ForCausalLM"],
        "model_type": "olmo3",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "vocab_size": 100278,
        "max_position_embeddings": 65536,
        "sliding_window": 4096,
        "rms_norm_eps": 1e-6,
        "torch_dtype": "bfloat16",
    }
    spec = parse_config(config, name="olmo3-7b")
    view = llamacpp_view(spec)
    assert view.layer_types.count(LAYER_SLIDING) == 24
    assert view.layer_types.count(LAYER_FULL) == 8
    est = estimate_llamacpp(spec, InferenceSettings(runtime="llama.cpp", ctx=65536), Hardware())
    kv = sum(d.kv_cache_bytes for d in (*est.devices, est.host))
    # f16 K+V: 8 full layers x 65536 cells + 24 sliding layers x ~(4096 + ubatch) cells
    per_cell = 2 * 32 * 128 * 2
    assert 8 * 65536 * per_cell <= kv < (8 * 65536 + 24 * 8192) * per_cell

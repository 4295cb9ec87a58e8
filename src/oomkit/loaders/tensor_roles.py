"""Hugging Face tensor names -> GGUF-style roles, and the logical size of packed quantized weights.

A role is the GGUF tensor name without its ``blk.{i}.`` prefix (``"attn_q.weight"``,
``"ffn_down_exps.weight"``, ``"token_embd.weight"``), so one table of per-role rules serves
safetensors and GGUF checkpoints alike. The module names follow llama.cpp's converter
(``gguf-py/gguf/tensor_mapping.py``, ``TensorNameMap``), which maps the same HF names.

Quantized checkpoints store a weight packed plus *sidecars* (scales, zero points, ...):

==========================  ===========================================  =========================
format                      stored                                       logical parameters
==========================  ===========================================  =========================
GPTQ (AutoGPTQ/optimum)     ``qweight`` I32 ``[in*bits/32, out]``         ``in * out``
AWQ (AutoAWQ GEMM)          ``qweight`` I32 ``[in, out*bits/32]``         ``in * out``
compressed-tensors int4     ``weight_packed`` I32 ``[out, in*bits/32]``   ``out * in``
bitsandbytes nf4/fp4        ``weight`` U8 ``[n/2, 1]`` + ``absmax``...    ``2 * stored elements``
compressed-tensors nvfp4    ``weight_packed`` U8 ``[out, in/2]``          ``out * in``
mxfp4 (gpt-oss)             ``*_blocks`` U8 ``[..., in/32, 16]``          ``... * in`` (2 per byte)
fp8 / bnb int8              ``weight`` F8_E4M3 / I8 (unpacked)            stored elements
==========================  ===========================================  =========================

Sidecars (``scales``, ``qzeros``, ``g_idx``, ``weight_scale``, ``absmax``, ...) are not parameters;
their role ends in the sidecar name (``"attn_q.scales"``) and :func:`is_quant_sidecar` is True.
GPTQ and AWQ are told apart by their ``scales`` sibling: GPTQ ``scales`` has ``out`` columns like
``qweight``; AWQ ``qweight`` has ``out*bits/32`` columns (AutoGPTQ ``QuantLinear``, AutoAWQ
``WQLinear_GEMM``).

>>> classify_tensor_name("model.layers.3.self_attn.q_proj.weight")
('attn_q.weight', 3)
>>> classify_tensor_name("model.layers.0.mlp.experts.7.down_proj.weight")
('ffn_down_exps.weight', 0)
>>> classify_tensor_name("lm_head.weight")
('output.weight', None)
>>> is_quant_sidecar("attn_q.scales")
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from math import prod

from oomkit.spec.tensors_blocks import NON_PARAMETER_SUFFIXES

__all__ = [
    "QUANT_SIDECAR_SUFFIXES",
    "classify_tensor_name",
    "classify_tensor_names",
    "is_quant_sidecar",
    "logical_shape",
]

#: Tensor suffixes that hold quantization state, not parameters (one set, kept in ``spec``).
QUANT_SIDECAR_SUFFIXES: frozenset[str] = NON_PARAMETER_SUFFIXES

# Packed weight suffixes -> the role suffix they stand for.
_PACKED_WEIGHT_SUFFIXES: Mapping[str, str] = {
    "qweight": "weight",
    "weight_packed": "weight",
}

_VISION_PREFIXES = (
    "vision_tower.",
    "vision_model.",
    "visual.",
    "vision_encoder.",
    "multi_modal_projector.",
    "mm_projector.",
    "audio_tower.",
    "audio_model.",
    "embed_vision.",
    "embed_audio.",
)

# Layer prefixes: model.layers.N. / model.language_model.layers.N. / transformer.h.N. / ...
_LAYER_RE = re.compile(r"^(?:[\w.]*?\.)?(?:layers|h|blocks)\.(\d+)\.(.+)$")

# Module path inside a layer (without the trailing .weight/.bias) -> GGUF role stem.
# Source: gguf-py/gguf/tensor_mapping.py (block_mappings_cfg).
_LAYER_MODULES: Mapping[str, str] = {
    # attention
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.qkv_proj": "attn_qkv",
    "self_attn.query_key_value": "attn_qkv",
    "self_attention.query_key_value": "attn_qkv",
    "self_attention.dense": "attn_output",
    "attention.query_key_value": "attn_qkv",
    "attention.dense": "attn_output",
    "attn.c_attn": "attn_qkv",
    "attn.c_proj": "attn_output",
    "attn.q_proj": "attn_q",
    "attn.k_proj": "attn_k",
    "attn.v_proj": "attn_v",
    "attn.out_proj": "attn_output",
    "attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    # multi-head latent attention (DeepSeek-V2/V3)
    "self_attn.q_a_proj": "attn_q_a",
    "self_attn.q_b_proj": "attn_q_b",
    "self_attn.q_a_layernorm": "attn_q_a_norm",
    "self_attn.kv_a_proj_with_mqa": "attn_kv_a_mqa",
    "self_attn.kv_a_layernorm": "attn_kv_a_norm",
    "self_attn.kv_b_proj": "attn_kv_b",
    # norms
    "input_layernorm": "attn_norm",
    "ln_1": "attn_norm",
    "ln_attn": "attn_norm",
    "norm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
    "ln_2": "ffn_norm",
    "ln_mlp": "ffn_norm",
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
    # dense MLP
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "mlp.gate_up_proj": "ffn_up",
    "mlp.c_fc": "ffn_up",
    "mlp.c_proj": "ffn_down",
    "mlp.fc1": "ffn_up",
    "mlp.fc2": "ffn_down",
    "mlp.dense_h_to_4h": "ffn_up",
    "mlp.dense_4h_to_h": "ffn_down",
    # MoE routers and shared experts
    "mlp.gate": "ffn_gate_inp",
    "mlp.router": "ffn_gate_inp",
    "block_sparse_moe.gate": "ffn_gate_inp",
    "feed_forward.router": "ffn_gate_inp",
    "mlp.gate.e_score_correction": "exp_probs_b",
    "mlp.shared_expert_gate": "ffn_gate_inp_shexp",
    "mlp.shared_expert.gate_proj": "ffn_gate_shexp",
    "mlp.shared_expert.up_proj": "ffn_up_shexp",
    "mlp.shared_expert.down_proj": "ffn_down_shexp",
    "mlp.shared_experts.gate_proj": "ffn_gate_shexp",
    "mlp.shared_experts.up_proj": "ffn_up_shexp",
    "mlp.shared_experts.down_proj": "ffn_down_shexp",
    # merged expert tensors (gpt-oss, Llama-4): one tensor holds every expert
    "mlp.experts.gate_up_proj": "ffn_gate_up_exps",
    "mlp.experts.down_proj": "ffn_down_exps",
    "feed_forward.experts.gate_up_proj": "ffn_gate_up_exps",
    "feed_forward.experts.down_proj": "ffn_down_exps",
    # Mamba / Mamba2 mixers
    "mixer.in_proj": "ssm_in",
    "mixer.conv1d": "ssm_conv1d",
    "mixer.x_proj": "ssm_x",
    "mixer.dt_proj": "ssm_dt",
    "mixer.dt": "ssm_dt",
    "mixer.out_proj": "ssm_out",
    "mixer.norm": "ssm_norm",
}

# Parameters without a .weight suffix, as GGUF names them too (blk.N.ssm_a, blk.N.ssm_d).
# gpt-oss sinks become attn_sinks.weight (convert_hf_to_gguf.py GptOssModel appends .weight).
_LAYER_BARE: Mapping[str, str] = {
    "mixer.A_log": "ssm_a",
    "mixer.D": "ssm_d",
    "self_attn.sinks": "attn_sinks.weight",
}

# Per-expert module names -> GGUF merged-expert role stems (llama.cpp stacks experts).
_EXPERT_MODULES: Mapping[str, str] = {
    "gate_proj": "ffn_gate_exps",
    "up_proj": "ffn_up_exps",
    "down_proj": "ffn_down_exps",
    "w1": "ffn_gate_exps",
    "w3": "ffn_up_exps",
    "w2": "ffn_down_exps",
}
_EXPERT_RE = re.compile(r"^(?:mlp|block_sparse_moe|feed_forward)\.experts\.\d+\.(\w+)$")

_GLOBAL_MODULES: Mapping[str, str] = {
    "model.embed_tokens": "token_embd",
    "model.language_model.embed_tokens": "token_embd",
    "language_model.model.embed_tokens": "token_embd",
    "transformer.wte": "token_embd",
    "transformer.word_embeddings": "token_embd",
    "gpt_neox.embed_in": "token_embd",
    "backbone.embeddings": "token_embd",
    "backbone.embedding": "token_embd",
    "transformer.wpe": "position_embd",
    "model.embed_positions": "position_embd",
    "lm_head": "output",
    "language_model.lm_head": "output",
    "embed_out": "output",
    "model.norm": "output_norm",
    "model.language_model.norm": "output_norm",
    "language_model.model.norm": "output_norm",
    "transformer.ln_f": "output_norm",
    "gpt_neox.final_layer_norm": "output_norm",
    "backbone.norm_f": "output_norm",
    "model.final_layernorm": "output_norm",
}


def _split_suffix(path: str) -> tuple[str, str]:
    """Split ``module.path.suffix`` into (module path, parameter kind)."""
    # bitsandbytes: q_proj.weight.absmax, q_proj.weight.quant_state.bitsandbytes__nf4
    m = re.match(r"^(.+)\.weight\.(absmax|quant_map|nested_absmax|nested_quant_map)$", path)
    if m:
        return m.group(1), m.group(2)
    m = re.match(r"^(.+)\.weight\.quant_state\.\w+$", path)
    if m:
        return m.group(1), "quant_state"
    # merged-expert tensors without a .weight suffix (gpt-oss: gate_up_proj_blocks, down_proj_bias)
    m = re.match(r"^(.+\.experts\.(?:gate_up_proj|down_proj))(?:_(blocks|scales|bias))?$", path)
    if m:
        kinds = {"blocks": "weight", "scales": "scales", "bias": "bias"}
        return m.group(1), kinds.get(m.group(2) or "blocks", "weight")
    module, dot, suffix = path.rpartition(".")
    if not dot:
        return path, ""
    if suffix in _PACKED_WEIGHT_SUFFIXES:
        return module, _PACKED_WEIGHT_SUFFIXES[suffix]
    if suffix == "e_score_correction_bias":
        return module + ".e_score_correction", "bias"
    return module, suffix


def classify_tensor_name(name: str) -> tuple[str, int | None]:
    """Map an HF tensor name to ``(role, layer)``; ``layer`` is None outside the blocks.

    Unknown per-layer modules keep their HF path as role (``"mlp.foo.weight"``); vision and audio
    towers get role ``"vision"``; other unknown globals keep their full name.
    """
    for prefix in _VISION_PREFIXES:
        if name.startswith(prefix) or f".{prefix}" in name:
            return "vision", None
    m = _LAYER_RE.match(name)
    if m is not None:
        layer = int(m.group(1))
        if m.group(2) in _LAYER_BARE:
            return _LAYER_BARE[m.group(2)], layer
        module, suffix = _split_suffix(m.group(2))
        stem = _LAYER_MODULES.get(module)
        if stem is None:
            em = _EXPERT_RE.match(module)
            stem = _EXPERT_MODULES.get(em.group(1)) if em else None
        if stem is None:
            return m.group(2), layer
        return (f"{stem}.{suffix}" if suffix else stem), layer
    module, suffix = _split_suffix(name)
    stem = _GLOBAL_MODULES.get(module)
    if stem is None:
        return name, None
    return (f"{stem}.{suffix}" if suffix else stem), None


def classify_tensor_names(names: Sequence[str]) -> dict[str, tuple[str, int | None]]:
    """:func:`classify_tensor_name` for a whole checkpoint, resolving names that depend on it.

    ``post_attention_layernorm`` is the pre-MLP norm (``ffn_norm``) in Llama-style blocks but a
    norm *after* attention (``post_attention_norm``) in Gemma-2/3, OLMo-2 and gpt-oss, whose
    layers have a ``post_feedforward_layernorm`` or attention sinks (gguf-py
    ``tensor_mapping.py`` lists the name under both ``FFN_NORM`` and ``ATTN_POST_NORM``).

    >>> r = classify_tensor_names(["model.layers.0.post_attention_layernorm.weight",
    ...     "model.layers.0.post_feedforward_layernorm.weight"])
    >>> r["model.layers.0.post_attention_layernorm.weight"]
    ('post_attention_norm.weight', 0)
    """
    out = {n: classify_tensor_name(n) for n in names}
    post_layers = {
        layer
        for role, layer in out.values()
        if role in ("post_ffw_norm.weight", "attn_sinks.weight") and layer is not None
    }
    for name, (_, layer) in out.items():
        if layer in post_layers and name.endswith("post_attention_layernorm.weight"):
            out[name] = ("post_attention_norm.weight", layer)
    return out


def is_quant_sidecar(role: str) -> bool:
    """True when ``role`` names quantization state (scales, zero points...), not parameters."""
    return role.rpartition(".")[2] in QUANT_SIDECAR_SUFFIXES


def logical_shape(
    name: str,
    shape: Sequence[int],
    dtype: str,
    siblings: Mapping[str, tuple[int, ...]],
    *,
    bits: int | None = None,
) -> tuple[int, ...]:
    """Shape of the original (unpacked) weight stored in tensor ``name``.

    Args:
        name: the HF tensor name.
        shape: its stored shape.
        dtype: its stored safetensors dtype (``"I32"``, ``"U8"``...).
        siblings: stored shapes of every tensor of the checkpoint, by name (to find ``scales``).
        bits: quantized bits per weight when known (``quantization_config.bits``); else inferred
            from ``qzeros``/``scales`` (GPTQ/AWQ), else 4.

    Returns:
        The logical shape in PyTorch order; the stored shape for unpacked tensors and sidecars.
    """
    stored = tuple(shape)
    base, _, suffix = name.rpartition(".")
    if suffix == "qweight" and dtype == "I32" and len(stored) == 2:
        scales = siblings.get(f"{base}.scales")
        n_bits = bits or _infer_bits(base, siblings) or 4
        if scales is not None and len(scales) == 2 and scales[1] != stored[1]:
            # AWQ (WQLinear_GEMM): qweight [in, out*bits/32]
            return (stored[1] * 32 // n_bits, stored[0])
        # GPTQ (QuantLinear): qweight [in*bits/32, out] (3-bit packs 32 weights in 3 int32)
        return (stored[1], stored[0] * 32 // n_bits)
    if suffix == "weight_packed" and len(stored) == 2:
        if dtype == "I32":
            return (stored[0], stored[1] * 32 // (bits or 4))
        if dtype == "U8":
            return (stored[0], stored[1] * 2)
    if name.endswith("_blocks") and dtype == "U8" and len(stored) >= 2:
        # mxfp4 (gpt-oss): [..., in/32, 16] bytes, two 4-bit values per byte
        return (*stored[:-2], stored[-2] * stored[-1] * 2)
    if (
        suffix == "weight"
        and dtype == "U8"
        and (
            f"{name}.absmax" in siblings
            or any(k.startswith(f"{name}.quant_state.") for k in siblings)
        )
    ):
        # bitsandbytes 4-bit (Params4bit): flat, two 4-bit values per byte
        return (prod(stored) * 2,)
    return stored


def _infer_bits(base: str, siblings: Mapping[str, tuple[int, ...]]) -> int | None:
    """GPTQ/AWQ bits from qzeros [groups, out*bits/32] and scales [groups, out]."""
    qzeros = siblings.get(f"{base}.qzeros")
    scales = siblings.get(f"{base}.scales")
    if qzeros is None or scales is None or len(qzeros) != 2 or len(scales) != 2:
        return None
    if scales[1] == 0 or (32 * qzeros[1]) % scales[1] != 0:
        return None
    bits = 32 * qzeros[1] // scales[1]
    return bits if bits in (2, 3, 4, 8) else None

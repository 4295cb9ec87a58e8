"""``config.json`` adapters for hybrid/recurrent models and older layouts.

Mamba, Mamba-2, Granite-4 hybrid (Mamba-2 + attention), Qwen3-Next (gated delta net + attention),
GPT-2, GPT-NeoX, OPT, Falcon and BERT-style encoders. Recurrent state sizes follow llama.cpp
``llama_hparams::n_embd_r()`` (conv state ``(d_conv - 1) * (d_inner + 2 * n_group * d_state)``)
and ``n_embd_s()`` (SSM state ``d_state * d_inner``), per sequence per recurrent layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from math import ceil
from typing import Any

from oomkit.loaders.hf_config_decoder import finish
from oomkit.loaders.hf_config_fields import Fields, parse_quantization
from oomkit.loaders.hf_config_qwen35 import qwen3_5
from oomkit.spec.model import (
    LAYER_FULL,
    LAYER_LINEAR,
    LAYER_MAMBA,
    ModelSpec,
    RecurrentSpec,
)

__all__ = [
    "ADAPTERS",
    "finish",
    "gated_delta_kw",
    "gemma3_vision_params",
    "llama4_vision_params",
]


def _kw(f: Fields) -> dict[str, Any]:
    from oomkit.loaders.hf_config_decoder import decoder_kwargs

    return decoder_kwargs(f)


def _recurrent_kw(f: Fields, hidden: int) -> dict[str, Any]:
    """Fields every non-attention model needs filled (no heads, no KV)."""
    return {
        "name": f.name,
        "architecture": f.architecture,
        "model_type": str(f.raw("model_type")) if f.has("model_type") else f.architecture,
        "hidden_size": hidden,
        "num_attention_heads": 0,
        "num_key_value_heads": 0,
        "head_dim": 0,
        "v_head_dim": 0,
        "intermediate_size": 0,
        "vocab_size": f.integer("vocab_size"),
        "max_position_embeddings": None,
        "tie_word_embeddings": f.flag("tie_word_embeddings", default=True),
        "torch_dtype": f.string("torch_dtype", "dtype"),
        "quantization": parse_quantization(f),
    }


def _mamba2_state(
    *,
    d_inner: int,
    d_state: int,
    d_conv: int,
    n_groups: int,
    n_heads: int,
    head_dim: int,
    conv_bias: bool,
    proj_bias: bool,
) -> RecurrentSpec:
    return RecurrentSpec(
        kind="mamba2",
        d_inner=d_inner,
        d_state=d_state,
        d_conv=d_conv,
        n_groups=n_groups,
        n_heads=n_heads,
        head_dim=head_dim,
        dt_rank=n_heads,
        conv_state_elements=(d_conv - 1) * (d_inner + 2 * n_groups * d_state),
        ssm_state_elements=d_state * d_inner,
        conv_bias=conv_bias,
        proj_bias=proj_bias,
    )


def _mamba(f: Fields, source: str) -> ModelSpec:
    """Mamba-1 (``state-spaces/mamba-*-hf``): every layer an SSM mixer, no MLP, RMSNorm."""
    hidden = f.integer("hidden_size", "d_model")
    kw = _recurrent_kw(f, hidden)
    n = f.integer("num_hidden_layers", "n_layer")
    d_inner = f.integer("intermediate_size", default=f.integer("expand", default=2) * hidden)
    d_state = f.integer("state_size", "d_state", default=16)
    d_conv = f.integer("conv_kernel", "d_conv", default=4)
    rank = f.raw("time_step_rank")
    dt_rank = ceil(hidden / 16) if rank in ("auto", None) or not isinstance(rank, int) else rank
    kw.update(num_hidden_layers=n, layer_types=(LAYER_MAMBA,) * n)
    kw["recurrent"] = RecurrentSpec(
        kind="mamba",
        d_inner=d_inner,
        d_state=d_state,
        d_conv=d_conv,
        n_groups=0,  # Mamba-1 has no groups (llama.cpp ssm_n_group = 0)
        dt_rank=dt_rank,
        conv_state_elements=(d_conv - 1) * d_inner,
        ssm_state_elements=d_state * d_inner,
        conv_bias=f.flag("use_conv_bias", default=True),
        proj_bias=f.flag("use_bias", default=False),
    )
    return finish(f, kw, source)


def _mamba2(f: Fields, source: str) -> ModelSpec:
    """Mamba-2 (``Mamba2ForCausalLM``): heads, groups; gated RMSNorm ``ssm_norm`` per layer."""
    hidden = f.integer("hidden_size")
    kw = _recurrent_kw(f, hidden)
    kw["tie_word_embeddings"] = f.flag("tie_word_embeddings", default=False)  # Mamba2Config
    n = f.integer("num_hidden_layers")
    n_heads, head_dim = f.integer("num_heads"), f.integer("head_dim")
    kw.update(num_hidden_layers=n, layer_types=(LAYER_MAMBA,) * n)
    kw["recurrent"] = _mamba2_state(
        d_inner=f.integer("expand", default=2) * hidden,
        d_state=f.integer("state_size"),
        d_conv=f.integer("conv_kernel", default=4),
        n_groups=f.integer("n_groups", default=1),
        n_heads=n_heads,
        head_dim=head_dim,
        conv_bias=f.flag("use_conv_bias", default=True),
        proj_bias=f.flag("use_bias", default=False),
    )
    return finish(f, kw, source)


def _granite_hybrid(f: Fields, source: str) -> ModelSpec:
    """Granite-4.0-H (``GraniteMoeHybridForCausalLM``): Mamba-2 and attention layers
    (``layer_types`` / ``layers_block_type``), each followed by a MoE with a shared expert, or a
    dense SwiGLU of ``shared_intermediate_size`` when ``num_local_experts`` is 0."""
    kw = _kw(f)  # GraniteMoeHybridConfig: tie_word_embeddings defaults to False
    n = kw["num_hidden_layers"]
    kinds = f.layer_types("layer_types", n) or f.layer_types("layers_block_type", n)
    if kinds is None:
        kinds = (LAYER_FULL,) * n
        f.note("config.json has no layer_types/layers_block_type: every layer read as attention.")
    kw["layer_types"] = kinds
    kw["sliding_window"] = None
    hidden = kw["hidden_size"]
    kw["recurrent"] = _mamba2_state(
        d_inner=f.integer("mamba_expand", default=2) * hidden,
        d_state=f.integer("mamba_d_state"),
        d_conv=f.integer("mamba_d_conv", default=4),
        n_groups=f.integer("mamba_n_groups", default=1),
        n_heads=f.integer("mamba_n_heads"),
        head_dim=f.integer("mamba_d_head"),
        conv_bias=f.flag("mamba_conv_bias", default=True),
        proj_bias=f.flag("mamba_proj_bias", default=False),
    )
    n_experts = f.integer("num_local_experts", default=0)
    shared = f.integer("shared_intermediate_size", default=0)
    if n_experts == 0:  # dense (granite-4.0-h-micro): the "shared" MLP is the only MLP
        kw["intermediate_size"] = shared
        return finish(f, kw, source)
    from oomkit.loaders.hf_config_llama import granite_moe

    kw["moe"] = granite_moe(f, kw)
    return finish(f, kw, source)


def _qwen3_next(f: Fields, source: str) -> ModelSpec:
    """Qwen3-Next: 3 gated-delta-net layers : 1 gated full-attention layer
    (``full_attention_interval``), high-sparsity MoE with a gated shared expert."""
    from oomkit.loaders.hf_config_llama import qwen_moe

    kw = _kw(f)
    gated_delta_kw(f, kw)
    kw["moe"] = qwen_moe(f, kw, shared=True)
    return finish(f, kw, source)


def gated_delta_kw(f: Fields, kw: dict[str, Any]) -> None:
    """Set the Qwen3-Next / Qwen3.5 hybrid fields in ``kw``: q/k norms, the layer pattern
    (``layer_types``, else every ``full_attention_interval``-th layer is full attention) and
    the gated-delta-net recurrent state."""
    n = kw["num_hidden_layers"]
    # the MTP layer(s): not loaded by transformers nor counted (spec.tensors.mtp_params), but
    # vLLM's qwen3_next_mtp / qwen3_5_mtp and SGLang's NEXTN run them as the draft
    # (oomkit.estimate.speculative)
    kw["num_nextn_predict_layers"] = f.integer("mtp_num_hidden_layers", default=0) or 0
    kw["qk_norm"] = True
    kw["sliding_window"] = None
    kinds = f.layer_types("layer_types", n)
    if kinds is None:
        every = f.integer("full_attention_interval", default=4) or 1
        kinds = tuple(LAYER_FULL if (i + 1) % every == 0 else LAYER_LINEAR for i in range(n))
    kw["layer_types"] = kinds
    n_k, n_v = f.integer("linear_num_key_heads"), f.integer("linear_num_value_heads")
    k_dim, v_dim = f.integer("linear_key_head_dim"), f.integer("linear_value_head_dim")
    d_conv = f.integer("linear_conv_kernel_dim", default=4)
    # llama.cpp qwen3next hparams: ssm_d_inner = v_dim * n_v, ssm_d_state = k_dim,
    # ssm_n_group = n_k; conv state (d_conv-1) * (2*n_k*k_dim + n_v*v_dim), ssm state k*v per head.
    d_inner = n_v * v_dim
    kw["recurrent"] = RecurrentSpec(
        kind="gated_delta_net",
        d_inner=d_inner,
        d_state=k_dim,
        d_conv=d_conv,
        n_groups=n_k,
        n_heads=n_v,
        head_dim=v_dim,
        dt_rank=n_v,
        n_k_heads=n_k,
        k_head_dim=k_dim,
        conv_state_elements=(d_conv - 1) * (d_inner + 2 * n_k * k_dim),
        ssm_state_elements=k_dim * d_inner,
        conv_bias=False,
    )


def _gpt2(f: Fields, source: str) -> ModelSpec:
    """GPT-2: learned positions (``n_positions``), fused biased qkv, GELU MLP of ``n_inner``
    (default 4*n_embd), LayerNorm with bias, tied output."""
    hidden = f.integer("n_embd", "hidden_size")
    f_inner = f.opt_int("n_inner")
    kw = dict(_kw_with(f, intermediate=f_inner or 4 * hidden))
    kw["tie_word_embeddings"] = f.flag("tie_word_embeddings", default=True)
    kw["position_embedding_rows"] = f.integer("n_positions", "max_position_embeddings")
    kw.update(_biased_layernorm())
    return finish(f, kw, source)


def _kw_with(f: Fields, *, intermediate: int) -> dict[str, Any]:
    """decoder_kwargs for configs whose MLP width may be absent or null (GPT-2 ``n_inner``)."""
    shim = dict(f.top)
    if shim.get("intermediate_size") is None:
        shim["intermediate_size"] = intermediate
    return _kw(Fields(shim, name=f.name, architecture=f.architecture, path=f.path))


def _biased_layernorm() -> dict[str, Any]:
    return {
        "attention_bias": True,
        "attention_out_bias": True,
        "mlp_bias": True,
        "mlp_gated": False,
        "norm_type": "layer",
    }


def _gpt_neox(f: Fields, source: str) -> ModelSpec:
    """GPT-NeoX / Pythia: fused qkv with bias, LayerNorm with bias, untied ``embed_out``."""
    kw = _kw(f)
    kw.update(_biased_layernorm())
    bias = f.flag("attention_bias", default=True)
    kw.update(attention_bias=bias, attention_out_bias=bias)
    kw["parallel_attn"] = False  # both LayerNorms exist even with use_parallel_residual
    return finish(f, kw, source)


def _opt(f: Fields, source: str) -> ModelSpec:
    """OPT: learned positions with 2 extra rows (``OPTLearnedPositionalEmbedding`` offset 2),
    ``ffn_dim`` MLP, ``enable_bias``; OPT-350m projects 512-wide embeddings
    (``word_embed_proj_dim``) and has no final LayerNorm (``do_layer_norm_before`` false)."""
    kw = _kw(f)
    kw["tie_word_embeddings"] = f.flag("tie_word_embeddings", default=True)
    kw.update(_biased_layernorm())
    bias = f.flag("enable_bias", default=True)
    kw.update(attention_bias=bias, attention_out_bias=bias, mlp_bias=bias)
    kw["position_embedding_rows"] = f.integer("max_position_embeddings") + 2
    proj = f.opt_int("word_embed_proj_dim")
    kw["word_embed_proj_dim"] = proj if proj and proj != kw["hidden_size"] else None
    kw["final_norm"] = f.flag("do_layer_norm_before", default=True) and not f.flag(
        "_remove_final_layer_norm", default=False
    )
    f.note("llama.cpp has no OPT architecture: tensor names follow the GGUF convention by analogy.")
    return finish(f, kw, source)


def _falcon(f: Fields, source: str) -> ModelSpec:
    """Falcon: fused qkv, no linear biases, LayerNorm with bias, parallel attention/MLP.
    7B: multi-query (1 KV head); 40B/180B ``new_decoder_architecture``: ``num_kv_heads`` and two
    LayerNorms per layer."""
    hidden = f.integer("hidden_size", "n_embd")
    kw = _kw_with(f, intermediate=4 * hidden)
    if f.has("ffn_hidden_size"):
        kw["intermediate_size"] = f.integer("ffn_hidden_size")
    new = f.flag("new_decoder_architecture", default=False)
    heads = kw["num_attention_heads"]
    if new:
        kw["num_key_value_heads"] = f.integer("num_kv_heads", default=heads)
    elif f.flag("multi_query", default=True):
        kw["num_key_value_heads"] = 1
    else:
        kw["num_key_value_heads"] = heads
    bias = f.flag("bias", default=False)
    kw.update(
        attention_bias=bias,
        attention_out_bias=bias,
        mlp_bias=bias,
        mlp_gated=False,
        norm_type="layer",
        new_decoder_architecture=new,
        parallel_attn=f.flag("parallel_attn", default=True),
        tie_word_embeddings=f.flag("tie_word_embeddings", default=True),
    )
    if f.flag("alibi", default=False):
        f.note("Falcon with ALiBi (falcon-rw) is read with the standard Falcon layout.")
    return finish(f, kw, source)


def _bert(f: Fields, source: str) -> ModelSpec:
    """BERT / RoBERTa / XLM-R encoders: learned positions and token types, post-LayerNorm
    blocks, GELU MLP; no KV cache (``is_encoder``). The pooler (H*H + H) is not counted."""
    kw = _kw(f)
    kw.update(_biased_layernorm())
    kw.update(
        is_encoder=True,
        position_embedding_rows=f.integer("max_position_embeddings"),
        type_vocab_size=f.integer("type_vocab_size", default=2),
        tie_word_embeddings=True,
    )
    f.note(
        "Encoder layout as llama.cpp's BERT arch: the pooler and masked-LM head are not counted."
    )
    return finish(f, kw, source)


def gemma3_vision_params(f: Fields, text_hidden: int) -> int:
    """SigLIP vision tower + Gemma3 projector parameters, from ``vision_config``.

    SiglipVisionModel (``vision_use_head`` false): patch conv (+bias), position embedding of
    ``(image_size/patch_size)**2`` rows, per layer two LayerNorms, q/k/v/o and fc1/fc2 with
    biases, a final LayerNorm; projector ``mm_input_projection_weight`` [D_v, D_t] and
    ``mm_soft_emb_norm`` [D_v]. Defaults are Gemma3Config's.
    """
    vc = f.top.get("vision_config")
    if not isinstance(vc, Mapping):
        f.note("No vision_config: the vision tower is not counted.")
        return 0
    v = Fields(vc, name=f.name, architecture=f.architecture, path=f.path)
    d = v.integer("hidden_size", default=1152)
    inter = v.integer("intermediate_size", default=4304)
    layers = v.integer("num_hidden_layers", default=27)
    image, patch = v.integer("image_size", default=896), v.integer("patch_size", default=14)
    channels = v.integer("num_channels", default=3)
    per_layer = 4 * d + 4 * (d * d + d) + (d * inter + inter) + (inter * d + d)
    embed = d * channels * patch * patch + d + (image // patch) ** 2 * d
    tower = embed + layers * per_layer + 2 * d
    projector = d * text_hidden + d
    if v.flag("vision_use_head", default=False):
        f.note("SigLIP attention-pooling head present but not counted.")
    return tower + projector


def llama4_vision_params(f: Fields, text_hidden: int) -> int:
    """Llama 4 vision encoder + pixel-shuffle adapter + projector parameters (``vision_config``).

    transformers ``Llama4VisionModel``: class embedding [D], positional embedding
    [(image/patch)**2 + 1, D], unfold-patch linear [D, C*P*P] (no bias), pre/post LayerNorms,
    per layer two LayerNorms, q/k/v/o and fc1/fc2 with biases; ``vision_adapter`` fc1
    [projector_input_dim, intermediate_size] and fc2 [projector_output_dim]^2 (no biases);
    ``multi_modal_projector.linear_1`` [text_hidden, vision_output_dim]. Defaults are
    Llama4VisionConfig's.
    """
    vc = f.top.get("vision_config")
    if not isinstance(vc, Mapping):
        f.note("No vision_config: the vision encoder is not counted.")
        return 0
    v = Fields(vc, name=f.name, architecture=f.architecture, path=f.path)
    d = v.integer("hidden_size", default=768)
    inter = v.integer("intermediate_size", default=5632)
    layers = v.integer("num_hidden_layers", default=34)
    image, patch = v.integer("image_size", default=448), v.integer("patch_size", default=14)
    channels = v.integer("num_channels", default=3)
    proj_in = v.integer("projector_input_dim", default=4096)
    proj_out = v.integer("projector_output_dim", default=4096)
    out_dim = v.integer("vision_output_dim", default=7680)
    per_layer = 4 * d + 4 * (d * d + d) + (d * inter + inter) + (inter * d + d)
    embed = d + ((image // patch) ** 2 + 1) * d + d * channels * patch * patch
    adapter = proj_in * inter + proj_out * proj_out
    return embed + 4 * d + layers * per_layer + adapter + text_hidden * out_dim


ADAPTERS: dict[str, Callable[[Fields, str], ModelSpec]] = {
    "MambaForCausalLM": _mamba,
    # FalconMamba (HF modeling_falcon_mamba.py): the Mamba-1 mixer plus parameter-free RMS norms
    # on B, C and dt (mixer_rms_eps); llama.cpp converts it to arch "mamba" (ssm_dt_b_c_rms)
    "FalconMambaForCausalLM": _mamba,
    "Mamba2ForCausalLM": _mamba2,
    "GraniteMoeHybridForCausalLM": _granite_hybrid,
    "Qwen3NextForCausalLM": _qwen3_next,
    "Qwen3_5ForConditionalGeneration": qwen3_5,
    "Qwen3_5MoeForConditionalGeneration": qwen3_5,
    "Qwen3_5ForCausalLM": qwen3_5,
    "Qwen3_5MoeForCausalLM": qwen3_5,
    "GPT2LMHeadModel": _gpt2,
    "GPTNeoXForCausalLM": _gpt_neox,
    "OPTForCausalLM": _opt,
    "FalconForCausalLM": _falcon,
    "BertModel": _bert,
    "BertForMaskedLM": _bert,
    "RobertaModel": _bert,
    "RobertaForMaskedLM": _bert,
    "XLMRobertaModel": _bert,
    "XLMRobertaForMaskedLM": _bert,
}

"""Per-family ``config.json`` adapters for decoder-only transformers (Llama-like, MoE, MLA).

Each adapter reads the keys, and the defaults, of that family's ``transformers``
``configuration_<model>.py``. Older-style models (GPT-2, NeoX, OPT, Falcon, BERT) and hybrids
(Mamba, Granite-4, Qwen3-Next) live in :mod:`oomkit.loaders.hf_config_hybrid`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from oomkit.loaders.hf_config_fields import Fields, parse_quantization, rope_scaling_numbers
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING, MlaSpec, ModelSpec, MoESpec

__all__ = ["ADAPTERS", "MODEL_TYPE_ARCHITECTURES", "Adapter", "decoder_kwargs", "generic_decoder"]

Adapter = Callable[[Fields, str], ModelSpec]


def _rope_type(f: Fields) -> str | None:
    for key in ("rope_scaling", "rope_parameters"):
        rs = f.raw(key)
        if isinstance(rs, Mapping):
            kind = rs.get("rope_type", rs.get("type"))
            if isinstance(kind, str) and kind != "default":
                return kind
    return None


def decoder_kwargs(
    f: Fields, *, tie_default: bool = False, defaults: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The fields every decoder has, as ModelSpec keyword arguments.

    ``defaults`` supplies the family's ``configuration_*.py`` defaults for keys a real
    config.json may omit (Gemma 3's ``text_config`` leaves out heads, vocab and head_dim).
    """
    d = defaults or {}
    n_layers = f.integer(
        "num_hidden_layers", "n_layer", "num_layers", "n_layers", default=d.get("num_hidden_layers")
    )
    hidden = f.integer("hidden_size", "n_embd", "d_model", default=d.get("hidden_size"))
    head_keys = ("num_attention_heads", "n_head", "num_heads", "n_heads")
    heads = f.integer(*head_keys, default=d.get("num_attention_heads"))
    kv_keys = ("num_key_value_heads", "num_kv_heads", "n_kv_heads")
    kv = f.integer(*kv_keys, default=d.get("num_key_value_heads", heads))
    explicit_hd = f.opt_int("head_dim") or d.get("head_dim")
    head_dim = explicit_hd if explicit_hd else (hidden // heads if heads else 0)
    sliding = f.opt_int("sliding_window") or d.get("sliding_window")
    return {
        "name": f.name,
        "architecture": f.architecture,
        "model_type": str(f.raw("model_type")) if f.has("model_type") else f.architecture,
        "num_hidden_layers": n_layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "v_head_dim": head_dim,
        "intermediate_size": f.integer(
            "intermediate_size",
            "n_inner",
            "ffn_dim",
            "ffn_hidden_size",
            default=d.get("intermediate_size"),
        ),
        "vocab_size": f.integer("vocab_size", "padded_vocab_size", default=d.get("vocab_size")),
        "max_position_embeddings": f.opt_int(
            "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"
        ),
        "tie_word_embeddings": f.flag("tie_word_embeddings", default=tie_default),
        "sliding_window": sliding,
        "torch_dtype": f.string("torch_dtype", "dtype"),
        "quantization": parse_quantization(f),
        "rope_scaling_type": _rope_type(f),
        **rope_scaling_numbers(f),
        "attn_logit_softcapping": f.opt_positive_float("attn_logit_softcapping"),
        "final_logit_softcapping": f.opt_positive_float("final_logit_softcapping"),
    }


def _finish(f: Fields, kw: dict[str, Any], source: str) -> ModelSpec:
    kw["source"] = source
    kw["assumptions"] = (*kw.get("assumptions", ()), *f.assumptions)
    return ModelSpec(**kw)


def _layer_types_or(f: Fields, kw: dict[str, Any], default: tuple[str, ...]) -> tuple[str, ...]:
    """Explicit ``layer_types`` win over the family's pattern."""
    explicit = f.layer_types("layer_types", kw["num_hidden_layers"])
    if explicit is not None:
        return explicit
    return default


def _all(kind: str, n: int) -> tuple[str, ...]:
    return (kind,) * n


def _pattern(n: int, every: int) -> tuple[str, ...]:
    """HF Gemma2/3, Cohere2: layer i is full when ``(i + 1) % every == 0``, else sliding."""
    every = max(every, 1)  # 0 in a config: no full-attention period -> read as every layer full
    return tuple(LAYER_FULL if (i + 1) % every == 0 else LAYER_SLIDING for i in range(n))


# ---------------------------------------------------------------- Llama and close relatives


def generic_decoder(f: Fields, source: str) -> ModelSpec:
    """Unknown architecture: read as a Llama-like decoder (SwiGLU, RMSNorm, no biases)."""
    kw = decoder_kwargs(f)
    f.note(
        f"Architecture '{f.architecture}' is not known to oomkit: read as a Llama-like decoder "
        "(gate/up/down MLP, RMSNorm, no biases); the parameter count may be off."
    )
    return _finish(f, _llama_layers(f, kw), source)


def _llama_layers(f: Fields, kw: dict[str, Any]) -> dict[str, Any]:
    bias = f.flag("attention_bias", "bias", default=False)
    kw.update(attention_bias=bias, attention_out_bias=bias)
    kw["mlp_bias"] = f.flag("mlp_bias", default=False)
    n = kw["num_hidden_layers"]
    sliding = kw["sliding_window"] is not None
    kw["layer_types"] = _layer_types_or(f, kw, _all(LAYER_SLIDING if sliding else LAYER_FULL, n))
    return kw


def _llama(f: Fields, source: str) -> ModelSpec:
    """Llama 1-3.3, Yi, Mistral (``sliding_window`` set: every layer sliding, as v0.1), InternLM2,
    Baichuan, Granite: q/k/v/o, SwiGLU, RMSNorm; ``attention_bias`` covers q, k, v and o."""
    kw = decoder_kwargs(f)
    if f.architecture == "BaichuanForCausalLM":
        f.note("Baichuan W_pack (fused q/k/v) is listed as attn_q/k/v as llama.cpp splits it.")
    if f.architecture == "InternLM2ForCausalLM":
        f.note(
            "InternLM2 wqkv (fused, interleaved) is listed as attn_q/k/v as llama.cpp splits it."
        )
    return _finish(f, _llama_layers(f, kw), source)


def _mixtral(f: Fields, source: str) -> ModelSpec:
    kw = _llama_layers(f, decoder_kwargs(f))
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_local_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=kw["intermediate_size"],
    )
    return _finish(f, kw, source)


def _granite_moe(f: Fields, source: str) -> ModelSpec:
    """Granite-3 MoE (``GraniteMoeForCausalLM``; ``GraniteMoeSharedForCausalLM`` adds a shared
    expert of ``shared_intermediate_size``): Llama attention, experts of ``intermediate_size``."""
    kw = _llama_layers(f, decoder_kwargs(f))
    shared = f.integer("shared_intermediate_size", default=0)
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_local_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=kw["intermediate_size"],
        num_shared_experts=1 if shared else 0,
        shared_expert_intermediate_size=shared,
    )
    return _finish(f, kw, source)


def _olmoe(f: Fields, source: str) -> ModelSpec:
    """OLMoE: pre-norm blocks, q/k RMSNorm over all heads, 64 experts without a shared one."""
    kw = _llama_layers(f, decoder_kwargs(f))
    kw["qk_norm"] = True
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=kw["intermediate_size"],
    )
    return _finish(f, kw, source)


def _deepseek_v1(f: Fields, source: str) -> ModelSpec:
    """DeepSeek-MoE 16B (``DeepseekForCausalLM``): Llama attention + DeepSeek MoE."""
    kw = _llama_layers(f, decoder_kwargs(f))
    kw["moe"] = _deepseek_moe(f, kw)
    return _finish(f, kw, source)


def _qwen2_layer_types(f: Fields, kw: dict[str, Any]) -> tuple[str, ...]:
    """Qwen2/3: sliding only with ``use_sliding_window``, on layers >= ``max_window_layers``."""
    n = kw["num_hidden_layers"]
    if not f.flag("use_sliding_window", default=False) or kw["sliding_window"] is None:
        kw["sliding_window"] = None
        return _layer_types_or(f, kw, _all(LAYER_FULL, n))
    first = f.integer("max_window_layers", default=n)
    return _layer_types_or(
        f, kw, tuple(LAYER_SLIDING if i >= first else LAYER_FULL for i in range(n))
    )


def _qwen_moe(f: Fields, kw: dict[str, Any], *, shared: bool) -> MoESpec:
    n = kw["num_hidden_layers"]
    n_experts = f.integer("num_experts")
    step = f.integer("decoder_sparse_step", default=1)
    mlp_only = set(f.int_list("mlp_only_layers") or ())
    dense = tuple(
        i for i in range(n) if i in mlp_only or n_experts == 0 or step == 0 or (i + 1) % step != 0
    )
    return MoESpec(
        num_experts=n_experts,
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=f.integer("moe_intermediate_size"),
        num_shared_experts=1 if shared else 0,
        shared_expert_intermediate_size=(
            f.integer("shared_expert_intermediate_size") if shared else 0
        ),
        shared_expert_gate=shared,
        dense_layers=dense,
    )


def _qwen(f: Fields, source: str) -> ModelSpec:
    """Qwen2/2.5 (q/k/v biases), Qwen3 (q/k RMSNorm), and their MoE variants."""
    kw = decoder_kwargs(f)
    arch = f.architecture
    is_qwen3 = arch.startswith("Qwen3")
    kw["attention_bias"] = f.flag("attention_bias", default=not is_qwen3)
    kw["qk_norm"] = is_qwen3
    kw["layer_types"] = _qwen2_layer_types(f, kw)
    if arch in ("Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"):
        kw["moe"] = _qwen_moe(f, kw, shared=arch == "Qwen2MoeForCausalLM")
    return _finish(f, kw, source)


# ---------------------------------------------------------------- Gemma, Cohere, OLMo, GLM, Phi


#: transformers ``Gemma3TextConfig`` defaults; gemma-3-4b/12b/27b configs omit these keys.
_GEMMA3_TEXT_DEFAULTS: dict[str, int] = {
    "vocab_size": 262_208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "sliding_window": 4096,
}


def _gemma(f: Fields, source: str) -> ModelSpec:
    """Gemma 1/2/3: embeddings always tied; Gemma2 even layers sliding; Gemma3 5 local : 1 global,
    q/k norms. Gemma3ForConditionalGeneration: the SigLIP tower goes to ``multimodal_params``."""
    arch = f.architecture
    is_gemma3 = arch in ("Gemma3ForCausalLM", "Gemma3ForConditionalGeneration")
    kw = decoder_kwargs(f, tie_default=True, defaults=_GEMMA3_TEXT_DEFAULTS if is_gemma3 else None)
    kw["tie_word_embeddings"] = True
    n = kw["num_hidden_layers"]
    if arch == "GemmaForCausalLM":
        kw["sliding_window"] = None
        kw["layer_types"] = _all(LAYER_FULL, n)
    elif arch == "Gemma2ForCausalLM":
        kw["layer_types"] = _layer_types_or(f, kw, _pattern(n, 2))
    else:
        kw["qk_norm"] = True
        every = f.integer("sliding_window_pattern", "_sliding_window_pattern", default=6)
        kw["layer_types"] = _layer_types_or(f, kw, _pattern(n, every))
        if arch == "Gemma3ForConditionalGeneration":
            from oomkit.loaders.hf_config_hybrid import gemma3_vision_params

            kw["multimodal_params"] = gemma3_vision_params(f, kw["hidden_size"])
    if kw["sliding_window"] is None:
        kw["layer_types"] = _all(LAYER_FULL, n)
    return _finish(f, kw, source)


def _cohere(f: Fields, source: str) -> ModelSpec:
    """Command-R (parallel block, LayerNorm without bias, tied); Cohere2 adds 3 sliding : 1 full."""
    kw = decoder_kwargs(f, tie_default=True)
    kw.update(norm_type="layer_no_bias", parallel_attn=True)
    kw["attention_bias"] = kw["attention_out_bias"] = f.flag("attention_bias", default=False)
    n = kw["num_hidden_layers"]
    if f.architecture == "Cohere2ForCausalLM":
        every = f.integer("sliding_window_pattern", default=4)
        kw["layer_types"] = _layer_types_or(f, kw, _pattern(n, every))
    else:
        kw["qk_norm"] = f.flag("use_qk_norm", default=False)
        kw["sliding_window"] = None
    return _finish(f, kw, source)


def _olmo2(f: Fields, source: str) -> ModelSpec:
    """OLMo 2 and 3: no pre-norms; post-attention/post-MLP RMSNorms; q/k RMSNorm over all heads.
    OLMo 3 (transformers configuration_olmo3.py) adds a window (4096 when absent) on layer i
    unless (i + 1) % 4 == 0, or on its ``layer_types``; a null window attends in full."""
    kw = decoder_kwargs(f)
    kw["qk_norm"] = True
    kw["attention_bias"] = kw["attention_out_bias"] = f.flag("attention_bias", default=False)
    if f.architecture == "Olmo3ForCausalLM":
        kw["sliding_window"] = kw["sliding_window"] or (
            None if f.present("sliding_window") else 4096
        )
        if kw["sliding_window"]:
            kw["layer_types"] = _layer_types_or(f, kw, _pattern(kw["num_hidden_layers"], 4))
    return _finish(f, kw, source)


#: GlmConfig, Glm4Config and Llama4TextConfig default ``head_dim`` to 128 (not hidden/heads)
_HEAD_DIM_128: dict[str, int] = {"head_dim": 128}


def _glm(f: Fields, source: str) -> ModelSpec:
    """GLM-4 (0414, ``Glm4ForCausalLM``: sandwich norms) and GLM-4-9B-hf (``GlmForCausalLM``):
    q/k/v biases, fused gate/up (``ffn_up`` [2*ff, H])."""
    kw = decoder_kwargs(f, defaults=_HEAD_DIM_128)
    kw["attention_bias"] = f.flag("attention_bias", default=True)
    return _finish(f, kw, source)


def _phi3(f: Fields, source: str) -> ModelSpec:
    """Phi-3/3.5/4: fused qkv and gate/up; ``sliding_window`` applies to every layer (HF Phi3)."""
    kw = decoder_kwargs(f)
    n = kw["num_hidden_layers"]
    sliding = kw["sliding_window"] is not None
    kw["layer_types"] = _layer_types_or(f, kw, _all(LAYER_SLIDING if sliding else LAYER_FULL, n))
    if kw["rope_scaling_type"] in ("su", "longrope"):
        kw["rope_scaling_type"] = "longrope"
    return _finish(f, kw, source)


def _phi(f: Fields, source: str) -> ModelSpec:
    """Phi-1/1.5/2 (HF modeling_phi.py): q/k/v/dense and fc1/fc2 with biases, GELU MLP (not
    gated), one LayerNorm with bias per layer feeding attention and MLP in parallel. The
    lm_head bias (vocab_size values) is not in the tensor table."""
    kw = decoder_kwargs(f)
    kw.update(
        attention_bias=True,
        attention_out_bias=True,
        mlp_bias=True,
        mlp_gated=False,
        norm_type="layer",
        parallel_attn=True,
        qk_norm=f.flag("qk_layernorm", default=False),
    )
    return _finish(f, kw, source)


def _phimoe(f: Fields, source: str) -> ModelSpec:
    """Phi-3.5-MoE (HF modeling_phimoe.py): Mixtral-style experts (``num_local_experts``, w1/w2/w3
    per expert), LayerNorm with bias, q/k/v/o biases (``attention_bias``), lm_head bias."""
    kw = _llama_layers(f, decoder_kwargs(f))
    bias = f.flag("attention_bias", default=False)
    kw.update(attention_bias=bias, attention_out_bias=bias, norm_type="layer")
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_local_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=kw["intermediate_size"],
    )
    return _finish(f, kw, source)


def _starcoder2(f: Fields, source: str) -> ModelSpec:
    """StarCoder2: LayerNorm with bias, biases on every linear (``use_bias``), GELU MLP."""
    kw = decoder_kwargs(f, tie_default=True)
    bias = f.flag("use_bias", default=True)
    kw.update(
        attention_bias=bias,
        attention_out_bias=bias,
        mlp_bias=bias,
        mlp_gated=False,
        norm_type="layer",
    )
    n = kw["num_hidden_layers"]
    sliding = kw["sliding_window"] is not None
    kw["layer_types"] = _layer_types_or(f, kw, _all(LAYER_SLIDING if sliding else LAYER_FULL, n))
    return _finish(f, kw, source)


# -------------------------------------------------- DeepSeek, GLM-4.5, gpt-oss, Llama 4


def _deepseek(f: Fields, source: str) -> ModelSpec:
    """DeepSeek-V2/V3 (and V2-Lite: ``q_lora_rank`` null): MLA + MoE with shared experts.

    ``num_nextn_predict_layers`` (V3: 1 MTP layer) is kept in the spec and excluded from the
    layout, as llama.cpp's converter skips it; see ``oomkit.spec.tensors.mtp_params``.
    """
    kw = decoder_kwargs(f)
    nope, rope = f.integer("qk_nope_head_dim"), f.integer("qk_rope_head_dim")
    v_dim = f.integer("v_head_dim")
    # "q_lora_rank": null (V2-Lite) means no query compression; a missing key means the
    # DeepseekV2Config/DeepseekV3Config default of 1536
    q_lora = f.opt_int("q_lora_rank") if f.present("q_lora_rank") else 1536
    kw["mla"] = MlaSpec(
        q_lora_rank=q_lora or None,
        kv_lora_rank=f.integer("kv_lora_rank"),
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=v_dim,
    )
    kw.update(head_dim=nope + rope, v_head_dim=v_dim)
    kw["num_key_value_heads"] = kw["num_attention_heads"]
    kw["moe"] = _deepseek_moe(f, kw)
    kw["num_nextn_predict_layers"] = f.integer("num_nextn_predict_layers", default=0)
    return _finish(f, kw, source)


def _deepseek_moe(f: Fields, kw: dict[str, Any]) -> MoESpec:
    n = kw["num_hidden_layers"]
    first_dense = f.integer("first_k_dense_replace", default=0)
    freq = f.integer("moe_layer_freq", default=1) or 1
    eff = f.integer("moe_intermediate_size")
    n_shared = f.integer("n_shared_experts", default=0)
    topk_method = f.string("topk_method")
    return MoESpec(
        num_experts=f.integer("n_routed_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=eff,
        num_shared_experts=n_shared,
        shared_expert_intermediate_size=n_shared * eff,
        dense_layers=tuple(i for i in range(n) if i < first_dense or i % freq != 0),
        score_correction_bias=(topk_method == "noaux_tc" or f.architecture == "Glm4MoeForCausalLM"),
    )


def _glm4_moe(f: Fields, source: str) -> ModelSpec:
    """GLM-4.5/4.6 (``Glm4MoeForCausalLM``): GQA with q/k/v biases, optional q/k norms,
    DeepSeek-style MoE (``first_k_dense_replace``, shared experts, score-correction bias), MTP
    layers."""
    kw = decoder_kwargs(f)
    kw["attention_bias"] = f.flag("attention_bias", default=False)  # Glm4MoeConfig default
    kw["qk_norm"] = f.flag("use_qk_norm", default=False)
    kw["moe"] = _deepseek_moe(f, kw)
    kw["num_nextn_predict_layers"] = f.integer("num_nextn_predict_layers", default=0)
    if kw["num_nextn_predict_layers"]:
        f.note(
            "GLM-4.5 MTP (nextn) layers: in the GGUF tensor layout (llama.cpp keeps them as extra "
            "blocks, loaded but not run), not in the parameter count (see mtp_params)."
        )
    return _finish(f, kw, source)


def _gpt_oss(f: Fields, source: str) -> ModelSpec:
    """gpt-oss: alternating sliding/full ``layer_types``, attention sinks, biased q/k/v/o, MoE with
    router and expert biases (``gate_up_proj`` split into gate/up as llama.cpp does)."""
    kw = decoder_kwargs(f)
    n = kw["num_hidden_layers"]
    kw.update(attention_bias=True, attention_out_bias=True)
    kw["layer_types"] = _layer_types_or(f, kw, _pattern(n, 2))
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_local_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok", "experts_per_token"),
        expert_intermediate_size=kw["intermediate_size"],
        router_bias=True,
        expert_bias=True,
    )
    return _finish(f, kw, source)


def _llama4(f: Fields, source: str) -> ModelSpec:
    """Llama 4 (text_config): MoE every ``interleave_moe_layer_step`` layers with one shared expert;
    chunked attention (``attention_chunk_size``) on RoPE layers is modelled as sliding attention
    with that window; every 4th layer (NoPE) is global."""
    kw = decoder_kwargs(f, defaults=_HEAD_DIM_128)
    n = kw["num_hidden_layers"]
    eff = kw["intermediate_size"]
    kw["intermediate_size"] = f.integer("intermediate_size_mlp", default=eff)
    step = f.integer("interleave_moe_layer_step", default=1) or 1
    moe_layers = f.int_list("moe_layers")
    moe_set = (
        set(moe_layers) if moe_layers is not None else {i for i in range(n) if (i + 1) % step == 0}
    )
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_local_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok", default=1),
        expert_intermediate_size=eff,
        num_shared_experts=1,
        shared_expert_intermediate_size=eff,
        dense_layers=tuple(i for i in range(n) if i not in moe_set),
    )
    chunk = f.opt_int("attention_chunk_size")
    no_rope = f.int_list("no_rope_layers")
    uses_rope = (
        [bool(x) for x in no_rope]
        if no_rope and len(no_rope) == n
        else [(i + 1) % 4 != 0 for i in range(n)]
    )
    if chunk:
        kw["sliding_window"] = chunk
        kw["layer_types"] = tuple(LAYER_SLIDING if r else LAYER_FULL for r in uses_rope)
        f.note(
            f"Llama 4 chunked attention (chunks of {chunk} tokens) is modelled as a sliding "
            "window of that size on the RoPE layers."
        )
    if f.architecture == "Llama4ForConditionalGeneration":
        from oomkit.loaders.hf_config_hybrid import llama4_vision_params

        kw["multimodal_params"] = llama4_vision_params(f, kw["hidden_size"])
    return _finish(f, kw, source)


def _adapters() -> dict[str, Adapter]:
    from oomkit.loaders import hf_config_hybrid as hy
    from oomkit.loaders import hf_config_mllama as ml

    table: dict[str, Adapter] = {
        "LlamaForCausalLM": _llama,
        "MistralForCausalLM": _llama,
        "InternLM2ForCausalLM": _llama,
        "BaichuanForCausalLM": _llama,
        "GraniteForCausalLM": _llama,
        "MixtralForCausalLM": _mixtral,
        "GraniteMoeForCausalLM": _granite_moe,
        "GraniteMoeSharedForCausalLM": _granite_moe,
        "OlmoeForCausalLM": _olmoe,
        "DeepseekForCausalLM": _deepseek_v1,
        "Qwen2ForCausalLM": _qwen,
        "Qwen2MoeForCausalLM": _qwen,
        "Qwen3ForCausalLM": _qwen,
        "Qwen3MoeForCausalLM": _qwen,
        "GemmaForCausalLM": _gemma,
        "Gemma2ForCausalLM": _gemma,
        "Gemma3ForCausalLM": _gemma,
        "Gemma3ForConditionalGeneration": _gemma,
        "CohereForCausalLM": _cohere,
        "Cohere2ForCausalLM": _cohere,
        "Olmo2ForCausalLM": _olmo2,
        "Olmo3ForCausalLM": _olmo2,
        "GlmForCausalLM": _glm,
        "Glm4ForCausalLM": _glm,
        "Phi3ForCausalLM": _phi3,
        "PhiForCausalLM": _phi,
        "PhiMoEForCausalLM": _phimoe,
        "Starcoder2ForCausalLM": _starcoder2,
        "DeepseekV2ForCausalLM": _deepseek,
        "DeepseekV3ForCausalLM": _deepseek,
        "Glm4MoeForCausalLM": _glm4_moe,
        "GptOssForCausalLM": _gpt_oss,
        "Llama4ForConditionalGeneration": _llama4,
        "Llama4ForCausalLM": _llama4,
    }
    table.update(hy.ADAPTERS)
    table.update(ml.ADAPTERS)
    return table


ADAPTERS: dict[str, Adapter] = _adapters()

#: ``model_type`` -> architecture, for configs without ``architectures`` (catalog snippets).
MODEL_TYPE_ARCHITECTURES: dict[str, str] = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen2_moe": "Qwen2MoeForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "qwen3_next": "Qwen3NextForCausalLM",
    "qwen3_5": "Qwen3_5ForConditionalGeneration",
    "qwen3_5_text": "Qwen3_5ForCausalLM",
    "qwen3_5_moe": "Qwen3_5MoeForConditionalGeneration",
    "qwen3_5_moe_text": "Qwen3_5MoeForCausalLM",
    "gemma": "GemmaForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "gemma3": "Gemma3ForConditionalGeneration",
    "phi3": "Phi3ForCausalLM",
    "phi": "PhiForCausalLM",
    "phimoe": "PhiMoEForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM",
    "deepseek_v3": "DeepseekV3ForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
    "glm": "GlmForCausalLM",
    "glm4": "Glm4ForCausalLM",
    "glm4_moe": "Glm4MoeForCausalLM",
    "cohere": "CohereForCausalLM",
    "cohere2": "Cohere2ForCausalLM",
    "falcon": "FalconForCausalLM",
    "gpt2": "GPT2LMHeadModel",
    "gpt_neox": "GPTNeoXForCausalLM",
    "opt": "OPTForCausalLM",
    "granite": "GraniteForCausalLM",
    "granitemoe": "GraniteMoeForCausalLM",
    "granitemoeshared": "GraniteMoeSharedForCausalLM",
    "olmoe": "OlmoeForCausalLM",
    "deepseek": "DeepseekForCausalLM",
    "granitemoehybrid": "GraniteMoeHybridForCausalLM",
    "mamba": "MambaForCausalLM",
    "falcon_mamba": "FalconMambaForCausalLM",
    "mamba2": "Mamba2ForCausalLM",
    "olmo2": "Olmo2ForCausalLM",
    "olmo3": "Olmo3ForCausalLM",
    "llama4": "Llama4ForConditionalGeneration",
    "llama4_text": "Llama4ForCausalLM",
    "internlm2": "InternLM2ForCausalLM",
    "baichuan": "BaichuanForCausalLM",
    "starcoder2": "Starcoder2ForCausalLM",
    "bert": "BertModel",
    "roberta": "RobertaModel",
    "xlm-roberta": "XLMRobertaModel",
}

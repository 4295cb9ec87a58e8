"""``config.json`` adapters for Gemma, Cohere, OLMo 2/3, GLM, Phi and StarCoder2 (pure).

The dense families whose layers differ from Llama's: Gemma 1/2/3 (tied embeddings, local/global
patterns, the Gemma 3 vision tower), Command-R and Cohere2 (parallel blocks, sliding pattern),
OLMo 2/3 (post-norms, OLMo 3's window), GLM-4 (q/k/v biases), Phi-1/2, Phi-3/4 and Phi-3.5-MoE,
StarCoder2. Each adapter reads the keys, and the defaults, of that family's ``transformers``
``configuration_<model>.py``; gathered in :data:`oomkit.loaders.hf_config_families.ADAPTERS`.
"""

from __future__ import annotations

from oomkit.loaders.hf_config_decoder import (
    HEAD_DIM_128,
    Adapter,
    all_of,
    decoder_kwargs,
    finish,
    layer_types_or,
    sliding_pattern,
)
from oomkit.loaders.hf_config_fields import Fields
from oomkit.loaders.hf_config_llama import llama_layers, mixtral_moe
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING, ModelSpec

__all__ = ["ADAPTERS"]


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
        kw["layer_types"] = all_of(LAYER_FULL, n)
    elif arch == "Gemma2ForCausalLM":
        kw["layer_types"] = layer_types_or(f, kw, sliding_pattern(n, 2))
    else:
        kw["qk_norm"] = True
        every = f.integer("sliding_window_pattern", "_sliding_window_pattern", default=6)
        kw["layer_types"] = layer_types_or(f, kw, sliding_pattern(n, every))
        if arch == "Gemma3ForConditionalGeneration":
            from oomkit.loaders.hf_config_hybrid import gemma3_vision_params

            kw["multimodal_params"] = gemma3_vision_params(f, kw["hidden_size"])
    if kw["sliding_window"] is None:
        kw["layer_types"] = all_of(LAYER_FULL, n)
    return finish(f, kw, source)


def _cohere(f: Fields, source: str) -> ModelSpec:
    """Command-R (parallel block, LayerNorm without bias, tied); Cohere2 adds 3 sliding : 1 full."""
    kw = decoder_kwargs(f, tie_default=True)
    kw.update(norm_type="layer_no_bias", parallel_attn=True)
    kw["attention_bias"] = kw["attention_out_bias"] = f.flag("attention_bias", default=False)
    n = kw["num_hidden_layers"]
    if f.architecture == "Cohere2ForCausalLM":
        every = f.integer("sliding_window_pattern", default=4)
        kw["layer_types"] = layer_types_or(f, kw, sliding_pattern(n, every))
    else:
        kw["qk_norm"] = f.flag("use_qk_norm", default=False)
        kw["sliding_window"] = None
    return finish(f, kw, source)


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
            kw["layer_types"] = layer_types_or(f, kw, sliding_pattern(kw["num_hidden_layers"], 4))
    return finish(f, kw, source)


def _glm(f: Fields, source: str) -> ModelSpec:
    """GLM-4 (0414, ``Glm4ForCausalLM``: sandwich norms) and GLM-4-9B-hf (``GlmForCausalLM``):
    q/k/v biases, fused gate/up (``ffn_up`` [2*ff, H])."""
    kw = decoder_kwargs(f, defaults=HEAD_DIM_128)
    kw["attention_bias"] = f.flag("attention_bias", default=True)
    return finish(f, kw, source)


def _phi3(f: Fields, source: str) -> ModelSpec:
    """Phi-3/3.5/4: fused qkv and gate/up; ``sliding_window`` applies to every layer (HF Phi3)."""
    kw = decoder_kwargs(f)
    n = kw["num_hidden_layers"]
    sliding = kw["sliding_window"] is not None
    kw["layer_types"] = layer_types_or(f, kw, all_of(LAYER_SLIDING if sliding else LAYER_FULL, n))
    if kw["rope_scaling_type"] in ("su", "longrope"):
        kw["rope_scaling_type"] = "longrope"
    return finish(f, kw, source)


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
    return finish(f, kw, source)


def _phimoe(f: Fields, source: str) -> ModelSpec:
    """Phi-3.5-MoE (HF modeling_phimoe.py): Mixtral-style experts (``num_local_experts``, w1/w2/w3
    per expert), LayerNorm with bias, q/k/v/o biases (``attention_bias``), lm_head bias."""
    kw = llama_layers(f, decoder_kwargs(f))
    bias = f.flag("attention_bias", default=False)
    kw.update(attention_bias=bias, attention_out_bias=bias, norm_type="layer")
    kw["moe"] = mixtral_moe(f, kw)
    return finish(f, kw, source)


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
    kw["layer_types"] = layer_types_or(f, kw, all_of(LAYER_SLIDING if sliding else LAYER_FULL, n))
    return finish(f, kw, source)


ADAPTERS: dict[str, Adapter] = {
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
}

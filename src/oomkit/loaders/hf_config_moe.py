"""``config.json`` adapters for DeepSeek-V2/V3 (MLA), GLM-4.5, gpt-oss and Llama 4 (pure).

The large MoE families whose routing or attention is not Llama's: DeepSeek's MLA with routed
and shared experts (:func:`deepseek_moe`, also read by DeepSeek-MoE 16B and GLM-4.5),
GLM-4.5/4.6 with MTP layers, gpt-oss (attention sinks, biased experts) and Llama 4 (interleaved
MoE, chunked attention, the vision tower). Each adapter reads the keys, and the defaults, of that
family's ``transformers`` ``configuration_<model>.py``; gathered in
:data:`oomkit.loaders.hf_config_families.ADAPTERS`.
"""

from __future__ import annotations

from typing import Any

from oomkit.loaders.hf_config_decoder import (
    HEAD_DIM_128,
    Adapter,
    decoder_kwargs,
    finish,
    layer_types_or,
    sliding_pattern,
)
from oomkit.loaders.hf_config_fields import Fields
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING, MlaSpec, ModelSpec, MoESpec

__all__ = ["ADAPTERS", "deepseek_moe"]


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
    kw["moe"] = deepseek_moe(f, kw)
    kw["num_nextn_predict_layers"] = f.integer("num_nextn_predict_layers", default=0)
    return finish(f, kw, source)


def deepseek_moe(f: Fields, kw: dict[str, Any]) -> MoESpec:
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
    kw["moe"] = deepseek_moe(f, kw)
    kw["num_nextn_predict_layers"] = f.integer("num_nextn_predict_layers", default=0)
    if kw["num_nextn_predict_layers"]:
        f.note(
            "GLM-4.5 MTP (nextn) layers: in the GGUF tensor layout (llama.cpp keeps them as extra "
            "blocks, loaded but not run), not in the parameter count (see mtp_params)."
        )
    return finish(f, kw, source)


def _gpt_oss(f: Fields, source: str) -> ModelSpec:
    """gpt-oss: alternating sliding/full ``layer_types``, attention sinks, biased q/k/v/o, MoE with
    router and expert biases (``gate_up_proj`` split into gate/up as llama.cpp does)."""
    kw = decoder_kwargs(f)
    n = kw["num_hidden_layers"]
    kw.update(attention_bias=True, attention_out_bias=True)
    kw["layer_types"] = layer_types_or(f, kw, sliding_pattern(n, 2))
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_local_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok", "experts_per_token"),
        expert_intermediate_size=kw["intermediate_size"],
        router_bias=True,
        expert_bias=True,
    )
    return finish(f, kw, source)


def _llama4(f: Fields, source: str) -> ModelSpec:
    """Llama 4 (text_config): MoE every ``interleave_moe_layer_step`` layers with one shared expert;
    chunked attention (``attention_chunk_size``) on RoPE layers is modelled as sliding attention
    with that window; every 4th layer (NoPE) is global."""
    kw = decoder_kwargs(f, defaults=HEAD_DIM_128)
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
    return finish(f, kw, source)


ADAPTERS: dict[str, Adapter] = {
    "DeepseekV2ForCausalLM": _deepseek,
    "DeepseekV3ForCausalLM": _deepseek,
    "Glm4MoeForCausalLM": _glm4_moe,
    "GptOssForCausalLM": _gpt_oss,
    "Llama4ForConditionalGeneration": _llama4,
    "Llama4ForCausalLM": _llama4,
}

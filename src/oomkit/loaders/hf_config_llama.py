"""``config.json`` adapters for Llama and its close relatives (pure).

Llama 1-3.3, Mistral, Yi, InternLM2, Baichuan, Granite, Mixtral, Granite-3 MoE, OLMoE,
DeepSeek-MoE 16B (Llama attention), Qwen2/2.5/3 and their MoE variants, and the generic reading
of an unknown decoder. Each adapter reads the keys, and the defaults, of that family's
``transformers`` ``configuration_<model>.py``; gathered in
:data:`oomkit.loaders.hf_config_families.ADAPTERS`.
"""

from __future__ import annotations

from typing import Any

from oomkit.loaders.hf_config_decoder import (
    Adapter,
    all_of,
    decoder_kwargs,
    finish,
    layer_types_or,
)
from oomkit.loaders.hf_config_fields import Fields
from oomkit.loaders.hf_config_moe import deepseek_moe
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING, ModelSpec, MoESpec

__all__ = ["ADAPTERS", "generic_decoder", "granite_moe", "llama_layers", "mixtral_moe", "qwen_moe"]


def generic_decoder(f: Fields, source: str) -> ModelSpec:
    """Unknown architecture: read as a Llama-like decoder (SwiGLU, RMSNorm, no biases)."""
    kw = decoder_kwargs(f)
    f.note(
        f"Architecture '{f.architecture}' is not known to oomkit: read as a Llama-like decoder "
        "(gate/up/down MLP, RMSNorm, no biases); the parameter count may be off."
    )
    return finish(f, llama_layers(f, kw), source)


def llama_layers(f: Fields, kw: dict[str, Any]) -> dict[str, Any]:
    bias = f.flag("attention_bias", "bias", default=False)
    kw.update(attention_bias=bias, attention_out_bias=bias)
    kw["mlp_bias"] = f.flag("mlp_bias", default=False)
    n = kw["num_hidden_layers"]
    sliding = kw["sliding_window"] is not None
    kw["layer_types"] = layer_types_or(f, kw, all_of(LAYER_SLIDING if sliding else LAYER_FULL, n))
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
    return finish(f, llama_layers(f, kw), source)


def mixtral_moe(f: Fields, kw: dict[str, Any]) -> MoESpec:
    """Mixtral-style experts (Mixtral, Phi-3.5-MoE): ``num_local_experts`` of
    ``intermediate_size``, no shared expert."""
    return MoESpec(
        num_experts=f.integer("num_local_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=kw["intermediate_size"],
    )


def _mixtral(f: Fields, source: str) -> ModelSpec:
    kw = llama_layers(f, decoder_kwargs(f))
    kw["moe"] = mixtral_moe(f, kw)
    return finish(f, kw, source)


def _granite_moe(f: Fields, source: str) -> ModelSpec:
    """Granite-3 MoE (``GraniteMoeForCausalLM``; ``GraniteMoeSharedForCausalLM`` adds a shared
    expert of ``shared_intermediate_size``): Llama attention, experts of ``intermediate_size``."""
    kw = llama_layers(f, decoder_kwargs(f))
    kw["moe"] = granite_moe(f, kw)
    return finish(f, kw, source)


def granite_moe(f: Fields, kw: dict[str, Any]) -> MoESpec:
    """Granite's experts (Granite-3 MoE, Granite-4.0-H): ``num_local_experts`` of
    ``intermediate_size``, one shared expert of ``shared_intermediate_size`` when it is set."""
    shared = f.integer("shared_intermediate_size", default=0)
    return MoESpec(
        num_experts=f.integer("num_local_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=kw["intermediate_size"],
        num_shared_experts=1 if shared else 0,
        shared_expert_intermediate_size=shared,
    )


def _olmoe(f: Fields, source: str) -> ModelSpec:
    """OLMoE: pre-norm blocks, q/k RMSNorm over all heads, 64 experts without a shared one."""
    kw = llama_layers(f, decoder_kwargs(f))
    kw["qk_norm"] = True
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_experts"),
        num_experts_per_tok=f.integer("num_experts_per_tok"),
        expert_intermediate_size=kw["intermediate_size"],
    )
    return finish(f, kw, source)


def _deepseek_v1(f: Fields, source: str) -> ModelSpec:
    """DeepSeek-MoE 16B (``DeepseekForCausalLM``): Llama attention + DeepSeek MoE."""
    kw = llama_layers(f, decoder_kwargs(f))
    kw["moe"] = deepseek_moe(f, kw)
    return finish(f, kw, source)


def _qwen2_layer_types(f: Fields, kw: dict[str, Any]) -> tuple[str, ...]:
    """Qwen2/3: sliding only with ``use_sliding_window``, on layers >= ``max_window_layers``."""
    n = kw["num_hidden_layers"]
    if not f.flag("use_sliding_window", default=False) or kw["sliding_window"] is None:
        kw["sliding_window"] = None
        return layer_types_or(f, kw, all_of(LAYER_FULL, n))
    first = f.integer("max_window_layers", default=n)
    return layer_types_or(
        f, kw, tuple(LAYER_SLIDING if i >= first else LAYER_FULL for i in range(n))
    )


def qwen_moe(f: Fields, kw: dict[str, Any], *, shared: bool) -> MoESpec:
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
        kw["moe"] = qwen_moe(f, kw, shared=arch == "Qwen2MoeForCausalLM")
    return finish(f, kw, source)


ADAPTERS: dict[str, Adapter] = {
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
}

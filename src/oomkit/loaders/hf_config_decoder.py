"""What every decoder's ``config.json`` shares, for the per-family adapters (pure).

:func:`decoder_kwargs` reads the fields every decoder has (layers, hidden size, heads, KV heads,
head dim, FFN, vocabulary, positions, tying, window, dtype, quantization, RoPE scaling,
soft-capping) with a family's ``configuration_<model>.py`` defaults; :func:`finish` makes the
ModelSpec; :func:`layer_types_or`, :func:`all_of` and :func:`sliding_pattern` give the layer
kinds. Used by every adapter module: :mod:`oomkit.loaders.hf_config_llama`,
:mod:`oomkit.loaders.hf_config_gemma_phi`, :mod:`oomkit.loaders.hf_config_moe`,
:mod:`oomkit.loaders.hf_config_hybrid`, :mod:`oomkit.loaders.hf_config_mllama`,
:mod:`oomkit.loaders.hf_config_qwen35` (gathered in :mod:`oomkit.loaders.hf_config_families`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from oomkit.loaders.hf_config_fields import Fields, parse_quantization, rope_scaling_numbers
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING, ModelSpec

__all__ = [
    "HEAD_DIM_128",
    "Adapter",
    "all_of",
    "decoder_kwargs",
    "finish",
    "layer_types_or",
    "sliding_pattern",
]

Adapter = Callable[[Fields, str], ModelSpec]

#: GlmConfig, Glm4Config and Llama4TextConfig default ``head_dim`` to 128 (not hidden/heads)
HEAD_DIM_128: dict[str, int] = {"head_dim": 128}


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


def finish(f: Fields, kw: dict[str, Any], source: str) -> ModelSpec:
    """The ModelSpec from decoder keyword arguments (``source`` and the notes added)."""
    kw["source"] = source
    kw["assumptions"] = (*kw.get("assumptions", ()), *f.assumptions)
    return ModelSpec(**kw)


def layer_types_or(f: Fields, kw: dict[str, Any], default: tuple[str, ...]) -> tuple[str, ...]:
    """Explicit ``layer_types`` win over the family's pattern."""
    explicit = f.layer_types("layer_types", kw["num_hidden_layers"])
    if explicit is not None:
        return explicit
    return default


def all_of(kind: str, n: int) -> tuple[str, ...]:
    """``n`` layers all of ``kind``."""
    return (kind,) * n


def sliding_pattern(n: int, every: int) -> tuple[str, ...]:
    """HF Gemma2/3, Cohere2: layer i is full when ``(i + 1) % every == 0``, else sliding."""
    every = max(every, 1)  # 0 in a config: no full-attention period -> read as every layer full
    return tuple(LAYER_FULL if (i + 1) % every == 0 else LAYER_SLIDING for i in range(n))

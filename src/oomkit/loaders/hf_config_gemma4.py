"""``config.json`` adapter for Gemma 4 (dense text stack; pure).

transformers ``configuration_gemma4.py`` ``Gemma4TextConfig.__post_init__`` gives every
``full_attention`` layer a ``per_layer_config`` override: ``head_dim = global_head_dim`` (512 when
absent) and, when ``attention_k_eq_v``, ``num_key_value_heads = num_global_key_value_heads``.
``modeling_gemma4.py`` ``Gemma4TextAttention`` builds ``q_proj``/``k_proj``/``o_proj`` of that
layer's head size, and no ``v_proj`` on a full layer with ``attention_k_eq_v`` (``value_states``
is the K projection, v-normed). q/k RMSNorm weights of the layer's head size; the v-norm has no
weight. Each decoder layer has Gemma 3's four norms (``Gemma3DecoderLayer``).

The runtimes cache V on those layers all the same: transformers ``past_key_values.update(key,
value)``; vLLM ``Gemma4Attention`` builds a ``QKVParallelLinear`` whose V slot is loaded with K
(``vllm/model_executor/models/gemma4.py``); llama.cpp ``Vcur = Kcur`` then ``build_attn``
(``src/models/gemma4-iswa.cpp``). So the spec keeps K and V head sizes equal per layer
(:attr:`ModelSpec.head_dim_per_layer`) and marks the V-less layers only for the weights
(:attr:`ModelSpec.k_eq_v_layers`).

Not modelled, refused with a one-line error: per-layer inputs (``hidden_size_per_layer_input``
> 0, the E2B/E4B per-layer embeddings), KV sharing (``num_kv_shared_layers`` > 0), the MoE block
(``enable_moe_block``: 26B-A4B), the double-wide MLP, and the audio tower.
"""

from __future__ import annotations

from collections.abc import Mapping

from oomkit.errors import UnsupportedModelError
from oomkit.loaders.hf_config_decoder import Adapter, decoder_kwargs, finish, layer_types_or
from oomkit.loaders.hf_config_fields import Fields
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING, ModelSpec

__all__ = ["ADAPTERS", "gemma4_vision_params"]

#: ``Gemma4TextConfig`` ``global_head_dim`` default (``kwargs.pop("global_head_dim", 512)``)
_GLOBAL_HEAD_DIM = 512


def _refuse_unmodelled(f: Fields) -> None:
    """One-line error for the Gemma 4 features this adapter does not lay out."""
    checks = (
        ("hidden_size_per_layer_input", f.opt_int("hidden_size_per_layer_input") or 0),
        ("num_kv_shared_layers", f.opt_int("num_kv_shared_layers") or 0),
        ("enable_moe_block", int(f.flag("enable_moe_block", default=False))),
        ("use_double_wide_mlp", int(f.flag("use_double_wide_mlp", default=False))),
    )
    for key, value in checks:
        if value:
            raise UnsupportedModelError(
                f"Gemma 4 '{f.name}': {key} = {f.raw(key)!r} is not modelled yet (per-layer "
                "inputs, KV sharing, the MoE block and the double-wide MLP are Gemma 4 E2B/E4B/"
                "26B-A4B features); only the dense 31B layout is.",
                architecture=f.architecture,
                feature=key,
            )
    audio = f.top.get("audio_config")
    if isinstance(audio, Mapping):
        raise UnsupportedModelError(
            f"Gemma 4 '{f.name}': an audio_config is present; the audio tower is not modelled.",
            architecture=f.architecture,
            feature="audio_config",
        )


def gemma4_vision_params(f: Fields, text_hidden: int) -> int:
    """Gemma 4 vision tower + embedder parameters, from ``vision_config``.

    transformers ``modeling_gemma4.py``: ``Gemma4VisionPatchEmbedder`` ``input_proj``
    [D, 3 * patch**2] (no bias) and ``position_embedding_table`` [2, position_embedding_size, D];
    per ``Gemma4VisionEncoderLayer`` q/k/v/o [D, D] and gate/up/down [D, I] without biases
    (``Gemma4ClippableLinear``), four RMSNorms [D], q/k norms [head_dim] (the v-norm has no
    weight); ``std_bias``/``std_scale`` [D] when ``standardize``; ``Gemma4MultimodalEmbedder``
    ``embedding_projection`` [text_hidden, D] (its pre-projection norm has no weight). Defaults are
    ``Gemma4VisionConfig``'s.
    """
    vc = f.top.get("vision_config")
    if not isinstance(vc, Mapping):
        f.note("No vision_config: the vision tower is not counted.")
        return 0
    v = Fields(vc, name=f.name, architecture=f.architecture, path=f.path)
    d = v.integer("hidden_size", default=768)
    inter = v.integer("intermediate_size", default=3072)
    layers = v.integer("num_hidden_layers", default=16)
    head_dim = v.integer("head_dim", default=64)
    patch = v.integer("patch_size", default=16)
    positions = v.integer("position_embedding_size", default=10 * 1024)
    per_layer = 4 * d * d + 3 * d * inter + 4 * d + 2 * head_dim
    embed = d * 3 * patch * patch + 2 * positions * d
    standardize = 2 * d if v.flag("standardize", default=False) else 0
    return embed + layers * per_layer + standardize + d * text_hidden


def _gemma4(f: Fields, source: str) -> ModelSpec:
    """Gemma 4 dense (31B): 5 sliding : 1 full (``layer_types``), full layers of
    ``global_head_dim`` and (with ``attention_k_eq_v``) ``num_global_key_value_heads`` without a
    ``v_proj``; embeddings tied; q/k norms; the vision tower to ``multimodal_params``."""
    _refuse_unmodelled(f)
    kw = decoder_kwargs(f, tie_default=True)
    kw["tie_word_embeddings"] = True
    kw["qk_norm"] = True
    n = kw["num_hidden_layers"]
    # Gemma4TextConfig.__post_init__ without layer_types: sliding except every 6th, last full
    default = tuple(
        LAYER_FULL if (i + 1) % 6 == 0 or i == n - 1 else LAYER_SLIDING for i in range(n)
    )
    layer_types = layer_types_or(f, kw, default)
    kw["layer_types"] = layer_types
    # Gemma4 keeps rope per layer type in rope_parameters; no rope_scaling factor applies
    kw["rope_scaling_type"] = None
    kw["rope_scaling_factor"] = None
    kw["rope_original_max_position_embeddings"] = None
    sliding_hd = kw["head_dim"]
    global_hd = f.opt_int("global_head_dim") or _GLOBAL_HEAD_DIM
    k_eq_v = f.flag("attention_k_eq_v", default=False)
    global_kv = f.opt_int("num_global_key_value_heads") if k_eq_v else None
    full = tuple(i for i, t in enumerate(layer_types) if t == LAYER_FULL)
    if global_hd != sliding_hd:
        kw["head_dim_per_layer"] = tuple(
            global_hd if t == LAYER_FULL else sliding_hd for t in layer_types
        )
    if global_kv is not None and global_kv != kw["num_key_value_heads"]:
        kw["kv_heads_per_layer"] = tuple(
            global_kv if t == LAYER_FULL else kw["num_key_value_heads"] for t in layer_types
        )
    if k_eq_v:
        kw["k_eq_v_layers"] = full
    if f.architecture == "Gemma4ForConditionalGeneration":
        kw["multimodal_params"] = gemma4_vision_params(f, kw["hidden_size"])
    if kw["sliding_window"] is None:
        kw["layer_types"] = tuple(LAYER_FULL for _ in range(n))
    return finish(f, kw, source)


ADAPTERS: dict[str, Adapter] = {
    "Gemma4ForCausalLM": _gemma4,
    "Gemma4ForConditionalGeneration": _gemma4,
}

"""``config.json`` adapter for Qwen3.5 (``qwen3_5`` dense, ``qwen3_5_moe``).

Qwen3.5 is Qwen3-Next's hybrid text stack (3 gated-delta-net layers : 1 gated full-attention
layer, listed in ``text_config.layer_types``) inside a ``*ForConditionalGeneration`` wrapper with a
Qwen3-VL-style vision tower (``vision_config``). The dense sizes have a plain SwiGLU MLP of
``intermediate_size``; the MoE sizes have routed experts plus a gated shared expert in every
layer (transformers ``configuration_qwen3_5_moe.py`` has no ``intermediate_size``).
The MTP layer (``mtp_num_hidden_layers``) is not loaded by transformers
(``_keys_to_ignore_on_load_unexpected = [r"^mtp.*"]``) and is not counted; it is kept as
``num_nextn_predict_layers`` (:func:`oomkit.loaders.hf_config_hybrid.gated_delta_kw`) for the
speculative-decoding draft vLLM (``qwen3_5_mtp``) and SGLang (NEXTN) run from it.
"""

from __future__ import annotations

from collections.abc import Mapping

from oomkit.loaders.hf_config_fields import Fields
from oomkit.spec.model import ModelSpec

__all__ = ["qwen3_5", "qwen3_5_vision_params"]


def qwen3_5(f: Fields, source: str) -> ModelSpec:
    """Qwen3_5ForConditionalGeneration / Qwen3_5MoeForConditionalGeneration (and *ForCausalLM)."""
    from oomkit.loaders.hf_config_decoder import decoder_kwargs, finish
    from oomkit.loaders.hf_config_hybrid import gated_delta_kw
    from oomkit.loaders.hf_config_llama import qwen_moe

    is_moe = f.architecture.startswith("Qwen3_5Moe")
    defaults = {"intermediate_size": f.integer("moe_intermediate_size")} if is_moe else None
    kw = decoder_kwargs(f, defaults=defaults)
    gated_delta_kw(f, kw)
    if is_moe:
        kw["moe"] = qwen_moe(f, kw, shared=True)
    if f.architecture.endswith("ForConditionalGeneration"):
        kw["multimodal_params"] = qwen3_5_vision_params(f)
    return finish(f, kw, source)


def qwen3_5_vision_params(f: Fields) -> int:
    """Vision tower + patch merger parameters, from ``vision_config``.

    transformers ``models/qwen3_5/modeling_qwen3_5.py`` ``Qwen3_5VisionModel``: ``patch_embed``
    Conv3d(in_channels, hidden, kernel (temporal_patch, patch, patch), bias); ``pos_embed``
    Embedding(num_position_embeddings, hidden); ``depth`` blocks of two LayerNorms, ``qkv``
    Linear(h, 3h, bias), ``proj`` Linear(h, h), MLP ``linear_fc1`` (h -> intermediate) and
    ``linear_fc2`` (intermediate -> h) with biases; ``merger`` (``use_postshuffle_norm`` False):
    LayerNorm(h), Linear(h*m^2, h*m^2), Linear(h*m^2, out_hidden_size). ``deepstack_visual_indexes``
    adds one postshuffle merger per index (empty in the Qwen3.5 checkpoints).
    """
    vc = f.top.get("vision_config")
    if not isinstance(vc, Mapping):
        f.note("No vision_config: the vision tower is not counted.")
        return 0
    v = Fields(vc, name=f.name, architecture=f.architecture, path=f.path)
    h = v.integer("hidden_size")
    inter = v.integer("intermediate_size")
    depth = v.integer("depth")
    patch, t_patch = (
        v.integer("patch_size", default=16),
        v.integer("temporal_patch_size", default=2),
    )
    channels = v.integer("in_channels", default=3)
    merged = h * v.integer("spatial_merge_size", default=2) ** 2
    out = v.integer("out_hidden_size")
    embed = channels * t_patch * patch * patch * h + h + v.integer("num_position_embeddings") * h
    block = 4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)

    def merger(norm: int) -> int:
        return 2 * norm + (merged * merged + merged) + (merged * out + out)

    deepstack = len(v.int_list("deepstack_visual_indexes") or ())
    return embed + depth * block + merger(h) + deepstack * merger(merged)

"""``config.json`` adapter for MiniMax-M2 (``MiniMaxM2ForCausalLM``, ``minimax_m2``; pure).

MiniMax-M2 / M2.1 / M2.5 / M2.7 share one layout, read from the runtimes' own source:

- transformers ``models/minimax_m2/modular_minimax_m2.py``: ``MiniMaxM2Attention``
  (FlexOlmo's) has bias-free q/k/v/o of ``num_attention_heads`` / ``num_key_value_heads`` x
  ``head_dim`` and ``q_norm`` / ``k_norm`` RMSNorms over the whole projection
  ([heads x head_dim], [kv_heads x head_dim], OLMo 2 style, not per head); no sliding window
  ("No sliding window opposed to mixtral", every layer full causal attention);
  ``MiniMaxM2SparseMoeBlock`` is Mixtral's: ``num_local_experts`` SwiGLU experts of
  ``intermediate_size`` (the config's 1536 is the expert width; there is no dense MLP and no
  shared expert), a sigmoid router (``gate``, [experts, hidden], no bias) and an
  ``e_score_correction_bias`` buffer [experts] saved in the checkpoint.
- vLLM ``vllm/model_executor/models/minimax_m2.py``: the same layers (``QKVParallelLinear``,
  ``q_norm`` over ``head_dim * total_num_heads``, ``FusedMoE`` with ``intermediate_size``,
  ``e_score_correction_bias`` when ``use_routing_bias``); ``rotary_dim`` (64 of 128) is partial
  RoPE, which leaves the KV cache at the full ``head_dim``; ``attn_type_list`` is not read;
  weights of layers ``num_hidden_layers .. + num_mtp_modules`` (the MTP modules) are skipped by
  ``get_spec_layer_idx_from_weight_name``.
- llama.cpp ``convert_hf_to_gguf.py`` ``MiniMaxM2Model`` (arch ``minimax-m2``): experts stacked,
  ``expert_feed_forward_length`` = ``intermediate_size``, ``rope.dimension_count`` = ``rotary_dim``.

The published checkpoints hold no MTP weights (a tensor listing of MiniMax-M2.7 sums to exactly
the layers above plus the FP8 block scales), so ``num_mtp_modules`` adds nothing here.
"""

from __future__ import annotations

from oomkit.loaders.hf_config_decoder import Adapter, all_of, decoder_kwargs, finish
from oomkit.loaders.hf_config_fields import Fields
from oomkit.spec.model import LAYER_FULL, ModelSpec, MoESpec

__all__ = ["ADAPTERS"]

#: MiniMaxM2Config defaults (transformers configuration_minimax_m2.py) for keys a config may omit
_DEFAULTS: dict[str, int] = {
    "vocab_size": 200064,
    "hidden_size": 3072,
    "intermediate_size": 1536,
    "num_hidden_layers": 62,
    "num_attention_heads": 48,
    "num_key_value_heads": 8,
    "head_dim": 128,
}


def _minimax_m2(f: Fields, source: str) -> ModelSpec:
    kw = decoder_kwargs(f, defaults=_DEFAULTS)
    n = kw["num_hidden_layers"]
    # every layer is full softmax attention in transformers and vLLM; a config's sliding_window
    # (null in the Hub files) is not read by either
    kw["sliding_window"] = None
    kw["layer_types"] = all_of(LAYER_FULL, n)
    kw["attention_bias"] = kw["attention_out_bias"] = False
    kw["qk_norm"] = True  # built unconditionally by both runtimes (use_qk_norm is true anyway)
    shared = f.integer("shared_intermediate_size", default=0)
    kw["moe"] = MoESpec(
        num_experts=f.integer("num_local_experts", "num_experts", default=256),
        num_experts_per_tok=f.integer("num_experts_per_tok", default=8),
        expert_intermediate_size=kw["intermediate_size"],
        num_shared_experts=1 if shared else 0,
        shared_expert_intermediate_size=shared,
        # transformers registers e_score_correction_bias unconditionally; vLLM when
        # use_routing_bias (true in every MiniMax-M2 config)
        score_correction_bias=f.flag("use_routing_bias", default=True),
    )
    attn_types = f.int_list("attn_type_list")
    if attn_types is not None and any(t != 1 for t in attn_types):
        f.note(
            "attn_type_list marks some layers as linear (lightning) attention; the minimax_m2 "
            "runtimes (transformers, vLLM) ignore it and run every layer as full attention."
        )
    mtp = f.integer("num_mtp_modules", default=0) if f.flag("use_mtp", default=False) else 0
    if mtp:
        f.note(
            f"MiniMax-M2 MTP modules ({mtp}): not in the published checkpoints and skipped by "
            "vLLM; not counted."
        )
    return finish(f, kw, source)


ADAPTERS: dict[str, Adapter] = {"MiniMaxM2ForCausalLM": _minimax_m2}

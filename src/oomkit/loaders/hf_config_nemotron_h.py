"""``config.json`` adapter for NVIDIA Nemotron-H (``NemotronHForCausalLM``: Nemotron-H, Nemotron
Nano 2, Nemotron 3 Nano): a hybrid of Mamba-2, attention, MLP and MoE *blocks*.

``hybrid_override_pattern`` gives one character per block: ``M`` a Mamba-2 mixer, ``*`` an
attention mixer, ``-`` a relu2 MLP of ``intermediate_size``, ``E`` a MoE. Unlike Granite-4 or
Jamba, a block holds ONE of these behind one RMSNorm (vLLM ``vllm/model_executor/models/
nemotron_h.py``: ``NemotronHMambaDecoderLayer``, ``NemotronHAttentionDecoderLayer``,
``NemotronHMLPDecoderLayer``, ``NemotronHMoEDecoderLayer``; llama.cpp ``LLM_ARCH_NEMOTRON_H`` the
same), so mixer blocks carry no MLP and the ``-``/``E`` blocks no mixer
(:data:`~oomkit.spec.model.LAYER_FFN`). The Mamba-2 mixer is ``MambaMixer2`` with
``intermediate_size = mamba_num_heads * mamba_head_dim`` (not ``expand * hidden_size``). The MoE
(``NemotronHMoE``) has a bias-free router with ``e_score_correction_bias``, ``n_routed_experts``
relu2 experts of ``moe_intermediate_size`` (up and down only: ``activation_without_mul``) and
``n_shared_experts`` shared MLPs of ``moe_shared_expert_intermediate_size`` each.
"""

from __future__ import annotations

from typing import Any

from oomkit.errors import UnsupportedModelError
from oomkit.loaders.hf_config_decoder import decoder_kwargs, finish
from oomkit.loaders.hf_config_fields import Fields
from oomkit.loaders.hf_config_hybrid import _mamba2_state
from oomkit.spec.model import LAYER_FFN, LAYER_FULL, LAYER_MAMBA, ModelSpec, MoESpec

__all__ = ["ADAPTERS"]

#: ``hybrid_override_pattern`` characters (transformers/vLLM ``NemotronHConfig.layers_block_type``)
_BLOCKS = {"M": LAYER_MAMBA, "*": LAYER_FULL, "-": LAYER_FFN, "E": LAYER_FFN}


def _blocks(f: Fields, n_layers: int) -> str:
    pattern = f.raw("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != n_layers or set(pattern) - set(_BLOCKS):
        shown = str(pattern)[:80] if f.has("hybrid_override_pattern") else "nothing"
        raise UnsupportedModelError(
            f"Cannot model '{f.name}' ({f.architecture}): hybrid_override_pattern must be a "
            f"string of {n_layers} characters from 'M*-E' (one per layer), got {shown!r}.",
            architecture=f.architecture,
            feature="hybrid_override_pattern",
        )
    return pattern


def _unsupported(f: Fields) -> None:
    """Variants whose layout the adapter does not model: one-line error naming the key."""
    for key, what in (
        ("moe_latent_size", "latent MoE projections (fc1/fc2_latent_proj)"),  # Nemotron 3 Super
        ("block_configs", "per-layer block configs (NemotronHPuzzle)"),
    ):
        if f.has(key):
            raise UnsupportedModelError(
                f"Cannot model '{f.name}' ({f.architecture}): {key}, {what}, is not modelled yet.",
                architecture=f.architecture,
                feature=key,
            )
    if isinstance(f.raw("intermediate_size"), list):
        raise UnsupportedModelError(
            f"Cannot model '{f.name}' ({f.architecture}): a per-layer intermediate_size list is "
            "not modelled yet.",
            architecture=f.architecture,
            feature="intermediate_size",
        )


def _nemotron_h(f: Fields, source: str) -> ModelSpec:
    """Nemotron-H / Nemotron 3 Nano (see the module docstring)."""
    _unsupported(f)
    kw: dict[str, Any] = decoder_kwargs(f)  # NemotronHConfig: tie_word_embeddings False
    n = kw["num_hidden_layers"]
    pattern = _blocks(f, n)
    kw["layer_types"] = tuple(_BLOCKS[c] for c in pattern)
    kw["sliding_window"] = None
    kw["mlp_gated"] = False  # relu2 MLPs and experts: up_proj, down_proj
    kw["mlp_bias"] = f.flag("mlp_bias", default=False)
    kw["attention_bias"] = f.flag("attention_bias", default=False)
    kw["attention_out_bias"] = kw["attention_bias"]
    n_heads, head_dim = f.integer("mamba_num_heads"), f.integer("mamba_head_dim")
    d_inner = n_heads * head_dim
    d_state, d_conv = f.integer("ssm_state_size"), f.integer("conv_kernel", default=4)
    # the Mamba-2 state as Mamba2 and Granite-4.0-H have it (one function, hf_config_hybrid);
    # only the config keys differ
    kw["recurrent"] = _mamba2_state(
        d_inner=d_inner,
        d_state=d_state,
        d_conv=d_conv,
        n_groups=f.integer("n_groups", default=1),
        n_heads=n_heads,
        head_dim=head_dim,
        conv_bias=f.flag("use_conv_bias", default=True),
        proj_bias=f.flag("use_bias", default=False),
    )
    if "E" in pattern:
        n_shared = f.integer("n_shared_experts", default=0)
        shared = f.integer("moe_shared_expert_intermediate_size", default=0) * n_shared
        kw["moe"] = MoESpec(
            num_experts=f.integer("n_routed_experts"),
            num_experts_per_tok=f.integer("num_experts_per_tok"),
            expert_intermediate_size=f.integer("moe_intermediate_size"),
            num_shared_experts=n_shared,
            shared_expert_intermediate_size=shared,
            dense_layers=tuple(i for i, c in enumerate(pattern) if c != "E"),
            score_correction_bias=True,
        )
    return finish(f, kw, source)


ADAPTERS = {"NemotronHForCausalLM": _nemotron_h}

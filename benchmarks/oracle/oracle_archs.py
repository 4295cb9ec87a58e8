"""HF ``config.json`` dicts -> :class:`ModelSpec` for the oracle and the accuracy harness.

Uses ``oomkit.loaders.hf_config.parse_config`` when it exists; this small converter covers the
architectures the oracle writes (Llama/Qwen2/Qwen3/Mixtral/Qwen3-MoE/DeepSeek-V2/Gemma-2/3/
gpt-oss/Phi-3/Granite-4 hybrid) so the oracle does not depend on it.
"""

from __future__ import annotations

from typing import Any

from oomkit.spec.model import (
    LAYER_FULL,
    LAYER_MAMBA,
    LAYER_SLIDING,
    MlaSpec,
    ModelSpec,
    MoESpec,
    RecurrentSpec,
)

__all__ = ["spec_from_config"]


def _layer_types(cfg: dict[str, Any], n: int) -> tuple[str, ...]:
    lt = cfg.get("layer_types")
    if lt:
        out = []
        for t in lt:
            if t in ("sliding_attention", "sliding"):
                out.append(LAYER_SLIDING)
            elif t in ("mamba", "mamba2"):
                out.append(LAYER_MAMBA)
            else:
                out.append(LAYER_FULL)
        return tuple(out)
    mt = cfg.get("model_type")
    if mt == "gemma2":
        return tuple(LAYER_SLIDING if i % 2 == 0 else LAYER_FULL for i in range(n))
    if mt in ("gemma3", "gemma3_text"):
        pat = int(cfg.get("sliding_window_pattern", 6))
        return tuple(LAYER_FULL if (i + 1) % pat == 0 else LAYER_SLIDING for i in range(n))
    if mt == "gpt_oss":
        return tuple(LAYER_SLIDING if i % 2 == 0 else LAYER_FULL for i in range(n))
    if mt == "granitemoehybrid":
        lts = cfg["layer_types"]
        return tuple(LAYER_MAMBA if t == "mamba" else LAYER_FULL for t in lts)
    return (LAYER_FULL,) * n


def spec_from_config(cfg: dict[str, Any], *, name: str | None = None) -> ModelSpec:
    """Build a ModelSpec from a config.json dict (text config of the oracle architectures)."""
    try:
        from oomkit.loaders.hf_config import parse_config  # type: ignore[import-not-found]

        return parse_config(cfg, name=name or cfg.get("name", "model"), source="config")  # type: ignore[no-any-return]
    except ImportError:
        pass
    return _convert(cfg, name=name)


def _convert(cfg: dict[str, Any], *, name: str | None) -> ModelSpec:
    mt = cfg["model_type"]
    n = int(cfg["num_hidden_layers"])
    h = int(cfg["hidden_size"])
    nh = int(cfg["num_attention_heads"])
    nkv = int(cfg.get("num_key_value_heads") or nh)
    hd = int(cfg.get("head_dim") or h // nh)
    moe = None
    mla = None
    rec = None
    n_exp = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts")
    if n_exp:
        eff = int(cfg.get("moe_intermediate_size") or cfg["intermediate_size"])
        n_shared = int(cfg.get("n_shared_experts") or 0)
        sff = int(cfg.get("shared_expert_intermediate_size") or n_shared * eff)
        first_dense = int(cfg.get("first_k_dense_replace") or 0)
        moe = MoESpec(
            num_experts=int(n_exp),
            num_experts_per_tok=int(cfg.get("num_experts_per_tok") or cfg.get("experts_per_token")),
            expert_intermediate_size=eff,
            num_shared_experts=n_shared,
            shared_expert_intermediate_size=sff,
            dense_layers=tuple(range(first_dense)),
            router_bias=mt == "gpt_oss",
            expert_bias=mt == "gpt_oss",
            shared_expert_gate=mt == "qwen2_moe",
        )
    v_hd = hd
    if cfg.get("kv_lora_rank"):
        mla = MlaSpec(
            q_lora_rank=cfg.get("q_lora_rank"),
            kv_lora_rank=int(cfg["kv_lora_rank"]),
            qk_nope_head_dim=int(cfg["qk_nope_head_dim"]),
            qk_rope_head_dim=int(cfg["qk_rope_head_dim"]),
            v_head_dim=int(cfg["v_head_dim"]),
        )
        hd = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        v_hd = mla.v_head_dim
    if mt == "granitemoehybrid":
        d_inner = int(cfg["mamba_expand"]) * h
        ng = int(cfg["mamba_n_groups"])
        ds = int(cfg["mamba_d_state"])
        dc = int(cfg["mamba_d_conv"])
        nheads = int(cfg["mamba_n_heads"])
        rec = RecurrentSpec(
            kind="mamba2",
            d_inner=d_inner,
            d_state=ds,
            d_conv=dc,
            n_groups=ng,
            n_heads=nheads,
            head_dim=int(cfg.get("mamba_d_head") or d_inner // nheads),
            conv_state_elements=(dc - 1) * (d_inner + 2 * ng * ds),
            ssm_state_elements=ds * d_inner,
        )
    layer_types = _layer_types(cfg, n)
    sw = cfg.get("sliding_window")
    if LAYER_SLIDING not in layer_types:
        sw = None
    return ModelSpec(
        name=name or str(cfg.get("name", mt)),
        architecture=str((cfg.get("architectures") or [mt])[0]),
        model_type=mt,
        num_hidden_layers=n,
        hidden_size=h,
        num_attention_heads=nh,
        num_key_value_heads=nkv,
        head_dim=hd,
        v_head_dim=v_hd,
        intermediate_size=int(cfg.get("intermediate_size") or 0),
        vocab_size=int(cfg["vocab_size"]),
        max_position_embeddings=cfg.get("max_position_embeddings"),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        attention_bias=bool(cfg.get("attention_bias", mt in ("qwen2", "qwen2_moe", "gpt_oss"))),
        attention_out_bias=mt == "gpt_oss",
        qk_norm=mt in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "qwen3_next"),
        layer_types=layer_types,
        sliding_window=sw,
        moe=moe,
        mla=mla,
        recurrent=rec,
    )

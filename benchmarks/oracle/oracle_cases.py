"""Oracle architectures, GGUF metadata and settings grid (data for run_oracle.py and the tests).

Each architecture is a catalog entry (its public config.json), a GGUF architecture name and a
llama-quantize file type. The metadata keys are the ones ``llama_model::load_hparams`` reads for
that architecture (names from llama.cpp src/llama-arch.cpp LLM_KV_NAMES), as
convert_hf_to_gguf.py writes them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from oomkit.catalog.models import find_model
from oomkit.spec.model import ModelSpec, TensorInfo
from oomkit.spec.settings import InferenceSettings

__all__ = ["ARCHS", "SETTINGS_GRID", "arch_metadata", "exact_tensors", "record_inputs"]


def _s(
    n_ctx: int,
    n_ubatch: int = 512,
    fa: bool = True,
    tk: str = "f16",
    tv: str = "f16",
    n_seq: int = 1,
    kvu: bool = False,
    swa_full: bool = True,
    n_batch: int | None = None,
) -> dict[str, Any]:
    return {
        "n_ctx": n_ctx,
        "n_ubatch": n_ubatch,
        "n_batch": n_batch or max(512, n_ubatch),
        "flash_attn": fa,
        "type_k": tk,
        "type_v": tv,
        "n_seq": n_seq,
        "kv_unified": kvu,
        "swa_full": swa_full,
    }


SETTINGS_GRID: tuple[dict[str, Any], ...] = (
    _s(4096, fa=False),
    _s(4096, fa=True),
    _s(16384, fa=False),
    _s(8192, 256, True, "q8_0", "q8_0"),
    _s(8192, 512, False, "q4_0", "f16"),
    _s(6000, 512, True, "q4_0", "q4_0"),
    _s(8192, 512, True, n_seq=2),
    _s(4096, 1024, True, n_batch=2048),
)
SWA_EXTRA: tuple[dict[str, Any], ...] = (
    _s(16384, fa=True, swa_full=False),
    _s(16384, fa=False, swa_full=False),
    _s(16384, fa=True, n_seq=2, swa_full=False),
    _s(16384, fa=True, n_seq=2, kvu=True, swa_full=False),
)

ARCHS: tuple[dict[str, Any], ...] = (
    {"key": "llama-3.1-8b", "catalog": "llama-3.1-8b", "gguf_arch": "llama", "ftype": "Q4_K_M"},
    {"key": "llama-3.2-1b", "catalog": "llama-3.2-1b", "gguf_arch": "llama", "ftype": "Q8_0"},
    {"key": "qwen2.5-7b", "catalog": "qwen2.5-7b", "gguf_arch": "qwen2", "ftype": "Q4_K_M"},
    {"key": "qwen3-8b", "catalog": "qwen3-8b", "gguf_arch": "qwen3", "ftype": "Q5_K_M"},
    {"key": "mixtral-8x7b", "catalog": "mixtral-8x7b", "gguf_arch": "llama", "ftype": "Q4_K_M"},
    {
        "key": "qwen3-30b-a3b",
        "catalog": "qwen3-30b-a3b",
        "gguf_arch": "qwen3moe",
        "ftype": "Q4_K_M",
    },
    {
        "key": "deepseek-v2-lite",
        "catalog": "deepseek-v2-lite",
        "gguf_arch": "deepseek2",
        "ftype": "Q4_K_M",
    },
    {
        "key": "gemma-2-9b",
        "catalog": "gemma-2-9b",
        "gguf_arch": "gemma2",
        "ftype": "Q4_K_M",
        "settings": SETTINGS_GRID[:4] + SWA_EXTRA,
    },
    {
        "key": "gemma-3-1b",
        "catalog": "gemma-3-1b",
        "gguf_arch": "gemma3",
        "ftype": "Q8_0",
        "settings": SETTINGS_GRID[:4] + SWA_EXTRA,
    },
    {
        "key": "gpt-oss-20b",
        "catalog": "gpt-oss-20b",
        "gguf_arch": "gpt-oss",
        "ftype": "MXFP4_MOE",
        "settings": SETTINGS_GRID[:4] + SWA_EXTRA,
    },
    {
        "key": "phi-3-mini-4k",
        "catalog": "phi-3-mini-4k",
        "gguf_arch": "phi3",
        "ftype": "Q4_K_M",
        "settings": SETTINGS_GRID[:4],
    },
    {
        "key": "granite-4.0-h-tiny",
        "catalog": "granite-4.0-h-tiny",
        "gguf_arch": "granitehybrid",
        "ftype": "Q4_K_M",
        "settings": (*SETTINGS_GRID[:4], _s(8192, 512, True, n_seq=3)),
    },
)


def exact_tensors(
    arch: dict[str, Any],
) -> tuple[ModelSpec, tuple[tuple[TensorInfo, str, int], ...]]:
    """The spec with exact per-tensor GGUF types/bytes (as llama-quantize would write them)."""
    from oomkit.estimate.llamacpp import gguf_arch
    from oomkit.quant.llamacpp_mix import predict_gguf_tensor_bytes
    from oomkit.spec.tensors import model_tensors

    spec = find_model(arch["catalog"]).spec()
    attn = spec.attention_layers()
    kv0 = spec.kv_heads(attn[0]) if attn else spec.num_key_value_heads
    rows = predict_gguf_tensor_bytes(
        arch["ftype"],
        model_tensors(spec),
        n_layer=spec.num_hidden_layers,
        n_expert=spec.moe.num_experts if spec.moe else 0,
        n_gqa=spec.num_attention_heads // max(1, kv0),
        arch=gguf_arch(spec),
        pure=bool(arch.get("pure", False)),
    )
    tensors = tuple(dataclasses.replace(t, dtype=ty, n_bytes=nb) for t, ty, nb in rows)
    spec = dataclasses.replace(spec, tensors=tensors, source="gguf")
    return spec, tuple((t, str(t.dtype), int(t.n_bytes or 0)) for t in tensors)


def record_inputs(rec: dict[str, Any]) -> tuple[ModelSpec, InferenceSettings]:
    """Spec (exact tensors) and settings of one oracle record."""
    arch = {"catalog": rec["catalog_key"], "ftype": rec["ftype"], "pure": rec.get("pure", False)}
    spec, _ = exact_tensors(arch)
    s = rec["settings"]
    settings = InferenceSettings(
        runtime="llama.cpp",
        ctx=s["n_ctx"],
        parallel=s["n_seq"],
        batch_size=s["n_batch"],
        ubatch=s["n_ubatch"],
        flash_attn=s["flash_attn"],
        cache_type_k=s["type_k"],
        cache_type_v=s["type_v"],
        kv_unified=s["kv_unified"],
        swa_full=s["swa_full"],
        n_gpu_layers=0,
        mmap=True,
    )
    return spec, settings


def arch_metadata(arch: dict[str, Any], spec: ModelSpec) -> dict[str, Any]:
    """GGUF key/values for ``spec`` under ``arch['gguf_arch']`` (``{arch}`` is substituted)."""
    cfg = dict(find_model(arch["catalog"]).to_dict()["config"])
    a = arch["gguf_arch"]
    n_layer = spec.num_hidden_layers
    md: dict[str, Any] = {
        "general.name": arch["key"],
        "{arch}.context_length": int(cfg.get("max_position_embeddings") or 4096),
        "{arch}.embedding_length": spec.hidden_size,
        "{arch}.block_count": n_layer,
        "{arch}.feed_forward_length": spec.intermediate_size,
        "{arch}.attention.head_count": spec.num_attention_heads,
        "{arch}.attention.head_count_kv": spec.num_key_value_heads,
        "{arch}.attention.layer_norm_rms_epsilon": float(cfg.get("rms_norm_eps", 1e-5)),
        "{arch}.rope.freq_base": float(cfg.get("rope_theta", 10000.0)),
        "{arch}.rope.dimension_count": spec.head_dim,
        "{arch}.attention.key_length": spec.head_dim,
        "{arch}.attention.value_length": spec.v_head_dim,
        "{arch}.vocab_size": spec.vocab_size,
    }
    moe = spec.moe
    if moe is not None:
        md["{arch}.expert_count"] = moe.num_experts
        md["{arch}.expert_used_count"] = moe.num_experts_per_tok
        md["{arch}.expert_feed_forward_length"] = moe.expert_intermediate_size
    if a == "deepseek2":
        mla = spec.mla
        assert mla is not None
        assert moe is not None
        md["{arch}.leading_dense_block_count"] = len(moe.dense_layers)
        md["{arch}.expert_shared_count"] = moe.num_shared_experts
        md["{arch}.expert_weights_scale"] = float(cfg.get("routed_scaling_factor", 1.0))
        md["{arch}.expert_weights_norm"] = bool(cfg.get("norm_topk_prob", False))
        md["{arch}.expert_gating_func"] = 1
        md["{arch}.attention.kv_lora_rank"] = mla.kv_lora_rank
        md["{arch}.attention.head_count_kv"] = 1
        md["{arch}.attention.key_length"] = mla.kv_lora_rank + mla.qk_rope_head_dim
        md["{arch}.attention.value_length"] = mla.kv_lora_rank
        md["{arch}.attention.key_length_mla"] = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        md["{arch}.attention.value_length_mla"] = mla.v_head_dim
        md["{arch}.rope.dimension_count"] = mla.qk_rope_head_dim
        if mla.q_lora_rank:
            md["{arch}.attention.q_lora_rank"] = mla.q_lora_rank
    if a in ("gemma2", "gemma3", "gpt-oss", "phi3") and spec.sliding_window:
        md["{arch}.attention.sliding_window"] = int(spec.sliding_window)
    if a == "gemma2":
        md["{arch}.attn_logit_softcapping"] = float(cfg.get("attn_logit_softcapping") or 50.0)
        md["{arch}.final_logit_softcapping"] = float(cfg.get("final_logit_softcapping") or 30.0)
    if a == "granitehybrid":
        rec = spec.recurrent
        assert rec is not None
        assert moe is not None
        md["{arch}.attention.head_count_kv"] = [
            0 if t == "mamba" else spec.num_key_value_heads for t in spec.layer_types
        ]
        md["{arch}.ssm.conv_kernel"] = rec.d_conv
        md["{arch}.ssm.state_size"] = rec.d_state
        md["{arch}.ssm.group_count"] = rec.n_groups
        md["{arch}.ssm.inner_size"] = rec.d_inner
        md["{arch}.ssm.time_step_rank"] = rec.n_heads
        md["{arch}.expert_shared_feed_forward_length"] = moe.shared_expert_intermediate_size
        md["{arch}.attention.scale"] = float(cfg.get("attention_multiplier", 0.0078125))
        md["{arch}.embedding_scale"] = float(cfg.get("embedding_multiplier", 12.0))
        md["{arch}.residual_scale"] = float(cfg.get("residual_multiplier", 0.22))
        md["{arch}.logit_scale"] = float(cfg.get("logits_scaling", 6.0))
        md["{arch}.rope.dimension_count"] = spec.head_dim
    return md

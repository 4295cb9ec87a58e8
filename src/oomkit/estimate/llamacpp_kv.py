"""llama.cpp KV cache and recurrent-state ("RS") buffers, exact to the byte.

Models (llama.cpp, late 2025):

* ``llama_kv_cache::llama_kv_cache`` (src/llama-kv-cache.cpp): per attention layer one K tensor
  ``[n_embd_k_gqa, kv_size, n_stream]`` of ``type_k`` and one V tensor ``[n_embd_v_gqa, kv_size,
  n_stream]`` of ``type_v``; ``n_stream = 1`` when unified, else ``n_seq_max``; layers with
  ``n_head_kv == 0`` or recurrent layers have no KV. MLA models (DeepSeek-V2/V3, Kimi) cache one
  latent of ``kv_lora_rank + qk_rope_head_dim`` per token (head_count_kv = 1) and no V tensor.
* ``llama_kv_cache_iswa`` (src/llama-kv-cache-iswa.cpp): sliding-window layers get their own cache
  of ``GGML_PAD(min(n_ctx_seq, n_swa * (unified ? n_seq_max : 1) + n_ubatch), 256)`` cells per
  stream, or ``n_ctx_seq`` with ``--swa-full``.
* ``llama_memory_recurrent`` (src/llama-memory-recurrent.cpp): per recurrent layer an f32 conv
  state ``n_embd_r`` and an f32 SSM state ``n_embd_s`` for ``max(1, n_seq_max)`` sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.estimate.llamacpp_params import LlamaCppParams
from oomkit.quant.ggml_types import ggml_tensor_bytes
from oomkit.spec.model import LAYER_FFN, LAYER_SLIDING, ModelSpec

__all__ = [
    "SWA_PAD",
    "KvCacheInfo",
    "KvLayer",
    "KvPlan",
    "plan_kv",
]

SWA_PAD = 256  # "the SWA cache is always padded to 256 for performance" (llama-kv-cache-iswa.cpp)


@dataclass(frozen=True, slots=True, kw_only=True)
class KvLayer:
    """One layer's cache tensors (sizes over all streams)."""

    layer: int
    cache: str  # "kv" | "kv_swa" | "rs"
    k_elems_per_cell: int  # n_embd_k_gqa (or n_embd_r for "rs")
    v_elems_per_cell: int  # n_embd_v_gqa (or n_embd_s for "rs")
    k_bytes: int
    v_bytes: int
    k_type: str
    v_type: str

    @property
    def n_bytes(self) -> int:
        return self.k_bytes + self.v_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class KvCacheInfo:
    """One cache as llama.cpp logs it: ``size = X MiB (cells, layers, seqs), K (t), V (t)``."""

    label: str  # "kv", "kv_swa" or "rs"
    cells: int  # per stream (mem_size for "rs")
    n_stream: int
    layers: tuple[int, ...]
    type_k: str
    type_v: str
    k_bytes: int
    v_bytes: int

    @property
    def n_bytes(self) -> int:
        return self.k_bytes + self.v_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class KvPlan:
    """Every cache tensor of a llama.cpp context: per layer, and summed per cache."""

    layers: tuple[KvLayer, ...]
    caches: tuple[KvCacheInfo, ...]
    n_swa: int | None
    swa_cells: int | None

    @property
    def kv_bytes(self) -> int:
        """Attention KV bytes (what llama.cpp logs as ``KV buffer size``)."""
        return sum(c.n_bytes for c in self.caches if c.label != "rs")

    @property
    def rs_bytes(self) -> int:
        return sum(c.n_bytes for c in self.caches if c.label == "rs")

    def layer_bytes(self, layer: int) -> int:
        return sum(x.n_bytes for x in self.layers if x.layer == layer)


def _attn_dims(spec: ModelSpec, layer: int, params: LlamaCppParams) -> tuple[int, int]:
    """(n_embd_k_gqa, n_embd_v_gqa) of one layer as llama_hparams computes them."""
    n_kv = spec.kv_heads(layer)
    if n_kv <= 0:
        return 0, 0
    if spec.mla is not None and not params.options.mla_cache:
        # builds before PR #12801: K = n_head x (qk_nope + qk_rope), V = n_head x v_head_dim
        n_head = spec.num_attention_heads
        return (
            n_head * (spec.mla.qk_nope_head_dim + spec.mla.qk_rope_head_dim),
            n_head * spec.mla.v_head_dim,
        )
    if spec.mla is not None:
        # convert_hf_to_gguf writes MLA as key_length_mla/value_length_mla with one KV head:
        # the cache holds the compressed latent c^KV plus the shared rope key
        k = spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim
        v = spec.mla.kv_lora_rank if params.options.mla_v_cache else 0
        return k, v
    # llama_hparams::n_embd_k_gqa(il) / n_embd_v_gqa(il): per-layer head sizes (Gemma 4's
    # n_embd_head_k_swa 256 / n_embd_head_k 512); a layer without wv still caches V = Kcur
    # (src/models/gemma4-iswa.cpp)
    return spec.layer_head_dim(layer) * n_kv, spec.layer_v_head_dim(layer) * n_kv


def swa_cells(spec: ModelSpec, params: LlamaCppParams) -> int | None:
    """Cells per stream of the sliding-window cache (None when the model has no SWA layers)."""
    if LAYER_SLIDING not in spec.layer_types or not spec.sliding_window:
        return None
    if params.swa_full:
        return params.n_ctx_seq
    per_stream = spec.sliding_window * (params.n_seq_max if params.kv_unified else 1)
    cells = min(params.n_ctx_seq, per_stream + params.n_ubatch)
    return -(-cells // SWA_PAD) * SWA_PAD


def plan_kv(spec: ModelSpec, params: LlamaCppParams) -> KvPlan:
    """Every cache tensor llama.cpp allocates for ``spec`` under ``params`` (pure)."""
    if spec.is_encoder:
        # encoder-only models (BERT family) get no memory module (llama_model::create_memory)
        return KvPlan(layers=(), caches=(), n_swa=None, swa_cells=None)
    n_swa_cells = swa_cells(spec, params)
    rows: list[KvLayer] = []
    recurrent = frozenset(spec.recurrent_layers())  # once: O(n) for n layers, not O(n^2)
    dims_bytes: dict[tuple[int, int], tuple[int, int]] = {}
    for il, kind in enumerate(spec.layer_types):
        if il in recurrent:
            rec = spec.recurrent
            if rec is None:
                continue
            mem = max(1, params.n_seq_max)
            r = rec.conv_state_elements
            s = rec.ssm_state_elements
            rows.append(
                KvLayer(
                    layer=il,
                    cache="rs",
                    k_elems_per_cell=r,
                    v_elems_per_cell=s,
                    k_bytes=ggml_tensor_bytes("F32", r * mem),
                    v_bytes=ggml_tensor_bytes("F32", s * mem),
                    k_type="F32",
                    v_type="F32",
                )
            )
            continue
        if kind == LAYER_FFN:  # llama.cpp nemotron_h: n_head_kv(il) = 0 on MLP/MoE blocks
            continue
        k_dim, v_dim = _attn_dims(spec, il, params)
        if k_dim == 0:
            continue
        sliding = kind == LAYER_SLIDING and n_swa_cells is not None
        cells = n_swa_cells if sliding and n_swa_cells is not None else params.n_ctx_seq
        n_cells = cells * params.n_stream
        row_bytes = dims_bytes.get((k_dim, v_dim))
        if row_bytes is None:  # once per distinct layer shape, not per layer
            row_bytes = dims_bytes[(k_dim, v_dim)] = (
                ggml_tensor_bytes(params.type_k, k_dim),
                ggml_tensor_bytes(params.type_v, v_dim) if v_dim else 0,
            )
        rows.append(
            KvLayer(
                layer=il,
                cache="kv_swa" if sliding else "kv",
                k_elems_per_cell=k_dim,
                v_elems_per_cell=v_dim,
                k_bytes=row_bytes[0] * n_cells,
                v_bytes=row_bytes[1] * n_cells,
                k_type=params.type_k,
                v_type=params.type_v,
            )
        )
    caches: list[KvCacheInfo] = []
    for label in ("kv", "kv_swa", "rs"):
        sel = [r for r in rows if r.cache == label]
        if not sel:
            continue
        if label == "rs":
            cells, n_stream = max(1, params.n_seq_max), 1
        elif label == "kv_swa":
            cells, n_stream = n_swa_cells or 0, params.n_stream
        else:
            cells, n_stream = params.n_ctx_seq, params.n_stream
        caches.append(
            KvCacheInfo(
                label=label,
                cells=cells,
                n_stream=n_stream,
                layers=tuple(r.layer for r in sel),
                type_k=sel[0].k_type,
                type_v=sel[0].v_type,
                k_bytes=sum(r.k_bytes for r in sel),
                v_bytes=sum(r.v_bytes for r in sel),
            )
        )
    return KvPlan(
        layers=tuple(rows),
        caches=tuple(caches),
        n_swa=spec.sliding_window if n_swa_cells is not None else None,
        swa_cells=n_swa_cells,
    )

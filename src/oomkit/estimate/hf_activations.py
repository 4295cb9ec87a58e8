"""Peak activation memory of one forward pass over ``T`` tokens (PyTorch runtimes, per TP rank).

Models the caching allocator's largest live set inside one decoder layer (layers run one after
another and free their temporaries): the residual stream and the normed hidden state stay alive
(2·T·h), and on top of them the larger of the attention block (fused QKV output + attention
output) and the MLP block. In vLLM's ``LlamaMLP.forward`` the local ``gate_up`` (2·T·i) stays
referenced while ``act_fn`` writes T·i and ``down_proj`` writes T·h, so the MLP block is
T·(3i + h) (T·(2i + h) without a gate). MoE layers use vLLM's fused_moe workspaces
(``intermediate_cache1..3`` of T·k·2i_e, T·k·i_e and T·k·h elements, fused_moe.py), chunked at
``VLLM_FUSED_MOE_CHUNK_SIZE`` = 64 x 1024 tokens (vllm/envs.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.spec.model import ModelSpec
from oomkit.units import ceil_div

__all__ = [
    "FLASHINFER_SAMPLER_BYTES_PER_ENTRY",
    "SORT_SAMPLER_BYTES_PER_ENTRY",
    "TRITON_SAMPLER_BYTES_PER_ENTRY",
    "TRITON_SAMPLER_MIN_ROWS",
    "ForwardPeak",
    "forward_peak_bytes",
    "padded_vocab",
    "sampler_bytes_per_entry",
    "sampler_peak_bytes",
]

_MOE_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardPeak:
    """A layer's largest live set in bytes, the formula that gives it and the block that sets it."""

    n_bytes: int
    formula: str
    block: str  # which block sets the peak: "mlp" | "attention" | "moe"


def forward_peak_bytes(
    spec: ModelSpec, *, tokens: int, elem_bytes: int, tp: int = 1
) -> ForwardPeak:
    """Largest live set of one layer for ``tokens`` tokens (bytes per rank)."""
    t, h = tokens, spec.hidden_size
    stream = 2 * t * h
    kv_heads, hd, vhd = spec.widest_attention()  # per-layer head sizes: the widest layer
    q = spec.num_attention_heads * hd // tp
    kv = max(1, kv_heads // tp)
    if spec.mla is not None:
        m = spec.mla
        q = spec.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) // tp
        attn = t * (q + m.kv_lora_rank + m.qk_rope_head_dim)
        attn += t * spec.num_attention_heads * m.v_head_dim // tp
    else:
        attn = t * (q + kv * (hd + vhd)) + t * q
    dense_i = ceil_div(spec.intermediate_size, tp)
    mlp = t * (3 * dense_i + h) if spec.mlp_gated else t * (2 * dense_i + h)
    moe = 0
    if spec.moe is not None:
        e = spec.moe
        m_tok = min(t, _MOE_CHUNK)
        ie = ceil_div(e.expert_intermediate_size, tp)
        k = e.num_experts_per_tok
        moe = m_tok * k * (2 * ie + ie + h) + t * e.num_experts
        shared = ceil_div(e.shared_expert_intermediate_size, tp)
        moe += t * (3 * shared + h) if shared else 0
        if len(e.dense_layers) == 0:
            mlp = 0
    block, peak = max((("attention", attn), ("mlp", mlp), ("moe", moe)), key=lambda x: x[1])
    n = (stream + peak) * elem_bytes
    formula = f"(2·T·h + {block} block) x {elem_bytes} B, T={tokens}"
    return ForwardPeak(n_bytes=n, formula=formula, block=block)


#: Sampler working set per vocabulary entry per row, PyTorch-native top-k/top-p path that the
#: profile run exercises (dummy ``top_p`` < 1 and ``top_k = V - 1``; vllm/v1/worker/
#: gpu_model_runner.py ``_dummy_sampler_run``, V0 worker/model_runner.py ``profile_run``):
#: ``Sampler.forward`` keeps an fp32 copy of the logits (``logits.to(torch.float32)``: 4 B) and
#: ``apply_top_k_top_p`` (vllm/v1/sample/ops/topk_topp_sampler.py; V0 model_executor/layers/
#: sampler.py ``_apply_top_k_top_p``) calls ``logits.sort(dim=-1)``. For >= 128 rows PyTorch's
#: stable sort (aten/src/ATen/native/cuda/SortStable.cu ``segmented_sort_pairs``) allocates the
#: sorted values (4 B) and int64 indices (8 B), an int64 ``reverse_indices`` iota (8 B), and
#: cub's ``DeviceSegmentedRadixSort::SortPairs`` alternate key and value buffers (4 + 8 B):
#: 4 + 32 = 36 B, on top of the model-dtype logits the caller still holds. Everything after the
#: sort (masks, softmax, scatter, probabilities, exponential noise) needs less.
SORT_SAMPLER_BYTES_PER_ENTRY = 36
#: FlashInfer path (``top_k_top_p_sampling_from_logits``: top-k masked logits, softmax probs),
#: default in current vLLM when FlashInfer is installed: the fp32 copy + 4 + 4 B
FLASHINFER_SAMPLER_BYTES_PER_ENTRY = 12
#: Triton path of vLLM 0.17.0-0.20.x (PR #33538, "Triton-based Top-k and Top-p sampler
#: kernels"; absent from the 0.16.0 sdist, present in 0.17.0's and 0.17.1's): from
#: ``TRITON_SAMPLER_MIN_ROWS`` rows on, ``apply_top_k_top_p`` calls
#: ``apply_top_k_top_p_triton`` (vllm/v1/sample/ops/topk_topp_sampler.py ``if HAS_TRITON and
#: logits.shape[0] >= 8``), a pivot search that masks the fp32 logits in place, no sort. Live
#: per entry: the fp32 copy (4 B), ``logits.softmax`` (4 B) and ``random_sample``'s
#: ``q = torch.empty_like(probs)`` (4 B); plus the kernel's cached per-program buffer
#: ``logits.new_empty((min(next_power_of_2(P), num_sm), vocab))`` with ``P = min(num_sm,
#: rows)`` programs (topk_topp_triton.py): at most one fp32 row per sampled row (4 B; the SM
#: count is not in the catalog, so the bound is taken): 16 B.
TRITON_SAMPLER_BYTES_PER_ENTRY = 16
#: below this many rows 0.17-0.20 still sort (``apply_top_k_top_p_pytorch``)
TRITON_SAMPLER_MIN_ROWS = 8
_VOCAB_PAD = 64  # vllm DEFAULT_VOCAB_PADDING_SIZE (vocab_parallel_embedding.py)


def padded_vocab(vocab_size: int, tp: int = 1) -> int:
    """Rows of vLLM's lm_head/embedding over all ranks: ``pad_vocab_size(vocab, 64)``.

    vocab_parallel_embedding.py pads the vocabulary to a multiple of 64 once
    (``num_embeddings_padded``) and gives each of the ``tp`` ranks an equal slice
    (``vocab_range_from_global_vocab_size``); the gathered logits span the padded width.

    >>> padded_vocab(151936, 4), padded_vocab(32001, 2)
    (151936, 32064)
    """
    del tp  # the 64-row padding is divisible by every TP size vLLM accepts
    return ceil_div(vocab_size, _VOCAB_PAD) * _VOCAB_PAD


def sampler_bytes_per_entry(n_seqs: int, *, flashinfer: bool, triton: bool) -> int:
    """Bytes per row per vocabulary entry of the top-k/top-p path (the fp32 copy included).

    >>> sampler_bytes_per_entry(1024, flashinfer=True, triton=False)
    12
    """
    if flashinfer:
        return FLASHINFER_SAMPLER_BYTES_PER_ENTRY
    if triton and n_seqs >= TRITON_SAMPLER_MIN_ROWS:
        return TRITON_SAMPLER_BYTES_PER_ENTRY
    return SORT_SAMPLER_BYTES_PER_ENTRY


def sampler_peak_bytes(
    spec: ModelSpec,
    *,
    n_seqs: int,
    tp: int = 1,
    logits_elem_bytes: int = 2,
    flashinfer: bool = False,
    triton: bool = False,
) -> int:
    """Sampler working set for ``n_seqs`` rows over the full vocabulary (bytes per rank).

    The lm_head output in the model dtype spans the padded vocabulary (gathered on every rank in
    V1, ``LogitsProcessor._gather_logits``); the fp32 copy and the sort cover ``vocab_size``.
    ``triton``: vLLM 0.17-0.20's Triton top-k/top-p (:data:`TRITON_SAMPLER_BYTES_PER_ENTRY`)
    from :data:`TRITON_SAMPLER_MIN_ROWS` rows on, the sort below that.
    """
    per_entry = sampler_bytes_per_entry(n_seqs, flashinfer=flashinfer, triton=triton)
    model_dtype_logits = n_seqs * padded_vocab(spec.vocab_size, tp) * logits_elem_bytes
    return model_dtype_logits + n_seqs * spec.vocab_size * per_entry

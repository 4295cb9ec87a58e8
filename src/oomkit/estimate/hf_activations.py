"""Peak activation memory of one forward pass over ``T`` tokens (PyTorch runtimes, per TP rank).

Models the caching allocator's largest live set inside one decoder layer (layers run one after
another and free their temporaries): the residual stream and the normed hidden state stay alive
(2·T·h), and on top of them the larger of the attention block (fused QKV output + attention
output) and the MLP block. In vLLM's ``LlamaMLP.forward`` the local ``gate_up`` (2·T·i) stays
referenced while ``act_fn`` writes T·i and ``down_proj`` writes T·h, so the MLP block is
T·(3i + h) (T·(2i + h) without a gate). MoE layers use vLLM's fused_moe workspaces
(``intermediate_cache1..3`` of T·k·2i_e, T·k·i_e and T·k·h elements, fused_moe.py), chunked at
``VLLM_FUSED_MOE_CHUNK_SIZE`` = 32768 tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.spec.model import ModelSpec
from oomkit.units import ceil_div

__all__ = ["SAMPLER_BYTES_PER_ENTRY", "ForwardPeak", "forward_peak_bytes", "sampler_peak_bytes"]

_MOE_CHUNK = 32768


@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardPeak:
    n_bytes: int
    formula: str
    block: str  # which block sets the peak: "mlp" | "attention" | "moe"


def forward_peak_bytes(
    spec: ModelSpec, *, tokens: int, elem_bytes: int, tp: int = 1
) -> ForwardPeak:
    """Largest live set of one layer for ``tokens`` tokens (bytes per rank)."""
    t, h = tokens, spec.hidden_size
    stream = 2 * t * h
    q = spec.num_attention_heads * spec.head_dim // tp
    kv = max(1, spec.num_key_value_heads // tp)
    if spec.mla is not None:
        m = spec.mla
        q = spec.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) // tp
        attn = t * (q + m.kv_lora_rank + m.qk_rope_head_dim)
        attn += t * spec.num_attention_heads * m.v_head_dim // tp
    else:
        attn = t * (q + kv * (spec.head_dim + spec.v_head_dim)) + t * q
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


#: bytes per vocabulary entry per row live in the PyTorch top-k/top-p sampling path that the
#: profile run exercises (dummy top_p < 1, top_k = V - 1): fp32 logits 4, sorted values 4,
#: int64 sort indices 8, softmax of the sorted values 4, its cumsum 4, the scattered-back logits
#: 4, probabilities 4, exponential noise 4 (vllm/v1/sample/ops/topk_topp_sampler.py
#: ``apply_top_k_top_p`` + ``random_sample``; V0 model_executor/layers/sampler.py alike)
SAMPLER_BYTES_PER_ENTRY = 36


def sampler_peak_bytes(spec: ModelSpec, *, n_seqs: int, tp: int = 1) -> int:
    """Sampler working set for ``n_seqs`` rows over the full vocabulary (bytes)."""
    del tp  # logits are gathered to the full vocabulary before sampling
    return n_seqs * spec.vocab_size * SAMPLER_BYTES_PER_ENTRY

"""Peak activations of a transformers ``generate()`` prefill: the largest live set of one
decoder layer, or the step's logits (pure; used by :mod:`oomkit.estimate.transformers`).

The MLP live set ``act(gate) x up`` (3 x B x S x i); transformers 5's grouped-GEMM MoE experts;
eager attention's ``B x a x S^2`` scores (fp32 softmax upcast, or the model dtype for the
families :mod:`oomkit.estimate.hf_attention_bytes` lists); SDPA's math fallback for Falcon's
unexpanded multi-query heads (same module); the logits ``B x V x (e + 4)``.
"""

from __future__ import annotations

from oomkit.estimate.hf_attention_bytes import (
    eager_scores_in_dtype,
    sdpa_math_extra_bytes,
    sdpa_runs_math,
)
from oomkit.spec.model import ModelSpec
from oomkit.spec.tensors_blocks import has_fused_gate_up

__all__ = ["decode_step_bytes", "grouped_mm_experts_bytes", "prefill_activation_bytes"]


def grouped_mm_experts_bytes(spec: ModelSpec, tokens: int, elem: int) -> int:
    """Live set of transformers 5's ``grouped_mm_experts_forward`` (integrations/moe.py) for
    ``tokens`` tokens: the S = tokens x top-k rows gathered in expert order
    (``selected_hidden_states_g``, S x h) stay bound to the end; the gate/up GEMM's S x 2i_e
    output and the gated S x i_e product sit beside them (h + 4 i_e per row); after the down
    GEMM, its S x h output, ``weighted_out`` and the un-permuted copy ``weighted_out[inv_perm]``
    are alive with the gathered rows (4 h per row) -- four 128 MiB tensors in the H200 memory
    snapshot of Qwen3-30B-A3B at 4096 tokens (benchmarks/gpu/results/README.md). Plus the
    router's fp32 scores (tokens x E). A shared expert runs before the routed ones (Qwen2-MoE:
    ``shared_expert_output`` is bound first) or after them (DeepSeek-V2): either way its gated
    MLP's intermediates (3 i_s per token) are alive beside the other side's output only
    (tokens x h), not beside the routed experts' buffers (measured on an H100: Qwen1.5-MoE-A2.7B
    8 layers b2 p4096, 0.71 GiB of activations; the sum of both had 0.92)."""
    assert spec.moe is not None
    e = spec.moe
    h, ie, k = spec.hidden_size, e.expert_intermediate_size, e.num_experts_per_tok
    rows = tokens * k
    live = rows * max(4 * h, h + 4 * ie, 2 * h + ie) * elem + tokens * e.num_experts * 4
    shared = e.shared_expert_intermediate_size
    if not shared:
        return live
    return max(live + tokens * h * elem, tokens * (3 * shared + h) * elem)


def prefill_activation_bytes(
    spec: ModelSpec,
    *,
    batch: int,
    seq: int,
    elem: int,
    attn_impl: str,
    full_logits: bool = False,
    half_to_float: bool = False,
    moe_grouped_mm: bool = False,
) -> tuple[int, str]:
    """Largest live set of one decoder layer at prefill, plus the step's logits (bytes).

    ``full_logits``: transformers before 4.45 (PR #31292) computed logits for every prompt
    position and upcast them to fp32 (B x S x V x (e + 4)).
    ``half_to_float``: fp16 weights, whose eager softmax upcasts inside the kernel (no fp32
    copy of the scores).
    """
    b, s, h = batch, seq, spec.hidden_size
    # hidden-size tensors alive while a decoder layer after the first runs its MLP: the model's
    # ``inputs_embeds`` (LlamaModel.forward keeps the name bound through the layer loop), the
    # layer's input (the loop variable ``hidden_states`` of the caller), the post-attention
    # residual sum and the normed MLP input: a CUDA memory snapshot of generate() on an H100
    # (Llama-3.2-1B, transformers 5.24) shows these four at the peak (benchmarks/gpu/results/
    # README.md); the first layer's input is the embedding itself
    stream = (4 if spec.num_hidden_layers > 1 else 3) * b * s * h * elem
    kv_heads, hd, vhd = spec.widest_attention()  # Gemma 4: its full layers' 32 x 512 queries
    q = spec.num_attention_heads * hd
    kvd = kv_heads * (hd + vhd)
    attn = b * s * (q + kvd + q) * elem
    in_dtype = eager_scores_in_dtype(spec)
    if attn_impl == "sdpa" and sdpa_runs_math(spec):
        # Falcon's multi-query SDPA call falls back to the math backend (hf_attention_bytes)
        attn += sdpa_math_extra_bytes(spec, batch=b, q_len=s, kv_len=s, elem=elem)
    elif attn_impl == "eager" and in_dtype is not None:
        # GPT-2, Llama 4, Falcon, gpt-oss: softmax in the model dtype (hf_attention_bytes)
        attn += b * spec.num_attention_heads * s * s * in_dtype * elem + b * s * s * elem
    elif attn_impl == "eager":
        # ``softmax(w, dim=-1, dtype=float32).to(q.dtype)`` with the scores ``w`` still bound:
        # ATen's softmax converts a bf16 input to fp32 first (``input_.toType(dtype)``; only a
        # CUDA Half input takes ``_softmax(half_to_float=True)``, aten/src/ATen/native/
        # SoftMax.cpp), so w (e) + the fp32 copy + the fp32 output are alive together, as the
        # H100 snapshot shows (two 512 MiB fp32 tensors and the 256 MiB bf16 scores for
        # Llama-3.2-1B at 2048 tokens); then the cast back (e) beside w and the output; + mask
        per_score = max(elem + 8, 2 * elem + 4) if half_to_float is False else 2 * elem + 4
        attn += b * spec.num_attention_heads * s * s * per_score + b * s * s * elem
    i = (
        spec.moe.expert_intermediate_size
        if spec.moe and not spec.moe.dense_layers
        else (spec.intermediate_size)
    )
    # a fused ``gate_up_proj`` (Phi3MLP, Glm4MLP: ``up_states = self.gate_up_proj(x)``;
    # ``gate, up_states = up_states.chunk(2, dim=-1)``; ``up_states = up_states *
    # self.activation_fn(gate)``, transformers 5.24 models/phi3/modeling_phi3.py lines 59-62)
    # keeps the 2i-wide output alive (``gate`` is a view of it) beside act(gate) and the
    # product: 4i, where separate gate/up linears free the gate after act_fn: 3i
    widths = (4 if has_fused_gate_up(spec) else 3) if spec.mlp_gated else 2
    mlp = b * s * i * widths * elem
    if moe_grouped_mm and spec.moe is not None:
        mlp = max(mlp, grouped_mm_experts_bytes(spec, b * s, elem))
    logits = b * (s if full_logits else 1) * spec.vocab_size * (elem + 4)
    layer_peak = stream + max(attn, mlp)
    mlp_text = "MLP B·S·3i·e"
    if moe_grouped_mm and spec.moe is not None:
        # transformers 5's grouped_mm experts: what --explain printed was the dense MLP only
        mlp_text = "MoE grouped_mm B·S·k·max(4h, h+4i_e, 2h+i_e)·e + router B·S·E·4" + (
            " + shared expert B·S·3i_s·e" if spec.moe.shared_expert_intermediate_size else ""
        )
    formula = (
        f"4·B·S·h·e + max(attention{' with B·a·S² scores' if attn_impl == 'eager' else ''}, "
        f"{mlp_text}); logits B·" + ("S·" if full_logits else "") + "V·(e+4) after the last layer"
    )
    return max(layer_peak, b * h * elem + logits), formula


def decode_step_bytes(spec: ModelSpec, *, batch: int, elem: int) -> int:
    """One decode step's logits beside its hidden state: ``B x h x e + B x V x (e + 4)``
    (``logits[:, -1, :].to(torch.float32)`` in ``generate()``), the last term of
    :func:`prefill_activation_bytes`."""
    return batch * spec.hidden_size * elem + batch * spec.vocab_size * (elem + 4)

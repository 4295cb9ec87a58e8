"""Bytes of the ``B x a x L x S`` tensors a transformers attention call materialises (pure).

Two mechanisms, each read from the source that runs (transformers 5.24, torch 2.11):

* **Eager softmax dtype, per architecture.** The Llama-style ``eager_attention_forward``
  (``softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)``, 237 modeling files) upcasts
  the scores (see :func:`oomkit.estimate.transformers.prefill_activation_bytes`). Some decoder
  families run the softmax in the input dtype instead, so no fp32 tensor exists:

  - ``gpt2`` (``models/gpt2/modeling_gpt2.py`` ``eager_attention_forward``) and
    ``llama4_text`` (``models/llama4/modeling_llama4.py``): ``w = matmul(q, k^T) * scaling``,
    ``w = w + mask``, ``softmax(w, dim=-1)``: each step holds its input and its output,
    2 score tensors of the model dtype at most;
  - ``falcon`` (``models/falcon/modeling_falcon.py`` ``FalconAttention.forward``, the non-ALiBi
    eager branch): ``scores = q @ k^T; scores /= sqrt(d)`` in place, then
    ``softmax(scores + mask, dim=-1, dtype=hidden_states.dtype)``: the scores stay bound while
    the sum and the softmax output exist, 3;
  - ``gpt_oss`` (``models/gpt_oss/modeling_gpt_oss.py``): ``w`` stays bound beside
    ``combined = cat([w, sinks])`` and ``combined - combined.max(...)``, then
    ``softmax(combined, dtype=combined.dtype)`` beside ``w`` and ``combined``, 3.

* **SDPA's math fallback for unexpanded multi-query heads.** ``FalconAttention.forward``
  (non-``new_decoder_architecture``, ``multi_query``) passes ``query [B, 71, L, 64]`` and
  ``key``/``value [B, 1, S, 64]`` to ``F.scaled_dot_product_attention`` without
  ``enable_gqa`` and without repeating K/V, with the boolean 4-D causal mask transformers
  always builds for it (``create_causal_mask(..., allow_is_causal_skip=False)``). PyTorch's
  CUDA dispatch (``aten/src/ATen/native/transformers/sdp_utils_cpp.h``
  ``check_batch_size_and_num_heads_dense``: "For dense input, both fused kernels require
  query, key and value to have the same num_heads" unless ``enable_gqa``) rules out flash,
  memory-efficient and cuDNN attention, so ``_scaled_dot_product_attention_math`` runs
  (``aten/src/ATen/native/transformers/attention.cpp``): with
  ``allowFP16BF16ReductionMathSDP()`` false (the default since torch 2.5) it upcasts q, k, v
  to fp32 (``query_.to(at::kFloat)``) and scales q (a second fp32 copy), the scores
  ``matmul(query, key^T)`` are fp32 (4 B), the bool mask is added in place after
  ``convert_boolean_attn_mask`` made an additive copy in the query dtype, and
  ``_safe_softmax`` writes the fp32 softmax (4 B) while the scores are still bound, then
  ``self.isneginf()`` (a bool tensor, 1 B) before ``where_out(out, ...)`` reuses the softmax's
  storage: 9 B per score element. Measured on an H100 (``benchmarks/gpu/results/
  verdict_boundary_holdout4_h100.json``, Falcon-7B b4 p2000): the run died asking for
  1.06 GiB, the ``B x 71 x 2000 x 2000`` bool tensor, with 22.13 GiB allocated (weights 12.89 +
  the two fp32 score tensors 8.46 + the rest), and peaked at 23.20 GiB.

  ``transformers``' own ``sdpa_attention_forward`` (``integrations/sdpa_attention.py``)
  repeats K/V or passes ``enable_gqa``, so every model on the shared path keeps the fused
  kernels; among the decoders oomkit describes, only Falcon calls SDPA itself
  (``grep -l "scaled_dot_product_attention(" models/*/modeling_*.py``: the others are vision,
  speech and OCR encoders with equal head counts).
"""

from __future__ import annotations

from oomkit.spec.model import ModelSpec

__all__ = [
    "EAGER_SCORES_IN_DTYPE",
    "SDPA_MATH_BYTES_PER_SCORE",
    "eager_scores_in_dtype",
    "sdpa_math_extra_bytes",
    "sdpa_runs_math",
]

#: model_type -> score tensors of the model dtype alive together in the family's eager
#: attention, for the families whose softmax runs in the input dtype (module docstring)
EAGER_SCORES_IN_DTYPE: dict[str, int] = {"gpt2": 2, "llama4_text": 2, "falcon": 3, "gpt_oss": 3}

#: the math backend's fp32 scores + fp32 softmax + ``isneginf`` bool mask (module docstring)
SDPA_MATH_BYTES_PER_SCORE = 4 + 4 + 1


def eager_scores_in_dtype(spec: ModelSpec) -> int | None:
    """Score tensors of the model dtype at the eager peak, or None for the fp32 upcast."""
    return EAGER_SCORES_IN_DTYPE.get(spec.model_type)


def sdpa_runs_math(spec: ModelSpec) -> bool:
    """``attn_implementation="sdpa"`` runs PyTorch's math backend on CUDA: Falcon's own
    ``scaled_dot_product_attention`` call with fewer K/V heads than query heads and no
    ``enable_gqa`` (``new_decoder_architecture`` broadcasts K/V to every head first)."""
    return (
        spec.model_type == "falcon"
        and not spec.new_decoder_architecture
        and spec.num_key_value_heads != spec.num_attention_heads
    )


def sdpa_math_extra_bytes(
    spec: ModelSpec, *, batch: int, q_len: int, kv_len: int, elem: int
) -> int:
    """Bytes the math backend holds at its peak beyond the layer's own q/k/v (module docstring):
    ``B x a x L x S x 9`` for the scores, the softmax and the bool, the two fp32 copies of the
    query (``query_acc`` and the scaled ``query``), the fp32 K and V, the additive mask
    ``convert_boolean_attn_mask`` made in the query dtype and transformers' boolean one it was
    made from (``B x 1 x L x S`` each)."""
    kv, d, _ = spec.widest_attention()
    a = spec.num_attention_heads
    scores = batch * a * q_len * kv_len * SDPA_MATH_BYTES_PER_SCORE
    fp32_qkv = 2 * batch * a * q_len * d * 4 + 2 * batch * kv * kv_len * d * 4
    mask = batch * q_len * kv_len * (elem + 1)
    return scores + fp32_qkv + mask

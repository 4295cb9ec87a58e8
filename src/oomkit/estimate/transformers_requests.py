"""The largest single request a transformers ``generate()`` prefill makes of PyTorch's caching
allocator (pure).

The verdict's allocator term (:func:`oomkit.estimate.verdict_runtime.transformers_allocator_term`)
is measured in these units as well as in bytes allocated during the run. Why: a run needs its
allocator's *reserved* peak plus what the out-of-memory path cannot reclaim, not its allocated
peak. Under a full card PyTorch frees only whole cached segments before it raises
(``release_cached_blocks``, c10/cuda/CUDACachingAllocator.cpp), so a request that no cached
block fits needs a new segment even when the free bytes add up: the pieces left beside the
blocks that stay (the KV cache each layer's ``torch.cat`` makes during the forward, between the
layer's transient activations) are useless to a request larger than each of them. On real
``generate()`` runs (``benchmarks/gpu/results/verdict_boundary_h200.json`` and
``verdict_boundary_holdout_h100.json``) the memory a run needed beyond oomkit's total was at most
a fraction of the bytes allocated during the run (activations and KV cache) and at most a
multiple of this request; the verdict charges the smaller of the two.

The candidates, per GPU:

* the widest linear output of a decoder layer for every prompt token, ``B x S x out x e``: the
  MLP's up (or fused gate-up: Phi-3's ``gate_up_proj`` is ``2 x i`` wide) or the fused QKV
  projection (``models/*/modeling_*.py``: each ``nn.Linear`` output is one allocation);
* transformers 5's grouped-GEMM experts: the gate-up output of every token x top-k row
  (``integrations/moe.py`` ``grouped_mm_experts_forward``), ``B x S x k x 2 i_e x e``;
* eager attention: the fp32 softmax of the scores, ``B x a x S x S x 4`` (``B x a x S x S x e``
  for the families whose softmax runs in the model dtype, GPT-2 and the others
  :data:`oomkit.estimate.hf_attention_bytes.EAGER_SCORES_IN_DTYPE` lists);
* SDPA's math fallback (Falcon's unexpanded multi-query heads,
  :func:`oomkit.estimate.hf_attention_bytes.sdpa_runs_math`): the fp32 scores and softmax,
  ``B x a x S x S x 4``;
* the logits, upcast to fp32: ``B x V x 4`` (``logits_to_keep=1``, 4.45+), ``B x S x V x 4``
  before.
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.estimate.hf_attention_bytes import eager_scores_in_dtype, sdpa_runs_math
from oomkit.spec.model import ModelSpec, TensorInfo
from oomkit.spec.tensors import model_tensors

__all__ = ["largest_request_bytes"]

#: router weights are linear layers too, but their output (one score per expert) is narrow
_NOT_WIDE = ("norm", "ffn_gate_inp")


def _widest_linear(spec: ModelSpec, tensors: Sequence[TensorInfo] | None = None) -> int:
    """The widest 2-D weight's output features over the decoder layers (0: no tensors)."""
    widest = 0
    for t in model_tensors(spec) if tensors is None else tensors:
        if t.layer is None or len(t.shape) != 2 or any(n in t.role for n in _NOT_WIDE):
            continue
        widest = max(widest, t.shape[0])
    return widest


def largest_request_bytes(
    spec: ModelSpec,
    *,
    batch: int,
    seq: int,
    elem: int,
    attn_impl: str,
    full_logits: bool = False,
    moe_grouped_mm: bool = False,
    tensors: Sequence[TensorInfo] | None = None,
) -> int:
    """The largest single allocation of the prefill of ``batch`` prompts of ``seq`` tokens
    (``tensors``: the model's tensor table when the caller already has it)."""
    tokens = batch * seq
    widest = _widest_linear(spec, tensors) or max(spec.intermediate_size, spec.hidden_size)
    req = tokens * widest * elem
    if moe_grouped_mm and spec.moe is not None:
        moe = spec.moe
        req = max(req, tokens * moe.num_experts_per_tok * 2 * moe.expert_intermediate_size * elem)
    scores = batch * spec.num_attention_heads * seq * seq
    if attn_impl == "eager":
        req = max(req, scores * (elem if eager_scores_in_dtype(spec) else 4))
    elif attn_impl == "sdpa" and sdpa_runs_math(spec):
        req = max(req, scores * 4)
    req = max(req, batch * (seq if full_logits else 1) * spec.vocab_size * 4)
    return req

"""What ``torch.compile`` changes in the tensors a training step keeps for backward.

``torch.compile`` (Dynamo + AOTAutograd + Inductor) traces forward and backward as one joint
graph and splits it with ``torch._functorch.partitioners.min_cut_rematerialization_partition``:
a forward intermediate is either *saved* for backward or *recomputed* in the backward graph,
whichever the min-cut over byte sizes finds cheaper, subject to ``should_ban_recomputation``
(torch 2.5 ... 2.13, defaults in ``torch/_functorch/config.py``):

* ``ban_recompute_not_in_allowlist``: only ops in ``op_types.recomputable_ops`` (pointwise ops,
  casts, views, cheap reductions) may be recomputed; ``mm``/``addmm``/``bmm``, SDPA and other
  compute-intensive ops are never recomputed, so their outputs are saved when backward needs them;
* ``ban_recompute_materialized_backward``: a node whose backward user cannot fuse with it (a
  matmul's input for its weight gradient, the inputs of SDPA's backward kernel) would have to be
  written to memory in backward anyway, so it is saved, not recomputed;
* ``ban_recompute_reductions``: a node 4x smaller than its inputs (RMSNorm's ``rsqrt`` of the
  mean square: one fp32 per token) is saved.

Everything else that is pointwise is recomputed inside Inductor's fused backward kernels, which
write no temporaries. For a Llama-style decoder layer (RMSNorm, q/k/v projections, rotary, SDPA,
o_proj, RMSNorm, SwiGLU) the forward keeps, per token:

* each RMSNorm: its *input* in the residual stream's dtype (the layer input; for the second norm
  the partitioner keeps ``o_proj``'s output, the same size, and recomputes the residual sum) and
  the fp32 ``rsqrt`` (4 bytes, left out here as eager's is), plus the normed output only when a
  following matmul's weight (or LoRA adapter) trains. The fp32 upcast of the input that eager
  ``pow``/``mul`` save, and the pre-scale normalised tensor that ``self.weight * x`` saves, are
  recomputed: no ``4·h`` fp32 copy and no weight-gradient copy;
* attention: unchanged — q and k after rotary and v (inputs of the SDPA backward kernel), the
  SDPA output and fp32 logsumexp (SDPA's own outputs), and ``o_proj``'s input when it trains;
* SwiGLU: ``gate_proj`` and ``up_proj`` outputs (matmul outputs), and ``silu(g) * u`` when
  ``down_proj`` trains (a matmul input); ``silu(g)`` is recomputed: ``2·i`` (+ ``i``) instead of
  eager's ``3·i`` (+ ``i``).

That list is what the partitioner really returns: AOTAutograd with
``min_cut_rematerialization_partition`` on transformers' ``LlamaDecoderLayer`` (bf16, SDPA,
torch 2.13 on CPU) saves exactly ``x, rsqrt, norm(x), q, k, v, out, lse, o_in, o_proj(out),
rsqrt, norm(h), gate, up, silu(gate)*up`` with every weight training, and drops the three normed
outputs and the product when every weight is frozen (``tests/test_training_compile.py`` checks
the byte count against the formula on that real partition when torch is installed).

Not changed by compile here (kept as eager, an upper bound): LayerNorm (``native_layer_norm`` is
compute-intensive: never recomputed), eager attention's ``S x S`` tensors, dropout masks (random
ops are banned), MoE expert loops, SSM layers, and the backward working set.

torchtune (``compile: True``) compiles per layer — ``training.compile_model`` calls
``m.compile()`` on every ``TransformerSelfAttentionLayer`` (v0.3+; torchtune 0.1/0.2 compiled
the whole model with ``utils.wrap_compile``) — and from v0.3 also the loss,
``training.compile_loss``: for ``CEWithChunkedOutputLoss`` only ``compute_cross_entropy``
(``F.cross_entropy(logits.float(), labels, reduction="sum")`` per chunk), otherwise the whole
loss module. A compiled cross-entropy keeps its input and a per-row fp32 ``amax`` and log-sum-exp
(partitioned with Inductor's decompositions, ``_log_softmax`` is pointwise + reductions; the
fp32 log-probs are recomputed), and the backward writes one gradient in the input's dtype:
NLL's ``full + scatter`` is rewritten to a pointwise ``where`` by Inductor's
``scatter_upon_const_tensor`` joint-graph pattern (``torch/_inductor/fx_passes/joint_graph.py``)
and fused with the softmax gradient — no fp32 ``B·S·V`` log-probs, no two fp32 gradients.

With activation checkpointing (non-reentrant ``checkpoint_wrapper`` around the compiled layer)
the recomputed forward is the compiled one, so the recomputed set is the compiled saved set.
"""

from __future__ import annotations

__all__ = [
    "COMPILE_SOURCE",
    "compiled_gated_mlp_bytes",
    "compiled_loss_bytes",
    "compiled_rms_norm_bytes",
]

COMPILE_SOURCE = (
    "torch/_functorch/partitioners.py min_cut_rematerialization_partition "
    "(should_ban_recomputation); torchtune training/_compile.py compile_model / compile_loss"
)


def compiled_rms_norm_bytes(h: int, stream_e: int, e: int, output_saved: bool) -> int:
    """Per-token bytes one RMSNorm keeps under compile (module docstring).

    Args:
        h: normalised width.
        stream_e: bytes per element of the norm's input (the residual stream).
        e: bytes per element of the compute dtype (the normed output fed to the matmuls).
        output_saved: a following matmul's weight (or LoRA adapter) trains, so its input is
            materialised in backward and saved.
    """
    return stream_e * h + (e * h if output_saved else 0)


def compiled_gated_mlp_bytes(inter: int, e: int, down_trains: bool) -> int:
    """Per-token bytes a SwiGLU MLP keeps under compile: gate and up outputs (+ the product)."""
    return 2 * inter * e + (inter * e if down_trains else 0)


def compiled_loss_bytes(
    *, tokens: int, vocab: int, e: int, held: int, chunked: bool, chunks: int
) -> tuple[int, int, int, str]:
    """(saved, forward transient, backward transient, formula) of a compiled cross-entropy.

    Args:
        tokens: B·S of the micro-batch.
        vocab: vocabulary on this GPU (after TP).
        e: bytes per element of the compute dtype.
        held: bytes per element of logits the loop keeps (0, e or 4; ``held_logits``).
        chunked: torchtune ``CEWithChunkedOutputLoss`` (only ``compute_cross_entropy`` compiled).
        chunks: number of output chunks.
    """
    bsv = tokens * vocab
    lse = 8 * tokens  # per-row fp32 amax and log-sum-exp
    if chunked:
        # the compiled graph's input is each bf16 chunk (kept by the graph); fused upcast+CE
        in_b = max(e, held)
        return (
            in_b * bsv + lse,
            0,
            in_b * bsv // chunks,
            f"compiled chunked CE: {in_b}·B·S·V input chunks + per-row amax/logsumexp kept; the "
            f"upcast is fused (no fp32 chunk); one chunk's gradient (1/{chunks}) in backward",
        )
    # torchtune's TransformerDecoder upcasts before the loss (``self.output(h).float()``), so the
    # compiled loss's input is the fp32 logits unless the loop keeps compute-dtype logits
    in_b = e if held == e else 4
    return (
        in_b * bsv + lse,
        0 if in_b == e else e * bsv,  # the compute-dtype logits while the model upcasts them
        in_b * bsv,
        f"compiled CE: {in_b}·B·S·V input logits + per-row amax/logsumexp kept; one {in_b}·B·S·V "
        "gradient written by the fused backward",
    )

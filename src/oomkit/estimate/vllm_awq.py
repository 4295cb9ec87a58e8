"""vLLM's AWQ GEMM before PR #2566: the split-K output buffer of ``awq_gemm``.

Until vllm-project/vllm PR #2566 ("AWQ: Up to 2.66x higher throughput", reviewed 2024-01-31;
vLLM 0.2.x-0.3.0), ``AWQLinearMethod.apply_weights`` always called
``ops.awq_gemm(reshaped_x, qweight, scales, qzeros, pack_factor)``, and the CUDA op
(csrc/quantization/awq/gemm_kernels.cu, from llm-awq) allocates
``torch::empty({split_k_iters, num_in_feats, num_out_channels})`` with
``split_k_iters = pack_factor = 8``, writes one partial product per split and returns
``_out_feats.sum(0)``: 8 fp16 copies of the output live at once. PR #2566 dequantizes the
weight and runs ``torch.matmul`` once ``num_tokens >= 256``, so from then on a large batch
only holds the output (and one dequantized weight).

The profile run pushes ``max_num_batched_tokens`` tokens through every linear, so the peak
gains ``8 x tokens x N x 2`` bytes for the widest AWQ output ``N`` of a layer: the merged
``gate_up_proj`` (``2 x intermediate / tp``) of a dense model, or, for a quantized Mixtral,
one expert's ``w1``/``w3`` at full width: vLLM 0.2.5-0.2.7 ran every Mixtral checkpoint
through model_executor/models/mixtral.py's ``MixtralMoE`` loop, and from 0.3.0 a quantized one
as ``QuantMixtralForCausalLM`` (mixtral_quant.py, the same loop; "Special handling for
quantized Mixtral" in model_loader.py): the experts are ``ReplicatedLinear`` MLPs split across
ranks by expert (``np.array_split(range(num_experts), tp_size)[rank]``), each run over every
token (``expert_layer(hidden_states).mul_(expert_weights)``, the routing only weighting the
sum). In that loop ``w1_out = act_fn(w1_out)`` is alive while ``w3``'s split-K buffer is: the
allocated peak is the stream, the running sum, the previous expert's output, two ``T x i``
outputs and one split-K buffer (9.75 GiB at 32768 tokens for Mixtral-8x7B); the ``fused_moe``
workspaces that
:func:`~oomkit.estimate.hf_activations.forward_peak_bytes` adds (5.75 GiB) are not in this
code, but the caching allocator's reserve, which the 0.2.5-0.3.0 profile charges (``total -
free``), is larger than the allocated peak (6487 blocks on 2x A100-80GB at util 0.5, TP 2,
vllm#2382: about 21.7 GiB charged per rank above the weights, non-torch memory included, where
this sum gives 10.6), so the sum is kept as a lower bound of what that profile charges.
"""

from __future__ import annotations

from oomkit.spec.model import ModelSpec

__all__ = ["AWQ_SPLIT_K", "awq_split_k_bytes"]

#: ``split_k_iters`` vLLM passed to ``awq_gemm`` (``pack_factor``: eight 4-bit values per int32)
AWQ_SPLIT_K = 8


def awq_split_k_bytes(spec: ModelSpec, *, tokens: int, tp: int) -> int:
    """Bytes of ``awq_gemm``'s split-K buffer for the widest AWQ linear over ``tokens`` rows.

    >>> from oomkit.catalog.models import find_model
    >>> awq_split_k_bytes(find_model("mixtral-8x7b").spec(), tokens=32768, tp=2) // 2**20
    7168
    """
    tp = max(1, tp)
    widest_kv, head_dim, _ = spec.widest_attention()
    kv_heads = widest_kv or spec.num_attention_heads
    qkv = (spec.num_attention_heads + 2 * kv_heads) * head_dim // tp
    widths = [qkv]
    if spec.moe is not None:
        # QuantMixtral: each expert's w1 / w3 is a ReplicatedLinear of the full expert width
        widths.append(spec.moe.expert_intermediate_size)
    if spec.intermediate_size and (spec.moe is None or spec.moe.dense_layers):
        widths.append(2 * spec.intermediate_size // tp)  # merged gate_up_proj
    return AWQ_SPLIT_K * tokens * max(widths) * 2  # fp16 partial products

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
one expert's ``w1``/``w3`` at full width: vLLM of that date loaded quantized Mixtral as
``QuantMixtralForCausalLM`` (model_executor/models/mixtral_quant.py: "Special handling for
quantized Mixtral" in model_loader.py), whose experts are ``ReplicatedLinear`` MLPs split
across ranks by expert (``np.array_split(range(num_experts), tp_size)[rank]``), each run
over every token.
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
    head_dim = spec.head_dim
    kv_heads = spec.num_key_value_heads or spec.num_attention_heads
    qkv = (spec.num_attention_heads + 2 * kv_heads) * head_dim // tp
    widths = [qkv]
    if spec.moe is not None:
        # QuantMixtral: each expert's w1 / w3 is a ReplicatedLinear of the full expert width
        widths.append(spec.moe.expert_intermediate_size)
    if spec.intermediate_size and (spec.moe is None or spec.moe.dense_layers):
        widths.append(2 * spec.intermediate_size // tp)  # merged gate_up_proj
    return AWQ_SPLIT_K * tokens * max(widths) * 2  # fp16 partial products

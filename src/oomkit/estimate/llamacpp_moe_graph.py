"""The MoE half of llama.cpp's reserve graph (:func:`oomkit.estimate.llamacpp_compute.build_graph`).

Today's ``build_moe_ffn`` (one ``mul_mat_id`` over every selected expert) and the per-slot loop
of builds before PR #6505 (April 2024).
"""

from __future__ import annotations

from oomkit.estimate.llamacpp_cuda_fusion import (
    keep_reduction,
    keep_topk_moe,
    reduction_fuses,
    topk_moe_fuses,
)
from oomkit.estimate.llamacpp_galloc import GraphSim
from oomkit.spec.model import ModelSpec

__all__ = ["F32", "I32", "moe_graph"]

F32 = 4
I32 = 4

#: builders that normalise the selected experts' weights (``norm_w``: GGUF
#: ``expert_weights_norm``; DeepSeek-V2's ``norm_topk_prob`` is false, so it does not)
_NORM_W = frozenset({"mixtral", "qwen3_moe", "qwen2_moe"})


def moe_graph(
    g: GraphSim,
    spec: ModelSpec,
    x: int,
    T: int,
    fusion_deps: bool = False,
    *,
    slot_loop: bool = False,
) -> int:
    """build_moe_ffn: router, top-k, expert matmuls (mul_mat_id), weighting, sum over experts.

    Nodes in the order ``ggml_build_forward_expand`` puts them (src/llama-graph.cpp
    build_moe_ffn: the reshapes are views). ``fusion_deps``: the CUDA backend's allocation
    dependencies for its fused MoE kernels (:mod:`oomkit.estimate.llamacpp_cuda_fusion`).
    ``slot_loop``: the graph of builds before PR #6505 (:func:`_moe_slot_loop`).
    """
    moe = spec.moe
    assert moe is not None
    E = spec.hidden_size
    n_exp, n_used, ff = moe.num_experts, moe.num_experts_per_tok, moe.expert_intermediate_size
    logits = g.op("ffn_moe_logits", n_exp * T * F32, x)
    if moe.router_bias:
        logits = g.op("ffn_moe_logits_b", n_exp * T * F32, logits, inplace=True)
    first = len(g.nodes)  # the gating op: where ggml-cuda's top-k MoE fusion starts
    probs = g.op("ffn_moe_probs", n_exp * T * F32, logits, inplace=True)
    probs_3d = g.view(probs, "probs_3d")
    argsort = g.op("ffn_moe_argsort", n_exp * T * I32, probs)
    selected = g.view(argsort, "ffn_moe_topk")
    # routing weights are gathered right after top-k (build_moe_ffn expands them first)
    weights = g.op("ffn_moe_weights", n_used * T * F32, probs_3d, selected)
    if spec.model_type == "gpt_oss":  # softmax over the selected experts' logits
        weights = g.op("ffn_moe_weights_softmax", n_used * T * F32, weights, inplace=True)
    elif spec.model_type in _NORM_W:
        # the 2d/3d reshapes around the division are left out: ggml-alloc lets the DIV reuse
        # get_rows' memory through its single reshape, which the simulation does not follow
        wsum = g.op("ffn_moe_weights_sum", T * F32, weights)
        wsum = g.op("ffn_moe_weights_sum_clamped", T * F32, wsum, inplace=True)
        weights = g.op("ffn_moe_weights_norm", n_used * T * F32, weights, wsum, inplace=True)
    if slot_loop:
        return _moe_slot_loop(g, spec, x, T, selected, weights)
    if fusion_deps and topk_moe_fuses(spec):
        keep_topk_moe(g, first)
    x3 = g.view(x, "cur_3d")
    gate = g.op("ffn_moe_gate", ff * n_used * T * F32, x3, selected)
    up = g.op("ffn_moe_up", ff * n_used * T * F32, x3, selected)
    if moe.expert_bias:
        gate = g.op("ffn_moe_gate_b", ff * n_used * T * F32, gate, selected, inplace=True)
        up = g.op("ffn_moe_up_b", ff * n_used * T * F32, up, selected, inplace=True)
    h = g.op("ffn_moe_glu", ff * n_used * T * F32, gate, up)
    experts = g.op("ffn_moe_down", E * n_used * T * F32, h, selected)
    if moe.expert_bias:
        experts = g.op("ffn_moe_down_b", E * n_used * T * F32, experts, selected, inplace=True)
    weighted = g.op("ffn_moe_weighted", E * n_used * T * F32, experts, weights, inplace=True)
    views = [g.view(weighted, f"expert_{i}") for i in range(n_used)]
    out = views[0]
    for i in range(1, n_used):
        out = g.op("ffn_moe_out", E * T * F32, out, views[i], inplace=True)
    if fusion_deps and reduction_fuses(n_used):
        keep_reduction(g, experts, weights)
    if n_used == 1:
        out = g.op("ffn_moe_out_cont", E * T * F32, out)
    return out


def _moe_slot_loop(
    g: GraphSim, spec: ModelSpec, x: int, T: int, selected: int, weights: int
) -> int:
    """The expert half of the MoE graph before PR #6505 (ggml-org/llama.cpp, "ggml : group all
    experts in a single ggml_mul_mat_id", opened 2024-03-29; the old loop is still in the
    llama.cpp vendored by llama-cpp-python 0.2.62 of 2024-04-18 and gone in 0.2.63 of
    2024-04-20): ``for (int i = 0; i < n_expert_used; ++i)`` one ``ggml_mul_mat_id(..., i,
    cur)`` each for up and gate (``n_ff x n_tokens``), silu, ``mul(cur_up, gate)``, down,
    ``mul`` by the slot's weight column, ``add`` into ``moe_out`` (llama.cpp of llama-cpp-python
    0.2.24, vendor/llama.cpp/llama.cpp lines 4406-4435, ``build_llama``'s MoE branch; 0.2.62's
    ``build_moe_ffn``). A slot's tensors are freed before the next slot's, so the peak holds
    one slot's ``n_ff x n_tokens`` pair where today's graph holds all ``n_expert_used``."""
    moe = spec.moe
    assert moe is not None
    E, ff = spec.hidden_size, moe.expert_intermediate_size
    out = -1
    for i in range(moe.num_experts_per_tok):
        up = g.op("ffn_moe_up", ff * T * F32, x, selected)
        gate = g.op("ffn_moe_gate", ff * T * F32, x, selected)
        gate = g.op("ffn_moe_silu", ff * T * F32, gate, inplace=True)
        h = g.op("ffn_moe_gate_par", ff * T * F32, up, gate, inplace=True)
        y = g.op("ffn_moe_down", E * T * F32, h, selected)
        y = g.op("ffn_moe_weighted", E * T * F32, y, g.view(weights, f"w_{i}"), inplace=True)
        out = y if i == 0 else g.op("ffn_moe_out", E * T * F32, out, y, inplace=True)
    return out

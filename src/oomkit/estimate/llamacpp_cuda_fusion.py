"""The CUDA backend's allocation dependencies for its fused MoE kernels.

Since PR #27301 (``ggml: allow passing alloc dependencies in graph_optimize``) a backend's
``graph_optimize`` may ask the scheduler to keep a tensor allocated until a later node has run,
so that a fused kernel can read inputs the allocator would otherwise have handed to the
intermediate tensors it skips. ``ggml_backend_cuda_graph_optimize`` (ggml/src/ggml-cuda/
ggml-cuda.cu, lines 4522-4600 of the llama.cpp tree llama-cpp-python 0.3.36 vendors, upstream
commit 0c1e57098) asks for two, and a MoE layer's compute buffer on CUDA (and HIP, built from
the same sources) is larger for them than on the CPU backend:

* the MoE weighted expert reduction (PR #25952, commit 3466812d, 2026-09):
  ``ggml_cuda_match_moe_weighted_reduction`` (ggml-cuda.cu 3036-3173) matches
  ``MUL(experts, weights)``, its ``n_expert_used`` views and the ADD chain of
  ``build_moe_ffn`` (src/llama-graph.cpp 2334-2363), for 2 <= n_expert_used <= 15
  (``MOE_WEIGHTED_REDUCTION_MAX_EXPERTS``: ``ggml_can_fuse_subgraph`` takes < 32 nodes), and
  keeps ``experts`` and ``weights`` until the last ADD. With that second consumer the MUL can
  no longer run in place on ``experts`` (ggml-alloc reuses a parent only when it has one
  consumer): the weighted copy is a second ``n_embd x n_expert_used x n_tokens`` f32 tensor,
  live together with the expert outputs until the sum is done;
* the top-k router fusion (``ggml_cuda_topk_moe_fusion``, ggml-cuda.cu 2813-2965): for a
  SOFT_MAX, RESHAPE, ARGSORT, VIEW, GET_ROWS group (plus RESHAPE, SUM_ROWS, CLAMP, DIV, RESHAPE
  when the weights are normalised) that ``ggml_cuda_should_use_topk_moe`` accepts (topk-moe.cu
  403-412: a power-of-two expert count up to 512, or 288, 576), ``add_alloc_deps(i, i +
  ops.size())`` keeps every node of the group and every source of one until the node after
  the group, so the softmax no longer overwrites the router logits either.

``ggml_backend_sched_split_graph`` (ggml/src/ggml-backend.cpp 1458-1561) turns each dependency
into ``GGML_OP_NONE`` nodes right after the ``until`` node, with up to ``GGML_MAX_SRC`` kept
tensors as sources; ggml-alloc counts them as consumers but not as views (ggml-alloc.c
736-739). :meth:`oomkit.estimate.llamacpp_galloc.GraphSim.keep_alive` adds those nodes.

Measured: llama.cpp built with CUDA on an H100 (benchmarks/gpu/results/llamacpp_h100.json),
CUDA0 compute buffer at n_ubatch 512: DeepSeek-V2-Lite 260.39 MiB (236.26 without the
dependencies, 260.26 with the reduction's alone), Qwen3-30B-A3B 341.54 MiB (300.75; 341.27);
with both, the simulation gives 260.39 and 341.54. A fork's report of PR #25952
(GenerelSchwerz/llama.cpp issue #80) measured +512.53 MiB for Qwen3.6-35B-A3B at n_ubatch 8192:
2048 x 8 x 8192 x 4 bytes is 512 MiB. Vulkan (PR #28422) and Metal (PR #28948) add
dependencies of their own that are not modelled; nor is the top-k fusion of sigmoid routers
with a selection bias (DeepSeek-V3, GLM-4.5), whose router this graph does not build node by
node.
"""

from __future__ import annotations

from oomkit.estimate.llamacpp_galloc import GraphSim
from oomkit.spec.model import ModelSpec

__all__ = [
    "GGML_CUDA_BACKENDS",
    "MOE_WEIGHTED_REDUCTION_MAX_EXPERTS",
    "keep_reduction",
    "keep_topk_moe",
    "reduction_fuses",
    "topk_moe_fuses",
]

#: backends built from ggml/src/ggml-cuda (ggml-hip compiles the same sources)
GGML_CUDA_BACKENDS = frozenset({"cuda", "rocm"})
#: ggml-cuda.cu MOE_WEIGHTED_REDUCTION_MAX_EXPERTS: the reduction spans 2 * n_expert_used nodes
MOE_WEIGHTED_REDUCTION_MAX_EXPERTS = 15


def reduction_fuses(n_expert_used: int) -> bool:
    """Whether ``ggml_cuda_match_moe_weighted_reduction`` takes a sum over this many experts."""
    return 2 <= n_expert_used <= MOE_WEIGHTED_REDUCTION_MAX_EXPERTS


def topk_moe_fuses(spec: ModelSpec) -> bool:
    """Whether the top-k router fusion matches the router as this graph builds it (softmax
    gating without a router bias or selection bias; gpt-oss's delayed softmax fuses but adds
    no dependency)."""
    moe = spec.moe
    assert moe is not None
    n = moe.num_experts
    if spec.model_type == "gpt_oss" or moe.score_correction_bias or moe.router_bias:
        return False
    return (n & (n - 1) == 0 and n <= 512) or n in (288, 576)


def keep_topk_moe(g: GraphSim, first: int) -> None:
    """``add_alloc_deps(first, first + group size)``: the nodes from ``first`` to the last one
    added and their sources stay allocated until the next node added has run."""
    keep: list[int] = []
    for k in range(first, len(g.nodes)):
        for t in (k, *g.nodes[k].srcs):
            if t not in keep:
                keep.append(t)
    g.keep_until_next(keep)


def keep_reduction(g: GraphSim, experts: int, weights: int) -> None:
    """``add_alloc_dep(experts, dst)`` and ``add_alloc_dep(weights, dst)``, called right after
    ``dst``, the last ADD of the expert sum, was added."""
    g.keep_alive([experts, weights])

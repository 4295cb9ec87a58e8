"""The CUDA backend's allocation dependencies for its fused MoE kernels.

``ggml_backend_cuda_graph_optimize`` (ggml/src/ggml-cuda/ggml-cuda.cu, llama.cpp vendored by
llama-cpp-python 0.3.36) calls ``add_alloc_dep`` for the top-k router fusion and the MoE
weighted expert reduction; ``ggml_backend_sched_split_graph`` turns each into GGML_OP_NONE
nodes after the ``until`` node. These tests run the real graph builder and allocator
simulation on catalog specs; the H100 figures are in tests/test_gpu_results.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from oomkit.catalog.models import search_models
from oomkit.estimate.generations import llamacpp_options
from oomkit.estimate.llamacpp import estimate_llamacpp
from oomkit.estimate.llamacpp_compute import GraphShape, backend_graph_shape, build_graph
from oomkit.estimate.llamacpp_cuda_fusion import MOE_WEIGHTED_REDUCTION_MAX_EXPERTS
from oomkit.estimate.llamacpp_galloc import GGML_MAX_SRC, GraphSim, simulate_gallocr
from oomkit.estimate.llamacpp_params import LlamaCppOptions, resolve_llamacpp_params
from oomkit.estimate.llamacpp_stack import stack_compute_bytes
from oomkit.hardware.catalog import find_gpu_by_nvml_name
from oomkit.hardware.targets import hardware_for
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

SH = GraphShape(n_tokens=512, n_outputs=512, n_stream=1, n_kv=8192, n_kv_swa=None, flash_attn=True)
DEPS = dataclasses.replace(SH, moe_fusion_deps=True)


def _spec(key: str) -> ModelSpec:
    entry = next(e for e in search_models(key) if e.key == key)
    return entry.spec()


def _chain(dep: bool) -> int:
    """x -> experts -> weighted (in place) -> out, with experts kept until ``out`` or not."""
    g = GraphSim()
    x = g.inp("x", 1024)
    experts = g.op("experts", 4096, x)
    weighted = g.op("weighted", 4096, experts, inplace=True)
    g.op("out", 1024, weighted)
    if dep:
        g.keep_alive([experts])
    return simulate_gallocr(g, 32)


def test_a_kept_tensor_blocks_the_in_place_reuse() -> None:
    # without the dependency the MUL reuses experts and out takes x's freed block: 1024 + 4096;
    # with it the weighted copy is a second 4096-byte tensor at the tail
    assert _chain(False) == 1024 + 4096
    assert _chain(True) == 1024 + 4096 + 4096


def test_keep_until_next_places_the_dependency_after_the_next_node() -> None:
    g = GraphSim()
    a = g.inp("a", 64)
    b = g.op("b", 64, a)
    g.keep_until_next([a, b])
    nxt = g.op("next", 64, b)
    assert [n.name for n in g.nodes[nxt:]] == ["next", "alloc_dep"]
    assert g.nodes[nxt + 1].srcs == (a, b)
    many = list(range(GGML_MAX_SRC + 3))
    g.keep_alive(many)  # GGML_MAX_SRC sources per dependency node
    assert [len(n.srcs) for n in g.nodes[-2:]] == [GGML_MAX_SRC, 3]


def _deps(g: GraphSim) -> list[tuple[str, tuple[str, ...]]]:
    """(name of the node before, names of the kept tensors) of every dependency node."""
    out = []
    for i, n in enumerate(g.nodes):
        if n.name == "alloc_dep":
            prev = next(
                g.nodes[j].name for j in range(i - 1, -1, -1) if g.nodes[j].name != "alloc_dep"
            )
            out.append((prev, tuple(g.nodes[s].name for s in n.srcs)))
    return out


def test_qwen3_moe_layer_gets_both_dependencies() -> None:
    spec = _spec("qwen3-30b-a3b")
    assert _deps(build_graph(spec, SH, layers=[0, 1])) == []
    deps = _deps(build_graph(spec, DEPS, layers=[0, 1]))
    topk = [d for d in deps if d[0] == "cur_3d"]
    reduction = [d for d in deps if d[0] == "ffn_moe_out"]
    assert len(reduction) == 2  # one per MoE layer, after the last ADD of the expert sum
    assert all(d[1] == ("ffn_moe_down", "ffn_moe_weights_norm") for d in reduction)
    # the top-k group, softmax through the weight normalisation, and its sources (the router
    # logits among them) stay until the node after the group
    kept = {name for d in topk for name in d[1]}
    assert {"ffn_moe_logits", "ffn_moe_probs", "ffn_moe_argsort", "ffn_moe_weights"} <= kept
    assert {"ffn_moe_weights_sum", "ffn_moe_weights_norm", "ffn_moe_topk"} <= kept


def _moe_variant(spec: ModelSpec, **moe: int) -> ModelSpec:
    assert spec.moe is not None
    return dataclasses.replace(spec, moe=dataclasses.replace(spec.moe, **moe))


def test_fusion_conditions() -> None:
    spec = _spec("qwen3-30b-a3b")

    def kinds(s: ModelSpec) -> set[str]:
        return {prev for prev, _ in _deps(build_graph(s, DEPS, layers=[0]))}

    assert kinds(spec) == {"cur_3d", "ffn_moe_out"}
    # one expert per token: no ADD chain to fuse (n_expert_used >= 2)
    assert kinds(_moe_variant(spec, num_experts_per_tok=1)) == {"cur_3d"}
    # ggml_can_fuse_subgraph takes < 32 nodes: k <= 15
    k = MOE_WEIGHTED_REDUCTION_MAX_EXPERTS
    assert kinds(_moe_variant(spec, num_experts_per_tok=k)) == {"cur_3d", "ffn_moe_out"}
    assert kinds(_moe_variant(spec, num_experts_per_tok=k + 1)) == {"cur_3d"}
    # the top-k kernel is instantiated for power-of-two expert counts (and 288, 576)
    assert kinds(_moe_variant(spec, num_experts=96)) == {"ffn_moe_out"}
    assert kinds(_moe_variant(spec, num_experts=288)) == {"cur_3d", "ffn_moe_out"}
    # gpt-oss: the delayed-softmax top-k fusion adds no dependency
    assert kinds(_spec("gpt-oss-20b")) == {"ffn_moe_out"}


def test_dense_graphs_are_unchanged() -> None:
    spec = _spec("llama-3.1-8b")
    assert build_graph(spec, DEPS).nodes == build_graph(spec, SH).nodes


@pytest.mark.parametrize(
    ("key", "grows"),
    # Mixtral's peak is its 14336-wide expert FFN, before the expert sum: no change there
    [("qwen3-30b-a3b", True), ("deepseek-v2-lite", True), ("mixtral-8x7b", False)],
)
def test_stack_shortcut_matches_the_full_graph_with_dependencies(key: str, grows: bool) -> None:
    spec = _spec(key)
    layers = list(range(spec.num_hidden_layers))
    full = simulate_gallocr(build_graph(spec, DEPS, with_input=False), 128)
    got, _ = stack_compute_bytes(
        spec, DEPS, layers=layers, with_input=False, with_output=True, alignment=128
    )
    assert got == full
    without = stack_compute_bytes(
        spec, SH, layers=layers, with_input=False, with_output=True, alignment=128
    )[0]
    assert (got > without) is grows
    assert got >= without


def test_only_cuda_and_hip_graphs_and_builds_from_pr_25952() -> None:
    settings = InferenceSettings(runtime="llama.cpp", ctx=8192)
    params = resolve_llamacpp_params(settings, n_layer=48, has_gpu=True)
    for backend, want in (("cuda", True), ("rocm", True), ("metal", False), ("vulkan", False)):
        assert backend_graph_shape(SH, params, backend).moe_fusion_deps is want
    old = dataclasses.replace(params, options=LlamaCppOptions(cuda_moe_fusion_deps=False))
    assert backend_graph_shape(SH, old, "cuda").moe_fusion_deps is False
    before = llamacpp_options("2026-08-31", None)
    after = llamacpp_options("2026-09-02", None)
    assert isinstance(before, LlamaCppOptions)
    assert isinstance(after, LlamaCppOptions)
    assert (before.cuda_moe_fusion_deps, after.cuda_moe_fusion_deps) == (False, True)


def test_estimate_on_the_h100_before_and_after_the_change() -> None:
    """DeepSeek-V2-Lite Q4_K_M, 8k, all layers on an H100: today's build adds the weighted copy
    of the expert outputs (2048 x 6 x 512 x 4 bytes = 24 MiB) to the CUDA0 compute buffer; a
    build of 2026-08 does not."""
    h100 = find_gpu_by_nvml_name("NVIDIA H100 80GB HBM3", 85017493504)
    assert h100 is not None
    hw = hardware_for((h100,))
    spec = _spec("deepseek-v2-lite")

    def compute(version: str | None) -> int:
        s = InferenceSettings(
            runtime="llama.cpp", ctx=8192, flash_attn=True, n_gpu_layers=99, runtime_version=version
        )
        b = estimate_llamacpp(spec, s, hw).runtime_details["buffers"]
        assert isinstance(b, dict)
        return int(b["compute"]["CUDA0"])

    now, before = compute(None), compute("2026-08-31")
    assert now - before == pytest.approx(2048 * 6 * 512 * 4, abs=1 << 20)


def _real_allocator() -> Any:
    """benchmarks/oracle/ggml_alloc_replay.py, when a libggml-base is at hand (GGML_BASE_LIB or
    llama-cpp-python's), else skip."""
    import importlib.util
    import os
    import sys
    from pathlib import Path

    if not os.environ.get("GGML_BASE_LIB") and importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("no libggml-base: set GGML_BASE_LIB or install llama-cpp-python")
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks" / "oracle"))
    import ggml_alloc_replay

    return ggml_alloc_replay


@pytest.mark.parametrize("key", ["qwen3-30b-a3b", "deepseek-v2-lite", "granite-4.0-h-tiny"])
def test_dependency_nodes_replay_through_the_real_allocator(key: str) -> None:
    """The graph with its GGML_OP_NONE dependency nodes through ggml's own
    ``ggml_gallocr_reserve`` (CPU buffer type, 32-byte alignment) reserves exactly what the
    simulation reaches (run with ggml-base built from the llama.cpp tree of llama-cpp-python
    0.3.36)."""
    replay = _real_allocator()
    spec = _spec(key)
    g = build_graph(spec, DEPS, with_input=False)
    assert any(n.name == "alloc_dep" for n in g.nodes)
    assert replay.real_gallocr_bytes(g) == simulate_gallocr(g, 32)

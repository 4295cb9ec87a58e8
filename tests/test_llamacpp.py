"""llama.cpp estimator: placement rules, allocator simulation, invariants and error cases."""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomkit.catalog.models import find_model
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import CATEGORIES, Estimate
from oomkit.estimate.llamacpp import estimate_llamacpp, llamacpp_view
from oomkit.estimate.llamacpp_galloc import GraphSim, simulate_gallocr
from oomkit.estimate.llamacpp_placement import layer_devices
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import LAYER_FULL, ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB


@cache
def _spec(key: str) -> ModelSpec:
    return find_model(key).spec()


GPU = DeviceTarget(name="RTX 4090", capacity_bytes=24 * GiB)


def _est(key: str = "llama-3.2-1b", hw: Hardware | None = None, **kw: object) -> Estimate:
    base: dict[str, object] = {"quant": "Q4_K_M", "ctx": 4096}
    base.update(kw)
    return estimate_llamacpp(
        _spec(key),
        InferenceSettings(**base),
        hw or Hardware(devices=(GPU,)),  # type: ignore[arg-type]
    )


def _buffers(est: Estimate) -> dict[str, dict[str, int]]:
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    return b


# --- a real log: lcpp-bllossom8b-q4km-rtx3070-ctx512 (llama-cpp-python, Llama-3-8B Q4_K_M,
# n_ctx 512, FA off, 33/33 layers on an RTX 3070); measured_dev.jsonl in the validation set
def test_full_offload_matches_real_llamacpp_log() -> None:
    est = _est(
        "llama-3-8b",
        Hardware(devices=(DeviceTarget(name="RTX 3070", capacity_bytes=8 * GiB),)),
        ctx=512,
        flash_attn=False,
        batch_size=512,
    )
    b = _buffers(est)
    assert round(b["model"]["CUDA0"] / MiB, 2) == 4403.49
    assert round(b["model"]["CPU_Mapped"] / MiB, 2) == 281.81  # token_embd stays on the CPU
    assert b["kv"]["CUDA0"] == 64 * MiB
    assert round(b["compute"]["CUDA0"] / MiB, 2) == 258.50
    assert round(b["output"]["CUDA_Host"] / MiB, 2) == 0.49
    assert est.runtime_details["offloaded_layers"] == "33/33"


def test_ngl_counts_the_output_layer_last() -> None:
    n_layer = 16
    per_layer, n_off = layer_devices(n_layer, n_layer, (GPU,), None)
    assert n_off == n_layer
    assert per_layer[n_layer] is None  # -ngl n_layer keeps the output layer on the CPU
    per_layer, n_off = layer_devices(n_layer, n_layer + 1, (GPU,), None)
    assert per_layer[n_layer] == 0
    per_layer, _ = layer_devices(n_layer, 4, (GPU,), None)
    assert per_layer[:12] == (None,) * 12  # the last layers are offloaded first
    assert per_layer[12:16] == (0,) * 4


def test_tensor_split_spreads_layers() -> None:
    g2 = (GPU, dataclasses.replace(GPU, name="second"))
    per_layer, _ = layer_devices(32, 33, g2, (1.0, 1.0))
    assert per_layer.count(0) == 17 or per_layer.count(1) == 17
    per_layer, _ = layer_devices(32, 33, g2, (3.0, 1.0))
    assert per_layer.count(0) > 2 * per_layer.count(1)


def test_partial_offload_moves_weights_and_kv_to_host() -> None:
    full = _buffers(_est(n_gpu_layers=17))
    part = _buffers(_est(n_gpu_layers=8))
    assert part["model"]["CUDA0"] < full["model"]["CUDA0"]
    assert part["kv"]["CPU"] == part["kv"]["CUDA0"]  # 8 of 16 layers each
    assert "CUDA0" in part["compute"]
    assert "CUDA_Host" in part["compute"]


def test_tied_output_is_duplicated_onto_the_gpu() -> None:
    b = _buffers(_est())
    # Llama-3.2-1B ties embeddings: token_embd on the CPU and again as output on the GPU
    assert b["model"]["CUDA0"] > b["model"]["CPU_Mapped"]
    cpu_only = _buffers(_est(hw=Hardware()))
    assert "CUDA0" not in cpu_only["model"]


def test_n_cpu_moe_keeps_experts_on_cpu() -> None:
    all_gpu = _buffers(_est("qwen3-30b-a3b"))
    some_cpu = _buffers(_est("qwen3-30b-a3b", n_cpu_moe=24))
    moved = all_gpu["model"]["CUDA0"] - some_cpu["model"]["CUDA0"]
    assert moved > 6 * GiB
    assert some_cpu["kv"]["CUDA0"] == all_gpu["kv"]["CUDA0"]  # attention stays on the GPU


def test_no_mmap_uses_pinned_host_buffer() -> None:
    b = _buffers(_est(n_gpu_layers=8, mmap=False))
    assert "CUDA_Host" in b["model"]
    assert "CPU_Mapped" not in b["model"]


def test_swa_ignored_where_llamacpp_has_no_swa() -> None:
    phi = _spec("phi-3-mini-4k")
    assert set(llamacpp_view(phi).layer_types) == {LAYER_FULL}
    gemma = _spec("gemma-2-9b")
    assert llamacpp_view(gemma) is gemma


def test_swa_cache_is_smaller_than_full_for_gemma() -> None:
    reduced = _buffers(_est("gemma-2-9b", ctx=32768, swa_full=False))
    full = _buffers(_est("gemma-2-9b", ctx=32768, swa_full=True))
    assert reduced["kv"]["CUDA0"] < 0.6 * full["kv"]["CUDA0"]


def test_errors_are_explicit() -> None:
    with pytest.raises(InvalidSettingError, match="flash"):
        _est(cache_type_v="q4_0", flash_attn=False)
    with pytest.raises(InvalidSettingError, match="MLA"):
        _est("deepseek-v2-lite", cache_type_k="q8_0", cache_type_v="f16")
    with pytest.raises(InvalidSettingError, match="cache type"):
        _est(cache_type_k="q3_k")


def test_components_explain_themselves() -> None:
    est = _est("gemma-3-1b", hw=Hardware(devices=(GPU, GPU)), ctx=8192)
    for _dev, comp in est.components():
        assert comp.formula
        assert comp.source
        assert comp.category in CATEGORIES
    assert any("compute buffer" in c.label for _d, c in est.components())


def test_overhead_default_and_override() -> None:
    n, why = cuda_context_bytes("llama.cpp", GPU)
    assert n == 300 * MiB
    assert "CUDA" in why
    assert cuda_context_bytes("ollama", GPU)[0] == 457 * MiB
    hopper = dataclasses.replace(GPU, architecture="hopper")
    assert cuda_context_bytes("llama.cpp", hopper)[0] == 600 * MiB
    est = _est(overhead_bytes=123 * MiB)
    assert est.devices[0].overhead_bytes == 123 * MiB


# --- ggml-alloc simulation
def test_galloc_inplace_chain_reuses_one_block() -> None:
    g = GraphSim()
    x = g.inp("x", 1024)
    a = g.op("a", 4096, x)
    b = g.op("b", 4096, a, inplace=True)
    c = g.op("c", 4096, b, inplace=True)
    g.nodes[c].is_output = True
    assert simulate_gallocr(g, 32) == 1024 + 4096


def test_galloc_frees_after_last_use_and_best_fits() -> None:
    g = GraphSim()
    a = g.op("a", 1000)
    b = g.op("b", 3000, a)  # a freed after b is allocated: hole of 1024 at the start
    c = g.op("c", 800, b)  # fits the hole
    g.nodes[c].is_output = True
    # a at 0 (1024 aligned), b at 1024 (3008), c reuses the first hole
    assert simulate_gallocr(g, 32) == 1024 + 3008


def test_galloc_outputs_are_never_freed() -> None:
    g = GraphSim()
    a = g.op("a", 1024)
    g.nodes[a].is_output = True
    b = g.op("b", 1024, a)
    g.nodes[b].is_output = True
    c = g.op("c", 1024)
    g.nodes[c].is_output = True
    assert simulate_gallocr(g, 32) == 3 * 1024


# --- invariants (hypothesis)
CTX = st.sampled_from([512, 2048, 4096, 8192, 16384])
UB = st.sampled_from([64, 128, 256, 512, 1024])
KV_ORDER = ["q4_0", "q5_1", "q8_0", "f16", "f32"]


@settings(max_examples=15, deadline=None)
@given(ctx=CTX, ub=UB, fa=st.booleans())
def test_more_context_never_needs_less(ctx: int, ub: int, fa: bool) -> None:
    small = _est(ctx=ctx, ubatch=ub, batch_size=max(ub, 512), flash_attn=fa)
    big = _est(ctx=ctx * 2, ubatch=ub, batch_size=max(ub, 512), flash_attn=fa)
    for d_small, d_big in zip(small.devices, big.devices, strict=True):
        assert d_big.total_bytes >= d_small.total_bytes
        assert d_big.kv_cache_bytes >= d_small.kv_cache_bytes


@settings(max_examples=15, deadline=None)
@given(ctx=CTX, ub=UB, fa=st.booleans())
def test_bigger_batch_never_needs_less(ctx: int, ub: int, fa: bool) -> None:
    small = _est(ctx=ctx, ubatch=ub, batch_size=2048, flash_attn=fa)
    big = _est(ctx=ctx, ubatch=2 * ub, batch_size=2048, flash_attn=fa)
    assert big.devices[0].activations_bytes >= small.devices[0].activations_bytes
    assert big.total_bytes >= small.total_bytes


@settings(max_examples=10, deadline=None)
@given(ctx=CTX, i=st.integers(min_value=0, max_value=len(KV_ORDER) - 2))
def test_more_kv_bits_never_need_less(ctx: int, i: int) -> None:
    lo = _est(ctx=ctx, cache_type_k=KV_ORDER[i], cache_type_v=KV_ORDER[i], flash_attn=True)
    hi = _est(ctx=ctx, cache_type_k=KV_ORDER[i + 1], cache_type_v=KV_ORDER[i + 1], flash_attn=True)
    assert hi.devices[0].kv_cache_bytes >= lo.devices[0].kv_cache_bytes


@settings(max_examples=10, deadline=None)
@given(ngl=st.integers(min_value=0, max_value=16))
def test_more_layers_on_gpu_never_need_less_gpu_memory(ngl: int) -> None:
    lo = _est(n_gpu_layers=ngl)
    hi = _est(n_gpu_layers=ngl + 1)
    assert hi.devices[0].weights_bytes >= lo.devices[0].weights_bytes
    assert hi.devices[0].kv_cache_bytes >= lo.devices[0].kv_cache_bytes


@settings(max_examples=15, deadline=None)
@given(ctx=CTX, ub=UB, key=st.sampled_from(["llama-3.2-1b", "qwen2.5-0.5b", "gemma-3-1b"]))
def test_flash_attention_never_needs_more_compute(ctx: int, ub: int, key: str) -> None:
    on = _est(key, ctx=ctx, ubatch=ub, batch_size=2048, flash_attn=True)
    off = _est(key, ctx=ctx, ubatch=ub, batch_size=2048, flash_attn=False)
    assert on.devices[0].activations_bytes <= off.devices[0].activations_bytes


@settings(max_examples=10, deadline=None)
@given(ngl=st.integers(min_value=0, max_value=17), ctx=CTX, n_gpu=st.integers(1, 3))
def test_device_totals_are_sums_of_parts(ngl: int, ctx: int, n_gpu: int) -> None:
    est = _est(hw=Hardware(devices=(GPU,) * n_gpu), n_gpu_layers=ngl, ctx=ctx)
    for dev in (*est.devices, est.host):
        assert dev.total_bytes == sum(dev.category_bytes(c) for c in CATEGORIES)
        assert dev.total_bytes == sum(c.n_bytes for c in dev.components)
    details = est.runtime_details["devices"]
    assert isinstance(details, dict)
    for dev in est.devices:
        d = details[dev.device]
        assert dev.weights_bytes == d["model_buffer_bytes"]
        assert dev.kv_cache_bytes == d["kv_buffer_bytes"] + d["rs_buffer_bytes"]
        assert dev.activations_bytes == d["compute_buffer_bytes"]


def test_row_split_spreads_matrices_keeps_kv_on_main_gpu() -> None:
    """Builds before llama.cpp PR #10026 (2024-10-30): -sm row keeps every layer on the main
    GPU; only the layers' matrices spread their rows."""
    g2 = Hardware(devices=(GPU, GPU))
    row = _est("llama-3.1-8b", g2, split_mode="row", runtime_version="b3900")
    layer = _est("llama-3.1-8b", g2, runtime_version="b3900")
    b = _buffers(row)
    assert b["model"]["CUDA_Split:0"] == b["model"]["CUDA_Split:1"]
    assert set(b["kv"]) == {"CUDA0"}  # every layer belongs to the main GPU
    # the same weights in total, spread differently
    total_row = sum(v for k, v in b["model"].items() if k != "CPU_Mapped")
    total_layer = sum(v for k, v in _buffers(layer)["model"].items() if k != "CPU_Mapped")
    assert abs(total_row - total_layer) < 0.001 * total_layer


def test_row_split_places_layers_and_kv_by_build() -> None:
    """llama.cpp PR #10026 (commit c5b0f4b, 2024-10-30): with -sm row each layer, its KV cache
    and its compute go to the GPU --tensor-split picks, as with -sm layer; its matrices still
    spread their rows over both GPUs. No pipeline parallelism with -sm row (llama-context.cpp:
    only LLAMA_SPLIT_MODE_LAYER), so no 4 copies of the graph inputs."""
    g2 = Hardware(devices=(GPU, GPU))
    old = _buffers(_est("llama-3.1-8b", g2, split_mode="row", runtime_version="b3900"))
    new_est = _est("llama-3.1-8b", g2, split_mode="row", runtime_version="b4500")
    new = _buffers(new_est)
    layer = _buffers(_est("llama-3.1-8b", g2, runtime_version="b4500"))
    assert set(new["kv"]) == {"CUDA0", "CUDA1"}
    assert new["kv"] == layer["kv"]  # the KV follows the layers, as with -sm layer
    assert sum(new["kv"].values()) == old["kv"]["CUDA0"]
    # rows of every layer matrix still half on each GPU, the same bytes as before the PR
    assert new["model"]["CUDA_Split:0"] == new["model"]["CUDA_Split:1"]
    assert new["model"]["CUDA_Split:0"] == old["model"]["CUDA_Split:0"]
    assert not any("pipeline parallelism" in a for a in new_est.assumptions)
    # no version: the newest build, the PR's placement
    assert _buffers(_est("llama-3.1-8b", g2, split_mode="row"))["kv"] == new["kv"]

"""vLLM, SGLang and transformers estimators: mechanism checks and monotonic laws."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomkit.catalog.models import find_model
from oomkit.errors import UnknownNameError
from oomkit.estimate.hf_activations import forward_peak_bytes, padded_vocab, sampler_peak_bytes
from oomkit.estimate.hf_kv import kv_bytes, kv_layers
from oomkit.estimate.sglang import default_mem_fraction_static, estimate_sglang
from oomkit.estimate.transformers import estimate_transformers
from oomkit.estimate.vllm import estimate_vllm, plan_vllm
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

LLAMA8 = find_model("llama-3.1-8b").spec()
H100 = DeviceTarget(name="NVIDIA H100 80GB HBM3", capacity_bytes=81559 * MiB)
RTX3090 = DeviceTarget(name="RTX 3090", capacity_bytes=24576 * MiB)


def _vllm(spec=LLAMA8, dev=H100, tp=1, **kw):  # type: ignore[no-untyped-def]
    s = InferenceSettings(runtime="vllm", tp=tp, **kw)
    return estimate_vllm(spec, s, Hardware(devices=(dev,) * tp))


def test_vllm_weights_match_the_logged_figure() -> None:
    # vLLM logged "Loading model weights took 14.9888 GB" (GiB units) for Llama-3.1-8B bf16
    # (vllm-project/vllm#10517): 16,060,522,496 weight bytes + the 32 MiB rotary cos/sin cache
    w = _vllm(dev=RTX3090).runtime_details["weights_bytes_per_rank"]
    assert abs(w / GiB - 14.9888) < 0.001


def test_vllm_kv_per_token_llama8() -> None:
    # 32 layers x 8 KV heads x (128 + 128) x 2 bytes = 128 KiB per token
    assert _vllm().runtime_details["kv_bytes_per_token_per_rank"] == 131072


def test_vllm_blocks_follow_the_budget_arithmetic() -> None:
    # current vLLM: requested = ceil(total x 0.92); the CUDA-graph estimate is charged too
    p = plan_vllm(LLAMA8, InferenceSettings(runtime="vllm", ctx=8192), H100)
    assert p.kv_pool_bytes is not None
    assert p.cudagraph_charged
    budget = math.ceil(H100.capacity_bytes * 0.92)  # type: ignore[operator]
    assert p.kv_pool_bytes == (
        budget
        - p.weights_bytes
        - p.rope_cache_bytes
        - p.activation_bytes
        - p.non_torch_bytes
        - p.cudagraph_bytes
    )
    assert p.num_gpu_blocks == p.kv_pool_bytes // (p.bytes_per_token * 16)
    assert p.max_concurrency == pytest.approx(p.num_gpu_blocks / (8192 // 16))


def test_vllm_v1_2025_leaves_cuda_graphs_to_the_headroom() -> None:
    s = InferenceSettings(runtime="vllm", ctx=8192)
    old = plan_vllm(LLAMA8, s, H100, engine="v1-2025")
    assert not old.cudagraph_charged
    assert old.util == 0.9
    assert old.kv_pool_bytes == int(H100.capacity_bytes * 0.9) - (  # type: ignore[operator]
        old.weights_bytes + old.rope_cache_bytes + old.activation_bytes + old.non_torch_bytes
    )
    eager = plan_vllm(LLAMA8, dataclasses.replace(s, enforce_eager=True), H100)
    graphs = plan_vllm(LLAMA8, s, H100)
    assert eager.kv_pool_bytes - graphs.kv_pool_bytes == graphs.cudagraph_bytes > 0  # type: ignore[operator]


def test_vllm_unknown_engine_is_named() -> None:
    with pytest.raises(UnknownNameError, match="v1-2025"):
        plan_vllm(LLAMA8, InferenceSettings(runtime="vllm"), H100, engine="v1-2024")


def test_vllm_defaults_depend_on_gpu_class() -> None:
    big = plan_vllm(LLAMA8, InferenceSettings(runtime="vllm"), H100)
    small = plan_vllm(LLAMA8, InferenceSettings(runtime="vllm"), RTX3090)
    assert (big.max_num_batched_tokens, big.max_num_seqs) == (8192, 1024)
    assert (small.max_num_batched_tokens, small.max_num_seqs) == (2048, 256)


def test_vllm_tp2_halves_weights_and_replicates_norms() -> None:
    w1 = _vllm(tp=1).runtime_details["weights_bytes_per_rank"]
    w2 = _vllm(tp=2).runtime_details["weights_bytes_per_rank"]
    assert 0.49 < w2 / w1 < 0.52  # type: ignore[operator]


def test_vllm_mla_kv_is_replicated_across_tp() -> None:
    ds = find_model("deepseek-v2-lite").spec()
    l1 = kv_layers(ds, kv_elem_bytes=2, state_elem_bytes=2, tp=1)
    l4 = kv_layers(ds, kv_elem_bytes=2, state_elem_bytes=2, tp=4)
    assert l1[0].kind == "mla"
    assert l1[0].bytes_per_token == (512 + 64) * 2
    assert [x.bytes_per_token for x in l1] == [x.bytes_per_token for x in l4]


def test_vllm_refuses_when_max_model_len_needs_more_kv() -> None:
    est = _vllm(dev=RTX3090, ctx=131072)
    assert est.fits is False
    assert est.blockers
    fit_len = est.runtime_details["max_model_len_that_fits"]
    assert 0 < fit_len < 131072  # type: ignore[operator]
    assert (
        est.runtime_details["kv_bytes_per_token_per_rank"] * fit_len
        <= (  # type: ignore[operator]
            est.runtime_details["available_kv_cache_bytes"]
        )
    )


def test_vllm_fp8_kv_halves_bytes_per_token() -> None:
    a = _vllm().runtime_details["kv_bytes_per_token_per_rank"]
    b = _vllm(cache_type_k="fp8").runtime_details["kv_bytes_per_token_per_rank"]
    assert b * 2 == a


def test_sliding_window_kv_caps_at_window() -> None:
    g = find_model("gemma-2-9b").spec()
    layers = kv_layers(g, kv_elem_bytes=2, state_elem_bytes=2)
    assert {x.kind for x in layers} == {"full", "sliding"}
    long, short = kv_bytes(layers, seq_len=8192), kv_bytes(layers, seq_len=4096)
    per_full_layer = (
        layers[1].bytes_per_token if layers[1].kind == "full" else layers[0].bytes_per_token
    )
    assert long - short == per_full_layer * 4096 * sum(x.kind == "full" for x in layers)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64_000), st.integers(1, 64_000))
def test_forward_peak_monotonic_in_tokens(a: int, b: int) -> None:
    lo, hi = sorted((a, b))
    assert (
        forward_peak_bytes(LLAMA8, tokens=lo, elem_bytes=2).n_bytes
        <= forward_peak_bytes(LLAMA8, tokens=hi, elem_bytes=2).n_bytes
    )


@settings(max_examples=30, deadline=None)
@given(st.integers(256, 131072), st.integers(256, 131072))
def test_vllm_more_context_never_needs_less(a: int, b: int) -> None:
    lo, hi = sorted((a, b))
    f_lo = _vllm(ctx=lo).runtime_details["max_model_len_that_fits"]
    assert f_lo == _vllm(ctx=hi).runtime_details["max_model_len_that_fits"] or hi > f_lo  # type: ignore[operator]
    assert kv_bytes(kv_layers(LLAMA8, kv_elem_bytes=2, state_elem_bytes=2), seq_len=lo) <= kv_bytes(
        kv_layers(LLAMA8, kv_elem_bytes=2, state_elem_bytes=2), seq_len=hi
    )


def test_sort_sampler_bytes_per_entry() -> None:
    # bf16 logits (vocab 128256 needs no padding) + fp32 copy 4 + sort: values 4, int64 indices
    # 8, int64 reverse_indices 8, cub alternate key/value buffers 4 + 8
    assert sampler_peak_bytes(LLAMA8, n_seqs=256) == 256 * 128256 * (2 + 4 + 32)
    # FlashInfer: fp32 copy + top-k masked logits + softmax probabilities
    assert sampler_peak_bytes(LLAMA8, n_seqs=256, flashinfer=True) == 256 * 128256 * (2 + 12)


def test_sampler_model_dtype_logits_span_the_padded_vocab() -> None:
    # Llama-2 with one added token: 32001 rows padded to 32064 for the lm_head output
    l2 = dataclasses.replace(find_model("meta-llama/Llama-2-7b-hf").spec(), vocab_size=32001)
    assert padded_vocab(32001) == 32064
    assert padded_vocab(151936, 4) == 151936  # already a multiple of 64
    got = sampler_peak_bytes(l2, n_seqs=1)
    assert got == 32064 * 2 + 32001 * 36


def test_vllm_profile_peak_matches_logged_sampler_runs() -> None:
    # vLLM logged a 1.26 GiB torch activation peak for Llama-3-8B at its V0 defaults
    # (256 sequences over 8192 tokens; vllm#10511, TP1 and TP2 alike): the sampler sets it
    p = plan_vllm(
        find_model("meta-llama/Meta-Llama-3-8B").spec(),
        InferenceSettings(runtime="vllm", ctx=8192, tp=2),
        DeviceTarget(name="H100", capacity_bytes=int(79.22 * GiB)),
        engine="v0-2025",
    )
    assert p.sampler_bytes > p.forward_bytes
    assert abs(p.activation_bytes / GiB - 1.26) < 0.05


def test_sglang_pool_arithmetic() -> None:
    est = estimate_sglang(LLAMA8, InferenceSettings(runtime="sglang"), Hardware(devices=(H100,)))
    tokens = est.runtime_details["max_total_num_tokens"]
    assert default_mem_fraction_static(1) == 0.88
    dev = est.devices[0]
    assert tokens == dev.kv_cache_bytes // 131072
    assert dev.total_bytes <= H100.capacity_bytes  # type: ignore[operator]


def test_transformers_eager_attention_costs_s_squared() -> None:
    hw = Hardware(devices=(H100,))
    sdpa = estimate_transformers(LLAMA8, InferenceSettings(runtime="transformers", ctx=8192), hw)
    eager = estimate_transformers(
        LLAMA8, InferenceSettings(runtime="transformers", ctx=8192, attn_implementation="eager"), hw
    )
    diff = eager.devices[0].activations_bytes - sdpa.devices[0].activations_bytes
    # 32 heads x 8192^2 scores in bf16 plus the fp32 softmax copy, minus what SDPA needed
    assert diff > 32 * 8192 * 8192 * 6 * 0.8


def test_transformers_offloads_what_does_not_fit() -> None:
    small = DeviceTarget(name="8GB", capacity_bytes=8 * GiB)
    est = estimate_transformers(
        LLAMA8, InferenceSettings(runtime="transformers", ctx=1024), Hardware(devices=(small,))
    )
    assert est.host.weights_bytes > 0
    assert est.devices[0].weights_bytes <= 8 * GiB * 0.9


def test_transformers_kv_grows_with_new_tokens() -> None:
    hw = Hardware(devices=(H100,))
    a = estimate_transformers(
        LLAMA8, InferenceSettings(runtime="transformers", ctx=1000, max_new_tokens=24), hw
    )
    b = dataclasses.replace(
        InferenceSettings(runtime="transformers", ctx=1000), max_new_tokens=1048
    )
    est_b = estimate_transformers(LLAMA8, b, hw)
    assert est_b.devices[0].kv_cache_bytes - a.devices[0].kv_cache_bytes == 1024 * 131072

"""vLLM profiling rules by generation: hybrid KV groups, V0 batches, TP non-torch, PR #2031."""

from __future__ import annotations

import dataclasses

import pytest

from oomkit.catalog.models import find_model
from oomkit.estimate.vllm import plan_vllm
from oomkit.estimate.vllm_engines import VLLM_ENGINES, non_torch_bytes, vllm_engine
from oomkit.hardware.catalog import find_gpu
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

LLAMA8 = find_model("llama-3.1-8b").spec()
H100_SXM = dataclasses.replace(
    find_gpu("h100-sxm").to_device_target(), capacity_bytes=int(79.22 * GiB)
)
H100_PCIE = dataclasses.replace(H100_SXM, key="h100-pcie", name="NVIDIA H100 PCIe")


def test_gemma3_hybrid_groups_follow_uniform_page_grouping() -> None:
    # 52 sliding + 10 full layers, same page size: group_size = 10, so 6 sliding groups
    # (5 x 10 + 1 x 2, padded) + 1 full group; blocks = pool // page // 10 and vLLM reports
    # num_blocks // 7 x 16 tokens (kv_cache_utils.py _get_kv_cache_config_uniform_page_size)
    g3 = find_model("gemma-3-27b").spec()
    p = plan_vllm(g3, InferenceSettings(runtime="vllm", ctx=32768), H100_SXM)
    assert p.kv_groups == 7
    assert p.kv_pool_bytes is not None
    assert p.num_gpu_blocks is not None
    page = 16 * 16 * 128 * 2 * 2  # block x KV heads x (K + V) head dim x bf16
    assert p.num_gpu_blocks == p.kv_pool_bytes // (page * 10)
    # a 32K request needs 2048 blocks in the full group but only the window in each sliding one
    per_request = 2048 + 6 * ((1024 - 1 + p.max_num_batched_tokens + 15) // 16 + 1)
    assert p.max_concurrency is not None
    assert abs(p.max_concurrency - p.num_gpu_blocks / per_request) < 1e-9
    # 0.21+ logs int(max_concurrency x max_model_len) (_report_kv_cache_config); 0.20 the
    # num_blocks // 7 x 16 above
    assert p.kv_cache_tokens == int(p.num_gpu_blocks / per_request * 32768)
    p20 = plan_vllm(g3, InferenceSettings(runtime="vllm", ctx=32768), H100_SXM, engine="v1-0.20")
    assert p20.num_gpu_blocks is not None
    assert p20.kv_cache_tokens == p20.num_gpu_blocks // 7 * 16


def test_v0_counts_sliding_layers_like_full_ones() -> None:
    g2 = find_model("gemma-2-9b").spec()
    p = plan_vllm(g2, InferenceSettings(runtime="vllm", ctx=8192), H100_SXM, engine="v0-2025")
    assert p.kv_groups == 1
    assert p.num_gpu_blocks == p.kv_pool_bytes // (p.bytes_per_token * 16)  # type: ignore[operator]


def test_v0_profile_batch_switches_to_chunked_prefill_above_32k() -> None:
    # vllm#10517: 20k and 35k started but 29k did not, because without chunked prefill the
    # profile batch is max(max_model_len, 2048) tokens and above 32K it is 2048
    def batch(ctx: int) -> int:
        s = InferenceSettings(runtime="vllm", ctx=ctx)
        return plan_vllm(LLAMA8, s, H100_SXM, engine="v0-2024").max_num_batched_tokens

    assert (batch(1024), batch(29000), batch(35000)) == (2048, 29000, 2048)
    act = [
        plan_vllm(
            LLAMA8, InferenceSettings(runtime="vllm", ctx=c), H100_SXM, engine="v0-2024"
        ).activation_bytes
        for c in (20000, 29000, 35000)
    ]
    assert act[2] < act[0] < act[1]


def test_v1_profile_rows_are_capped_by_tokens() -> None:
    # (vLLM refuses fewer batched tokens than sequences, so the rows move with both)
    s = InferenceSettings(runtime="vllm", max_num_seqs=128, max_num_batched_tokens=128)
    few = plan_vllm(LLAMA8, s, H100_SXM, engine="v1-2025")
    more = plan_vllm(
        LLAMA8,
        dataclasses.replace(s, max_num_seqs=512, max_num_batched_tokens=512),
        H100_SXM,
        engine="v1-2025",
    )
    # 128 rows vs 512 rows of the sampler
    assert more.sampler_bytes > 3.9 * few.sampler_bytes


def test_tp_non_torch_is_larger_on_nvswitch_nodes() -> None:
    eng = vllm_engine("v1-2025")
    sxm, _ = non_torch_bytes(eng, H100_SXM, 4)
    pcie, _ = non_torch_bytes(eng, H100_PCIE, 4)
    single, _ = non_torch_bytes(eng, H100_SXM, 1)
    assert single < pcie < sxm
    assert 1.5 * GiB < sxm < 2.5 * GiB  # vllm#10511 (+1.79 GiB at TP2), vllm#21429 (2.04)


def test_only_the_0_6_4_rule_charges_the_cuda_context() -> None:
    ctx_rule, _ = non_torch_bytes(vllm_engine("v0-2024"), DeviceTarget(name="RTX 3090"), 1)
    increase, _ = non_torch_bytes(vllm_engine("v1-2025"), DeviceTarget(name="RTX 3090"), 1)
    assert increase < 256 * MiB <= ctx_rule


def test_2023_reserve_holds_record_streamed_allreduce_inputs() -> None:
    l70 = find_model("meta-llama/Llama-2-70b-hf").spec()
    a100 = dataclasses.replace(
        find_gpu("a100-80gb-sxm").to_device_target(), capacity_bytes=int(79.15 * GiB)
    )
    s = InferenceSettings(runtime="vllm", ctx=4096, tp=4, gpu_memory_utilization=0.9)
    old = plan_vllm(l70, s, a100, engine="v0-2023-total")
    # (2 x 80 layers + 1 embedding) all-reduces of [4096, 8192] fp16
    assert old.pinned_allreduce_bytes == 161 * 4096 * 8192 * 2
    tp1 = plan_vllm(l70, dataclasses.replace(s, tp=1), a100, engine="v0-2023-total")
    assert tp1.pinned_allreduce_bytes == 0
    # the PR reported 20865 blocks (31615 before it): the pinned reserve explains most of it
    assert old.num_gpu_blocks is not None
    assert 20865 <= old.num_gpu_blocks < 0.5 * (20865 + 31615)


def test_every_engine_row_is_named_by_its_key() -> None:
    assert all(e.name == k for k, e in VLLM_ENGINES.items())
    assert vllm_engine(" Current ").default_util == 0.92


def test_qwen3_235b_fp8_tp4_matches_the_h200_profile_log(monkeypatch: pytest.MonkeyPatch) -> None:
    # vllm#21429 (V1, July 2025, Qwen3-235B-A22B-FP8, TP4, H200): "torch peak memory increase:
    # 5.62GiB; non-torch forward increase memory: 2.04GiB; weights memory: 55.13GiB": the sort
    # path's peak, an install without FlashInfer (the path VLLM_USE_FLASHINFER_SAMPLER=0 takes)
    qwen = find_model("Qwen/Qwen3-235B-A22B").spec()
    h200 = find_gpu("h200").to_device_target()
    s = InferenceSettings(runtime="vllm", quant="fp8", tp=4, gpu_memory_utilization=0.5)
    image = plan_vllm(qwen, s, h200, engine="v1-2025")  # FlashInfer installed, sort possible
    monkeypatch.setenv("VLLM_USE_FLASHINFER_SAMPLER", "0")
    p = plan_vllm(qwen, s, h200, engine="v1-2025")
    assert p.sampler_sort_extra_bytes == 0
    assert image.activation_bytes + image.sampler_sort_extra_bytes == p.activation_bytes
    assert abs((p.weights_bytes + p.rope_cache_bytes) / GiB - 55.13) < 0.005 * 55.13
    assert p.sampler_bytes > p.forward_bytes  # 1024 rows x 151936 through the sort sampler
    assert abs(p.activation_bytes / GiB - 5.62) < 0.02 * 5.62
    assert abs(p.non_torch_bytes / GiB - 2.04) < 0.25


def test_longest_request_is_whole_blocks_of_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    # uniform full attention: cdiv(len, 16) pages per layer must fit, so the longest
    # max_model_len equals the KV cache size in tokens (past the model's 131072: vLLM allows
    # it with VLLM_ALLOW_LONG_MAX_MODEL_LEN, oomkit.estimate.checks.vllm_len_cap)
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    p = plan_vllm(LLAMA8, InferenceSettings(runtime="vllm", ctx=8192), H100_SXM)
    assert p.max_model_len_that_fits == p.kv_cache_tokens
    assert p.max_model_len_that_fits % 16 == 0

"""vLLM's start-up check for sliding-window models: what one max_model_len request needs.

Figures follow vLLM's formulas (vllm/v1/kv_cache_interface.py ``SlidingWindowSpec.
max_memory_usage_bytes``: ``(cdiv(min(window - 1 + max_num_batched_tokens, max_model_len),
block_size) + 1) x page``; vllm/v1/core/kv_cache_utils.py ``_max_memory_usage_bytes_from_groups``
and, before PR #17996 (0.9.1), ``check_enough_kv_cache_memory`` summed over the layers while
``unify_hybrid_kv_cache_specs`` allocated every layer at full length).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from oomkit.catalog.models import find_model
from oomkit.estimate.hf_kv import KvLayer, kv_bytes
from oomkit.estimate.vllm import plan_vllm
from oomkit.estimate.vllm_blocks import max_len_that_fits, request_bytes
from oomkit.estimate.vllm_engines import VLLM_ENGINES, vllm_engine
from oomkit.hardware.catalog import find_gpu
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, ceil_div

G3 = find_model("gemma-3-27b").spec()
GPTOSS = find_model("gpt-oss-20b").spec()
H100 = dataclasses.replace(find_gpu("h100-sxm").to_device_target(), capacity_bytes=int(79.22 * GiB))
L4 = find_gpu("l4").to_device_target()
PAGE_G3 = 16 * 16 * 128 * 2 * 2  # one gemma-3-27b layer's block: 16 tokens x 16 KV heads x K+V


def _layers(spec_name: str) -> tuple[KvLayer, ...]:
    spec = find_model(spec_name).spec()
    p = plan_vllm(spec, InferenceSettings(runtime="vllm", ctx=4096), H100)
    return p.layers


def test_hybrid_groups_need_the_window_plus_a_batch_and_a_block() -> None:
    # gemma-3-27b: 52 sliding (1024) + 10 full layers, group size 10: 6 sliding groups (the
    # last padded) + 1 full; a 32K request takes cdiv(32768, 16) full blocks and
    # cdiv(1023 + 8192, 16) + 1 blocks in each sliding group, in each of the 10 pools
    layers = _layers("gemma-3-27b")
    eng = vllm_engine("current")
    need = request_bytes(layers, 32768, block=16, batched=8192, eng=eng)
    assert need == 10 * PAGE_G3 * (2048 + 6 * (ceil_div(1023 + 8192, 16) + 1))
    # the window alone (the former count) is less than vLLM reserves
    assert need > kv_bytes(layers, seq_len=32768)


def test_largest_hybrid_len_leaves_the_sliding_groups_their_blocks() -> None:
    layers = _layers("gemma-3-27b")
    eng = vllm_engine("current")
    pool = 10 * GiB
    blocks = pool // (10 * PAGE_G3)  # get_num_blocks: available // page // group_size
    sliding = 6 * (ceil_div(1023 + 8192, 16) + 1)
    assert max_len_that_fits(layers, pool, 262144, 16, eng, 8192) == 16 * (blocks - sliding)
    # a smaller chunk reserves less for the windows: a longer context fits
    assert max_len_that_fits(layers, pool, 262144, 16, eng, 2048) > 16 * (blocks - sliding)


def test_before_the_hybrid_allocator_the_check_counts_windows_per_layer() -> None:
    # 0.8.0-0.9.0: check_enough_kv_cache_memory sums every layer's own spec (sliding layers at
    # their window), then unify_hybrid_kv_cache_specs allocates all 62 layers at full length
    layers = _layers("gemma-3-27b")
    eng = vllm_engine("v1-2025-global")
    assert not eng.hybrid_kv_groups
    need = request_bytes(layers, 32768, block=16, batched=8192, eng=eng)
    assert need == 10 * 2048 * PAGE_G3 + 52 * (ceil_div(1023 + 8192, 16) + 1) * PAGE_G3
    p = plan_vllm(G3, InferenceSettings(runtime="vllm", ctx=32768), H100, engine="v1-2025-global")
    assert p.kv_groups == 1
    assert p.num_gpu_blocks == p.kv_pool_bytes // (62 * PAGE_G3)  # type: ignore[operator]


def test_llama4_chunked_layers_use_the_chunk_spec() -> None:
    # ChunkedLocalAttentionSpec: cdiv(min(chunk + max_num_batched_tokens, max_model_len), bs)
    # pages, no "- 1" and no "+ 1" block as SlidingWindowSpec has
    p = plan_vllm(
        find_model("llama-4-scout").spec(),
        InferenceSettings(runtime="vllm", ctx=65536, tp=4),
        H100,
    )
    chunked = [lay for lay in p.layers if lay.kind == "sliding"]
    assert chunked
    assert all(lay.chunked and lay.window == 8192 for lay in chunked)
    one = chunked[0]
    full = dataclasses.replace(one, kind="full", window=None, chunked=False)
    eng = vllm_engine("current")  # two groups of one layer each
    need = request_bytes((one, full), 65536, block=16, batched=8192, eng=eng)
    assert need == (ceil_div(8192 + 8192, 16) + 65536 // 16) * 16 * one.bytes_per_token
    # before PR #17996 the chunked layers were FullAttentionSpec: counted at full length
    old = request_bytes((one, full), 65536, block=16, batched=8192, eng=vllm_engine("v0-2025"))
    assert (
        request_bytes((one, full), 65536, block=16, batched=8192, eng=vllm_engine("v1-2025-global"))
        == old
        == 2 * 65536 * one.bytes_per_token
    )


def test_v0_counts_every_layer_at_full_length() -> None:
    layers = _layers("gemma-3-27b")
    need = request_bytes(layers, 32768, block=16, batched=32768, eng=vllm_engine("v0-2025"))
    assert need == 62 * 2048 * PAGE_G3


def test_gemma3_27b_on_h100_reports_the_vllm_limit() -> None:
    # end to end: util 0.8 leaves ~7.9 GiB for the KV cache; vLLM's estimate_max_model_len
    # stops where the full group's blocks plus six sliding groups' reserve fill the pool
    s = InferenceSettings(runtime="vllm", ctx=131072, gpu_memory_utilization=0.8)
    p = plan_vllm(G3, s, H100)
    assert p.kv_pool_bytes is not None
    assert p.num_gpu_blocks is not None
    sliding = 6 * (ceil_div(1023 + p.max_num_batched_tokens, 16) + 1)
    assert p.max_model_len_that_fits == 16 * (p.num_gpu_blocks - sliding)
    assert p.max_model_len_that_fits == 48240  # 6,477 blocks - 3,462 reserved, x 16
    # the window-only count said 3,462 blocks (55K tokens) more: 98,304
    assert kv_bytes(p.layers, seq_len=98304) <= p.kv_pool_bytes


def test_gptoss_20b_on_l4_estimate_names_the_vllm_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # gpt-oss-20b: 12 sliding (128) + 12 full layers, one group each; the sliding group keeps
    # cdiv(127 + max_num_batched_tokens, 16) + 1 blocks per request, not 128 tokens
    code, out, err = run_cli(
        capsys, "estimate", "gpt-oss-20b", "--gpu", "l4", "-r", "vllm", "--ctx", "131072",
        "--gpu-memory-utilization", "0.8", "--json",
    )  # fmt: skip
    assert code in (0, 3, 4), err
    doc = json.loads(out)
    details = doc["runtime_details"]
    p = plan_vllm(
        GPTOSS,
        InferenceSettings(runtime="vllm", ctx=131072, gpu_memory_utilization=0.8),
        L4,
    )
    assert p.num_gpu_blocks is not None
    sliding = ceil_div(127 + p.max_num_batched_tokens, 16) + 1
    want = 16 * (p.num_gpu_blocks - sliding)
    assert want < 131072
    assert details["max_model_len_that_fits"] == want
    assert any("max_model_len 131072 needs more KV" in b for b in doc["blockers"])


_LAYER = st.builds(
    KvLayer,
    layer=st.just(0),
    kind=st.sampled_from(["full", "sliding"]),
    bytes_per_token=st.sampled_from([1024, 2048, 4096]),
    window=st.sampled_from([None, 128, 1024, 4096]),
)


def _fix(lay: KvLayer) -> KvLayer:
    if lay.kind == "sliding" and lay.window is None:
        return dataclasses.replace(lay, window=512)
    if lay.kind == "full":
        return dataclasses.replace(lay, window=None)
    return lay


@settings(max_examples=150, deadline=None)
@given(
    layers=st.lists(_LAYER, min_size=1, max_size=8),
    eng=st.sampled_from(sorted(VLLM_ENGINES)),
    n=st.integers(1, 200_000),
    more=st.integers(0, 50_000),
    batched=st.sampled_from([512, 2048, 8192]),
    pool=st.integers(0, 4 * GiB),
)
def test_more_context_never_needs_less(
    layers: list[KvLayer], eng: str, n: int, more: int, batched: int, pool: int
) -> None:
    lays = tuple(_fix(lay) for lay in layers)
    e = vllm_engine(eng)
    a = request_bytes(lays, n, block=16, batched=batched, eng=e)
    b = request_bytes(lays, n + more, block=16, batched=batched, eng=e)
    assert b >= a
    fits = max_len_that_fits(lays, pool, 200_000, 16, e, batched)
    assert fits == 0 or request_bytes(lays, fits, block=16, batched=batched, eng=e) <= pool
    assert max_len_that_fits(lays, pool + more * 4096, 200_000, 16, e, batched) >= fits


def test_vllm_0_9_0_starts_with_a_pool_below_one_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 0.9.0's check passes on the sliding layers' window; its pool, every layer at full length,
    # holds ~85K tokens of a 131072 request: it starts, a longer request waits (tight, named)
    code, out, err = run_cli(
        capsys, "estimate", "gemma-3-4b", "-r", "vllm", "--gpu", "rtx-4090", "--ctx", "131072",
        "--runtime-version", "0.9.0", "--offline", "--json",
    )  # fmt: skip
    doc = json.loads(out)
    assert code == 4, err  # tight
    assert doc["verdict"] == "tight"
    held = doc["runtime_details"]["pool_below_request"]
    assert 80_000 < held < 131072
    assert not doc["blockers"]

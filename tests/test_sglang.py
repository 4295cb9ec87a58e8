"""SGLang: default mem_fraction_static heuristic, token pool and req_to_token pool arithmetic."""

from __future__ import annotations

from oomkit.catalog.models import find_model
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.estimate.sglang import (
    default_mem_fraction_static,
    estimate_sglang,
    legacy_mem_fraction_static,
    sglang_batch_defaults,
)
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

LLAMA8 = find_model("llama-3.1-8b").spec()
H100 = DeviceTarget(name="H100", capacity_bytes=81559 * MiB, architecture="Hopper")


def test_reserved_memory_heuristic_by_gpu_size() -> None:
    # RTX 4090 (24564 MiB): 512 + 2048 x 1.5 + 24 x 2 + 1/8 x 1024 = 3760 MiB reserved
    assert default_mem_fraction_static(1, 24564 * MiB) == round((24564 - 3760) / 24564, 3)
    # H100 at tp 8: 512 + 12288 + 512 x 2 + 1024 = 14848 MiB
    assert sglang_batch_defaults(81559 * MiB, 8) == (8192, 512)
    assert default_mem_fraction_static(8, 81559 * MiB) == round((81559 - 14848) / 81559, 3)
    # B200-class: at least the 16K chunk
    assert sglang_batch_defaults(180 * GiB, 1) == (16384, 512)


def test_a_64_gib_card_uses_the_8k_chunk_tier() -> None:
    # 60-90 GiB tier: 512 + 8192 x 1.5 + 256 x 2 + 128 = 13440 MiB (above the 10 GiB floor)
    assert default_mem_fraction_static(1, 64 * GiB) == round((65536 - 13440) / 65536, 3)
    assert default_mem_fraction_static(1, 59 * GiB) > default_mem_fraction_static(1, 64 * GiB)


def test_legacy_table_decreases_with_tp() -> None:
    fr = [legacy_mem_fraction_static(t) for t in (1, 2, 4, 8, 16)]
    assert fr == [0.88, 0.87, 0.85, 0.81, 0.79]


def test_pool_is_free0_times_fraction_minus_weights() -> None:
    est = estimate_sglang(
        LLAMA8, InferenceSettings(runtime="sglang", ctx=8192), Hardware(devices=(H100,))
    )
    frac = est.runtime_details["mem_fraction_static"]
    assert frac == 0.835
    ctx_bytes, _ = cuda_context_bytes("sglang", H100)
    free0 = H100.capacity_bytes - ctx_bytes  # type: ignore[operator]
    dev = est.devices[0]
    assert dev.kv_cache_bytes == int(free0 * frac) - dev.weights_bytes
    tokens = est.runtime_details["max_total_num_tokens"]
    assert tokens == dev.kv_cache_bytes // 131072
    # max_num_reqs = min(max(tokens / 8192 x 512, 2048), 4096), int32 rows of ctx + 4
    reqs = est.runtime_details["max_num_reqs"]
    assert reqs == min(max(int(tokens / 8192 * 512), 2048), 4096)  # type: ignore[operator]
    req_pool = next(c for c in dev.components if c.label == "req_to_token pool")
    assert req_pool.n_bytes == (reqs + 1) * (8192 + 4) * 4  # type: ignore[operator]
    assert abs(dev.total_bytes - H100.capacity_bytes) < 2  # type: ignore[operator]


def test_weights_over_the_fraction_block_start() -> None:
    small = DeviceTarget(name="12GB", capacity_bytes=12 * GiB)
    est = estimate_sglang(LLAMA8, InferenceSettings(runtime="sglang"), Hardware(devices=(small,)))
    assert est.blockers
    assert est.runtime_details["max_total_num_tokens"] == 0

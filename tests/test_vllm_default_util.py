"""vLLM's default ``gpu_memory_utilization``: 0.9 until v0.21, 0.92 from it.

PR #38284 ("[Startup][UX] Enable CUDAGraph memory profiling by default", slated for v0.21)
turned the CUDA-graph estimate on and "correspondingly increases the default
``--gpu-memory-utilization`` to 0.92"; the 0.11.0 wheel still has ``CacheConfig
.gpu_memory_utilization: float = 0.9`` (vllm/config/cache.py). The real run: GPUStack's
performance lab (docs/performance-lab/qwen3-32b/h100.md at 47277d7), ``vllm serve
Qwen/Qwen3-32B`` with vLLM v0.11.0 defaults on one H100 SXM.
"""

from __future__ import annotations

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.vllm_engines import vllm_engine
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _qwen3_32b_h100(version: str) -> Estimate:
    s = InferenceSettings(runtime="vllm", quant="bf16", tp=1, runtime_version=version)
    return estimate("qwen3-32b", s, hardware_for(parse_gpu_list("h100-sxm")), offline=True)


@pytest.mark.parametrize(
    ("version", "engine", "util"),
    [
        ("0.10.1", "v1-2025", 0.9),
        ("0.11.0", "v1-0.11", 0.9),
        ("0.14.1", "v1-0.11.1", 0.9),
        ("0.17.1", "v1-0.17", 0.9),
        ("0.21.0", "current", 0.92),
    ],
)
def test_default_util_by_release(version: str, engine: str, util: float) -> None:
    est = _qwen3_32b_h100(version)
    assert est.runtime_details["engine"] == engine
    assert est.settings["gpu_memory_utilization"] == util
    assert vllm_engine(engine).default_util == util


def test_0_11_pool_is_the_0_9_budget() -> None:
    a, b = _qwen3_32b_h100("0.11.0"), _qwen3_32b_h100("0.21.0")
    cap = a.devices[0].capacity_bytes
    assert cap is not None
    pool_a = int(a.runtime_details["available_kv_cache_bytes"])  # type: ignore[call-overload]
    # at 0.92 the 0.11.0 pool would be larger (no graph estimate charged); at 0.9 it is
    # 0.02 x 79 GiB smaller, more than the 0.5 GiB graph estimate 0.21 charges
    pool_b = int(b.runtime_details["available_kv_cache_bytes"])  # type: ignore[call-overload]
    assert pool_a < pool_b

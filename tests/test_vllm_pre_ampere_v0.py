"""vLLM 0.8.0-0.10.1 run the V0 engine on GPUs below compute capability 8.0.

``EngineArgs._is_v1_supported_oracle`` (vllm/engine/arg_utils.py, in the 0.8.1-0.10.1.1 wheels):
"Need at least Ampere for now" -> ``_raise_or_fallback(feature_name="Compute Capability <
8.0")``; PR #23614 / PR #24022 dropped it for v0.10.2. The real runs: vllm#18478 (Qwen2.5-7B
fp16, ``LLM(..., tensor_parallel_size=2)`` on 2x RTX 2080 Ti 11 GB, vLLM > 0.9.1.dev5, the
config's 32768: "OOM on loading model"); vllm#15766 (Gemma 3 27B ``--dtype=half`` tp 8 on
8x T4, 0.8.2: its log is the V0 worker's "the current vLLM instance can use total_gpu_memory
(14.56GiB) x gpu_memory_utilization (0.85) = 12.38GiB").
"""

from __future__ import annotations

from typing import Any

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, verdict
from oomkit.estimate.vllm_support import v0_capability_engine
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _est(model: str, gpu: str, **kw: Any) -> Estimate:
    s = InferenceSettings(runtime="vllm", **kw)
    hw = hardware_for(parse_gpu_list(gpu), n_devices=(s.tp or 1) * (s.pp or 1))
    return estimate(model, s, hw, offline=True)


def test_18478_2080ti_runs_v0_and_does_not_fit() -> None:
    kw: dict[str, Any] = {"quant": "fp16", "ctx": 32768, "tp": 2, "llm_class": True}
    est = _est("qwen2.5-7b", "2xrtx-2080-ti", runtime_version="0.9.1.dev5", **kw)
    rd = est.runtime_details
    assert rd["engine"] == "v0-2025"
    # V0 without chunked prefill at 32K: one profile step of max(max_model_len, 2048) tokens
    assert rd["max_num_batched_tokens"] == 32768
    assert rd["max_num_seqs"] == 256
    assert any("Compute Capability < 8.0" in a for a in est.assumptions)
    assert verdict(est, Platform(display=False)).level == "does_not_fit"
    # the same call on two Ampere cards (RTX 3080 Ti, 12 GB) stays on V1
    v1 = _est("qwen2.5-7b", "2xrtx-3080-ti", runtime_version="0.9.1.dev5", **kw)
    assert v1.runtime_details["engine"] == "v1-2025"


def test_0_10_2_runs_v1_on_turing() -> None:
    old = _est("qwen2.5-7b", "t4", ctx=4096, runtime_version="0.10.1.1")
    new = _est("qwen2.5-7b", "t4", ctx=4096, runtime_version="0.10.2")
    assert old.runtime_details["engine"] == "v0-2025"
    assert new.runtime_details["engine"] == "v1-2025"
    assert new.runtime_details["generation"]["key"] == "v1-0.10.2"  # type: ignore[index]


def test_15766_t4_log_is_v0() -> None:
    est = _est(
        "gemma-3-27b",
        "8xt4",
        quant="fp16",
        ctx=16384,
        tp=8,
        gpu_memory_utilization=0.85,
        enforce_eager=True,
        runtime_version="0.8.2",
    )
    assert est.runtime_details["engine"] == "v0-2025"
    assert verdict(est, Platform(display=False)).level == "fits"  # it served


def test_rule() -> None:
    t4 = hardware_for(parse_gpu_list("t4")).devices
    a10 = hardware_for(parse_gpu_list("a10")).devices
    assert v0_capability_engine("v1-2025-global", t4, v1_needs_ampere=True) == "v0-2025"
    assert v0_capability_engine("v1-2025-global", a10, v1_needs_ampere=True) is None
    assert v0_capability_engine("v1-2025", t4, v1_needs_ampere=False) is None
    assert v0_capability_engine("v1-0.11", t4, v1_needs_ampere=True) is None  # no V0 left

"""vLLM 0.8.0-0.8.3: V1 defaults to 1024 sequences on every GPU.

``EngineArgs._set_default_args_v1`` in the 0.8.1-0.8.3 wheels: ``default_max_num_seqs = 1024``
whatever the GPU, and the batch-size default tests "h100"/"h200" in the device name; PR #16158
("[V1] Revert the default max_num_seqs to V0 values for most hardware", in 0.8.4) went back to
256 below H100/H200. The profile's ``_dummy_sampler_run`` samples ``min(max_num_seqs,
max_num_batched_tokens)`` rows, so on 0.8.0-0.8.3 it warms the sampler up on 1024 rows
("CUDA out of memory occurred when warming up sampler with 1024 dummy requests").

The real runs: vllm#15457 (DeepSeek-R1-Distill-Qwen-32B bf16, 4x RTX 4090, tp 4, util 0.95,
``--max-model-len 32768``, 0.8.3: "2.00 GB KV cache is needed, which is larger than the available
KV cache memory (0.78 GB)"; 0.7.2 served it); vllm#16348 (``LLM(model="facebook/opt-125m",
gpu_memory_utilization=0.90)`` on an L4, 0.8.3: "GPU KV cache size: 502,304 tokens").
"""

from __future__ import annotations

from typing import Any

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, verdict
from oomkit.estimate.vllm_engines import engine_batch_defaults, vllm_engine
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB


def _est(model: str, gpu: str, **kw: Any) -> Estimate:
    s = InferenceSettings(runtime="vllm", **kw)
    hw = hardware_for(parse_gpu_list(gpu), n_devices=s.tp or 1)
    return estimate(model, s, hw, offline=True)


_15457: dict[str, Any] = {"quant": "bf16", "ctx": 32768, "tp": 4, "gpu_memory_utilization": 0.95}


def test_15457_pool_is_the_1024_row_warm_up() -> None:
    v083 = _est("deepseek-r1-distill-qwen-32b", "4xrtx-4090", runtime_version="0.8.3", **_15457)
    rd = v083.runtime_details
    assert rd["generation"]["key"] == "v1-0.8.0"  # type: ignore[index]
    assert rd["max_num_seqs"] == 1024
    assert rd["max_num_batched_tokens"] == 2048  # the server's, not an H100
    # the log's 0.78 GiB available (2.00 needed); with 256 rows it would be ~5.1 GiB
    avail = int(rd["available_kv_cache_bytes"]) / GiB  # type: ignore[call-overload]
    assert 0.5 < avail < 1.5
    assert verdict(v083, Platform(display=False)).level == "does_not_fit"
    # 0.8.4 (PR #16158): 256 sequences on a 4090
    v084 = _est("deepseek-r1-distill-qwen-32b", "4xrtx-4090", runtime_version="0.8.4", **_15457)
    assert v084.runtime_details["max_num_seqs"] == 256


def test_opt125m_l4_log() -> None:
    est = _est(
        "opt-125m",
        "l4",
        quant="fp16",
        ctx=2048,
        gpu_memory_utilization=0.9,
        llm_class=True,
        runtime_version="0.8.3",
    )
    tokens = int(est.runtime_details["kv_cache_tokens"])  # type: ignore[call-overload]
    assert est.runtime_details["max_num_seqs"] == 1024
    assert est.runtime_details["max_num_batched_tokens"] == 8192  # LLM class, not an H100
    assert abs(tokens - 502_304) / 502_304 < 0.05  # 256 rows would model 558,128 (+11%)


def test_name_rule() -> None:
    eng = vllm_engine("v1-0.8.0")
    h100 = hardware_for(parse_gpu_list("h100-sxm")).devices[0]
    a100 = hardware_for(parse_gpu_list("a100-80gb-sxm")).devices[0]
    assert engine_batch_defaults(eng, h100, llm_class=False) == (1024, 8192)
    assert engine_batch_defaults(eng, a100, llm_class=False) == (1024, 2048)
    assert engine_batch_defaults(eng, a100, llm_class=True) == (1024, 8192)
    later = vllm_engine("v1-2025")
    assert engine_batch_defaults(later, a100, llm_class=False) == (256, 2048)
    assert engine_batch_defaults(later, h100, llm_class=True) == (1024, 16384)

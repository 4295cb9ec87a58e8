"""vLLM 0.13-0.14's streaming online FP8 keeps the bf16 weights beside their FP8 copies while
loading (PR #29196, explained by PR #31914): vllm#31273, Qwen2.5-72B with --quantization fp8 on a
141 GB H20, loads on 0.12.0 and dies loading on 0.13.0."""

from __future__ import annotations

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, verdict
from oomkit.estimate.verdict_runtime import ONLINE_FP8_LOAD_WHAT
from oomkit.estimate.vllm_online_fp8 import online_fp8_load_detail, streams_online_fp8
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

# the command: vllm serve Qwen2.5-72B-Instruct --max-num-seqs 64 --quantization fp8
# (max_model_len the model's 32768, util 0.9); the H20-3e is recorded as the 141 GB H200
H20 = hardware_for(parse_gpu_list("h200"))


def _est(version: str, quant: str = "fp8", model: str = "qwen2.5-72b") -> Estimate:
    s = InferenceSettings(
        runtime="vllm", quant=quant, ctx=32768, max_num_seqs=64, runtime_version=version
    )
    return estimate(model, s, H20)


def test_release_window() -> None:
    assert not streams_online_fp8("0.12.0")
    assert streams_online_fp8("0.13.0")
    assert streams_online_fp8("0.14.1")
    assert not streams_online_fp8("0.15.0")
    assert not streams_online_fp8("2025-12-24")  # a date does not name the release
    assert not streams_online_fp8(None)


def test_0_13_peak_is_the_fp8_weights_plus_the_bf16_copies() -> None:
    est = _est("0.13.0")
    peak = est.runtime_details["online_fp8_load_peak_bytes"]
    assert isinstance(peak, dict)
    w = est.devices[0].weights_bytes
    # about 1.5 x the bf16 model: 72.7 B parameters, the quantized linears at 1 + 2 bytes
    assert 190 * GiB < peak["cuda:0"] < 210 * GiB
    assert peak["cuda:0"] > w + 120 * GiB


def test_0_13_is_tight_with_the_fix_named_and_0_12_still_fits() -> None:
    v13 = verdict(_est("0.13.0"), Platform(os="linux"))
    assert v13.level == "tight"  # the records name the base model for FP8 checkpoints too
    assert any(m.what == ONLINE_FP8_LOAD_WHAT and m.free_bytes < -50 * GiB for m in v13.margins)
    assert v13.safe_change is not None
    assert "pre-quantized FP8" in v13.safe_change
    assert "0.15 or newer" in v13.safe_change
    assert "0.12" not in v13.safe_change  # 0.12 loads the whole bf16 model: never the fix
    # 0.12 loads the bf16 model whole (72.7 B x 2 bytes), then quantizes: under the 141 GB
    # card, as the issue saw it load
    v12 = _est("0.12.0")
    peak = v12.runtime_details["online_fp8_load_peak_bytes"]
    assert isinstance(peak, dict)
    assert 130 * GiB < peak["cuda:0"] < 137 * GiB
    assert verdict(v12, Platform(os="linux")).level == "fits"


def test_not_for_bf16_or_prequantized_checkpoints() -> None:
    assert "online_fp8_load_peak_bytes" not in _est("0.13.0", quant="bf16").runtime_details
    est = _est("0.13.0", model="deepseek-r1")  # the checkpoint ships FP8
    spec = load_model("deepseek-r1")
    s = InferenceSettings(runtime="vllm", quant="fp8", runtime_version="0.13.0")
    assert online_fp8_load_detail(spec, s, est.devices) == {}

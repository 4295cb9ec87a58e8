"""vLLM's MXFP4 MoE layout (oomkit.estimate.vllm_mxfp4): gpt-oss weights above the checkpoint.

The model is the catalog's gpt-oss config (its quantization_config says mxfp4), parsed as any
config.json is. Logged figures: vllm#23278 (0.10.1 on an H100, Marlin backend: "Model loading
took 65.9651 GiB") and vllm#33155 (0.14.1 on an H100, "Using Triton backend": "Model loading
took 64.38 GiB").
"""

from __future__ import annotations

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB


def _vllm(model: str, gpu: str, version: str | None) -> Estimate:
    settings = InferenceSettings(runtime="vllm", ctx=8192, runtime_version=version)
    return estimate(model, settings, hardware_for(parse_gpu_list(gpu)), offline=True)


def _weights_gib(est: Estimate) -> float:
    w = est.runtime_details["weights_bytes_per_rank"]
    assert isinstance(w, int)
    return w / GiB


def test_hopper_marlin_before_0_11_matches_the_log() -> None:
    assert resolve_generation("vllm", "0.10.1").effects["mxfp4_hopper"] == "marlin"
    assert _weights_gib(_vllm("gpt-oss-120b", "h100-sxm", "0.10.1")) == pytest.approx(
        65.9651, rel=0.005
    )


def test_hopper_triton_keeps_the_scales_twice() -> None:
    assert "mxfp4_hopper" not in resolve_generation("vllm", "0.14.1").effects
    assert _weights_gib(_vllm("gpt-oss-120b", "h100-sxm", "0.14.1")) == pytest.approx(
        64.38, rel=0.005
    )


def test_backend_by_gpu_and_no_change_where_not_modelled() -> None:
    # Ampere has no triton_kernels path: Marlin whatever the version
    a100 = _weights_gib(_vllm("gpt-oss-120b", "a100-80gb-sxm", "0.14.1"))
    h100_old = _weights_gib(_vllm("gpt-oss-120b", "h100-sxm", "0.10.1"))
    assert a100 == pytest.approx(h100_old)
    # datacenter Blackwell (FlashInfer backends) keeps the checkpoint figure
    b200 = _vllm("gpt-oss-120b", "b200", None)
    assert not any("MXFP4" in n for n in b200.assumptions)
    assert _weights_gib(b200) < 61.0
    # a dense bf16 model is untouched
    llama = _vllm("llama-3.1-8b", "h100-sxm", "0.10.1")
    assert not any("MXFP4" in n for n in llama.assumptions)

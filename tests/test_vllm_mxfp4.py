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
    # a dense bf16 model is untouched
    llama = _vllm("llama-3.1-8b", "h100-sxm", "0.10.1")
    assert not any("MXFP4" in n for n in llama.assumptions)


# gpt-oss-120b experts: E=128, H=2880, I=2880, 36 MoE layers
_E, _H, _I, _L = 128, 2880, 2880, 36


def _expert_bytes(i: int, h: int, bias_bytes: int, scale_copies: int = 1) -> int:
    """One rank's expert tensors of all layers in the shapes [i, h] (w13 [E, 2i, h/2] + w2
    [E, h, i/2] packed fp4, e8m0 scales per 32 values, biases [E, 2i] + [E, h])."""
    values = _E * 3 * i * h // 2
    scales = _E * 3 * i * h // 32 * scale_copies
    return _L * (values + scales + _E * (2 * i + h) * bias_bytes)


def _extra(gpu: str, tp: int) -> int:
    settings = InferenceSettings(runtime="vllm", ctx=8192, tp=tp)
    est = estimate("gpt-oss-120b", settings, hardware_for(parse_gpu_list(gpu)), offline=True)
    (note,) = [n for n in est.assumptions if "MXFP4 experts" in n]
    return round(float(note.split("+")[1].split(" GiB")[0]) * 100)


@pytest.mark.parametrize(("tp", "padded"), [(1, 2880), (2, 1472), (4, 768), (8, 384)])
def test_triton_pads_the_intermediate_per_rank_to_64(tp: int, padded: int) -> None:
    """create_weights: round_up(intermediate_size_per_partition, 64); scales kept twice."""
    ckpt = _expert_bytes(_I // tp, _H, 2)
    laid_out = _expert_bytes(padded, _H, 4, scale_copies=2)
    want = round((laid_out - ckpt) / GiB * 100)
    assert _extra(f"{tp}xh100-sxm5-80gb", tp) == want


def test_sm100_flashinfer_pads_both_dims_to_256_and_says_so() -> None:
    """get_mxfp4_backend: SM100 + FlashInfer -> SM100_FI_MXFP4_BF16, 2880 -> 3072 both dims."""
    want = _expert_bytes(3072, 3072, 4) - _expert_bytes(_I, _H, 2)
    assert 7.5 * GiB < want < 8.2 * GiB
    assert _extra("b200", 1) == round(want / GiB * 100)
    b200 = _vllm("gpt-oss-120b", "b200", None)
    assert any(
        "flashinfer backend" in n and "FlashInfer is installed" in n for n in b200.assumptions
    )

"""transformers' Mxfp4HfQuantizer dequantizes gpt-oss's experts to bf16 without `kernels` /
Triton >= 3.4: a risk the verdict carries as a band term, with the install that removes it."""

from __future__ import annotations

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.transformers_mxfp4 import mxfp4_dequant_extra_bytes
from oomkit.estimate.verdict import Platform, verdict
from oomkit.estimate.verdict_runtime import MXFP4_DEQUANT
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import model_tensors
from oomkit.units import GiB

# p-e-w/heretic#21: `heretic --model openai/gpt-oss-20b` (v1.0.1, device_map "auto", dtype
# auto) on an RTX 3090, 2025-11-18: CUDA OOM at checkpoint shard 2/3
SETTINGS = {
    "runtime": "transformers",
    "quant": "mxfp4",
    "ctx": 512,
    "max_new_tokens": 100,
    "device_map": "auto",
    "runtime_version": "2025-11-18",
}


def test_bf16_experts_add_what_the_blocks_saved() -> None:
    tensors = model_tensors(load_model("gpt-oss-20b"))
    extra = mxfp4_dequant_extra_bytes("mxfp4", tensors)
    # 24 layers x 32 experts x (2 x 2880 x 2880 + 2880 x 2880) values: 4 bytes per 2 values
    # less 17 bytes per 32 of them
    experts = 24 * 32 * 3 * 2880 * 2880
    assert abs(extra - (experts * 2 - experts * 17 // 32)) < GiB // 100
    assert mxfp4_dequant_extra_bytes("bf16", tensors) == 0
    assert mxfp4_dequant_extra_bytes(None, tensors) == 0


def test_heretic_gpt_oss_20b_on_a_3090_is_tight_and_names_the_install() -> None:
    hw = hardware_for(parse_gpu_list("rtx-3090"))
    est = estimate("gpt-oss-20b", InferenceSettings(**SETTINGS), hw)
    assert est.devices[0].total_bytes < 16 * GiB  # the 4-bit load itself fits
    v = verdict(est, Platform(os="linux"))
    assert v.level == "tight"
    m = v.tightest
    assert m is not None
    assert any(name == MXFP4_DEQUANT and b > 20 * GiB for name, b in m.terms)
    assert "pip install -U kernels" in MXFP4_DEQUANT


def test_an_h100_holds_even_the_bf16_experts() -> None:
    """80 GiB holds gpt-oss-20b's dequantized weights: the risk does not make it tight."""
    hw = hardware_for(parse_gpu_list("h100-80gb"))
    est = estimate("gpt-oss-20b", InferenceSettings(**SETTINGS), hw)
    assert verdict(est, Platform(os="linux")).level == "fits"


def test_below_compute_capability_7_5_the_bf16_experts_are_in_the_total() -> None:
    """A V100 (7.0) fails ``gpu_is_supported``: always dequantized, so the weights are the bf16
    model (39 GiB: accelerate offloads what 32 GiB cannot hold) and no risk term is left for it."""
    hw = hardware_for(parse_gpu_list("v100-32gb"))
    est = estimate("gpt-oss-20b", InferenceSettings(**SETTINGS), hw)
    # device_map "auto": what the GPU cannot hold is offloaded to the CPU
    assert est.devices[0].weights_bytes + est.host.weights_bytes > 35 * GiB
    assert "mxfp4_dequant_bytes" not in est.runtime_details
    t4 = estimate("gpt-oss-20b", InferenceSettings(**SETTINGS), hardware_for(parse_gpu_list("t4")))
    assert t4.devices[0].weights_bytes < 14 * GiB  # 7.5: supported, the risk stays a band term

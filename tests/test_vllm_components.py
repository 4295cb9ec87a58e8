"""--explain attribution of vLLM estimates (oomkit.estimate.vllm_components): the MXFP4 layout
and the vision tower get weights lines of their own, and V0 engines cite V0's code. Real catalog
configs (gpt-oss-120b, Llama 3.2 11B Vision)."""

from __future__ import annotations

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Component, Estimate
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _vllm(model: str, gpu: str, version: str | None, seqs: int = 256) -> Estimate:
    settings = InferenceSettings(
        runtime="vllm", ctx=1024, max_num_seqs=seqs, runtime_version=version
    )
    return estimate(model, settings, hardware_for(parse_gpu_list(gpu)), offline=True)


def _by_label(est: Estimate) -> dict[str, Component]:
    return {c.label: c for c in est.devices[0].components}


def _weights_sum(est: Estimate) -> int:
    return sum(
        c.n_bytes
        for c in est.devices[0].components
        if c.category == "weights" and c.label != "rotary cos/sin cache"
    )


def test_mxfp4_layout_is_its_own_weights_line() -> None:
    est = _vllm("gpt-oss-120b", "h100-sxm", "0.14.1")
    comps = _by_label(est)
    layout = comps["MXFP4 expert layout"]
    assert "quantization/mxfp4.py" in layout.source
    assert layout.inputs["backend"] == "triton"
    assert 3.3 * 2**30 < layout.n_bytes < 3.5 * 2**30
    assert "linear.py" in comps["weights"].source
    # the lines add up to the weights vLLM logs (rotary cache apart)
    total = est.runtime_details["weights_bytes_per_rank"]
    assert _weights_sum(est) + comps["rotary cos/sin cache"].n_bytes == total


def test_vision_tower_and_v0_profile_are_attributed_to_v0_code() -> None:
    est = _vllm("llama-3.2-11b-vision", "a100-80gb-sxm", "0.6.3")
    comps = _by_label(est)
    vision_w = comps["vision encoder + projector"]
    assert "models/mllama.py" in vision_w.source
    assert vision_w.inputs["multimodal_params"] > 8e8
    assert comps["weights"].formula.endswith("(text model)")
    profile = comps["profile-run peak"]
    assert "vllm/worker/enc_dec_model_runner.py" in profile.source
    assert "v1/" not in profile.source
    assert "T^2 + (2S+2) T D + (2S+1) T_u D" in profile.formula
    assert profile.inputs["images"] == 256
    assert (profile.inputs["T"], profile.inputs["T_u"]) == (6432, 6404)
    assert comps["KV cache pool"].source.startswith("vllm/worker/worker.py")
    assert "v1/" not in comps["CUDA graphs"].source


def test_v1_engine_keeps_v1_sources_and_no_extra_lines() -> None:
    comps = _by_label(_vllm("llama-3.1-8b", "h100-sxm", None))
    assert "vllm/v1/worker/gpu_model_runner.py" in comps["profile-run peak"].source
    assert "images" not in comps["profile-run peak"].inputs
    assert "MXFP4 expert layout" not in comps
    assert "vision encoder + projector" not in comps

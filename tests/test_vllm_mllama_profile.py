"""vLLM V0's encoder-decoder profile run for Llama 3.2 Vision (oomkit.estimate.vllm_mm).

Real config: the catalog's copy of meta-llama/Llama-3.2-11B-Vision-Instruct config.json, parsed
by the loader as any config.json is. Figures checked against vllm#9445 (A100 80GB, 0.6.3:
default 256 sequences OOM, 32 start) and vllm#9630 (96 GB H100: 256 sequences OOM at
max_model_len 32, 128 start; "Loading model weights took 19.8557 GB").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidModelSpecError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.vllm_mm import mllama_vision_peak_bytes
from oomkit.hardware.targets import hardware_for
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.model import VisionTowerSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import count_params
from oomkit.units import GiB

ROOT = Path(__file__).resolve().parent.parent
MODEL = "llama-3.2-11b-vision"


def _catalog_config() -> dict[str, object]:
    data = json.loads((ROOT / "src/oomkit/data/models/llama.json").read_text())
    (entry,) = [m for m in data["models"] if m["key"] == MODEL]
    config: dict[str, object] = entry["config"]
    return config


def _vllm(gpu: str, *, seqs: int, ctx: int, version: str | None = "0.6.3") -> Estimate:
    settings = InferenceSettings(
        runtime="vllm", ctx=ctx, max_num_seqs=seqs, runtime_version=version
    )
    return estimate(MODEL, settings, hardware_for(parse_gpu_list(gpu)), offline=True)


def test_mllama_config_counts_the_vision_tower() -> None:
    spec = parse_config(_catalog_config(), name=MODEL)
    # transformers reports 10,670,220,835 parameters for Llama-3.2-11B-Vision-Instruct
    assert count_params(spec) == pytest.approx(10_670_220_835, rel=2e-3)
    tower = spec.vision_tower
    assert tower is not None
    assert tower.kind == "mllama"
    # 4 tiles of (560/14)^2 + 1 = 1601 tokens, padded to 1608 per tile in vLLM's encoder
    assert (tower.tokens_per_image, tower.tokens_per_image_unpadded) == (4 * 1608, 4 * 1601)
    assert tower.saved_layers == 5


def test_vision_peak_grows_with_images_not_tokens() -> None:
    tower = parse_config(_catalog_config(), name=MODEL).vision_tower
    assert tower is not None
    one = mllama_vision_peak_bytes(tower, images=1, elem_bytes=2)
    assert 0.40 * GiB < one < 0.45 * GiB
    assert mllama_vision_peak_bytes(tower, images=256, elem_bytes=2) == 256 * one


def test_v0_default_256_sequences_oom_on_a100_and_32_start() -> None:
    dies = _vllm("a100-80gb-sxm", seqs=256, ctx=1024)
    assert dies.blockers
    assert "No available memory" in dies.blockers[0]
    assert dies.runtime_details["activation_peak_bytes"] > 100 * GiB  # type: ignore[operator]
    works = _vllm("a100-80gb-sxm", seqs=32, ctx=1024)
    assert not works.blockers
    assert works.runtime_details["num_gpu_blocks"] > 1000  # type: ignore[operator]


@pytest.mark.parametrize("gpu", ["h100-nvl", "gh200-96gb"])
def test_vllm_9630_96gb_h100(gpu: str) -> None:
    """256 sequences die even at max_model_len 32; 128 start (2252 blocks in the log)."""
    assert _vllm(gpu, seqs=256, ctx=32).blockers
    ok = _vllm(gpu, seqs=128, ctx=512)
    assert not ok.blockers
    # weights: vision encoder + projector included ("took 19.8557 GB", GiB in vLLM's log)
    w = ok.runtime_details["weights_bytes_per_rank"]
    assert w == pytest.approx(19.8557 * GiB, rel=0.01)


def test_v1_engine_has_no_encoder_decoder_profile() -> None:
    """The V0 enc-dec runner's dummy images are not charged to a V1 engine row. No vLLM release
    ran Mllama on V1 (0.8-0.10 fell back to V0, 0.11 dropped it: tests/test_vllm_support.py), so
    the rule is checked on the engine row itself."""
    from oomkit.estimate.vllm import plan_vllm

    spec = parse_config(_catalog_config(), name=MODEL)
    (gpu,) = hardware_for(parse_gpu_list("a100-80gb-sxm")).devices
    settings = InferenceSettings(runtime="vllm", ctx=1024, max_num_seqs=256)
    v1 = plan_vllm(spec, settings, gpu, engine="v1-2025")
    assert v1.vision_bytes == 0
    assert v1.activation_bytes < 2 * GiB
    assert plan_vllm(spec, settings, gpu, engine="v0-2025").vision_bytes > 100 * GiB


def test_bad_tower_shape_is_a_one_line_error() -> None:
    with pytest.raises(InvalidModelSpecError, match="tokens_per_image_unpadded"):
        VisionTowerSpec(
            kind="mllama",
            hidden_size=1280,
            intermediate_size=5120,
            num_layers=32,
            num_global_layers=8,
            tokens_per_image=100,
            tokens_per_image_unpadded=200,
            saved_layers=5,
        )

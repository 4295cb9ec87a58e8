"""Ollama engine: a Mistral 3 model's vision worst-case graph (oomkit.estimate.ollama_vision_graph).

The real runs are ollama/ollama#11355 (Mistral-Small-3.2 Q4_K_M, num_ctx 16384, flash attention,
one A10): v0.6.8 with num_gpu 41 runs (compute graph 164 MB); v0.9.6 with num_gpu 41 dies at
runner start with 'ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 9646586240';
v0.9.6 with num_gpu 40 runs (the output layer and with it the vision tower stay on the CPU).
"""

from __future__ import annotations

from typing import Any

import pytest

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.ollama_vision_graph import pixtral_vision, worst_case_graph_bytes
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

_LABEL = "vision worst-case graph (2048x2048 image)"
_11355: dict[str, Any] = {"ctx": 16384, "flash_attn": True, "quant": "Q4_K_M"}


def _est(version: str, ngl: int | None, model: str = "mistral-small-3.2-24b") -> Estimate:
    s = InferenceSettings(runtime="ollama", runtime_version=version, n_gpu_layers=ngl, **_11355)
    return estimate(model, s, hardware_for(parse_gpu_list("a10")), offline=True)


def _graph(est: Estimate) -> int:
    return sum(c.n_bytes for d in est.devices for c in d.components if c.label == _LABEL)


def test_pixtral_tower_read_from_the_catalog_config() -> None:
    tower = pixtral_vision(load_model("mistral-small-3.2-24b", offline=True))
    assert tower is not None
    assert (tower.hidden_size, tower.num_heads, tower.image_size, tower.patch_size) == (
        1024,
        16,
        1540,
        14,
    )
    # 24 x (4 D^2 + 3 D I + 2 D) + conv + pre-norm + merger + projector (D x 5120 + 5120^2 + D)
    d, i, t = 1024, 4096, 5120
    assert tower.params == 24 * (
        4 * d * d + 3 * d * i + 2 * d
    ) + 3 * 14 * 14 * d + d + 4 * d * d + (d * t + t * t + d)
    assert pixtral_vision(load_model("llama-3.1-8b", offline=True)) is None


def test_ollama_11355_v0_9_6_buffer_and_verdicts() -> None:
    """The modelled buffer is within 1% of the logged 9646586240 bytes; the verdicts follow the
    three real runs (v0.6.8 / 41 runs, v0.9.6 / 41 dies, v0.9.6 / 40 runs)."""
    tower = pixtral_vision(load_model("mistral-small-3.2-24b", offline=True))
    assert tower is not None
    graph = worst_case_graph_bytes(tower, fused_attention=False)
    assert graph == pytest.approx(9_646_586_240, rel=0.01)
    dies = _est("0.9.6", 41)
    assert _graph(dies) == graph
    assert verdict(dies).level == "does_not_fit"
    old = _est("0.6.8", 41)  # before fe623c2cf: text-only worst case
    assert _graph(old) == 0
    assert verdict(old).level == "fits"
    forty = _est("0.9.6", 40)  # output layer (and v.* / mm.*) on the CPU
    assert _graph(forty) == 0
    assert verdict(forty).level == "fits"


def test_generation_rows_bound_the_mechanism() -> None:
    """fe623c2cf is first in v0.7.1; 1108d8b34 (flash attention for encoders) in v0.13.2."""
    keys = [resolve_generation("ollama", v).key for v in ("0.7.0", "0.7.1", "0.12.3", "0.13.2")]
    assert keys == ["ctx-4k-0.6.7", "mm-worst-case-0.7.1", "engine-0.12", "vision-sdpa-0.13.2"]
    assert _graph(_est("0.7.0", 41)) == 0
    assert _graph(_est("0.7.1", 41)) > 8 * 2**30


def test_flash_attention_drops_the_scores_from_0_13_2() -> None:
    """From v0.13.2 the encoder's attention is fused when flash attention is on: no score
    tensor, only the image and the hidden states; without flash attention it stays."""
    tower = pixtral_vision(load_model("mistral-small-3.2-24b", offline=True))
    assert tower is not None
    fused = worst_case_graph_bytes(tower, fused_attention=True)
    assert fused < 300 * 2**20
    assert _graph(_est("0.13.2", 41)) == fused
    assert _graph(_est("0.12.3", 41)) > 8 * 2**30
    s = InferenceSettings(
        runtime="ollama", runtime_version="0.13.2", n_gpu_layers=41, ctx=16384, flash_attn=False
    )
    nofa = estimate("mistral-small-3.2-24b", s, hardware_for(parse_gpu_list("a10")), offline=True)
    assert _graph(nofa) > 8 * 2**30


def test_unset_num_gpu_is_left_to_ollamas_own_layout() -> None:
    """With num_gpu unset Ollama lays out from llm/memory.go (VisionGraphSize counted there):
    not adjusted."""
    assert _graph(_est("0.9.6", None)) == 0


def test_no_runtime_version_is_the_newest_release() -> None:
    """Without --runtime-version the output says "modelled: Ollama 0.13.2+": the vision
    encoder and its fused graph are on the GPU as with --runtime-version 0.13.2 (they were
    left out, 0.82 GiB of weights short under the same label)."""
    s = InferenceSettings(runtime="ollama", n_gpu_layers=41, **_11355)
    newest = estimate("mistral-small-3.2-24b", s, hardware_for(parse_gpu_list("a10")), offline=True)
    named = _est("0.13.2", 41)
    assert _graph(newest) == _graph(named) > 0
    assert newest.model.params == named.model.params
    assert [d.total_bytes for d in newest.devices] == [d.total_bytes for d in named.devices]

"""PR #6666's conditions: what keeps vLLM V0's default chunked prefill off above 32K.

From the 0.5.3 sdist on, ``EngineArgs.create_engine_config`` turns chunked prefill on above
32K only when ``model_config.get_sliding_window()`` is None, no speculative model, LoRA or
prompt adapter is set and (0.5.3-0.6.1) prefix caching is off; 0.5.4-0.6.2 add Mamba/SSM
layers, 0.6.2 multimodal models, 0.6.6 ROCm, the 0.8-0.10 V0 path MLA. Otherwise
``SchedulerConfig`` keeps ``max_num_batched_tokens = max(max_model_len, 2048)`` and the profile
run pushes the whole length through the model.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.vllm_v0_chunked import Release, v0_chunked_blockers, vllm_sliding_window
from oomkit.hardware.targets import hardware_for
from oomkit.loaders.hf_config import load_config
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

CONFIGS = Path(__file__).parent / "fixtures" / "configs"


def _est(model: str | Path, version: str, ctx: int = 65536) -> Estimate:
    s = InferenceSettings(runtime="vllm", ctx=ctx, tp=1, runtime_version=version)
    hw = hardware_for(parse_gpu_list("h100-sxm"), n_devices=1)
    return estimate(model, s, hw)


def test_qwen2_use_sliding_window_false_means_no_window(tmp_path: Path) -> None:
    # Qwen2.5-7B's config.json: sliding_window 131072 with use_sliding_window false ->
    # get_hf_config_sliding_window() is None and 0.5.3 chunks the 65536-token profile
    real = CONFIGS / "qwen2.5-7b.json"
    raw = json.loads(real.read_text())
    assert raw["sliding_window"] == 131072
    assert raw["use_sliding_window"] is False
    assert vllm_sliding_window(load_config(real)) is None
    assert _est(real, "0.5.3").settings["max_num_batched_tokens"] == 2048
    # the same config with the window switched on keeps the whole length (the failing twin)
    raw["use_sliding_window"] = True
    windowed = tmp_path / "config.json"
    windowed.write_text(json.dumps(raw))
    assert vllm_sliding_window(load_config(windowed)) == 131072
    est = _est(windowed, "0.5.3")
    assert est.settings["max_num_batched_tokens"] == 65536
    assert any("sliding window (131072 tokens)" in a for a in est.assumptions)


def test_phi35_mini_window_keeps_the_whole_length_on_0_5_3_to_0_7() -> None:
    # Phi-3.5-mini's config carries sliding_window 262144, which vLLM reads as a window
    for version in ("0.5.2", "0.5.3", "0.6.3", "0.7.3"):
        est = _est("phi-3.5-mini", version)
        assert est.settings["max_num_batched_tokens"] == 65536, version
    # a model without a window still chunks from 0.5.3 on
    assert _est("mistral-nemo-12b", "0.6.3").settings["max_num_batched_tokens"] == 2048


def test_release_dependent_conditions() -> None:
    s = InferenceSettings(runtime="vllm")
    vision = find_model("llama-3.2-11b-vision").spec()
    mamba = find_model("falcon-mamba-7b").spec()
    dense = find_model("mistral-nemo-12b").spec()
    mla = find_model("deepseek-coder-v2-lite").spec()

    def blocked(spec: ModelSpec, release: Release | None, backend: str = "cuda") -> bool:
        return bool(v0_chunked_blockers(spec, s, release=release, backend=backend))

    # multimodal from the 0.6.2 sdist (by number and by its PyPI day, 2024-09-25)
    assert not blocked(vision, (0, 6, 1, 0))
    assert blocked(vision, (0, 6, 2, 0))
    assert not blocked(vision, date(2024, 9, 24))
    assert blocked(vision, date(2024, 9, 25))
    # Mamba/SSM layers: 0.5.4-0.6.2 only
    assert [blocked(mamba, (0, 5, v, 0)) for v in (3, 4)] == [False, True]
    assert [blocked(mamba, (0, 6, v, 0)) for v in (2, 3)] == [True, False]
    # ROCm from 0.6.6
    assert not blocked(dense, (0, 6, 5, 0), "rocm")
    assert blocked(dense, (0, 6, 6, 0), "rocm")
    assert not blocked(dense, (0, 6, 6, 0), "cuda")
    # MLA in the 0.8-0.10 V0 path, not in 0.7
    assert not blocked(mla, (0, 7, 3, 0))
    assert blocked(mla, (0, 8, 5, 0))
    # no release: only the conditions every release has (LoRA, sliding window)
    assert not blocked(vision, None)
    assert not blocked(mamba, None)
    lora = InferenceSettings(runtime="vllm", enable_lora=True)
    assert v0_chunked_blockers(dense, lora, release=None) == ("--enable-lora",)

"""vLLM's ``max_model_len_that_fits`` never exceeds the longest ``--max-model-len`` vLLM
accepts for the model (``_get_and_verify_max_len``), and says so when the pool holds more.

Real catalog configs and real config.json files parsed as any config.json is.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidModelSpecError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.checks import vllm_max_model_len
from oomkit.hardware.targets import hardware_for
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

QWEN25_7B: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "num_hidden_layers": 28,
    "vocab_size": 152064,
    "max_position_embeddings": 32768,
    "torch_dtype": "bfloat16",
}


def _vllm(model: str | ModelSpec, gpu: str, ctx: int) -> Estimate:
    settings = InferenceSettings(runtime="vllm", ctx=ctx)
    return estimate(model, settings, hardware_for(parse_gpu_list(gpu)), offline=True)


def _capped(est: Estimate) -> list[str]:
    return [a for a in est.assumptions if "capped at" in a]


@pytest.mark.parametrize(
    ("model", "longest"),
    [
        ("llama-3.1-8b", 131072),  # llama3: max_position_embeddings is already the long one
        ("gpt-oss-20b", 131072),  # yarn: original 4096 x factor 32
        ("internlm2.5-7b", 65536),  # dynamic: 32768 x factor 2
        ("qwen2.5-7b", 32768),  # no rope_scaling
    ],
)
def test_fits_len_stops_at_the_model_maximum(
    model: str, longest: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    assert vllm_max_model_len(load_model(model, offline=True)) == longest
    est = _vllm(model, "h200", 4096)  # 141 GB: the pool holds far more than the maximum
    assert est.runtime_details["max_model_len_that_fits"] == longest
    notes = _capped(est)
    assert len(notes) == 1
    assert str(longest) in notes[0]
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in notes[0]
    # the pool really holds more: the variable that lets vLLM go past the maximum lifts the cap
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    longer = _vllm(model, "h200", 4096)
    assert longer.runtime_details["max_model_len_that_fits"] > longest
    assert not _capped(longer)


def test_a_pool_shorter_than_the_maximum_is_not_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    est = _vllm("llama-3.1-8b", "rtx-4090", 4096)
    fits = est.runtime_details["max_model_len_that_fits"]
    assert isinstance(fits, int)
    assert 4096 < fits < 131072
    assert not _capped(est)


def test_yarn_config_extends_the_maximum(tmp_path: Path) -> None:
    """Qwen2.5's documented YaRN block: 32768 x 4 = 131072 (vLLM: original x factor)."""
    cfg = {
        **QWEN25_7B,
        "rope_scaling": {
            "type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 32768,
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    spec = load_model(str(path), offline=True)
    assert (spec.rope_scaling_factor, spec.rope_original_max_position_embeddings) == (4.0, 32768)
    assert vllm_max_model_len(spec) == 131072
    # transformers 5 writes the same block as rope_parameters
    cfg5 = {**QWEN25_7B, "rope_parameters": {**cfg["rope_scaling"], "rope_theta": 1e6}}
    cfg5["rope_parameters"]["rope_type"] = cfg5["rope_parameters"].pop("type")
    path.write_text(json.dumps(cfg5))
    assert vllm_max_model_len(load_model(str(path), offline=True)) == 131072


def test_yarn_without_its_factor_is_not_capped() -> None:
    """A source without the factor (a GGUF header): the maximum is unknown, no cap."""
    import dataclasses

    spec = dataclasses.replace(load_model("gpt-oss-20b", offline=True), rope_scaling_factor=None)
    assert vllm_max_model_len(spec) is None


@pytest.mark.parametrize("bad", [math.nan, 0.0, -2.0, math.inf])
def test_bad_factor_is_refused(bad: float) -> None:
    import dataclasses

    spec = load_model("llama-3.1-8b", offline=True)
    with pytest.raises(InvalidModelSpecError, match="rope_scaling_factor"):
        dataclasses.replace(spec, rope_scaling_factor=bad)


@pytest.mark.parametrize(
    ("model", "ctx", "refused"),
    [
        ("internlm2.5-7b", 60000, False),  # dynamic x2: vLLM accepts up to 65536
        ("internlm2.5-7b", 70000, True),
        ("gpt-oss-20b", 200000, True),  # yarn: 4096 x 32 = 131072 (was only noted)
        ("gemma-3-4b", 200000, True),  # Gemma 3's 131072 is already scaled (was only noted)
        ("llama-3.1-8b", 131073, True),
    ],
)
def test_ctx_past_vllm_maximum_is_refused(
    model: str, ctx: int, refused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    if not refused:
        est = _vllm(model, "h200", ctx)
        assert any("up to 65536" in a for a in est.assumptions)
        return
    from oomkit.errors import InvalidSettingError

    with pytest.raises(InvalidSettingError, match="VLLM_ALLOW_LONG_MAX_MODEL_LEN=1") as err:
        _vllm(model, "h200", ctx)
    assert err.value.setting == "ctx"
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    assert any("only warns" in a for a in _vllm(model, "h200", ctx).assumptions)

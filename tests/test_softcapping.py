"""Gemma-2 soft-capping: read from config.json, validated, and counted by the training formula
(the tanh outputs that eager attention and the capped head keep for backward)."""

from __future__ import annotations

import dataclasses

import pytest

from oomkit.api import load_model
from oomkit.errors import ConfigFormatError, InvalidModelSpecError
from oomkit.estimate.training import estimate_training
from oomkit.inprocess.probe_model import load_config_dict
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import TrainingSettings


def test_gemma2_config_carries_both_caps() -> None:
    spec = load_model("gemma-2-2b", offline=True)
    assert (spec.attn_logit_softcapping, spec.final_logit_softcapping) == (50.0, 30.0)
    assert load_model("llama-3.2-1b", offline=True).attn_logit_softcapping is None


@pytest.mark.parametrize("bad", [0, -1.0, "30", True, float("inf")])
def test_bad_cap_in_config_is_refused(bad: object) -> None:
    cfg = {**load_config_dict("gemma-2-2b"), "final_logit_softcapping": bad}
    with pytest.raises(ConfigFormatError, match="final_logit_softcapping"):
        parse_config(cfg, name="gemma-bad")


def test_null_cap_means_none() -> None:
    cfg = {**load_config_dict("gemma-2-2b"), "final_logit_softcapping": None}
    assert parse_config(cfg, name="g").final_logit_softcapping is None


def test_bad_cap_in_spec_is_refused() -> None:
    spec = load_model("gemma-2-2b", offline=True)
    with pytest.raises(InvalidModelSpecError, match="attn_logit_softcapping"):
        dataclasses.replace(spec, attn_logit_softcapping=-2.0)


def test_caps_add_the_saved_tanh_outputs() -> None:
    """Per layer ``B x a x S x S`` compute-dtype tanh output (eager attention) and one
    ``B x S x V`` for the capped head: the difference is exactly those bytes."""
    spec = load_model("gemma-2-2b", offline=True)
    plain = dataclasses.replace(spec, attn_logit_softcapping=None, final_logit_softcapping=None)
    s = TrainingSettings(method="full", micro_batch=1, seq=2048)
    capped = estimate_training(spec, s, Hardware()).runtime_details["phases"]
    bare = estimate_training(plain, s, Hardware()).runtime_details["phases"]
    assert isinstance(capped, dict)
    assert isinstance(bare, dict)
    e = 2  # bf16 autocast
    per_layer = spec.num_attention_heads * 2048 * 2048 * e
    head = 2048 * spec.vocab_size * e
    assert capped["forward_end"] - bare["forward_end"] == spec.num_hidden_layers * per_layer + head


def test_probe_takes_an_integer_cap_and_refuses_a_bad_one() -> None:
    """transformers 5 validates ``attn_logit_softcapping`` as a float; a config.json that writes
    ``50`` is the same number (the probe passes it as 50.0), and ``-5`` gets the loader's
    one-line error rather than an internal one (review of session 4)."""

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import oomkit

    cfg = {**load_config_dict("gemma-2-2b"), "num_hidden_layers": 1, "attn_logit_softcapping": 50}
    assert oomkit.probe(cfg, seq=16).peak_bytes > 0
    with pytest.raises(ConfigFormatError, match="attn_logit_softcapping"):
        oomkit.probe({**cfg, "attn_logit_softcapping": -5}, seq=16)

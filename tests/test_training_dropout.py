"""Dropout masks in the training estimate: read from the config, placed per architecture, and
checked against the tensors autograd really saves (the in-process probe, CUDA semantics)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.api import load_model
from oomkit.errors import ConfigFormatError, InvalidModelSpecError, InvalidSettingError
from oomkit.estimate.training_activations import layer_activations, training_dropout
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.model import DropoutSpec
from oomkit.spec.settings import TrainingSettings


def _gpt2(p: float | None, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 128, "n_head": 4,
        "n_layer": 2, "n_positions": 256, "vocab_size": 1000, "bos_token_id": 0,
        "eos_token_id": 0, "activation_function": "gelu_new",
    }  # fmt: skip
    if p is not None:
        cfg.update(attn_pdrop=p, embd_pdrop=p, resid_pdrop=p)
    return {**cfg, **extra}


def _opt(p: float) -> dict[str, Any]:
    return {
        "architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": 128,
        "ffn_dim": 512, "num_attention_heads": 4, "num_hidden_layers": 2,
        "max_position_embeddings": 256, "vocab_size": 1000, "word_embed_proj_dim": 128,
        "do_layer_norm_before": True, "dropout": p, "attention_dropout": 0.0,
        "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 1,
    }  # fmt: skip


def test_catalog_configs_carry_the_real_dropouts() -> None:
    gpt2 = load_model("gpt2", offline=True)
    assert gpt2.dropout == DropoutSpec(embedding=0.1, attention=0.1, residual=(0.1, 0.1))
    opt = load_model("opt-1.3b", offline=True)
    assert opt.dropout == DropoutSpec(embedding=0.0, attention=0.0, residual=(0.1, 0.1))
    phi2 = load_model("phi-2", offline=True)
    assert phi2.dropout == DropoutSpec(residual=(0.1, 0.1))
    assert load_model("llama-3.2-1b", offline=True).dropout is None


def test_absent_keys_take_the_configuration_defaults() -> None:
    # GPT2Config's defaults are 0.1: a config.json without the keys trains with dropout
    assert parse_config(_gpt2(None), name="g").dropout == DropoutSpec(
        embedding=0.1, attention=0.1, residual=(0.1, 0.1)
    )
    assert parse_config(_gpt2(0.0), name="g").dropout is None


@pytest.mark.parametrize("bad", [1.0, -0.1, "0.1", True, float("nan")])
def test_a_dropout_that_is_no_probability_is_refused(bad: object) -> None:
    with pytest.raises(ConfigFormatError, match=r"resid_pdrop is .* not a dropout probability"):
        parse_config(_gpt2(0.1, resid_pdrop=bad), name="g")
    with pytest.raises(InvalidModelSpecError, match="a probability in"):
        DropoutSpec(attention=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidSettingError, match="dropout"):
        TrainingSettings(dropout=bad)  # type: ignore[arg-type]


def test_override_follows_the_architecture() -> None:
    llama = load_model("llama-3.2-1b", offline=True)
    # a Llama layer has attention dropout only (modeling_llama.py): no residual masks
    d = training_dropout(llama, TrainingSettings(dropout=0.1))
    assert d == DropoutSpec(attention=0.1)
    gpt2 = load_model("gpt2", offline=True)
    assert training_dropout(gpt2, TrainingSettings(dropout=0.0)) == DropoutSpec(residual=(0.0, 0.0))


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
@pytest.mark.parametrize("family", ["gpt2", "opt"])
def test_masks_match_the_tensors_autograd_saves(family: str, impl: str) -> None:
    # the in-process probe runs the real transformers model in train mode on FakeTensors with
    # CUDA's dropout (native_dropout: a 1-byte bool mask saved) and SDPA's fused kernels (no
    # mask): what dropout adds there must be what the estimate adds
    from oomkit import probe

    make = _gpt2 if family == "gpt2" else _opt
    b, s = 2, 64
    saved = {}
    counted = {}
    for p in (0.0, 0.1):
        cfg = make(p)
        saved[p] = probe(
            cfg, train="full", seq=s, batch=b, attn_implementation=impl,
            round_to_cuda_blocks=False,
        ).saved_activations_bytes  # fmt: skip
        spec = parse_config(cfg, name=family)
        st = TrainingSettings(micro_batch=b, seq=s, attn_implementation=impl)
        counted[p] = sum(a.saved_bytes for a in layer_activations(spec, st, trainable_roles=None))
    h, heads, layers = 128, 4, 2
    # GPT-2: embeddings once, 2 residual masks per layer, eager's b x h x s x s probability mask
    resid = b * s * h * 2 * layers
    emb = b * s * h if family == "gpt2" else 0
    attn = b * heads * s * s * layers if family == "gpt2" and impl == "eager" else 0
    assert saved[0.1] - saved[0.0] == resid + emb + attn
    assert counted[0.1] - counted[0.0] == resid + emb + attn


def test_cli_gpt2_counts_the_masks(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli import main

    base = ["estimate", "gpt2", "--train", "full", "--seq", "1024", "--micro-batch", "8",
            "--gpu", "rtx-4090", "--json"]  # fmt: skip
    main(base)
    config = json.loads(capsys.readouterr().out)
    main([*base, "--dropout", "0"])
    none = json.loads(capsys.readouterr().out)
    notes = " ".join(config["assumptions"])
    assert "dropout (config)" in notes
    assert "2 residual per layer (p=0.1)" in notes
    assert "no dropout (modern LLM configs)" not in notes
    assert "no dropout (--dropout 0" in " ".join(none["assumptions"])
    # 12 layers x 2 residual masks + the embeddings' mask, 1 byte per element of 8 x 1024 x 768
    extra = config["devices"][0]["activations_bytes"] - none["devices"][0]["activations_bytes"]
    assert extra == 8 * 1024 * 768 * (2 * 12 + 1)
    assert config["settings"]["dropout"] == 0.1


def test_cli_dropout_needs_training(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli import main

    rc = main(["estimate", "gpt2", "--dropout", "0.1", "--gpu", "rtx-4090"])
    assert rc != 0
    assert "--dropout needs --train" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["1", "-0.1", "abc", "nan"])
def test_cli_dropout_out_of_range_is_one_usage_line(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from oomkit.cli import main

    rc = main(["estimate", "gpt2", "--train", "full", "--gpu", "rtx-4090", f"--dropout={bad}"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "dropout" in err  # click's range check names --dropout; NaN reaches TrainingSettings
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("bad", [1.0, -0.1, float("nan"), "x"])
def test_training_settings_refuse_a_dropout_that_is_no_probability(bad: object) -> None:
    from oomkit.errors import InvalidSettingError
    from oomkit.spec.settings import TrainingSettings

    with pytest.raises(InvalidSettingError, match="dropout"):
        TrainingSettings(method="full", dropout=bad)  # type: ignore[arg-type]

"""transformers' model-code layouts (``oomkit.estimate.transformers_layouts``): Falcon's new
decoder architecture caches K/V broadcast to every query head; learned position tables
(GPT-2, OPT) refuse sequences past their rows."""

from __future__ import annotations

import pytest

from oomkit.catalog.models import find_model
from oomkit.estimate.hf_kv import kv_bytes, kv_layers
from oomkit.estimate.transformers import estimate_transformers
from oomkit.estimate.transformers_layouts import (
    cache_spec,
    ctx_cap,
    generated_tokens,
    learned_position_limit,
    load_dtype,
    position_limit_blocker,
)
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import model_tensors
from oomkit.units import GiB

A100 = DeviceTarget(name="A100 80GB", capacity_bytes=80 * GiB)


def _kv(est_devices: object) -> int:
    return sum(
        c.n_bytes
        for d in est_devices  # type: ignore[attr-defined]
        for c in d.components
        if c.category == "kv_cache"
    )


def test_falcon_new_decoder_architecture_caches_every_query_head() -> None:
    falcon40 = find_model("falcon-40b").spec()
    assert (falcon40.num_attention_heads, falcon40.num_key_value_heads) == (128, 8)
    stored = cache_spec(falcon40)
    assert stored.num_key_value_heads == 128
    # 60 layers x 128 heads x (64 + 64) x 2 bytes x 16,640 tokens = 30.47 GiB (16x the 8 heads)
    tokens = 16384 + 256
    full = kv_bytes(kv_layers(stored, kv_elem_bytes=2, state_elem_bytes=2), seq_len=tokens)
    assert full == 60 * 128 * 128 * 2 * tokens
    assert full == 16 * kv_bytes(
        kv_layers(falcon40, kv_elem_bytes=2, state_elem_bytes=2), seq_len=tokens
    )
    # Falcon-7B (multi-query, old layout) caches its one K/V head as the config says
    falcon7 = find_model("falcon-7b").spec()
    assert cache_spec(falcon7) is falcon7


def test_falcon_40b_estimate_charges_the_broadcast_cache() -> None:
    falcon40 = find_model("falcon-40b").spec()
    est = estimate_transformers(
        falcon40,
        InferenceSettings(runtime="transformers", ctx=16384),
        Hardware(devices=(A100, A100)),
    )
    assert est.runtime_details["kv_cache_bytes_final"] == 60 * 128 * 128 * 2 * (16384 + 256)
    assert _kv(est.devices) > 29 * GiB  # was 1.90 GiB (8 heads)


def test_learned_position_tables() -> None:
    gpt2 = find_model("gpt2-xl").spec()
    opt = find_model("opt-1.3b").spec()
    assert learned_position_limit(gpt2) == 1024  # n_positions
    assert learned_position_limit(opt) == 2048  # 2050 rows, offset 2
    assert learned_position_limit(find_model("llama-3.1-8b").spec()) is None  # RoPE
    assert learned_position_limit(find_model("bert-base-uncased").spec()) is None  # encoder
    # N new tokens feed N - 1 back: positions up to prompt + N - 2
    assert position_limit_blocker(gpt2, 769, 256) is None
    assert position_limit_blocker(gpt2, 770, 256) is not None
    assert position_limit_blocker(gpt2, 1024, 1) is None
    assert position_limit_blocker(gpt2, 1025, 1) is not None
    assert position_limit_blocker(opt, 1793, 256) is None
    # an unset max_new_tokens is cut to what the table leaves; an asked-for one is kept
    assert generated_tokens(gpt2, 1024, None, 256)[0] == 1
    assert generated_tokens(gpt2, 900, None, 256)[0] == 125
    assert generated_tokens(gpt2, 512, None, 256) == (256, None)
    assert generated_tokens(gpt2, 1024, 256, 256) == (256, None)
    assert ctx_cap(gpt2, None) == 769
    assert ctx_cap(find_model("llama-3.1-8b").spec(), None) is None


def test_cli_refuses_gpt2_past_its_position_table(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli import main

    args = ["estimate", "gpt2-xl", "-r", "transformers", "--gpu", "rtx-4090", "--offline"]
    assert main([*args, "--ctx", "8k"]) == 3
    out = capsys.readouterr().out
    assert "Does not fit." in out
    assert "learned position table of 1024 positions" in out
    assert main([*args, "--ctx", "1k", "--max-new-tokens", "256"]) == 3
    assert "index past it" in capsys.readouterr().out
    assert main([*args, "--ctx", "1k"]) == 0  # unset: one new token, said
    out = capsys.readouterr().out
    assert "Fits." in out
    assert "max_new_tokens=1," in out
    assert "max_new_tokens unset: gpt2's learned position table has 1024 positions" in out
    assert main([*args, "--ctx", "1k", "--emit"]) == 0  # the command generates what was priced
    assert "model.generate(**inputs, max_new_tokens=1)" in capsys.readouterr().out


def test_ctx_max_stops_at_the_position_table(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli import main

    args = ["estimate", "gpt2-xl", "-r", "transformers", "--gpu", "rtx-4090", "--offline"]
    assert main([*args, "--ctx", "max"]) == 0
    out = capsys.readouterr().out
    assert "ctx=768, max_new_tokens=256," in out  # 1024 positions + 1 - 256 new, x256
    assert "--ctx max: 768" in out


def test_config_without_dtype_loads_float32(capsys: pytest.CaptureFixture[str]) -> None:
    """GPT-2's config.json has no torch_dtype: transformers loads float32 (no dtype: the torch
    default; dtype='auto': the checkpoint's float32 weights), 4 bytes a parameter."""
    from oomkit.cli import main

    gpt2 = find_model("gpt2-xl").spec()
    assert gpt2.torch_dtype is None
    tensors = model_tensors(gpt2)
    quant, note = load_dtype(gpt2, tensors, None)
    assert quant == "fp32"
    assert note is not None
    assert load_dtype(gpt2, tensors, "bf16") == ("bf16", None)  # asked for: kept
    llama = find_model("llama-3.1-8b").spec()  # config says bfloat16
    assert load_dtype(llama, model_tensors(llama), None) == (None, None)
    args = ["estimate", "gpt2-xl", "-r", "transformers", "--gpu", "rtx-4090", "--offline"]
    assert main([*args, "--ctx", "768"]) == 0
    out = capsys.readouterr().out
    assert "quant=fp32" in out
    assert "weights                   5.80 GiB" in out  # 1,557,611,200 x 4 bytes
    assert "the config has no dtype: float32 weights" in out
    # the label of a release's MoE change is not a dense model's
    assert "modelled: transformers 5.0+\n" in out


def test_moe_models_keep_the_moe_generation_label(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli import main

    args = ["estimate", "mixtral-8x7b", "-r", "transformers", "--gpu", "h100", "--offline"]
    main([*args, "--ctx", "512"])
    assert "modelled: transformers 5.0+ (fused MoE experts)" in capsys.readouterr().out


def test_training_past_the_table_is_the_inference_blocker() -> None:
    """Training GPT-2/OPT on a sequence past the learned table: the same refusal (the same
    wording) as inference past it, at the table's length and not one token before."""
    from oomkit.estimate.training import estimate_training
    from oomkit.estimate.transformers_layouts import training_position_blocker
    from oomkit.spec.settings import TrainingSettings

    gpt2 = find_model("gpt2").spec()
    opt = find_model("opt-125m").spec()
    hw = Hardware(devices=(A100,))
    assert training_position_blocker(gpt2, 1024) is None
    assert training_position_blocker(opt, 2048) is None  # 2050 rows less OPT's offset of 2
    assert training_position_blocker(find_model("llama-3.1-8b").spec(), 10**6) is None
    at_table = estimate_training(gpt2, TrainingSettings(method="full", seq=1024), hw)
    assert at_table.blockers == ()
    assert at_table.fits
    past = estimate_training(gpt2, TrainingSettings(method="full", seq=1025), hw)
    assert past.fits is False
    (why,) = past.blockers
    inference = position_limit_blocker(gpt2, 1025, 1)
    assert inference is not None
    same = (
        "gpt2 has a learned position table of 1024 positions (n_positions/max_position_embeddings)"
    )
    assert why.startswith(same)
    assert inference.startswith(same)
    assert "index" in why
    assert "past it (IndexError, or a CUDA device-side assert)" in why
    assert why.endswith("keep seq <= 1024")
    opt_past = estimate_training(opt, TrainingSettings(method="lora", seq=2049), hw)
    assert opt_past.blockers
    assert "2048 positions" in opt_past.blockers[0]


def test_training_planner_never_proposes_a_sequence_past_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No training lever changes the sequence, so none lifts the blocker: the planner proposes
    nothing for GPT-2 at 2048 tokens and says why (not "more GPUs"), and its plans at the
    table's length keep that length."""
    from oomkit.cli import main
    from oomkit.planner.training import suggest_training_changes
    from oomkit.spec.settings import TrainingSettings

    gpt2 = find_model("gpt2-xl").spec()
    small = Hardware(devices=(DeviceTarget(name="small", capacity_bytes=8 * GiB),))
    settings = TrainingSettings(method="full", seq=2048)
    assert suggest_training_changes(gpt2, settings, small) == []
    ok = suggest_training_changes(gpt2, TrainingSettings(method="full", seq=1024), small)
    assert ok
    assert all(c.settings.seq == 1024 for c in ok)
    args = ["gpt2", "--train", "full", "--gpu", "rtx-4090", "--offline"]
    main(["plan", *args, "--seq", "2048"])
    out = capsys.readouterr().out
    assert "Nothing fits: gpt2 has a learned position table of 1024 positions" in out
    assert "more GPUs" not in out
    assert main(["estimate", *args, "--seq", "2048"]) == 3
    out = capsys.readouterr().out
    assert "a 2048-token training sequence indexes past it" in out
    assert "more GPUs" not in out


def test_training_seq_not_given_defaults_to_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """``--seq`` not given: 2048 tokens, or a shorter learned table (GPT-2 1024, OPT 2048) with a
    note; given, it is kept (past the table: the blocker above). A bare ``plan gpt2 --train full``
    used to answer "Nothing fits" for the default 2048."""
    import json

    from oomkit.cli import main
    from oomkit.estimate.transformers_layouts import default_training_seq

    gpt2 = find_model("gpt2").spec()
    assert default_training_seq(gpt2, None)[0] == 1024
    assert default_training_seq(gpt2, None)[1] is not None
    assert default_training_seq(gpt2, 512) == (512, None)
    assert default_training_seq(gpt2, 2048) == (2048, None)
    llama = find_model("llama-3.1-8b").spec()
    assert default_training_seq(llama, None) == (2048, None)
    args = ["gpt2", "--train", "full", "--gpu", "rtx-4090", "--offline"]
    assert main(["plan", *args]) == 0
    out = capsys.readouterr().out
    assert "Nothing fits" not in out
    assert "--seq not given: 1024 tokens" in out
    assert "--seq 1024" in out  # the check: command reproduces the plan
    assert main(["estimate", *args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["seq"] == 1024
    assert any("--seq not given" in n for n in doc["verdict_details"]["notes"])
    main(
        ["estimate", "llama-3.1-8b", "--train", "lora", "--gpu", "rtx-4090", "--offline", "--json"]
    )
    assert json.loads(capsys.readouterr().out)["settings"]["seq"] == 2048

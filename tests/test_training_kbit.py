"""QLoRA after PEFT's ``prepare_model_for_kbit_training`` (``--kbit-prep``).

The prep upcasts every fp16/bf16 parameter that is not 4-bit to fp32 (peft/utils/other.py): the
frozen embeddings, norms and output head double, the residual stream runs in fp32 under
autocast, and the frozen fp32 head is cast to 16 bits on each forward. Measured on an H200
(``tests/test_gpu_training_boundary.py``); here the arithmetic and the boundary checks.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from conftest import run_cli
from oomkit.errors import InvalidSettingError
from oomkit.estimate.training import estimate_training
from oomkit.estimate.training_activations import kbit_head_cast_bytes
from oomkit.estimate.training_states import model_states
from oomkit.inprocess.probe_model import load_config_dict
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings


def _spec() -> ModelSpec:
    return parse_config(load_config_dict("llama-3.1-8b"), name="llama-3.1-8b")


def test_kbit_prep_is_a_qlora_setting() -> None:
    with pytest.raises(InvalidSettingError, match="kbit_prep"):
        TrainingSettings(method="lora", kbit_prep=True)
    with pytest.raises(InvalidSettingError, match="kbit_prep"):
        TrainingSettings(method="full", kbit_prep=True)
    TrainingSettings(method="qlora", kbit_prep=True)


def test_frozen_non_4bit_parameters_double() -> None:
    """Embeddings + head + norms of Llama-3.1-8B: 2 x 128256 x 4096 + 65 x 4096 parameters, each
    2 bytes more in fp32; the NF4 linears do not change."""
    spec = _spec()
    st = TrainingSettings(method="qlora", micro_batch=1, seq=2048)
    plain = model_states(spec, st).frozen_weights_bytes
    prepped = model_states(spec, replace(st, kbit_prep=True)).frozen_weights_bytes
    non_4bit = 2 * 128256 * 4096 + (2 * 32 + 1) * 4096
    assert prepped - plain == 2 * non_4bit


def test_head_cast_and_fp32_stream() -> None:
    spec = _spec()
    st = TrainingSettings(method="qlora", micro_batch=1, seq=2048, grad_checkpointing="full")
    assert kbit_head_cast_bytes(spec, st) == 0
    assert kbit_head_cast_bytes(spec, replace(st, kbit_prep=True)) == 128256 * 4096 * 2
    hw = Hardware()
    plain = estimate_training(spec, st, hw).runtime_details["peak_allocated_bytes"]
    prepped = estimate_training(spec, replace(st, kbit_prep=True), hw).runtime_details[
        "peak_allocated_bytes"
    ]
    assert isinstance(plain, int)
    assert isinstance(prepped, int)
    # weights 1.96 GiB + head cast 0.98 GiB + checkpoints 32 x 2048 x 4096 x 2 = 0.5 GiB
    assert 3.3 * (1 << 30) < prepped - plain < 3.6 * (1 << 30)


def test_more_context_never_needs_less_with_the_prep() -> None:
    spec = _spec()
    peaks = [
        estimate_training(
            spec, TrainingSettings(method="qlora", kbit_prep=True, seq=s), Hardware()
        ).runtime_details["peak_allocated_bytes"]
        for s in (256, 1024, 4096)
    ]
    assert peaks == sorted(peaks)


def test_cli_flag_and_its_errors(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("estimate", "llama-3.1-8b", "--train", "qlora", "--gpu", "rtx-4090", "--json")
    code, out, err = run_cli(capsys, *base)
    assert code in (0, 4), err  # fits or tight
    plain = json.loads(out)
    code, out, err = run_cli(capsys, *base, "--kbit-prep")
    assert code in (0, 3, 4), err
    prepped = json.loads(out)
    assert prepped["devices"][0]["total_bytes"] > plain["devices"][0]["total_bytes"]
    code, out, err = run_cli(capsys, "estimate", "llama-3.1-8b", "--kbit-prep")
    assert code == 2
    assert "--kbit-prep needs --train" in err
    code, out, err = run_cli(capsys, "estimate", "llama-3.1-8b", "--train", "lora", "--kbit-prep")
    assert code == 2
    assert "qlora" in err
    assert "Traceback" not in err


def test_planner_offers_the_16_bit_cast_back_and_keeps_the_flag_in_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A kbit-prepped run that does not fit a 24 GiB card: leaving embeddings, norms and head
    in bf16 (no prep) is offered right after the allocator setting, and a plan that keeps the
    prep reproduces it with ``--kbit-prep`` in its check command. The offer is not labelled as
    TRL's ``peft_module_casting_to_bf16``: that keeps the norms fp32, so a Llama's residual
    stream stays fp32, which the modelled change (no prep at all) does not keep."""
    from oomkit.planner.training import suggest_training_changes

    spec = _spec()
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    hw = hardware_for((find_gpu("rtx-4090"),))
    st = TrainingSettings(method="qlora", kbit_prep=True, micro_batch=1, seq=2048)
    changes = suggest_training_changes(spec, st, hw, limit=5)
    summaries = [c.summary for c in changes]
    cast = "no prepare_model_for_kbit_training"
    assert any(cast in s for s in summaries), summaries
    assert all(c.settings.kbit_prep is (cast not in c.summary) for c in changes)
    assert not any("peft_module_casting_to_bf16" in s for s in summaries)
    code, out, err = run_cli(
        capsys, "plan", "llama-3.1-8b", "--train", "qlora", "--kbit-prep", "--gpu", "rtx-4090"
    )
    assert code == 0, err
    checks = [line for line in out.splitlines() if line.strip().startswith("check:")]
    assert any("--kbit-prep" in c for c in checks)
    assert any("--kbit-prep" not in c for c in checks)


def test_all_linear_lora_keeps_the_norms_frozen() -> None:
    """LoRA on every linear (``all-linear``) adapts the projections, not the norms: the activation
    model gets the explicit stems (None would mean full fine-tuning and save each RMSNorm's
    input for a weight gradient). Llama-3.1-8B QLoRA all-linear b4 s1024 without checkpointing
    was 8.2% over its H200 allocated peak with the norms counted, 2.4% after."""
    from oomkit.estimate.training_states import lora_adapted_roles, lora_target_roles

    spec = _spec()
    assert lora_target_roles(spec, ("all-linear",)) is None
    roles = lora_adapted_roles(spec, ("all-linear",))
    assert {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"} <= roles
    assert not any("norm" in r for r in roles)
    assert "output" not in roles
    st = TrainingSettings(method="qlora", micro_batch=4, seq=1024, lora_targets=("all-linear",))
    full_like = estimate_training(spec, st, Hardware()).runtime_details["peak_allocated_bytes"]
    assert isinstance(full_like, int)
    # 34.34 GiB measured (benchmarks/gpu/results/training_boundary_holdout_h200.json)
    assert abs(full_like / (34.34 * (1 << 30)) - 1) < 0.04

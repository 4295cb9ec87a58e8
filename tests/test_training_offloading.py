"""Activation offloading (torchtune ``enable_activation_offloading``) in the training estimate."""

from __future__ import annotations

import dataclasses
import json

import pytest

from oomkit.api import load_model
from oomkit.estimate.training import estimate_training
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import TrainingSettings

SPEC = load_model("llama-3.2-3b", offline=True)
BASE = TrainingSettings(
    method="full", master_weights=False, micro_batch=2, seq=4096, loss="chunked",
    optimizer_in_backward=True,
)  # fmt: skip


def _peak(s: TrainingSettings) -> int:
    est = estimate_training(SPEC, s, Hardware())
    peak = est.runtime_details["peak_allocated_bytes"]
    assert isinstance(peak, int)
    return peak


@pytest.mark.parametrize("gc", ["none", "selective", "full"])
def test_offloading_never_raises_the_peak(gc: str) -> None:
    s = dataclasses.replace(BASE, grad_checkpointing=gc)
    assert _peak(dataclasses.replace(s, activation_offloading=True)) <= _peak(s)


def test_with_checkpointing_the_layer_inputs_move_to_the_host() -> None:
    s = dataclasses.replace(BASE, grad_checkpointing="full")
    off = dataclasses.replace(s, activation_offloading=True)
    layer_input = s.micro_batch * s.seq * SPEC.hidden_size * 2  # bf16 hidden state per layer
    # all but the 5-tensor forward stash of layer inputs leave the GPU
    moved = (SPEC.num_hidden_layers - 5) * layer_input
    assert _peak(s) - _peak(off) == pytest.approx(moved, rel=0.02)
    est = estimate_training(SPEC, off, Hardware())
    assert any("activation offloading" in a for a in est.assumptions)


def test_cli_flag() -> None:
    from click.testing import CliRunner

    from oomkit.cli import cli

    args = ["estimate", "llama-3.2-3b", "--train", "full", "--micro-batch", "2", "--seq", "4096",
            "--grad-checkpointing", "full", "--json"]  # fmt: skip
    plain = CliRunner().invoke(cli, args)
    off = CliRunner().invoke(cli, [*args, "--activation-offloading"])
    assert plain.exit_code == off.exit_code == 0, off.output

    # the peak of this run is the optimizer step (unchanged); the forward's end drops
    a = json.loads(plain.stdout)["runtime_details"]["phases"]
    b = json.loads(off.stdout)["runtime_details"]["phases"]
    assert b["forward_end"] < a["forward_end"]
    assert b["optimizer_step"] == a["optimizer_step"]

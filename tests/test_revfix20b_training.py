"""Reviewer findings of session 20 on training plans and estimates (revfix20b).

1. ``plan --train`` stacked 8-bit AdamW on ZeRO-Offload. DeepSpeed steps an offloaded optimizer
   with its own CPU optimizer only (deepspeed/runtime/engine.py ``_configure_optimizer``:
   ``ZeRORuntimeException`` for a client optimizer unless ``zero_force_ds_cpu_optimizer`` is
   false), and the HF Trainer's accelerate swaps the client optimizer for DeepSpeedCPUAdam
   (accelerate ``map_pytorch_optim_to_deepspeed``): the 8-bit states never exist, and the
   plan priced host RAM with them (89.98 GiB "of 128 GiB" where DeepSpeedCPUAdam needs 134.62).
"""

from __future__ import annotations

import dataclasses

import pytest

import oomkit
from oomkit.cli import main
from oomkit.planner.training import suggest_training_changes
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import TrainingSettings
from oomkit.units import GiB


def _gpus(name: str, n: int) -> Hardware:
    gpu = oomkit.find_gpu(name).to_device_target()
    return Hardware(devices=(gpu,) * n)


def test_plan_never_stacks_8bit_adamw_on_zero_offload(capsys: pytest.CaptureFixture[str]) -> None:
    """The reviewer's command: the plan named optim="adamw_bnb_8bit" with offload_optimizer."""
    for ram in ("128GiB", "256GiB"):
        main(["plan", "llama-3.1-8b", "--train", "full", "--gpu", "2xrtx-4090", "--seq", "4096",
              "--ram", ram])  # fmt: skip
        text = capsys.readouterr().out
        for block in text.split("\nAlternative")[:3]:
            if "offload_optimizer" in block:
                assert "adamw_bnb_8bit" not in block, block
                assert "8-bit AdamW" not in block, block
    # with room for DeepSpeedCPUAdam's fp32 states the offload plan is AdamW's
    main(["plan", "llama-3.1-8b", "--train", "full", "--gpu", "2xrtx-4090", "--seq", "4096",
          "--ram", "256GiB"])  # fmt: skip
    text = capsys.readouterr().out
    assert '"offload_optimizer"' in text
    assert 'optim="adamw_torch"' in text


def test_offload_lever_names_the_optimizer_that_runs() -> None:
    """Asked for 8-bit AdamW, the ZeRO-Offload lever says DeepSpeed's CPU AdamW replaces it."""
    spec = oomkit.load_model("llama-3.1-8b")
    s = TrainingSettings(gpus=2, optimizer="adamw8bit", seq=4096, grad_checkpointing="full")
    changes = suggest_training_changes(spec, s, _gpus("rtx-4090", 2), limit=5)
    offloaded = [c for c in changes if c.settings.offload_optimizer]
    assert offloaded, [c.summary for c in changes]
    for c in offloaded:
        assert c.settings.optimizer == "adamw", c.summary
        assert "in place of adamw8bit" in c.summary


def test_estimate_prices_zero_offload_8bit_as_deepspeed_cpu_adam() -> None:
    """``estimate --optimizer adamw8bit --zero 3 --offload-optimizer``: the host keeps
    DeepSpeedCPUAdam's fp32 states (what the HF Trainer runs), the GPUs are unchanged, and one
    assumption says why."""
    spec = oomkit.load_model("llama-3.1-8b")
    hw = _gpus("rtx-4090", 2)
    base = TrainingSettings(gpus=2, zero=3, offload_optimizer=True, seq=4096,
                            grad_checkpointing="full")  # fmt: skip
    adamw = oomkit.estimate_training(spec, base, hw)
    bnb = oomkit.estimate_training(spec, dataclasses.replace(base, optimizer="adamw8bit"), hw)
    assert bnb.host.total_bytes == adamw.host.total_bytes
    assert bnb.host.total_bytes > 130 * GiB  # 134.62 GiB; 8-bit states said 89.98 GiB
    assert bnb.devices[0].total_bytes == adamw.devices[0].total_bytes
    assert bnb.settings["optimizer"] == "adamw8bit"  # the echo keeps what was asked
    note = [a for a in bnb.assumptions if a.startswith("ZeRO-Offload with adamw8bit")]
    assert len(note) == 1
    assert "DeepSpeedCPUAdam" in note[0]
    assert "zero_force_ds_cpu_optimizer" in note[0]
    assert not any("DeepSpeedCPUAdam" in a for a in adamw.assumptions)


def test_fsdp_cpu_offload_8bit_is_priced_on_the_cpu_and_not_offered() -> None:
    """FSDP CPUOffload steps the client optimizer on the CPU: bitsandbytes' 8-bit one needs
    0.50.0 (PR #1901) and its states are host RAM; the planner never adds 8-bit AdamW on top."""
    spec = oomkit.load_model("llama-3.1-8b")
    hw = _gpus("h100-sxm5-80gb", 2)
    s = TrainingSettings(fsdp=True, gpus=2, offload_params=True, optimizer="adamw8bit")
    est = oomkit.estimate_training(spec, s, hw)
    assert any("bitsandbytes 0.50.0" in a for a in est.assumptions)
    assert any(c.category == "optimizer" for c in est.host.components)
    plain = TrainingSettings(fsdp=True, gpus=2, offload_params=True, seq=32768)
    for c in suggest_training_changes(spec, plain, hw, limit=5):
        assert c.settings.optimizer == "adamw", c.summary

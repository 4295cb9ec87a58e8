"""Fine-tuner findings of review11 (a new user's pass over ``estimate/plan --train``).

PyTorch FSDP has one CPU offload, ``CPUOffload(offload_params=True)``, which moves the
parameters, gradients and the optimizer step to the CPU (torch/distributed/fsdp docs); there is
no optimizer-only offload. ``--fsdp --offload-optimizer`` used to be echoed in the settings and
change nothing (the states stayed on the GPU): now it is refused with the flag that exists, and
the planner's offload lever (which the doctor reuses) offers FSDP's real one.
"""

from __future__ import annotations

import pytest

import oomkit
from oomkit.cli import main
from oomkit.errors import InvalidSettingError
from oomkit.planner.training import suggest_training_changes
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import TrainingSettings


def _h100s(n: int) -> Hardware:
    gpu = oomkit.find_gpu("h100-sxm5-80gb").to_device_target()
    return Hardware(devices=(gpu,) * n)


def test_fsdp_optimizer_only_offload_is_refused_naming_the_real_flag() -> None:
    with pytest.raises(InvalidSettingError, match="offload_params"):
        TrainingSettings(fsdp=True, gpus=2, offload_optimizer=True)
    # FSDP's own offload is accepted, and takes the optimizer states off the GPU
    spec = oomkit.load_model("llama-3.1-8b")
    on = oomkit.estimate_training(
        spec, TrainingSettings(fsdp=True, gpus=2, offload_params=True), _h100s(2)
    )
    off = oomkit.estimate_training(spec, TrainingSettings(fsdp=True, gpus=2), _h100s(2))
    assert on.devices[0].total_bytes < off.devices[0].total_bytes
    assert any(c.category == "optimizer" for c in on.host.components)


def test_cli_fsdp_offload_optimizer_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["estimate", "llama-3.1-8b", "--train", "full", "--gpu", "2xh100-sxm5-80gb",
                 "--fsdp", "--offload-optimizer"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("Error: Invalid --offload-optimizer with fsdp")
    assert "--offload-params" in lines[0]


def test_planner_offers_fsdps_own_offload() -> None:
    spec = oomkit.load_model("llama-3.1-70b")
    s = TrainingSettings(fsdp=True, gpus=8)
    changes = suggest_training_changes(spec, s, _h100s(8), limit=10)
    offload = [c for c in changes if any("CPU" in x for x in c.changes)]
    assert offload, [c.summary for c in changes]
    for c in offload:
        assert c.settings.offload_params
        assert not c.settings.offload_optimizer
        assert "--offload-params" in c.summary


def test_doctor_reads_an_fsdp_cpu_offload_as_offload_params() -> None:
    from oomkit.diagnose.training_context import training_setup_from_log
    from oomkit.diagnose.training_fixes import training_settings_from_log

    log = (
        "Distributed environment: FSDP  Backend: nccl\n"
        "Num processes: 8\n"
        "fsdp_sharding_strategy: FULL_SHARD\n"
        "CPU Offload: True\n"
        "  Instantaneous batch size per device = 2\n"
    )
    settings, _ = training_settings_from_log(training_setup_from_log(log))
    assert settings.fsdp
    assert settings.offload_params
    assert not settings.offload_optimizer


def test_planner_tries_zero2_before_zero3() -> None:
    """DDP that does not fit on 4 x A100 80GB: ZeRO-2 (gradients and optimizer states
    partitioned, parameters whole: no per-layer all-gather) fits, so it is the plan, not ZeRO-3
    (stage 3 moves 1.5x the data of stages 1-2: ZeRO paper section 7)."""
    spec = oomkit.load_model("llama-3.1-8b")
    gpu = oomkit.find_gpu("a100-sxm4-80gb").to_device_target()
    hw = Hardware(devices=(gpu,) * 4)
    changes = suggest_training_changes(spec, TrainingSettings(gpus=4), hw, limit=5)
    assert changes[0].settings.zero == 2, [c.summary for c in changes]
    assert changes[0].level == "fits"
    assert any(c.settings.zero == 3 for c in changes[1:])
    # already at ZeRO-2 (or FSDP), the lever has nothing to add
    at2 = suggest_training_changes(spec, TrainingSettings(gpus=4, zero=2, micro_batch=16), hw)
    assert at2
    assert not any("ZeRO-2" in c.summary for c in at2)


def test_seq_takes_counts_as_ctx_does(capsys: pytest.CaptureFixture[str]) -> None:
    """``--ctx 32k`` worked and ``--seq 32k`` was "not a valid integer"."""
    import json

    assert main(["estimate", "llama-3.2-1b", "--train", "lora", "--seq", "32k", "--json"]) in (
        0, 3, 4,
    )  # fmt: skip
    assert json.loads(capsys.readouterr().out)["settings"]["seq"] == 32768


def test_zero_offload_with_a_client_optimizer_says_what_it_needs() -> None:
    """ZeRO-Offload steps on the CPU: with a client optimizer (bitsandbytes 8-bit) DeepSpeed
    raises unless zero_force_ds_cpu_optimizer is false, and the HF Trainer's accelerate swaps
    it for DeepSpeedCPUAdam: the estimate prices that one and says so (revfix20b)."""
    spec = oomkit.load_model("llama-3.1-8b")
    s = TrainingSettings(zero=2, gpus=2, offload_optimizer=True, optimizer="adamw8bit")
    est = oomkit.estimate_training(spec, s, _h100s(2))
    assert any("zero_force_ds_cpu_optimizer" in a for a in est.assumptions)
    plain = oomkit.estimate_training(
        spec, TrainingSettings(zero=2, gpus=2, offload_optimizer=True), _h100s(2)
    )
    assert not any("zero_force_ds_cpu_optimizer" in a for a in plain.assumptions)


def test_pre_ampere_gpus_say_what_they_cannot_run() -> None:
    """A T4 (Turing, 7.5) has no native bf16 and cannot run FlashAttention-2 (flash-attn:
    "FlashAttention only supports Ampere GPUs or newer"): the estimate says so; an RTX 3090
    (Ampere, 8.6) and an fp16 run on the T4 get no note."""
    spec = oomkit.load_model("llama-3.2-1b")

    def notes(gpu: str, **kw: object) -> list[str]:
        hw = Hardware(devices=(oomkit.find_gpu(gpu).to_device_target(),))
        est = oomkit.estimate_training(spec, TrainingSettings(method="lora", **kw), hw)  # type: ignore[arg-type]
        return [a for a in est.assumptions if "bf16" in a or "Ampere" in a]

    t4 = notes("t4", attn_implementation="flash_attention_2")
    assert any("no native bf16" in a and "--mixed-precision fp16" in a for a in t4)
    assert any("flash_attention_2" in a and "7.5" in a for a in t4)
    assert notes("t4", mixed_precision="fp16") == []
    assert notes("rtx-3090", attn_implementation="flash_attention_2") == []


def test_fsdp_cpu_offload_steps_with_the_for_loop_on_the_host() -> None:
    """torch picks foreach only for CUDA-like devices (_default_to_fused_or_foreach): FSDP's
    CPU step holds one tensor's temporaries in host RAM, not a copy of every state (Llama-3.1-70B
    on 8 GPUs: 1314 GiB of host RAM before, 1055 GiB now)."""
    spec = oomkit.load_model("llama-3.1-70b")
    s = TrainingSettings(fsdp=True, gpus=8, offload_params=True)
    est = oomkit.estimate_training(spec, s, _h100s(8))
    temps = [c for c in est.host.components if "step temporaries" in c.label]
    states = [c for c in est.host.components if "adamw states" in c.label]
    assert len(temps) == 1
    assert len(states) == 1
    assert "forloop on the CPU" in temps[0].label
    assert temps[0].n_bytes * 20 < states[0].n_bytes  # one tensor, not half the states
    fused = oomkit.estimate_training(
        spec,
        TrainingSettings(fsdp=True, gpus=8, offload_params=True, optimizer_impl="fused"),
        _h100s(8),
    )
    assert not any("step temporaries" in c.label for c in fused.host.components)

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


def test_largest_seq_is_capped_at_the_models_maximum(capsys: pytest.CaptureFixture[str]) -> None:
    """2. ``estimate --train full --seq 10000000`` on an H100 said "The largest --seq that fits
    is 141056" for Llama-3.1-8B, whose max_position_embeddings is 131072: the answer is the
    model's maximum, and it says memory is not the limit."""
    for cmd in ("estimate", "plan"):
        main([cmd, "llama-3.1-8b", "--gpu", "h100-sxm5-80gb", "--train", "full", "--seq",
              "10000000"])  # fmt: skip
        out = capsys.readouterr().out
        assert "The largest --seq that fits is 131072 (the model's maximum: " in out, out
        assert "max_position_embeddings" in out
        # plan22: the stack may keep the pure-bf16 lever (bf16 LoRA adapters, 40 MiB less than
        # fp32 ones), so memory allows 128 tokens more than the 141056 of review 20
        assert "memory would allow 141184)" in out
        assert "--seq 131072 " in out  # the check command runs the capped length


def test_model_max_seq_follows_the_config_and_rope_scaling() -> None:
    from oomkit.planner.seq_cap import model_max_seq

    cap = model_max_seq(oomkit.load_model("llama-3.1-8b"))  # llama3 rope: already scaled
    assert cap is not None
    assert cap.tokens == 131072
    spec = dataclasses.replace(
        oomkit.load_model("llama-3.2-1b"),
        max_position_embeddings=32768,
        rope_scaling_type="yarn",
        rope_scaling_factor=4.0,
        rope_original_max_position_embeddings=32768,
    )
    yarn = model_max_seq(spec)
    assert yarn is not None
    assert yarn.tokens == 131072
    assert "original_max_position_embeddings x rope_scaling factor 4 (yarn)" in yarn.source


def test_ctx_max_says_when_the_model_maximum_is_the_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Inference ``--ctx max`` on an H100: Llama-3.2-1B's 131072 is the model's maximum, not
    what memory allows; the note says so."""
    main(["estimate", "llama-3.2-1b", "--gpu", "h100-sxm5-80gb", "--ctx", "max", "--runtime",
          "vllm"])  # fmt: skip
    out = capsys.readouterr().out
    assert "--ctx max: 131072 (the model's maximum: max_position_embeddings" in out
    assert "memory would allow" in out


def test_tp_on_too_few_gpus_names_the_gpus_first(capsys: pytest.CaptureFixture[str]) -> None:
    """3. ``--tp 3`` on one H100 was refused for "heads must be divisible by 3": the first
    thing to fix is the two missing GPUs, said first (the heads' refusal follows it)."""
    for rt in ("vllm", "sglang"):
        for cmd in ("estimate", "plan"):
            rc = main([cmd, "llama-3.1-8b", "--gpu", "h100-sxm5-80gb", "--tp", "3", "--runtime",
                       rt])  # fmt: skip
            err = capsys.readouterr().err
            assert rc != 0
            # the count first, then (same line) that 3 would be refused on 3 GPUs as well
            assert "--tp 3 needs 3 GPUs but the target has 1" in err, (cmd, rt, err)
            assert err.index("needs 3 GPUs") < err.index("divisible")
    # with the GPUs named, the heads are what is wrong
    main(["estimate", "llama-3.1-8b", "--gpu", "4xh100-sxm5-80gb", "--tp", "3", "--runtime",
          "vllm"])  # fmt: skip
    assert "divisible by the tensor-parallel size" in capsys.readouterr().err
    # training: the GPUs first as well
    rc = main(["estimate", "llama-3.1-8b", "--gpu", "h100-sxm5-80gb", "--tp", "3", "--train",
               "full"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc != 0
    assert "it must divide the 1 GPUs" in err

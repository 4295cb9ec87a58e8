"""QLoRA of a 70B on two 24 GB cards: FSDP FULL_SHARD with the 4-bit base offloaded to the CPU.

bitsandbytes' FSDP-QLoRA guide (docs/source/fsdp_qlora.md; Answer.AI's fsdp_qlora) trains "up
to 70B parameters on a dual 24GB GPU system" with FSDP and CPU offload. The planner's offload
lever was full-fine-tune only, so ``plan llama-3.1-70b --train qlora --gpu 2x4090`` answered
"Nothing fits" and pointed to 4 GPUs."""

from __future__ import annotations

import shlex

import pytest

from conftest import run_cli

ARGV = ("plan", "llama-3.1-70b", "--train", "qlora", "--gpu", "2x4090", "--offline")


def test_qlora_70b_on_two_4090s_plans_fsdp_with_parameter_offload(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, *ARGV)
    assert code == 0, err
    assert "Nothing fits" not in out
    plan = next(x for x in out.splitlines() if x.startswith("Plan: "))
    assert "FSDP FULL_SHARD" in plan
    assert "--offload-params" in plan
    # the host RAM the offload needs, stated when --ram is not given
    assert "host RAM:" in out
    assert "not checked: pass --ram" in out
    # accelerate's spelling of the FSDP run, the 4-bit store FSDP can shard
    assert "accelerate launch --config_file=fsdp_config.yaml" in out
    assert "fsdp_offload_params: true" in out
    assert "fsdp_cpu_ram_efficient_loading: true" in out
    assert "bnb_4bit_quant_storage=torch.bfloat16" in out
    check = next(x for x in out.splitlines() if x.startswith("  check: "))
    words = shlex.split(check.removeprefix("  check: "))[1:]
    assert "--fsdp" in words
    assert "--offload-params" in words
    code, out, err = run_cli(capsys, *words, "--offline")
    assert code == 0, err
    assert "fits" in out


def test_the_offload_plan_is_checked_against_the_ram_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, *ARGV, "--ram", "64GiB")
    assert code == 0
    assert "of 64.00 GiB" in next(x for x in out.splitlines() if "host RAM:" in x)
    # the sharded 4-bit base alone is more than 32 GiB on the host: not offered there
    _, out, _ = run_cli(capsys, *ARGV, "--ram", "32GiB")
    assert "--offload-params" not in next(
        x for x in out.splitlines() if x.startswith(("Plan: ", "Nothing fits"))
    )

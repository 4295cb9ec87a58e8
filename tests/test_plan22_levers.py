"""plan22: levers an expert reaches for that the planner lacked.

* a full fine-tune in pure bf16 (no fp32 master weights: torchtune's ``dtype=bf16`` default, the
  HF Trainer with a bf16-loaded model) before ZeRO-Offload and LoRA (review 21, finding 7).
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

_FULL_8B = ("plan", "llama-3.1-8b", "--train", "full", "--gpu", "a100-80gb-sxm", "--seq", "4096",
            "--offline")  # fmt: skip


@pytest.mark.parametrize("ram", [(), ("--ram", "64GiB")])
def test_full_8b_on_one_a100_runs_pure_bf16_before_offload_and_lora(
    capsys: pytest.CaptureFixture[str], ram: tuple[str, ...]
) -> None:
    """Llama-3.1-8B full s4096 on one A100 80GB: ZeRO-Offload (120 GiB of host RAM) first, and
    with --ram 64GiB LoRA; a bf16 run with checkpointing fits the GPU with no host RAM."""
    code, out, _ = run_cli(capsys, *_FULL_8B, *ram)
    assert code == 0
    plan = out.split("Alternative 1")[0]
    assert "no fp32 master weights (--no-master-weights)" in plan
    assert "rounds away" in plan  # the cost is stated
    assert "from_pretrained(..., dtype=torch.bfloat16)" in plan  # the Trainer's spelling
    assert "--no-master-weights" in plan.split("check: ")[1]
    assert "--offload-optimizer" not in plan
    assert "--train lora" not in plan
    code, doc, _ = run_cli(capsys, *_FULL_8B, *ram, "--json")
    first = json.loads(doc)["plans"][0]
    assert first["settings"]["master_weights"] is False


def test_pure_bf16_is_not_offered_where_the_engine_keeps_fp32_masters() -> None:
    """DeepSpeed ZeRO keeps fp32 master partitions whatever the model's dtype, FSDP under
    accelerate upcasts, fp16 has no loss scaling without masters, and LoRA's adapters are
    small: no pure-bf16 lever there."""
    from oomkit.planner.training import _pure_bf16, plan_levers
    from oomkit.spec.settings import TrainingSettings

    assert _pure_bf16 in plan_levers(TrainingSettings())
    assert _pure_bf16(TrainingSettings()) is not None
    for s in (TrainingSettings(zero=2, gpus=2), TrainingSettings(fsdp=True, gpus=2),
              TrainingSettings(mixed_precision="fp16"), TrainingSettings(method="lora"),
              TrainingSettings(master_weights=False)):  # fmt: skip
        assert _pure_bf16(s) is None, s
    levers = plan_levers(TrainingSettings())
    from oomkit.planner.training import _lora, _micro_batch, _offload

    assert levers.index(_micro_batch) < levers.index(_pure_bf16) < levers.index(_offload)
    assert levers.index(_offload) < levers.index(_lora)

"""Review 19, training plans: ``plan --train`` refuses the GPU count ``estimate --train``
refuses; it searches the levers the estimator models in the trainer's vocabulary (Liger's
fused cross-entropy for the HF Trainer, not a chunked loss it lacks); "more GPUs" only where
sharding lowers the per-GPU peak; the text bar shows the optimizer's step temporaries on a line
of their own, as ``--json`` does."""

from __future__ import annotations

import pytest

from conftest import run_cli


@pytest.mark.parametrize("command", ["plan", "estimate"])
def test_gpus_that_disagree_with_the_named_gpus_are_refused_by_both(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    argv = (command, "llama-3.1-8b", "--train", "full", "--gpu", "4xa100-80gb", "--gpus", "8")
    code, out, err = run_cli(capsys, *argv, "--offline")
    assert code == 2
    assert "--gpus 8 disagrees with --gpu '4xa100-80gb' (4 GPUs)" in err
    assert "deepspeed" not in out


def test_text_shows_the_foreach_temporaries_apart_from_the_optimizer_states(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    argv = ("estimate", "llama-3.1-8b", "--train", "full", "--gpu", "a100-80gb-sxm", "--offline")
    _, doc, _ = run_cli(capsys, *argv, "--json")
    comps = json.loads(doc)["devices"][0]["components"]
    temps = sum(c["bytes"] for c in comps if c["label"] == "step temporaries (foreach)")
    states = sum(c["bytes"] for c in comps if c["category"] == "optimizer") - temps
    assert temps > 0
    from oomkit.units import format_bytes

    for extra in ((), ("--explain",)):
        _, out, _ = run_cli(capsys, *argv, *extra)
        lines = [x.split() for x in out.splitlines()]
        assert ["optimizer", "state", *format_bytes(states).split()] in lines
        assert ["step", "temporaries", *format_bytes(temps).split()] in lines


def test_plan_finds_the_hf_trainers_fused_loss_where_it_said_nothing_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama-3.1-8B QLoRA s8192 on an RTX 3060: "Nothing fits ... more GPUs" (exit 3), where
    Liger's fused cross-entropy with checkpointing fits; the planner tried only the chunked loss
    the HF Trainer does not have."""
    import shlex

    argv = ("plan", "llama-3.1-8b", "--train", "qlora", "--gpu", "rtx-3060", "--seq", "8k")
    code, out, _ = run_cli(capsys, *argv, "--offline")
    assert code == 0
    assert "Nothing fits" not in out
    assert "--chunked-loss" not in out
    plan = out.split("Alternative 1")[0]
    assert "use_liger_kernel=True" in plan
    assert "gradient_checkpointing=True" in plan
    check = next(x for x in plan.splitlines() if x.startswith("  check: "))
    assert "--fused-loss" in check
    assert run_cli(capsys, *shlex.split(check.removeprefix("  check: "))[1:])[0] == 0


def test_torchtune_runs_get_the_chunked_loss_and_hf_runs_the_fused_one() -> None:
    from oomkit.planner import training as t
    from oomkit.spec.settings import TrainingSettings

    hf = t.plan_levers(TrainingSettings(method="lora"))
    tune = t.plan_levers(TrainingSettings(method="lora", optimizer_in_backward=True))
    assert t._fused_loss in hf
    assert t._chunked_loss not in hf
    assert t._torchtune_chunked_loss in tune
    assert t._fused_loss not in tune
    step = t._torchtune_chunked_loss(TrainingSettings(method="lora"))
    assert step is not None
    assert "torchtune" in step[0]
    assert step[1].loss == "chunked"
    # the fused AdamW step: the foreach temporaries gone; DeepSpeed steps with its own
    fused = t._fused_step(TrainingSettings())
    assert fused is not None
    assert fused[1].optimizer_impl == "fused"
    assert "adamw_torch_fused" in fused[0]
    assert t._fused_step(TrainingSettings(zero=2, gpus=2)) is None


def _nothing(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, str]:
    import json

    code, out, _ = run_cli(capsys, "plan", *argv, "--offline", "--json")
    assert code == 3
    doc = json.loads(out)
    assert doc["plans"] == []
    found: dict[str, str] = doc["nothing_fits"]
    import shlex

    assert run_cli(capsys, *shlex.split(found["check_command"])[1:])[0] == 0  # it fits
    return found


def test_activations_too_large_answers_a_shorter_seq_not_more_gpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = _nothing(
        capsys, "llama-3.1-8b", "--train", "qlora", "--gpu", "rtx-3060", "--seq", "128k"
    )
    assert "more GPUs would not" in found["message"]
    assert "plain DDP replicates everything" in found["message"]
    assert "The largest --seq that fits is " in found["message"]
    assert "--gpus" not in found["check_command"]


def test_states_too_large_answers_the_sharded_world_that_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = _nothing(capsys, "llama-3.1-70b", "--train", "full", "--gpu", "rtx-3060")
    assert "more GPUs lower it only by sharding" in found["message"]
    assert "plain DDP keeps a full replica" in found["message"]
    assert "--zero 3" in found["check_command"] or "--fsdp" in found["check_command"]

"""``oomkit plan --train``: each plan carries the ``oomkit estimate --train`` command that
reproduces its per-GPU peak. The launch line carries only the launcher and its config (not
LoRA or checkpointing, which are the script's), and "add --emit deepspeed to the estimate
command with these flags" named no flags."""

from __future__ import annotations

import json
import shlex

import pytest

from oomkit.cli import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, object]]:
    capsys.readouterr()
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "asked",
    [
        [],
        # settings no plan changes but the numbers depend on: the check command printed
        # without them was 4.9 GiB under the plan's own peak (eager attention's S x S scores)
        ["--attn-implementation", "eager", "--optimizer-impl", "forloop", "--fragmentation", "0.2"],
    ],
)
@pytest.mark.parametrize(
    "where",
    [
        ["--gpu", "rtx-4090"],
        ["--vram", "40GiB"],
        ["--gpu", "8xh100-sxm"],
    ],
)
def test_check_command_reproduces_the_plan(
    capsys: pytest.CaptureFixture[str], where: list[str], asked: list[str]
) -> None:
    model = "llama-3.1-70b" if "8xh100-sxm" in where else "llama-3.1-8b"
    code, doc = _json(capsys, ["plan", model, "--train", "full", *asked, *where, "--json"])
    assert code == 0
    plans = doc["plans"]
    assert isinstance(plans, list)
    assert plans
    for p in plans:
        argv = shlex.split(p["check_command"])
        assert argv[:2] == ["oomkit", "estimate"]
        assert " ".join(where) in p["check_command"]
        code, est = _json(capsys, [*argv[1:], "--json"])
        assert code in (0, 4), p["check_command"]  # fits (tight included)
        peak = max(d["total_bytes"] for d in est["devices"])  # type: ignore[index]
        assert peak == p["peak_bytes"], p["check_command"]


def test_text_plan_prints_the_check_line(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["plan", "llama-3.1-70b", "--train", "full", "--gpu", "8xh100-sxm"]) == 0
    out = capsys.readouterr().out
    assert "  check: oomkit estimate llama-3.1-70b --train full" in out
    assert "--zero 3" in out
    # the ZeRO-3 plan runs under the DeepSpeed launcher with its config printed (planfix)
    assert "  run: deepspeed --num_gpus=8 train.py --deepspeed ds_config.json" in out
    assert '"stage": 3' in out


def test_text_plan_counts_the_jobs_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """`--gpu rtx-4090 --gpus 4` printed "full fine-tuning on 1 GPU(s)" above a
    `--nproc_per_node=4` launch line: the header counts the job's GPUs (x nodes)."""
    capsys.readouterr()
    main(["plan", "llama-3.1-8b", "--train", "full", "--fsdp", "--gpus", "4", "--nodes", "2",
          "--gpu", "rtx-4090"])  # fmt: skip
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "llama-3.1-8b: full fine-tuning on 8 GPU(s)"
    # FSDP runs under accelerate launch: 4 GPUs x 2 nodes are 8 processes on 2 machines
    assert "--num_processes=8 --num_machines=2" in out

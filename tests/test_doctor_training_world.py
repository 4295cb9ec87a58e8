"""The training doctor reads the job's world size from the ranks its log shows (torchrun's
"[rank7]:" prefix, DeepSpeed's "[Rank 7]", RANK= / WORLD_SIZE= in the environment) and never
suggests as many GPUs as the job already has, or fewer, as a hardware change
(diagnose/training_context.py _ranks_seen, read by training_fixes_more.more_gpus_fix;
docfix22)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from oomkit.cli import cli as main
from oomkit.diagnose.training_context import training_setup_from_log

ENV = {"NO_COLOR": "1", "COLUMNS": "100"}
CORPUS = Path(__file__).parent / "fixtures" / "oom_corpus"


def _corpus_text(record_id: str) -> str:
    for path in sorted(CORPUS.glob("*.jsonl")):
        if path.name.startswith(("heldout56", "heldout57")):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if r["id"] == record_id:
                return str(r["text"])
    raise AssertionError(record_id)


# transformers Trainer's banner (trainer.py _inner_training_loop) and a backward frame; the
# OOM of a development record (an H100)
BANNER = """\
[INFO|trainer.py:2128] 2024-05-01 10:00:00,000 >> ***** Running training *****
[INFO|trainer.py:2131] >>   Instantaneous batch size per device = 1
[INFO|trainer.py:2135] >>   Gradient Accumulation steps = 4
[INFO|trainer.py:2137] >>   Number of trainable parameters = 6,738,415,616
"""
FRAMES = """\
Traceback (most recent call last):
  File "/home/user/train.py", line 212, in <module>
    trainer.train()
  File "/usr/lib/python3.10/site-packages/transformers/trainer.py", line 3147, in training_step
    self.accelerator.backward(loss)
"""
OOM = _corpus_text("tc-diffsynth-studio-411")


def _fixes(log: str) -> list[dict[str, Any]]:
    res = CliRunner().invoke(main, ["doctor", "--json", "--model", "llama-2-7b", log], env=ENV)
    assert res.exit_code == 0, res.output
    fixes: list[dict[str, Any]] = json.loads(res.stdout)["fixes"]
    return fixes


def test_ranks_give_the_world_size() -> None:
    ranked = FRAMES.replace("Traceback", "[rank7]: Traceback")
    assert training_setup_from_log(BANNER + ranked + OOM).gpus == 8
    assert training_setup_from_log(BANNER + "[Rank 3] step 10\n" + FRAMES + OOM).gpus == 4
    assert training_setup_from_log("WORLD_SIZE=8 RANK=0\n" + BANNER + FRAMES + OOM).gpus == 8


def test_lora_rank_is_not_a_process_rank() -> None:
    # near-miss: a LoRA rank (lora_rank: 8, "LoRA rank 64") says nothing of the GPUs
    log = "lora_rank: 8\nLoRA rank 64\n" + BANNER + FRAMES + OOM
    assert training_setup_from_log(log).gpus is None


def test_no_hardware_step_to_as_many_gpus_as_the_ranks_show() -> None:
    fixes = _fixes(BANNER + FRAMES.replace("Traceback", "[rank7]: Traceback") + OOM)
    for f in fixes:
        if " GPUs like this one" in f["title"]:
            n = int(f["title"].split(" over ")[1].split()[0])
            assert n > 8, f["title"]
    # sharding over the job's own 8 GPUs is the software lever
    assert any("over the 8 GPUs" in f["title"] and not f["hardware"] for f in fixes)


def test_single_gpu_log_keeps_the_two_gpu_step() -> None:
    # near-miss: no rank, no world size: one GPU, the hardware step is 2
    fixes = _fixes(BANNER + FRAMES + OOM)
    assert any(f["title"].startswith("Hardware change: ZeRO-3 over 2 GPUs") for f in fixes)

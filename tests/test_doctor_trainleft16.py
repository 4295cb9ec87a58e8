"""The session-15 review's QLoRA doctor output end to end (``constructed-review15-qlora.txt``,
``doctor --model qwen2.5-7b``): the micro-batch fix keeps the effective batch (4 x 1 -> 2 x 2,
it offered 4 x 1 -> 3 x 1) and the paragraph of assumptions is printed once, not after each of
the five sized fixes."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from oomkit.cli import cli as main

ENV = {"NO_COLOR": "1", "COLUMNS": "100"}
LOG = Path(__file__).parent / "fixtures" / "oom_logs" / "constructed-review15-qlora.txt"


def _doctor(*args: str) -> str:
    res = CliRunner().invoke(main, ["doctor", "--model", "qwen2.5-7b", "--no-input", *args,
                                    str(LOG)], env=ENV)  # fmt: skip
    assert res.exit_code == 0, res.output
    return res.stdout


def test_qlora_micro_batch_fix_keeps_the_effective_batch() -> None:
    text = _doctor()
    assert "Micro-batch 4 -> 3" not in text
    line = next(x for x in text.splitlines() if "Micro-batch 4 -> " in x)
    assert "Micro-batch 4 -> 2, gradient accumulation 1 -> 2 (effective batch 4 kept)" in line
    assert "--per_device_train_batch_size 2 --gradient_accumulation_steps 2   # HF Trainer" in text
    assert "micro-batch 3 would fit too, but it does not divide the 4 sequences" in text
    # the printed check reproduces a fitting run at 2 x 2
    doc: dict[str, Any] = json.loads(_doctor("--json"))
    fix = next(f for f in doc["fixes"] if f["title"].startswith("Micro-batch 4 -> 2"))
    assert fix["fits"] is True
    cmd = shlex.split(fix["commands"][-1])
    assert cmd[cmd.index("--micro-batch") + 1] == "2"
    assert cmd[cmd.index("--grad-accum") + 1] == "2"


def test_the_assumptions_are_printed_once() -> None:
    text = _doctor()
    assert text.count("not in the log, assumed:") == 1, text
    assert text.count("oomkit's training estimate for qwen2.5-7b") == 1
    head = text.index("Every fix sized below rests on oomkit's training estimate for qwen2.5-7b")
    assert head < text.index("  1. ")
    # each fix still says its own numbers, and ends without the shared paragraph
    whys = re.findall(r"^     (per-GPU peak .*|micro-batch 3 would .*)$", text, re.M)
    assert len(whys) >= 4
    assert not any("assumed" in w for w in whys)
    # --json keeps every fix self-contained (the contract's "why")
    doc: dict[str, Any] = json.loads(_doctor("--json"))
    sized = [f for f in doc["fixes"] if f.get("estimated")]
    assert len(sized) >= 2
    assert all("not in the log, assumed:" in f["why"] for f in sized)

"""revfix20f: six reviewer defects in the day's doctor changes (GPUStack's own reserve, the rerun
rule's near miss, placement fixes in the runtime's spelling, a config-file batch, no base rate
for a refusal, radeonsi's rejected command submission with -ENOMEM)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.placement_fixes import gpus_stated, split_fix
from oomkit.diagnose.prompt_lines import line_ok
from oomkit.diagnose.shell_lines import prompt

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "oom_corpus"
_BARE = "RuntimeError: CUDA out of memory."


def _record(part: str, rid: str) -> str:
    for path in sorted(CORPUS.glob(f"{part}_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and json.loads(line)["id"] == rid:
                return str(json.loads(line)["text"])
    raise KeyError(rid)


def _cli(text: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor", "-"],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return out.stdout


# 1. gpustack #3745: 7.0 GiB = 87.50% of an idle 8 GiB card is GPUStack's default 1 GiB reserve
def test_gpustack_share_left_by_its_own_reserve_is_not_another_process() -> None:
    out = _cli(_record("heldout34", "h34-gpustack-3745"))
    assert out.startswith("Cause: unknown")
    assert "other_process" not in out
    assert "default reserve" in out
    assert "allocated list" in out
    assert "--system-reserved" in out


def test_gpustack_share_below_what_the_reserve_leaves_is_still_another_holder() -> None:
    text = (
        "- With --gpu-memory-utilization=0.9, all GPUs combined need to provide at least 8.3 GiB "
        "of total VRAM and each GPU needs 90% of allocatable VRAM.\n"
        "The current available GPU only has 20.1 GiB allocatable VRAM (83.75%)."
    )
    assert diagnose_text(text).cause == "other_process_holding_memory"


# 2. the rerun rule does not fire when the first attempt failed too
@pytest.mark.parametrize(
    "prose",
    [
        "It fails the first time already, and when I run the cell a second time I get the same "
        "error:",
        "It OOMs already on the first run; running the cell again in the notebook fails too.",
        "I ran the cell a second time in the notebook, it fails both times.",
        "Every time I run the notebook cell a second time it crashes.",
        "The second time I run it, OOM. I get the same error again.",
        "Re-running the cell in jupyter gives OOM even on the first run.",
    ],
)
def test_a_first_attempt_that_failed_too_is_not_a_rerun(prose: str) -> None:
    assert diagnose_text(f"{prose}\n{_BARE}").cause != "leak_or_accumulation"


def test_a_first_run_that_worked_still_reads_as_a_rerun() -> None:
    text = f"It works the first time, the second time I run the cell it fails:\n{_BARE}"
    assert diagnose_text(text).cause == "leak_or_accumulation"


# 3. the split fix in transformers/accelerate's spelling, for the GPUs counted
def test_placement_fix_for_transformers_on_four_gpus() -> None:
    out = _cli(f'I have 4x 3090. device_map="auto" loads everything onto the first GPU.\n{_BARE}')
    assert "Cause: multi_gpu_imbalance" in out
    fix1 = out.split("  1. ", 1)[1].split("  2. ", 1)[0]
    assert "--tensor-parallel-size" not in fix1
    assert 'device_map="auto"' not in out
    assert "device_map='auto'" not in out
    assert 'max_memory = {0: "<N>GiB", 1: "<N>GiB", 2: "<N>GiB", 3: "<N>GiB"}' in fix1
    assert 'device_map="balanced_low_0"' in fix1
    assert "CUDA_VISIBLE_DEVICES=0,1" not in out


def test_placement_fix_for_vllm_keeps_its_flag_and_the_count() -> None:
    e = diagnose_text(_BARE).events[0]
    fix = split_fix(dataclasses.replace(e, runtime="vllm"), "I have 4 GPUs, only one is used")
    assert fix.commands == ("--tensor-parallel-size 4", "CUDA_VISIBLE_DEVICES=0,1,2,3")
    three = split_fix(dataclasses.replace(e, runtime="vllm"), "3 GPUs")
    assert three.commands[0] == "--tensor-parallel-size 2"  # a power of two within the three


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("4x 3090", 4),
        ("two RTX 4090 cards", 2),
        ("8张卡可用", 8),
        ("--num-gpus 2", 2),
        ("one GPU", None),
    ],
)
def test_gpus_stated(text: str, n: int | None) -> None:
    assert gpus_stated(text) == n


# 4. a batch stated as a config member gets its cut as the same member
@pytest.mark.parametrize(
    ("stated", "line"),
    [
        ("train_micro_batch_size_per_gpu: 8", "train_micro_batch_size_per_gpu: 4   # stated 8"),
        ('{"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 4}',
         '"train_micro_batch_size_per_gpu": 4   # stated 8'),
        ("micro_batch_size: 2\nsequence_len: 4096", "micro_batch_size: 1   # stated 2"),
        ("per_device_train_batch_size: 4", "per_device_train_batch_size: 2   # stated 4"),
    ],
)  # fmt: skip
def test_a_config_batch_gets_a_config_cut(stated: str, line: str) -> None:
    d = diagnose_text(f"{stated}\n{_BARE}")
    cmds = [c for f in d.fixes for c in f.commands]
    assert line in cmds, cmds
    assert prompt(line) == "config: "
    assert line_ok("config: ", line)
    assert not any(c.startswith("batch_size = ") for c in cmds)


def test_a_batch_in_prose_stays_python() -> None:
    d = diagnose_text(f"I train with batch size 8.\n{_BARE}")
    assert "batch_size = 4   # stated 8" in [c for f in d.fixes for c in f.commands]


# 5. a scheduler's refusal gets no base-rate sentence
def test_a_scheduler_refusal_has_no_base_rate_sentence() -> None:
    d = diagnose_text(_record("heldout44", "h44-gpustack-5207"))
    assert d.cause == "unknown"
    assert "equally common" not in d.explanation
    assert "base rate" not in d.explanation


# 6. radeonsi's rejected command submission is memory only with -12 (ENOMEM)
@pytest.mark.parametrize(
    "line",
    [
        "amdgpu: The CS has been rejected, see dmesg for more information (-12).",
        "amdgpu: The CS has been rejected (-12).",
    ],
)
def test_the_rejected_submission_with_enomem_is_recognised(line: str) -> None:
    d = diagnose_text(line)
    assert d.primary is not None
    assert d.primary.format == "amdgpu_cs_enomem"


@pytest.mark.parametrize(
    "line",
    [
        "amdgpu: The CS has been rejected, see dmesg for more information (-22).",
        "amdgpu: The CS has been rejected, see dmesg for more information (-19).",
        "amdgpu: The CS has been rejected (-62).",
        "amdgpu: The CS has been rejected, see dmesg for more information.",
    ],
)
def test_the_rejected_submission_with_another_code_is_not_memory(line: str) -> None:
    assert not diagnose_text(line).oom_found

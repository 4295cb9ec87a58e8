"""Fix lines in the terms of the device the OOM is on (oomkit.diagnose.device_commands).

The reviewer's case: an MPS OOM got ``torch.autocast('cuda', ...)`` as its bf16 fix. Every
line naming a device type must name the message's (torch/amp/autocast_mode.py takes 'mps'
and 'xpu'; torch/mps/__init__.py and torch/xpu/memory.py hold their memory calls).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.cli import main
from oomkit.diagnose.device_commands import on_device
from oomkit.diagnose.fixes import Fix

_LOGS = Path(__file__).parent / "fixtures" / "oom_logs"
_MPS = (
    "RuntimeError: MPS backend out of memory (MPS allocated: 18.04 GiB, other allocations: "
    "7.65 GiB, max allowed: 27.20 GiB). Tried to allocate 2.00 GiB on private pool. Use "
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may "
    "cause system failure)."
)
_XPU = (
    "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 15.11 GiB of which 1.00 GiB is free. Of the allocated memory 8.00 GiB is "
    "allocated by PyTorch, and 5.50 GiB is reserved by PyTorch but unallocated."
)


def _commands(capsys: pytest.CaptureFixture[str], arg: str) -> list[str]:
    assert main(["doctor", "--json", arg]) == 0
    d = json.loads(capsys.readouterr().out)
    return [c for f in d["fixes"] for c in f["commands"]]


def _cuda_free(commands: list[str]) -> None:
    for c in commands:
        assert "cuda" not in c.lower(), c


def test_mps_message_gets_mps_autocast(capsys: pytest.CaptureFixture[str]) -> None:
    commands = _commands(capsys, _MPS)
    assert "with torch.autocast('mps', dtype=torch.float16): ...   # bf16 needs macOS 14+" in (
        commands
    )
    assert "export PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0" in commands
    _cuda_free(commands)


@pytest.mark.parametrize("name", ["oom-mps-comfyui-7440.txt", "oom-mps-pinokio-941.txt"])
def test_mps_logs_name_no_cuda(capsys: pytest.CaptureFixture[str], name: str) -> None:
    _cuda_free(_commands(capsys, str(_LOGS / name)))


def test_xpu_message_gets_xpu_calls(capsys: pytest.CaptureFixture[str]) -> None:
    commands = _commands(capsys, _XPU)
    assert "torch.xpu.empty_cache()" in commands
    _cuda_free(commands)


def _fix(*commands: str) -> Fix:
    return Fix(title="t", why="", commands=commands, expected_saving_bytes=None)


def test_lines_rewritten_or_dropped_per_device() -> None:
    f = _fix(
        "print(torch.cuda.max_memory_allocated(0))",
        "torch.cuda.empty_cache()",
        "x = x.cuda()",
        "model.to('cuda:0')",
        "except torch.cuda.OutOfMemoryError:",
        "torch.cuda.memory._record_memory_history()",
        "export CUDA_VISIBLE_DEVICES=1",
    )
    (mps,) = on_device((f,), "mps")
    assert mps.commands == (
        "print(torch.mps.current_allocated_memory())",
        "torch.mps.empty_cache()",
        "x = x.to('mps')",
        "model.to('mps')",
        "except RuntimeError:",
    )
    (xpu,) = on_device((f,), "xpu")
    assert xpu.commands == (
        "print(torch.xpu.max_memory_allocated(0))",
        "torch.xpu.empty_cache()",
        "x = x.to('xpu')",
        "model.to('xpu')",
        "except torch.OutOfMemoryError:",
        "export ZE_AFFINITY_MASK=1",
    )


def test_cuda_alloc_conf_fix_dropped_off_cuda() -> None:
    conf = _fix("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    assert on_device((conf,), "mps") == ()
    assert on_device((conf,), "xpu") == ()
    assert on_device((conf,), None) == (conf,)

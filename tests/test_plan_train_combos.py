"""``plan --train``: a stack of levers that fits (host RAM included when --ram is given) is
searched even when some single change fits, and ranked before changing the method (review11:
a 70B full fine-tune with FSDP on 8 x H100 was offered QLoRA first, though checkpointing + CPU
offload fits at 15.7 GiB per GPU given the RAM)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from oomkit.units import parse_size

ASKED = ("llama-3.1-70b", "--train", "full", "--fsdp", "--gpus", "8", "--gpu", "h100-sxm")


def _plan(*args: str) -> str:
    cmd = [sys.executable, "-m", "oomkit", "plan", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _method_index(plans: list[dict[str, Any]]) -> int:
    return next(i for i, p in enumerate(plans) if p["settings"]["method"] != "full")


def test_fitting_combination_comes_before_a_method_change() -> None:
    ram = parse_size("2TB")
    doc = json.loads(_plan(*ASKED, "--ram", "2TB", "--json"))
    plans = doc["plans"]
    combo = next(
        i
        for i, p in enumerate(plans)
        if p["settings"]["method"] == "full" and p["verdict"] == "fits" and len(p["changes"]) > 1
    )
    assert combo < _method_index(plans)
    s = plans[combo]["settings"]
    assert s["offload_params"]
    assert s["grad_checkpointing"] == "full"
    assert 0 < plans[combo]["host_bytes"] <= ram
    assert plans[combo]["peak_bytes"] < 20 * 2**30


def test_every_plan_fits_the_ram_given() -> None:
    ram = parse_size("512GB")
    doc = json.loads(_plan(*ASKED, "--ram", "512GB", "--json"))
    assert doc["plans"]
    for p in doc["plans"]:
        assert p["host_bytes"] <= ram, p["changes"]


def test_without_ram_the_plan_says_what_ram_it_needs() -> None:
    text = _plan(*ASKED)
    lines = text.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("Plan: "))
    assert "--offload-params" in lines[head]
    assert lines[head + 1].startswith("  host RAM: ")
    assert lines[head + 1].endswith("GiB (not checked: pass --ram SIZE)")

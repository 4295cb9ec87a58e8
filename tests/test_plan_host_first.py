"""Inference whose GPU fits but host RAM does not (experts kept in RAM with --n-cpu-moe): the
first suggestions move experts or layers back to the GPU at the asked quant, before any smaller
quant (a guard beside the training fix of planner.training_host)."""

from __future__ import annotations

import json
import subprocess
import sys

ASKED = ("qwen3-30b-a3b", "--gpu", "rtx-3060", "--quant", "Q4_K_M", "--n-cpu-moe", "48",
         "--ram", "12GB")  # fmt: skip


def test_fewer_cpu_experts_come_first() -> None:
    cmd = [sys.executable, "-m", "oomkit", "estimate", *ASKED, "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 3, res.stderr
    doc = json.loads(res.stdout)
    assert all(d["total_bytes"] <= d["capacity_bytes"] for d in doc["devices"])
    assert doc["host"]["total_bytes"] > doc["host"]["capacity_bytes"]
    first = doc["suggestions"][0]["settings"]
    assert first["quant"] == "Q4_K_M"
    assert 0 < first["n_cpu_moe"] < 48


def test_each_suggestion_says_the_ram_it_leaves() -> None:
    cmd = [sys.executable, "-m", "oomkit", "estimate", *ASKED]
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False).stdout
    first = next(x for x in text.splitlines() if x.startswith("  1. "))
    assert "[host RAM " in first
    assert "asked 16." in first  # 16.52 GiB asked, over the 11.18 GiB of 12 GB
    res = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=300, check=False)
    doc = json.loads(res.stdout)
    for s in doc["suggestions"]:
        assert s["host_bytes"] <= doc["host"]["capacity_bytes"]

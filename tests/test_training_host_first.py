"""A training run whose GPUs fit but whose host RAM does not (ZeRO-Offload's fp32 states):
the host-side change (no offload) comes first, and the suggestions say what each does to the
RAM, not a GPU saving."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from oomkit.catalog.models import find_model
from oomkit.estimate.training import estimate_training
from oomkit.hardware.catalog import find_gpu
from oomkit.planner.training import suggest_training_changes
from oomkit.planner.training_host import host_overflows
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import TrainingSettings
from oomkit.units import GB, parse_size

ASKED = ("llama-3.1-8b", "--train", "full", "--zero", "2", "--offload-optimizer",
         "--gpus", "4", "--gpu", "a100-80gb-sxm4", "--ram", "64GB")  # fmt: skip


def _estimate(*args: str) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "oomkit", "estimate", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    return res.returncode, res.stdout


def test_no_offload_comes_before_gpu_savings() -> None:
    code, out = _estimate(*ASKED, "--json")
    assert code == 3  # does not fit: the host RAM
    doc: dict[str, Any] = json.loads(out)
    assert all(d["total_bytes"] <= d["capacity_bytes"] for d in doc["devices"])
    assert doc["host"]["total_bytes"] > doc["host"]["capacity_bytes"]
    first = doc["suggestions"][0]
    assert first["changes"][0].startswith("no CPU offload")
    assert first["host_bytes"] < doc["host"]["capacity_bytes"]
    for s in doc["suggestions"]:  # every offer fits the RAM
        assert s["host_bytes"] <= doc["host"]["capacity_bytes"]
    code, text = _estimate(*ASKED)
    lines = [x for x in text.splitlines() if x.startswith("  1. ")]
    assert lines, text
    assert "no CPU offload" in lines[0]
    assert "host RAM" in lines[0]
    assert "saves -" not in text  # a "negative GPU saving" said nothing about the RAM


def test_settings_of_the_host_change_are_the_asked_without_offload() -> None:
    spec = find_model("llama-3.1-8b").spec()
    gpu = find_gpu("a100-80gb-sxm4").to_device_target()
    hw = Hardware(devices=(gpu,) * 4, host_ram_bytes=parse_size("64GB"))
    asked = TrainingSettings(method="full", zero=2, offload_optimizer=True, gpus=4)
    assert host_overflows(estimate_training(spec, asked, hw))
    first = suggest_training_changes(spec, asked, hw)[0]
    assert not first.settings.offload_optimizer
    assert first.settings.method == "full"
    assert first.estimate.host.total_bytes < 64 * GB


def test_no_ram_given_changes_nothing() -> None:
    spec = find_model("llama-3.1-8b").spec()
    gpu = find_gpu("a100-80gb-sxm4").to_device_target()
    asked = TrainingSettings(method="full", zero=2, offload_optimizer=True, gpus=4)
    est = estimate_training(spec, asked, Hardware(devices=(gpu,) * 4))
    assert not host_overflows(est)

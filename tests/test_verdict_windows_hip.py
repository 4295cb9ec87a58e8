"""Windows HIP on an integrated Radeon: beyond 32 GiB on the device the verdict is "tight".

The deaths this models (development records, not copied here): ROCm/TheRock#1957 (gpt-oss-120b,
-ngl 999, Ryzen AI Max+ 395 with a 96 GB carve-out, Windows 11: "failed to allocate ROCm0
buffers" on ROCm 7.9, loads on the Vulkan build) and likelovewant/ollama-for-amd#102
(deepseek-r1:70b on the same chip, Windows 11, 96 GB: "unable to allocate ROCm0 buffer"). The
mechanism is AMD's own: ROCm/legacy-rocm-build#5940 (beyond 32 GB of carve-out allocations
hipMalloc takes shared memory) and ROCm/rocm-systems#1786 (hipMalloc of 64 GiB or more fails on
Windows with HIP SDK 6.4).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from oomkit.api import estimate
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, device_unified_bytes, verdict
from oomkit.estimate.verdict_windows import (
    WINDOWS_HIP_APU_CHANGE,
    WINDOWS_HIP_APU_WHAT,
    WINDOWS_HIP_CARVEOUT_FIRST,
    windows_hip_apu_overs,
)
from oomkit.hardware.targets import hardware_for
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

APU = "ryzen-ai-max-395-128gb"


def _est(model: str, quant: str, backend: str | None = None) -> tuple[Estimate, Hardware]:
    hw = hardware_for(parse_gpu_list(APU), vram_bytes=96 * GiB)
    if backend is not None:
        hw = dataclasses.replace(
            hw, devices=tuple(dataclasses.replace(d, backend=backend) for d in hw.devices)
        )
    run = InferenceSettings(runtime="llama.cpp", quant=quant, ctx=4096)
    return estimate(model, run, hw, offline=True), hw


def _platform(hw: Hardware, os_name: str) -> Platform:
    return Platform(os=os_name, unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices))


def test_over_32_gib_on_windows_hip_is_tight_with_vulkan_named() -> None:
    est, hw = _est("llama-3.3-70b", "Q4_K_M")
    (dev,) = [d for d in est.devices if d.device.startswith("rocm:")]
    assert dev.total_bytes > WINDOWS_HIP_CARVEOUT_FIRST
    assert verdict(est, _platform(hw, "linux")).level == "fits"
    overs = windows_hip_apu_overs(est, "windows", _platform(hw, "windows").unified_bytes)
    assert [(d, o) for d, o, *_ in overs] == [(dev.device, dev.total_bytes - 32 * GiB)]
    v = verdict(est, _platform(hw, "windows"))
    assert v.level == "tight"
    assert v.tightest is not None
    assert v.tightest.what == WINDOWS_HIP_APU_WHAT
    assert v.safe_change == WINDOWS_HIP_APU_CHANGE
    assert "legacy-rocm-build#5940" in v.risks[0]


def test_under_32_gib_vulkan_or_a_discrete_card_are_not_touched() -> None:
    small, hw = _est("qwen3-14b", "Q4_K_M")
    assert all(d.total_bytes < 32 * GiB for d in small.devices)
    assert windows_hip_apu_overs(small, "windows", _platform(hw, "windows").unified_bytes) == []
    vk, vk_hw = _est("llama-3.3-70b", "Q4_K_M", backend="vulkan")
    assert not any(d.device.startswith("rocm:") for d in vk.devices)
    assert windows_hip_apu_overs(vk, "windows", _platform(vk_hw, "windows").unified_bytes) == []
    # a discrete Radeon has no unified memory: Windows HIP's carve-out rule is an APU's
    hw = hardware_for(parse_gpu_list("2xrx-7900-xtx"))
    big = estimate(
        "llama-3.3-70b", InferenceSettings(runtime="llama.cpp", quant="Q4_K_M"), hw, offline=True
    )
    plat = _platform(hw, "windows")
    assert plat.unified_bytes == (None, None)
    assert windows_hip_apu_overs(big, "windows", plat.unified_bytes) == []


@pytest.mark.parametrize(
    ("os_name", "code", "level"), [("windows", 4, "tight"), ("linux", 0, "fits")]
)
def test_cli_exit_code(
    os_name: str, code: int, level: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["estimate", "llama-3.3-70b", "-q", "Q4_K_M", "--gpu", APU, "--vram", "96GiB"]
    argv += ["--os", os_name, "--json", "--offline"]
    assert main(argv) == code
    assert json.loads(capsys.readouterr().out)["verdict"] == level

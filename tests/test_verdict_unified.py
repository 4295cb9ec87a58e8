"""Unified memory in the verdict: Apple's Metal working set and an AMD APU's GPU share."""

from __future__ import annotations

import dataclasses
import json

import pytest

from oomkit.api import estimate
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import (
    APU_UNREACHABLE_FRACTION,
    METAL_NEWEST_DEFAULT_FRACTION,
    Platform,
    device_unified_bytes,
    verdict,
)
from oomkit.hardware.targets import hardware_for
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB


def _run(
    model: str, quant: str, ctx: int, gpu: str, *, vram: int | None = None, ngl: int | None = None
) -> tuple[Estimate, Platform, Hardware]:
    gpus = parse_gpu_list(gpu)
    hw = hardware_for(gpus, vram_bytes=vram, n_devices=1)
    settings = InferenceSettings(runtime="llama.cpp", quant=quant, ctx=ctx, n_gpu_layers=ngl)
    est = estimate(model, settings, hw, offline=True)
    plat = Platform(
        segments=tuple(g.segment for g in gpus),
        unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices),
    )
    return est, plat, hw


def test_apple_unified_bytes_only_when_the_capacity_is_the_working_set() -> None:
    hw = hardware_for(parse_gpu_list("m4-pro-24gb"), n_devices=1)
    assert device_unified_bytes(hw.devices[0]) == 24 * GiB  # its capacity is 16 GiB
    mine = hardware_for(parse_gpu_list("m4-pro-24gb"), vram_bytes=20 * GiB, n_devices=1)
    assert device_unified_bytes(mine.devices[0]) is None  # the user's own limit: taken as is
    rtx = hardware_for(parse_gpu_list("rtx-4090"), n_devices=1)
    assert device_unified_bytes(rtx.devices[0]) is None


def test_over_the_older_working_set_but_within_newer_macos_is_tight() -> None:
    # Qwen3-30B-A3B Q4_K_M, ctx 4096 on a 24 GB M4 Pro (llmfit PR 812 ran it on the GPU):
    # ~17.8 GiB is over the 16 GiB that macOS 13-15 allow, within 84% of 24 GiB (macOS 26)
    est, plat, _hw = _run("qwen3-30b-a3b", "Q4_K_M", 4096, "m4-pro-24gb", ngl=999)
    d = est.devices[0]
    assert d.capacity_bytes == 16 * GiB
    assert 16 * GiB < d.total_bytes <= int(24 * GiB * METAL_NEWEST_DEFAULT_FRACTION)
    assert est.fits is False  # the estimate itself still says: over the catalog's limit
    v = verdict(est, plat)
    assert v.level == "tight"
    assert any("Metal working set" in r for r in v.risks)
    assert v.summary().startswith("Tight: ")
    # without the unified-memory fact (an unknown Mac), the old hard answer stays
    assert verdict(est, Platform(segments=plat.segments)).level == "does_not_fit"


def test_over_newer_macos_too_is_still_does_not_fit() -> None:
    # Llama-2-70B Q4_0 on a 32 GB M2 Pro (xdai1: OOM): over 84% of the RAM as well
    est, plat, _ = _run("llama-2-70b", "Q4_0", 512, "m2-pro-32gb", ngl=99)
    assert est.devices[0].total_bytes > int(32 * GiB * METAL_NEWEST_DEFAULT_FRACTION)
    assert verdict(est, plat).level == "does_not_fit"


def test_only_ggml_metal_runtimes_get_the_newer_macos_limit() -> None:
    """Over the working set, ggml-metal's risk is macOS's command-buffer limit; transformers on
    MPS has its own (PyTorch's high watermark, :mod:`oomkit.estimate.verdict_mps`), never the
    macOS 26 wording."""
    est, plat, _ = _run("qwen3-30b-a3b", "Q4_K_M", 4096, "m4-pro-24gb", ngl=999)
    assert "macOS 26" in verdict(est, plat).summary()
    other = dataclasses.replace(est, runtime="transformers")
    v = verdict(other, plat)
    assert v.level == "tight"
    assert "MPS limit" in v.summary()
    assert "macOS 26" not in v.summary()
    assert verdict(other, dataclasses.replace(plat, mps_high_watermark_ratio=1.0)).level == (
        "does_not_fit"
    )


def test_an_apu_capacity_given_as_its_whole_memory_carries_the_unreachable_share() -> None:
    # gpt-oss-120b MXFP4 on a 64 GB Strix Halo given as vram 64GiB (amd/playbooks 791: OOM):
    # carve-out (<= 3/4) + GTT (half the rest) leave >= 1/8 of it out of the GPU's reach
    est, plat, _hw = _run("gpt-oss-120b", "MXFP4", 4096, "ryzen-ai-max-395-128gb", vram=64 * GiB)
    assert plat.unified_bytes == (64 * GiB,)
    m = verdict(est, plat).margins[0]
    share = next(b for label, b in m.terms if label.startswith("APU:"))
    assert share == int(64 * GiB * APU_UNREACHABLE_FRACTION)
    assert 0 < m.free_bytes < share
    assert verdict(est, plat).level == "tight"  # "fits" without the APU term
    bare = Platform(segments=plat.segments)
    assert verdict(est, bare).level == "fits"
    # a discrete card of the same size has no such term
    est2, plat2, _ = _run("gpt-oss-120b", "MXFP4", 4096, "rtx-4090", vram=64 * GiB)
    assert not any(label.startswith("APU:") for label, _ in verdict(est2, plat2).margins[0].terms)


def test_planner_platform_sees_unified_memory() -> None:
    from oomkit.estimate.verdict import device_segment

    hw: Hardware = hardware_for(parse_gpu_list("ryzen-ai-max-395-128gb"), n_devices=1)
    d = hw.devices[0]
    assert device_segment(d) == "consumer"
    assert device_unified_bytes(d) == d.capacity_bytes


def test_cli_reports_the_mac_run_as_tight_with_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["estimate", "qwen3-30b-a3b", "-r", "llama.cpp", "--quant", "Q4_K_M", "--ctx", "4096"]
    args += ["--gpu", "m4-pro-24gb", "--offline", "-ngl", "99"]  # every layer: no --fit offload
    assert main([*args, "--json"]) == 4  # the tight exit code; 3 before (does not fit)
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is False  # the totals are over the catalog's working set
    assert doc["verdict"] == "tight"
    assert "Metal working set" in doc["verdict_details"]["risks"][0]
    assert main(args) == 4
    text = capsys.readouterr().out
    assert "Tight: " in text
    assert "\nDoes not fit." not in text
    # 70B Q4_0 on a 32 GB M2 Pro is over newer macOS's limit too: still exit 3
    big = ["estimate", "llama-2-70b", "-r", "llama.cpp", "--quant", "Q4_0", "--ctx", "512"]
    assert main([*big, "--gpu", "m2-pro-32gb", "--offline", "-ngl", "99"]) == 3

"""Ollama's default num_ctx: fixed (2048, then 4096 from 0.6.4) until 0.15.5, then chosen from
the GPUs' total VRAM (ollama/ollama commit 0334ffa62, server/routes.go ``Serve``: 262144 from
47 GiB, 32768 from 23 GiB, else 4096). Review 21 finding 1: a 48 GB card was estimated at 4096
tokens ("Fits") while Ollama 0.15.5+ loads it at the trained 131072 and offloads layers."""

from __future__ import annotations

import json

import pytest

from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.estimate.ollama import ollama_settings
from oomkit.estimate.ollama_num_ctx import ollama_default_num_ctx
from oomkit.planner.request import PlanRequest
from oomkit.planner.target_ctx import default_target_ctx
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB


def _gpus(*gib: float) -> Hardware:
    return Hardware(
        devices=tuple(
            DeviceTarget(name=f"g{i}", capacity_bytes=int(g * GiB)) for i, g in enumerate(gib)
        )
    )


@pytest.mark.parametrize(
    ("version", "gpus", "ctx"),
    [
        ("0.6.3", (80,), 2048),  # fixed default before 0.6.7
        ("0.6.6", (80,), 2048),  # envconfig.ContextLength was still 2048 in 0.6.4-0.6.6
        ("0.6.7", (80,), 4096),  # commit 44b466eeb
        ("0.15.4", (80,), 4096),  # fixed 4096 up to 0.15.4, whatever the VRAM
        ("0.15.5", (12,), 4096),
        ("0.15.5", (23.5,), 32768),  # a 24 GB card reports ~23.5-24 GiB: the 23 GiB threshold
        ("0.15.5", (47.4,), 262144),  # a 48 GB card: the 47 GiB threshold
        ("0.15.5", (23.5, 23.5), 262144),  # the total over the GPUs, not one GPU's
        ("0.15.5", (), 4096),  # CPU only: no GPU memory
        (None, (44.4,), 32768),  # the newest release keeps the tiers
        ("0.30.0", (80,), 262144),
    ],
)
def test_default_num_ctx_by_release_and_total_vram(
    version: str | None, gpus: tuple[float, ...], ctx: int
) -> None:
    assert ollama_default_num_ctx(version, _gpus(*gpus))[0] == ctx


def test_gpu_overhead_comes_off_each_gpu() -> None:
    # totalVRAM += gpu.TotalMemory - envconfig.GpuOverhead(): 2 x (24 - 1) = 46 < 47 GiB
    assert ollama_default_num_ctx("0.15.5", _gpus(24, 24), gpu_overhead_bytes=GiB)[0] == 32768


def test_ollama_settings_take_the_tier_and_say_why() -> None:
    spec = find_model("llama-3.1-70b").spec()
    settings = InferenceSettings(runtime="ollama", runtime_version="0.15.5")
    mapped, notes = ollama_settings(spec, settings, _gpus(47.4))
    assert mapped.ctx == 131072  # 262144 capped at the trained context
    assert any("Ollama 0.15.5+ picks 262144" in n for n in notes)
    old, notes = ollama_settings(
        spec, InferenceSettings(runtime="ollama", runtime_version="0.15.4"), _gpus(47.4)
    )
    assert old.ctx == 4096
    assert any("Ollama default 4096" in n for n in notes)


def test_estimate_cli_on_a_48gb_card(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["estimate", "llama-3.1-70b", "-r", "ollama", "--gpu", "rtx-a6000", "--json"]
    main(args)
    new = json.loads(capsys.readouterr().out)
    assert new["settings"]["ctx"] == 131072
    assert new["runtime_details"]["ollama"]["num_ctx"] == 131072
    assert new["runtime_details"]["ollama"]["auto_offload"] is True  # no longer "Fits" at 4096
    main([*args, "--runtime-version", "0.15.4"])
    old = json.loads(capsys.readouterr().out)
    assert old["settings"]["ctx"] == 4096
    assert old["runtime_details"]["ollama"]["auto_offload"] is False


def test_planner_aims_at_the_same_default() -> None:
    spec = find_model("qwen2.5-32b").spec()
    request = PlanRequest(runtime="ollama")
    assert default_target_ctx("ollama", spec, request, _gpus(23.5)) == 32768
    assert default_target_ctx("ollama", spec, request, _gpus(23.5), "0.15.4") == 4096
    assert default_target_ctx("ollama", spec, request, _gpus(12)) == 4096


def test_models_fits_says_which_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--fits", "rtx-4090", "-r", "ollama", "qwen2.5-32b"]) == 0
    out = capsys.readouterr()
    assert "num_ctx not given: Ollama 0.15.5+ picks 32768" in out.err
    assert "max ctx   32768" in out.out  # the row is sized at the 32768 tier, not 4096


def test_plan_says_the_context_is_ollamas_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "qwen2.5-32b", "-r", "ollama", "--gpu", "rtx-4090"]) == 0
    out = capsys.readouterr().out
    assert "context 32768 (not given: Ollama's default num_ctx for this VRAM)" in out
    assert "PARAMETER num_ctx 32768" in out


def test_unknown_gpu_memory_says_the_default_is_assumed() -> None:
    hw = Hardware(devices=(DeviceTarget(name="gpu"),))  # no --gpu / --vram: capacity unknown
    ctx, why = ollama_default_num_ctx("0.15.5", hw)
    assert ctx == 4096
    assert "not known, 4096 assumed" in why

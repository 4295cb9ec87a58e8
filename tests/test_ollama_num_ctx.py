"""Ollama's default num_ctx: fixed (2048, then 4096 from 0.6.4) until 0.15.5, then chosen from
the GPUs' total VRAM (ollama/ollama commit 0334ffa62, server/routes.go ``Serve``: 262144 from
47 GiB, 32768 from 23 GiB, else 4096). Review 21 finding 1: a 48 GB card was estimated at 4096
tokens ("Fits") while Ollama 0.15.5+ loads it at the trained 131072 and offloads layers."""

from __future__ import annotations

import dataclasses
import json

import pytest

from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.estimate.ollama import ollama_settings
from oomkit.estimate.ollama_num_ctx import ollama_ctx_floor, ollama_default_num_ctx
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


# -- revfix21d item 1: the gpt-oss / qwen3vl floor of 8192 (server/routes.go scheduleRunner,
# -- fa7776fd2 in v0.11.0; low-VRAM gate f2e9c9aff in v0.11.4; qwen3vl 7d25b9e19 in v0.12.7;
# -- removed by 0334ffa62 in v0.15.5)


@pytest.mark.parametrize(
    ("version", "gpus", "ctx"),
    [
        ("0.10.1", (24,), 4096),  # before gpt-oss support: no floor
        ("0.11.2", (16,), 8192),  # 0.11.0-0.11.3: whatever the VRAM
        ("0.11.4", (16,), 4096),  # low vram mode (< 20 GiB total): the plain default
        ("0.11.4", (24,), 8192),
        ("0.11.4", (10, 10), 8192),  # the sum over the GPUs
        ("0.15.4", (23.5,), 8192),
        ("2025-08-06", (16,), 8192),  # a date before v0.11.4's
        ("0.15.5", (16,), 4096),  # the tiers replaced the floor
        ("0.15.5", (23.5,), 32768),
    ],
)
def test_gptoss_context_floor_by_release_and_vram(
    version: str, gpus: tuple[float, ...], ctx: int
) -> None:
    spec = find_model("gpt-oss-20b").spec()
    settings = InferenceSettings(runtime="ollama", runtime_version=version)
    mapped, notes = ollama_settings(spec, settings, _gpus(*gpus))
    assert mapped.ctx == ctx
    assert any("at least 8192" in n for n in notes) is (ctx == 8192)


def test_floor_lifts_a_set_num_ctx_but_not_other_families() -> None:
    spec = find_model("gpt-oss-20b").spec()
    asked = InferenceSettings(runtime="ollama", runtime_version="0.12.0", ctx=2048)
    assert ollama_settings(spec, asked, _gpus(24))[0].ctx == 8192  # max(opts.NumCtx, 8192)
    llama = find_model("llama-3.1-8b").spec()
    plain = InferenceSettings(runtime="ollama", runtime_version="0.12.0")
    assert ollama_settings(llama, plain, _gpus(24))[0].ctx == 4096


def test_qwen3vl_joins_the_floor_at_0_12_7() -> None:
    base = find_model("qwen2.5-7b").spec()
    spec = dataclasses.replace(
        base, model_type="qwen3_vl", architecture="Qwen3VLForConditionalGeneration"
    )
    assert ollama_ctx_floor(spec, "0.12.6", _gpus(24)) is None
    floor = ollama_ctx_floor(spec, "0.12.7", _gpus(24))
    assert floor is not None
    assert floor[0] == 8192
    assert "qwen3vl" in floor[1]
    assert ollama_ctx_floor(spec, "0.12.7", _gpus(12)) is None


def test_planner_aims_at_the_floor() -> None:
    spec = find_model("gpt-oss-20b").spec()
    request = PlanRequest(runtime="ollama")
    assert default_target_ctx("ollama", spec, request, _gpus(24), "0.13.0") == 8192
    assert default_target_ctx("ollama", spec, request, _gpus(16), "0.13.0") == 4096

"""Ollama on a Linux AMD APU: "tight" when the iGPU reporting only the OS's free RAM would make
Ollama's system-memory check refuse the load (oomkit.estimate.verdict_ollama_apu).

The check as Ollama writes it (llm/server.go ``verifyLayout`` at v0.16.0): ``cpuSize`` = what the
layout left off the GPUs; refused when ``cpuSize > FreeMemory + FreeSwap``. The records are
ollama/ollama#14116 (Ryzen AI Max+ 395, 96 GB carve-out, v0.16.0-rocm): llama3.1:70b refused
("model requires more system memory (92.5 GiB) than is available (38.1 GiB)"), gpt-oss:120b ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from oomkit.api import estimate
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, device_unified_bytes, verdict
from oomkit.estimate.verdict_ollama_apu import (
    OLLAMA_UMA_CHANGE,
    OLLAMA_UMA_WHAT,
    ollama_uma_applies,
    ollama_uma_overs,
)
from oomkit.hardware.targets import hardware_for
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

APU = "ryzen-ai-max-395-128gb"
ROOT = Path(__file__).resolve().parents[1]


def _est(
    model: str, quant: str, *, version: str | None = "0.16.0", ram: int | None = 32 * GiB
) -> tuple[Estimate, Hardware]:
    hw = hardware_for(parse_gpu_list(APU), vram_bytes=96 * GiB, host_ram_bytes=ram, os="linux")
    run = InferenceSettings(runtime="ollama", quant=quant, ctx=131072, runtime_version=version)
    return estimate(model, run, hw, offline=True), hw


def _platform(hw: Hardware, os_name: str | None = "linux") -> Platform:
    return Platform(os=os_name, unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices))


def test_check_as_ollama_writes_it() -> None:
    """cpuSize = device total - what the iGPU takes at free = RAM, plus the host part; the over is
    what passes the RAM with no swap (verifyLayout: cpuSize > FreeMemory + FreeSwap)."""
    est, hw = _est("llama-3.1-70b", "Q4_K_M")
    (dev,) = est.devices
    assert dev.device == "rocm:0"
    overs = ollama_uma_overs(est, "linux", _platform(hw).unified_bytes)
    expected = (dev.total_bytes - 32 * GiB) + est.host.total_bytes - 32 * GiB
    assert [(d, o, w) for d, o, w, *_ in overs] == [("rocm:0", expected, OLLAMA_UMA_WHAT)]
    assert expected > 16 * GiB  # llama3.1:70b at 131072: ~80 GiB on a 96 GiB carve-out


def test_releases_and_systems_it_applies_to() -> None:
    # 0.13.2 vendored ggml b7108 (the UMA override); 0.30.0 dropped llm/server.go's check
    assert ollama_uma_applies("0.13.2", "linux")
    assert ollama_uma_applies("0.29.9", None)
    assert not ollama_uma_applies("0.13.1", "linux")
    assert not ollama_uma_applies("0.30.0", "linux")
    assert not ollama_uma_applies("0.16.0", "windows")
    assert not ollama_uma_applies("0.16.0", "macos")
    est, hw = _est("llama-3.1-70b", "Q4_K_M", version="0.12.11")
    assert ollama_uma_overs(est, "linux", _platform(hw).unified_bytes) == []
    est, hw = _est("llama-3.1-70b", "Q4_K_M", ram=None)  # host RAM unknown: nothing to compare
    assert ollama_uma_overs(est, "linux", _platform(hw).unified_bytes) == []
    # a discrete card has no unified memory
    hw = hardware_for(parse_gpu_list("2xrx-7900-xtx"), host_ram_bytes=32 * GiB)
    run = InferenceSettings(runtime="ollama", quant="Q4_K_M", runtime_version="0.16.0")
    big = estimate("llama-3.1-70b", run, hw, offline=True)
    assert ollama_uma_overs(big, "linux", _platform(hw).unified_bytes) == []


def test_small_model_stays_fits() -> None:
    est, hw = _est("qwen3-14b", "Q4_K_M")
    assert ollama_uma_overs(est, "linux", _platform(hw).unified_bytes) == []
    assert verdict(est, _platform(hw)).level == "fits"


def test_llama31_70b_is_tight_with_the_fact_named() -> None:
    est, hw = _est("llama-3.1-70b", "Q4_K_M")
    v = verdict(est, _platform(hw))
    assert v.level == "tight"  # was "fits" (+16.33 GiB free on the carve-out)
    assert v.tightest is not None
    assert v.tightest.what == OLLAMA_UMA_WHAT
    assert "MemAvailable" in v.risks[0]
    assert "ollama#14116" in v.risks[0]
    assert v.safe_change == OLLAMA_UMA_CHANGE


@pytest.mark.parametrize(
    ("rid", "level"),
    [
        ("ollama-14116-strixhalo96-ollama016rocm-llama31-70b-oom", "tight"),
        ("ollama-14116-strixhalo96-ollama016rocm-gptoss120b-ok", "tight"),
    ],
)
def test_the_two_records(rid: str, level: str, verdict_scorer: ModuleType) -> None:
    va = verdict_scorer
    (rec,) = [r for r in va.load("heldout41") if r["id"] == rid]
    assert va.judge(rec)[0] == level


@pytest.mark.parametrize(("ctx", "code", "level"), [(131072, 4, "tight"), (8192, 0, "fits")])
def test_cli_end_to_end(
    ctx: int, code: int, level: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["estimate", "llama-3.1-70b", "-r", "ollama", "-q", "Q4_K_M", "--ctx", str(ctx)]
    argv += ["--gpu", APU, "--vram", "96GiB", "--ram", "32GiB", "--runtime-version", "0.16.0"]
    argv += ["--os", "linux", "--json", "--offline"]
    assert main(argv) == code
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == level  # 8192: ~42 GiB, the CPU part under the fallback fits 32 GiB

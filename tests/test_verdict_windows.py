"""Windows (WDDM) commit limit: GPU allocations above the installed RAM need the page file.

The real run (ollama#8825): deepseek-r1:32b (Q4_K_M, 4 parallel slots at num_ctx 2048, 65/65
layers split 33/32) on 2x RTX 4060 Ti 16GB under Windows 10 with 8 GB RAM died with "CUDA
malloc error, even if there is more than enough VRAM", and loaded once the system-managed ~2 GB
page file was set to 16 GB.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from oomkit.api import estimate
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import WDDM_COMMIT_WHAT, Platform, verdict
from oomkit.estimate.verdict_windows import (
    SYSMEM_OVER,
    WDDM_COMMIT,
    sysmem_fallback_bytes,
    wddm_commit_over,
    within_sysmem_fallback,
)
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

RUN = InferenceSettings(
    runtime="ollama",
    quant="Q4_K_M",
    ctx=2048,
    parallel=4,
    n_gpu_layers=65,
    runtime_version="2025-02-04",
)


def _est(ram: int | None) -> Estimate:
    hw = hardware_for(parse_gpu_list("2xrtx-4060-ti-16gb"), host_ram_bytes=ram)
    return estimate("deepseek-r1-distill-qwen-32b", RUN, hw, offline=True)


def test_ollama_8825_needs_the_page_file() -> None:
    win = Platform(os="windows", segments=("consumer", "consumer"))
    assert verdict(_est(None), win).level == "fits"  # RAM unknown: the GPUs alone fit
    est = _est(8 * GiB)
    gpus = sum(d.total_bytes for d in est.devices)
    assert gpus > 8 * GiB  # ~21 GiB of device memory on an 8 GB host
    over = wddm_commit_over(est, "windows")
    assert over == gpus + est.host.total_bytes - 8 * GiB
    v = verdict(est, win)
    assert v.level == "tight"
    assert v.tightest is not None
    assert v.tightest.what == WDDM_COMMIT_WHAT
    assert v.tightest.free_bytes == -over
    assert v.risks[0].startswith(WDDM_COMMIT)
    assert v.safe_change is not None
    assert "page file" in v.safe_change
    assert "over on host" in v.summary()


@pytest.mark.parametrize(("os_name", "ram"), [("windows", 64 * GiB), ("linux", 8 * GiB)])
def test_enough_ram_or_no_wddm_is_not_held_against_it(os_name: str, ram: int) -> None:
    est = _est(ram)
    assert wddm_commit_over(est, os_name) is None
    v = verdict(est, Platform(os=os_name, segments=("consumer", "consumer")))
    assert v.level == "fits"
    assert all(m.what != WDDM_COMMIT_WHAT for m in v.margins)


def test_wsl_is_not_the_windows_host() -> None:
    """WSL 2's --ram is the VM's memory, not the Windows host's commit limit."""
    assert wddm_commit_over(_est(8 * GiB), "wsl") is None


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["estimate", "deepseek-r1-distill-qwen-32b", "--runtime", "ollama", "-q", "Q4_K_M"]
    args += ["-c", "2048", "-np", "4", "-ngl", "65", "--runtime-version", "2025-02-04"]
    args += ["-g", "2xrtx-4060-ti-16gb", "--os", "windows", "--offline", "--json"]
    assert main([*args, "--ram", "64GiB"]) == 0
    capsys.readouterr()
    assert main([*args, "--ram", "8GiB"]) == 4
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "tight"
    assert any(m["what"] == WDDM_COMMIT_WHAT for m in doc["verdict_details"]["margins"])


def test_ctx_max_is_not_cut_by_the_page_file() -> None:
    """``--ctx max`` looks for the context that clears the band; the commit margin is cleared by
    a page file, so it does not shorten the context."""
    from oomkit.api import load_model
    from oomkit.planner.core import max_context

    spec = load_model("deepseek-r1-distill-qwen-32b", offline=True)
    gpus = parse_gpu_list("2xrtx-4060-ti-16gb")
    win = Platform(os="windows", segments=("consumer", "consumer"))
    s = InferenceSettings(runtime="ollama", quant="Q4_K_M", parallel=4, n_gpu_layers=65)
    free = max_context(spec, s, hardware_for(gpus), platform=win)
    small = max_context(spec, s, hardware_for(gpus, host_ram_bytes=8 * GiB), platform=win)
    assert free is not None
    assert small is not None
    assert small[0] == free[0]
    assert verdict(small[1], win).level == "tight"  # the page file is still named


def test_vllm_on_windows_is_named_not_silently_modelled(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM has no native Windows build: --os windows with vLLM was answered "fits" without a
    word (and --ram's commit check does not apply to it); the user is told to model WSL 2."""
    argv = ["estimate", "llama-3.1-8b", "-r", "vllm", "--gpu", "rtx-4090", "--ctx", "8k"]
    # 0 fits / 4 tight: the level is the band's (V1's penalty/log-probs term, vllm_penalties,
    # tips this 4090 with a display to "tight"); the warning is what this test is about
    assert main([*argv, "--os", "windows", "--offline"]) in (0, 4)
    assert "vLLM does not run on native Windows" in capsys.readouterr().err
    assert main([*argv, "--os", "wsl", "--offline"]) in (0, 4)
    assert "native Windows" not in capsys.readouterr().err


# CUDA System Memory Fallback (NVIDIA Windows driver 536.40+): a llama.cpp/Ollama CUDA run over
# its card by less than WDDM's shared segment (half the RAM) spills instead of failing. The two
# runs are the records' own settings; the card is given as its nominal memory (24 / 12 GiB) so
# the over-by stays what the records show whatever the catalog's capacity becomes.
LCPP_8760 = InferenceSettings(  # llama.cpp#8760: b3488, --no-mmap -ngl 39, ran at 1.86 tok/s
    runtime="llama.cpp",
    quant="IQ3_XS",
    ctx=8196,
    n_gpu_layers=39,
    mmap=False,
    runtime_version="b3488",
)
OLLAMA_4790 = InferenceSettings(  # ollama#4790: 0.1.41, command-r:35b, num_ctx 4096, ran
    runtime="ollama", quant="Q4_0", ctx=4096, runtime_version="0.1.41"
)
_RUNS = [
    ("mistral-large-2", LCPP_8760, "rtx-3090", 24 * GiB),
    ("command-r-35b", OLLAMA_4790, "rtx-4070", 12 * GiB),
]


def _run(model: str, s: InferenceSettings, gpu: str, vram: int, ram: int | None) -> Estimate:
    hw = hardware_for(parse_gpu_list(gpu), vram_bytes=vram, host_ram_bytes=ram)
    return estimate(model, s, hw, offline=True)


@pytest.mark.parametrize(("model", "settings", "gpu", "vram"), _RUNS)
def test_sysmem_fallback_spills_instead_of_failing(
    model: str, settings: InferenceSettings, gpu: str, vram: int
) -> None:
    est = _run(model, settings, gpu, vram, None)
    plat = Platform(os="windows", segments=("consumer",))
    win = verdict(est, plat)
    assert win.tightest is not None
    over = -win.tightest.free_bytes
    assert 0 < over <= sysmem_fallback_bytes(None)  # over the card after WDDM's 512 MiB
    assert within_sysmem_fallback(est, est.devices[0], "windows", over)
    assert win.level == "tight"
    assert SYSMEM_OVER in win.risks[0]
    # a shared segment smaller than the overrun (RAM = the overrun: half of it is shared)
    small = dataclasses.replace(est, host=dataclasses.replace(est.host, capacity_bytes=over))
    assert not within_sysmem_fallback(small, est.devices[0], "windows", over)
    roomy = dataclasses.replace(est, host=dataclasses.replace(est.host, capacity_bytes=2 * over))
    assert within_sysmem_fallback(roomy, est.devices[0], "windows", over)
    # WSL 2 keeps WDDM's reservation but is not modelled with the fallback: over, so dies
    assert verdict(est, Platform(os="wsl", segments=("consumer",))).level == "does_not_fit"


def test_sysmem_fallback_is_bounded_by_the_shared_segment() -> None:
    """WDDM's shared segment is MAX(RAM / 2, 64 MB); RAM unknown: Windows 10 x64's minimum 2 GB.
    The same 8760 run with 21 more layers on the card is several GiB over: "does not fit"."""
    assert sysmem_fallback_bytes(None) == GiB
    assert sysmem_fallback_bytes(64 * GiB) == 32 * GiB
    assert sysmem_fallback_bytes(64 * 1024 * 1024) == 64 * 1024 * 1024
    win = Platform(os="windows", segments=("consumer",))
    more = dataclasses.replace(LCPP_8760, n_gpu_layers=60)
    far = _run("mistral-large-2", more, "rtx-3090", 24 * GiB, None)
    v = verdict(far, win)
    assert v.tightest is not None
    assert -v.tightest.free_bytes > GiB
    assert v.level == "does_not_fit"


def test_sysmem_fallback_is_ggml_cuda_only() -> None:
    """Other runtimes and other backends keep "does not fit" when over the card."""
    est = _run("mistral-large-2", LCPP_8760, "rtx-3090", 24 * GiB, None)
    other = dataclasses.replace(est, runtime="transformers")
    assert not within_sysmem_fallback(other, est.devices[0], "windows", GiB // 2)
    rocm = dataclasses.replace(est.devices[0], device="rocm:0")
    assert not within_sysmem_fallback(est, rocm, "windows", GiB // 2)
    assert not within_sysmem_fallback(est, est.devices[0], "linux", GiB // 2)
    assert within_sysmem_fallback(est, est.devices[0], "windows", GiB // 2)

"""revfix20g: front-end release numbers refused in the front-end's name, the binding's flag
refusal in its own terms, -ub refused before PR #6017, first builds of -fa and llama-server."""

from __future__ import annotations

import subprocess
import sys

from oomkit.estimate.flag_eras import flag_available
from oomkit.planner.commands_llamacpp import llamacpp_fa_flags
from oomkit.spec.settings import InferenceSettings


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "oomkit", "estimate", "llama-3.1-8b", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_koboldcpp_and_lmstudio_release_numbers_refused_in_their_names() -> None:
    for runtime, name in (("koboldcpp", "KoboldCpp"), ("lmstudio", "LM Studio")):
        out = _cli("-r", runtime, "--runtime-version", "1.60")
        assert out.returncode != 0
        assert f"{name} 1.60" in out.stderr
        assert "bNNNN" in out.stderr
        assert "llama.cpp has no release numbers" not in out.stderr
    assert _cli("-r", "koboldcpp", "--runtime-version", "b3000").returncode == 0


def test_binding_flash_attn_refused_with_its_release_and_keyword() -> None:
    out = _cli("-r", "llama-cpp-python", "--runtime-version", "0.2.50", "-fa")
    assert out.returncode != 0
    assert "llama-cpp-python 0.2.50 has no flash_attn" in out.stderr
    assert "PR #5021 (b2771" in out.stderr


def test_ubatch_refused_before_pr_6017() -> None:
    out = _cli("-r", "llama.cpp", "--runtime-version", "b2000", "-ub", "256")
    assert out.returncode != 0
    assert "PR #6017" in out.stderr
    assert _cli("-r", "llama.cpp", "--runtime-version", "b2413", "-ub", "256").returncode == 0


def test_first_builds_from_ggml_ci_logs() -> None:
    # 'main: build = 2771 (9c67c277)' and 'main: build = 3142 (1c641e6a)' in ggml-org/ci
    assert [flag_available("llama.cpp", "flash_attn", v) for v in ("b2770", "b2771")] == [
        False,
        True,
    ]
    assert [flag_available("llama.cpp", "llama_server", v) for v in ("b3141", "b3142")] == [
        False,
        True,
    ]


def test_fa_spelling_uses_the_flag_table() -> None:
    assert llamacpp_fa_flags(InferenceSettings(runtime_version="b5000", flash_attn=True)) == ["-fa"]
    assert llamacpp_fa_flags(InferenceSettings(runtime_version=None, flash_attn=False)) == [
        "-fa",
        "off",
    ]


def test_ollama_metal_partial_offload_echoes_no_mmap() -> None:
    # Ollama 0.1.40-0.29.x start a Metal partial offload with --no-mmap (llm/server.go)
    base = ("llama-3.1-70b", "-q", "Q4_K_M", "-r", "ollama", "-g", "m4-16gb")
    cmd = [sys.executable, "-m", "oomkit", "estimate", *base]
    old = subprocess.run(
        [*cmd, "--runtime-version", "0.3.13"], capture_output=True, text=True, check=False
    )
    assert "mmap=False" in old.stdout
    assert "without mmap" in old.stdout
    new = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert "mmap=True" in new.stdout


def test_8gb_apple_silicon_and_vram_metal_for_ollama() -> None:
    from oomkit.hardware.catalog import find_gpu

    for chip in ("m1", "m2", "m3"):
        gpu = find_gpu(f"{chip}-8gb")
        assert gpu.memory_bytes == 8 * 2**30
        assert gpu.usable_memory_bytes == 8 * 2**30 * 2 // 3  # 2/3 of RAM up to 32 GB
    out = _cli("-r", "ollama", "--vram", "8GiB", "--backend", "metal")
    assert out.returncode == 0, out.stderr
    assert "of 8.00 GiB" in out.stdout
    assert _cli("-r", "vllm", "--vram", "8GiB", "--backend", "cuda").returncode != 0

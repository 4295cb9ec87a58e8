"""``estimate --backend`` (llama.cpp's ggml backend) and what the planner and ``--emit`` make of
flash attention when a run has it off.

Real catalog models and GPUs; the Vulkan per-buffer limit is oomkit's simulation of ggml-alloc
(:mod:`oomkit.estimate.llamacpp_maxalloc`). Llama-3.1-8B has 32 query heads, so without flash
attention the f32 KQ matrix of one 512-token ubatch at n_ctx 65536 is 32 x 512 x 65536 x 4 =
4 GiB + padding: over Vulkan's 4 GiB - 4 byte allocation limit, and nothing on ROCm.
"""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main
from oomkit.cli.gpu_choice import with_backend
from oomkit.errors import InvalidSettingError
from oomkit.hardware.catalog import find_gpu
from oomkit.hardware.targets import hardware_for
from oomkit.planner.commands import llamacpp_fa_flags
from oomkit.planner.knobs import FA_F16, kv_ladder, llamacpp_flash_off
from oomkit.spec.settings import InferenceSettings

STRIX = "ryzen-ai-max-395-128gb"
OLD = "2025-08-01"  # before PR #15434: flash attention off unless -fa, and -fa takes no value
ARGS = ("estimate", "llama-3.1-8b", "-r", "llama.cpp", "-q", "Q4_K_M", "--ctx", "65536")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_vulkan_buffer_limit_is_reachable_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *ARGS, "--gpu", STRIX, "--runtime-version", OLD, "--json")
    assert code == 0  # the APU's own backend (ROCm/HIP) has no per-buffer limit
    assert json.loads(out)["devices"][0]["device"] == "rocm:0"

    code, out, _ = run(
        capsys, *ARGS, "--gpu", STRIX, "--runtime-version", OLD, "--backend", "vulkan", "--json"
    )
    doc = json.loads(out)
    assert code == 3
    assert doc["devices"][0]["device"] == "vulkan:0"
    assert doc["verdict"] == "does_not_fit"
    assert any("'kq'" in b for b in doc["blockers"]), doc["blockers"]
    # the best change is flash attention (no KQ matrix), not a quantized KV cache, and the
    # command is in the old build's syntax (a bare -fa)
    first = doc["suggestions"][0]
    assert "flash attention on (-fa)" in first["changes"]
    assert not any(c.startswith("KV cache") for c in first["changes"])
    words = first["command"].split()
    assert "-fa" in words, first["command"]
    assert "on" not in words, first["command"]


def test_vulkan_with_flash_attention_fits(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, *ARGS, "--gpu", STRIX, "--runtime-version", OLD, "--backend", "vulkan", "-fa",
        "--json",
    )  # fmt: skip
    assert code == 0, out
    assert json.loads(out)["verdict"] == "fits"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (("-r", "vllm", "--gpu", "h100", "--backend", "vulkan"), "--backend selects llama.cpp"),
        (("--gpu", "rtx-4090", "--backend", "rocm"), "cannot run llama.cpp's rocm backend"),
        (("--gpu", "m2-pro-32gb", "--backend", "vulkan"), "cannot run llama.cpp's vulkan"),
        (("--gpu", "rtx-4090", "--backend", "opencl"), "--backend"),
        (("--gpu", "rtx-4090", "--backend", "sycl"), "cannot run llama.cpp's sycl backend"),
        (("--train", "lora", "--gpu", "rtx-4090", "--backend", "vulkan"), "--backend"),
    ],
)
def test_impossible_backend_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], needle: str
) -> None:
    code, out, err = run(capsys, "estimate", "llama-3.1-8b", *extra)
    assert code == 2
    assert out == ""
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("Error: ")
    assert needle in err


def test_sycl_names_the_intel_gpus_own_backend(capsys: pytest.CaptureFixture[str]) -> None:
    """llama.cpp on an Intel Arc runs its SYCL build: ``--backend sycl`` (as llama.cpp names
    it) is that GPU's own backend, so the estimate is the one without the option."""
    args = ("estimate", "qwen2.5-3b", "-q", "Q4_K_M", "--gpu", "arc-a770-16gb", "--json")
    code, plain, _ = run(capsys, *args)
    code2, sycl, _ = run(capsys, *args, "--backend", "sycl")
    assert code == code2
    assert json.loads(plain)["devices"] == json.loads(sycl)["devices"]
    hw = hardware_for([find_gpu("arc-a770-16gb")])
    assert [d.backend for d in with_backend(hw, "sycl", "llama.cpp").devices] == ["xpu"]


def test_with_backend_keeps_cpu_and_takes_unnamed_devices() -> None:
    hw = hardware_for([find_gpu("rtx-3090")])
    assert [d.backend for d in with_backend(hw, "vulkan", "llama.cpp").devices] == ["vulkan"]
    assert with_backend(hw, None, "vllm") is hw
    unnamed = hardware_for((), vram_bytes=8 * 2**30)
    moved = with_backend(unnamed, "rocm", "llama.cpp", named=False)
    assert {d.backend for d in moved.devices if d.backend != "cpu"} == {"rocm"}
    with pytest.raises(InvalidSettingError, match="--backend"):
        with_backend(hw, "rocm", "llama.cpp")


@pytest.mark.parametrize(
    ("version", "fa", "flags"),
    [
        (None, None, ["-fa", "on"]),  # today's build: -fa auto, written as on
        (None, False, ["-fa", "off"]),
        (OLD, None, []),  # old build, -fa not given: off
        (OLD, True, ["-fa"]),  # old build: a bare flag
        ("2025-09-15", True, ["-fa", "on"]),
    ],
)
def test_emitted_flash_attention_follows_the_build(
    version: str | None, fa: bool | None, flags: list[str]
) -> None:
    s = InferenceSettings(runtime="llama.cpp", runtime_version=version, flash_attn=fa)
    assert llamacpp_fa_flags(s) == flags


def test_flash_attention_knob_only_when_a_llamacpp_run_has_it_off() -> None:
    assert llamacpp_flash_off(InferenceSettings(runtime="llama.cpp", runtime_version=OLD))
    assert llamacpp_flash_off(InferenceSettings(runtime="llama.cpp", flash_attn=False))
    assert not llamacpp_flash_off(InferenceSettings(runtime="llama.cpp"))
    assert kv_ladder("llama.cpp", flash_off=True) == ("f16", FA_F16, "q8_0", "q4_0")
    assert kv_ladder("llama.cpp") == ("f16", "q8_0", "q4_0")
    assert FA_F16 not in kv_ladder("vllm", flash_off=True)


def test_web_api_takes_the_backend() -> None:
    pytest.importorskip("fastapi", reason="the web API is the [web] extra")
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")
    from fastapi.testclient import TestClient

    from oomkit.web.app import create_app

    body = {
        "model": "llama-3.1-8b",
        "quant": "Q4_K_M",
        "ctx": 65536,
        "gpu": STRIX,
        "runtime_version": OLD,
    }
    with TestClient(create_app()) as c:
        plain = c.post("/api/estimate", json=body)
        vulkan = c.post("/api/estimate", json={**body, "backend": "vulkan"})
        bad = c.post("/api/estimate", json={**body, "backend": "opencl"})
    assert plain.status_code == 200, plain.text
    assert plain.json()["verdict"] == "fits"
    assert vulkan.status_code == 200, vulkan.text
    assert vulkan.json()["verdict"] == "does_not_fit"
    assert vulkan.json()["devices"][0]["device"] == "vulkan:0"
    assert bad.status_code == 422


def test_plan_takes_the_backend_and_turns_flash_attention_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("plan", "llama-3.1-8b", "--gpu", STRIX, "--ctx", "65536", "-q", "Q8_0")
    code, out, _ = run(capsys, *args, "--runtime-version", OLD, "--backend", "vulkan", "--json")
    assert code == 0
    doc = json.loads(out)
    best = doc["plans"][0]
    assert "flash attention on (-fa)" in best["changes"]
    assert best["command"].split()[-1] == "-fa"
    # a Strix Halo APU is not a Mac: no Metal working-set advice
    assert not any("Metal" in n or "sysctl" in n for n in doc.get("notes", [])), doc["notes"]
    assert any("GTT" in n for n in doc.get("notes", []))
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "-r", "any",
                       "--backend", "vulkan")  # fmt: skip
    assert code == 2
    assert "--backend" in err


def test_vulkan_driver_sets_the_per_buffer_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """kyuz0's Strix Halo llama-bench (b6486, -ngl 99, ctx 512): gemma-3-27b BF16's tied output
    weight (2819260416 bytes) dies on AMDVLK (2 GiB per allocation) and runs on RADV."""
    args = ("estimate", "gemma-3-27b", "-r", "llama.cpp", "-q", "BF16", "--ctx", "512")
    args += ("--gpu", STRIX, "--backend", "vulkan", "--runtime-version", "b6486", "--offline")
    code, out, _ = run(capsys, *args, "--vulkan-driver", "amdvlk")
    assert code == 3
    assert "'output.weight(tied)' of 2.63 GiB (2819260416 bytes)" in out
    assert "(2147483648 bytes)" in out
    code, out, _ = run(capsys, *args, "--vulkan-driver", "radv")
    assert code == 0
    assert "allocation" not in out


def test_vulkan_driver_without_vulkan_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, *ARGS, "--gpu", STRIX, "--vulkan-driver", "amdvlk")
    assert code == 2
    assert "--vulkan-driver amdvlk: no GPU runs llama.cpp's Vulkan backend" in err
    assert "Traceback" not in err

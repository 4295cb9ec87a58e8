"""llama.cpp's HIP build under GGML_CUDA_ENABLE_UNIFIED_MEMORY=1 on a Linux Strix Halo: managed
buffers come out of the GTT pool (unified memory less the HIP total), not the carve-out."""

from __future__ import annotations

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.llamacpp_hip_managed import ENV, managed_pool_bytes
from oomkit.hardware.targets import hardware_for
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB, parse_size

# TOSUKUi/blog evo-x2-hip-environment.md: ROCm 6.4, b5581, 'using device ROCm0 ... 98148 MiB
# free', llama-server -ngl 93 -c 32000 with Qwen3-30B-A3B-128K-UD-Q8_K_XL: 'allocating
# 33723.51 MiB on device 0: cudaMalloc failed: out of memory'
SETTINGS = InferenceSettings(
    runtime="llama.cpp", quant="UD-Q8_K_XL", ctx=32000, n_gpu_layers=93, runtime_version="b5581"
)


def _hw(os_name: str = "linux", vram: str | None = "98148MiB") -> Hardware:
    return hardware_for(
        parse_gpu_list("ryzen-ai-max-395-128gb"),
        vram_bytes=parse_size(vram) if vram else None,
        os=os_name,
    )


def test_pool_is_unified_less_the_hip_total() -> None:
    dev = _hw().devices[0]
    pool = managed_pool_bytes(dev, "linux", 128 * GiB)
    assert pool == 128 * GiB - 98148 * MiB  # 33 GiB: the 64 GB carve-out's GTT half
    assert 33723.51 * MiB > pool  # the buffer that failed
    assert managed_pool_bytes(dev, "windows", 128 * GiB) is None  # managed falls back there
    assert managed_pool_bytes(_hw(vram=None).devices[0], "linux", 128 * GiB) is None


def test_the_variable_moves_the_capacity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    plain = estimate("qwen3-30b-a3b", SETTINGS, _hw())
    assert plain.devices[0].capacity_bytes == 98148 * MiB
    assert plain.fits is True
    monkeypatch.setenv(ENV, "1")
    managed = estimate("qwen3-30b-a3b", SETTINGS, _hw())
    assert managed.devices[0].capacity_bytes == 128 * GiB - 98148 * MiB
    assert managed.fits is False
    assert any(ENV in n for n in managed.assumptions)
    # Windows: ggml falls back to hipMalloc (managed memory unsupported)
    assert estimate("qwen3-30b-a3b", SETTINGS, _hw("windows")).fits is True

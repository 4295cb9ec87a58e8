"""Ollama 0.1.20-0.1.31: llm/llm.go's num_gpu and CheckVRAM's overhead (ollama/ollama v0.1.29
``llm/llm.go`` ``New``, ``gpu/gpu.go`` ``CheckVRAM``), before memory.go and the 457 MiB minimum
of v0.1.32."""

from __future__ import annotations

from datetime import date

import pytest

from oomkit.api import estimate
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.ollama_llm_go import llm_go_era, llm_go_overhead_bytes
from oomkit.estimate.verdict import Platform, verdict
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

CARD = DeviceTarget(name="8 GB card", capacity_bytes=8 * GiB, backend="cuda")


def _est(version: str, hw: Hardware | None = None, **kw: object) -> Estimate:
    s = InferenceSettings(
        runtime="ollama",
        quant="Q4_0",
        ctx=2048,
        runtime_version=version,
        **kw,  # type: ignore[arg-type]
    )
    return estimate("llama-2-13b", s, hw or Hardware(devices=(CARD,)), offline=True)


def _ollama(est: Estimate) -> dict[str, object]:
    info = est.runtime_details["ollama"]
    assert isinstance(info, dict)
    return info


@pytest.mark.parametrize(
    ("when", "floor"),
    [
        ((0, 1, 19), None),
        ((0, 1, 20), 512 * MiB),
        ((0, 1, 21), 1024 * MiB),
        ((0, 1, 31), 1024 * MiB),
        ((0, 1, 32), None),
        (date(2024, 1, 10), None),
        (date(2024, 1, 11), 512 * MiB),
        (date(2024, 3, 19), 1024 * MiB),
        (date(2024, 4, 16), None),
    ],
)
def test_era_by_release_and_date(when: date | tuple[int, ...], floor: int | None) -> None:
    assert llm_go_era(when) == floor


def test_overhead_is_ten_percent_or_the_floor_per_gpu() -> None:
    assert llm_go_overhead_bytes(8 * GiB, 1, 1024 * MiB) == 1024 * MiB
    assert llm_go_overhead_bytes(8 * GiB, 1, 512 * MiB) == 8 * GiB // 10
    assert llm_go_overhead_bytes(2 * 24 * GiB, 2, 1024 * MiB) == 2 * 24 * GiB // 10


def test_llm_go_picks_fewer_layers_than_memory_go() -> None:
    """Llama-2-13B Q4_0 (7365089280 bytes of GGUF tensors), num_ctx 2048, one 8 GiB card.

    kv = 4 x 2048 x 40 x 5120 x 40 / 40 = 1677721600, graph = kv / 6 = 279620266;
    0.1.29: vram = 8 GiB - 1 GiB; 41 x (7516192768 - 279620266) / (1677721600 + 7365089280)
    = 32.8 -> 32 layers. 0.1.20: overhead 10% (858993459); 41 x 7451320867 / 9042810880 =
    33.8 -> 33 (all). 0.1.32: memory.go and llama.cpp's buffers: all 41 fit."""
    old = _est("0.1.29")
    assert _ollama(old)["num_gpu"] == 32
    assert _ollama(old)["reserve_bytes"] == {"cuda:0": 1024 * MiB}
    assert _ollama(_est("0.1.20"))["reserve_bytes"] == {"cuda:0": 858993459}
    assert _ollama(_est("0.1.20"))["num_gpu"] == 33  # every layer
    new = _est("0.1.32")
    assert _ollama(new)["reserve_bytes"] == {"cuda:0": 457 * MiB}
    assert old.devices[0].total_bytes < new.devices[0].total_bytes  # one layer on the CPU
    assert any("llm/llm.go picked num_gpu 32" in a for a in old.assumptions)
    # a date in the era picks the same release rule
    assert _ollama(_est("2024-03-19"))["num_gpu"] == 32


def test_explicit_num_gpu_keeps_layers_but_reserve_is_the_releases() -> None:
    e = _est("0.1.29", n_gpu_layers=20)
    assert _ollama(e)["num_gpu"] is None  # the user's 20, not llm.go's choice
    assert _ollama(e)["reserve_bytes"] == {"cuda:0": 1024 * MiB}
    v_old = verdict(e, Platform())
    v_new = verdict(_est("0.1.32", n_gpu_layers=20), Platform())
    term = "Ollama's minimum free memory"

    def band_term(v: object) -> int:
        margins = v.margins  # type: ignore[attr-defined]
        return sum(b for label, b in margins[0].terms if label.startswith(term))

    assert band_term(v_old) == 1024 * MiB
    assert band_term(v_new) == 457 * MiB


def test_metal_is_not_llm_go() -> None:
    mac = Hardware(
        devices=(
            DeviceTarget(name="M2", capacity_bytes=16 * GiB, backend="metal", unified_memory=True),
        )
    )
    e = _est("0.1.29", mac)
    assert not any("llm/llm.go" in a for a in e.assumptions)

"""Ollama releases run the llama.cpp they vendored (review3 finding 12).

The pins come from the ollama/ollama release tags (``llm/llama.cpp`` submodule, later
``llama/vendoring``/``Makefile.sync``), dated by the ggml-org/llama.cpp commits; Ollama's Linux
CUDA build forced MMQ from 0.1.23 to 0.2.1 (gen_linux.sh, removed by ollama PR #5588).
"""

from __future__ import annotations

from datetime import date

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.ollama import ollama_settings
from oomkit.estimate.ollama_vendored import force_mmq, vendored_llamacpp_date
from oomkit.hardware.targets import hardware_for
from oomkit.loaders.source import resolve_model
from oomkit.spec.settings import InferenceSettings

LABEL = "CUDA pool (cuBLAS dequantized weight)"


@pytest.mark.parametrize(
    ("version", "llamacpp"),
    [
        ((0, 1, 0, 0), "2023-09-21"),
        ((0, 1, 11, 0), "2023-10-22"),  # b1412: before PR #3776
        ((0, 1, 17, 0), "2023-12-18"),
        ((0, 1, 32, 0), "2024-04-15"),  # 7593639, b2679
        ((0, 5, 7, 0), "2025-01-06"),  # 46e3556, b4419
        ((0, 6, 3, 0), "2025-02-26"),  # d7cfe1f, ollama PR #9356
        (date(2024, 4, 20), "2024-04-15"),  # the newest release that day: 0.1.32
    ],
)
def test_each_release_maps_to_the_llamacpp_it_vendored(
    version: tuple[int, ...] | date, llamacpp: str
) -> None:
    assert vendored_llamacpp_date(version) == llamacpp


def test_outside_the_table_the_generation_row_decides() -> None:
    assert vendored_llamacpp_date((0, 6, 6, 0)) is None
    assert vendored_llamacpp_date(date(2025, 6, 1)) is None


def test_before_0_1_0_the_llamacpp_is_no_newer_than_the_day() -> None:
    """Ollama 0.0.x (July-September 2023) is not in the table; its llama.cpp can be no newer
    than the run's day nor than 0.1.0's pin (before, the generation row's 2025 llama.cpp stood
    in: ollama/ollama#434, 2023-08-28, was modelled without the logits of every prompt token
    that builds before PR #6122 computed)."""
    assert vendored_llamacpp_date((0, 0, 21, 0)) == "2023-09-21"
    assert vendored_llamacpp_date(date(2023, 8, 28)) == "2023-08-28"
    assert vendored_llamacpp_date(date(2023, 9, 24)) == "2023-09-21"
    assert _mapped_version("2023-08-28") == "2023-08-28"
    assert _mapped_version("0.0.17") == "2023-09-21"


def test_force_mmq_on_linux_from_0_1_23_to_0_2_1() -> None:
    assert not force_mmq((0, 1, 22, 0))
    assert force_mmq((0, 1, 23, 0))
    assert force_mmq((0, 2, 1, 0))
    assert not force_mmq((0, 2, 2, 0))
    assert force_mmq(date(2024, 5, 1))
    assert not force_mmq(date(2024, 7, 20))


def _mapped_version(version: str) -> str | None:
    spec = resolve_model("yi-34b", offline=True)
    mapped, _ = ollama_settings(spec, InferenceSettings(runtime="ollama", runtime_version=version))
    return mapped.runtime_version


def test_ollama_settings_run_the_vendored_llamacpp() -> None:
    """0.1.x no longer runs the llama.cpp of 2025-01-15 for every release."""
    assert _mapped_version("0.1.17") == "2023-12-18"
    assert _mapped_version("0.1.32") == "2024-04-15"
    assert _mapped_version("0.5.7") == "2025-01-06"
    assert _mapped_version("0.9.0") == "2025-04-20"  # the 0.6.4-0.11 row's date
    assert _mapped_version("0.12.3") is None  # today's llama.cpp


def _pool(version: str) -> tuple[int, Estimate]:
    est = estimate(
        "yi-34b",
        InferenceSettings(runtime="ollama", runtime_version=version),
        hardware_for(parse_gpu_list("rtx-4090")),
        offline=True,
    )
    return sum(c.n_bytes for c in est.devices[0].components if c.label == LABEL), est


def test_ollama_0_1_x_gets_the_cublas_pool_of_its_llamacpp() -> None:
    # 0.1.12-0.1.22 vendored llama.cpp between PR #3776 and PR #6122: the 64000 x 7168
    # output matrix dequantized over 512 prompt tokens
    output = 2 * (64000 * 7168 + 512 * 7168 + 64000 * 512)
    assert _pool("0.1.17")[0] == output
    assert _pool("0.1.22")[0] == output
    assert _pool("0.1.11")[0] == 0  # b1412: MMQ, before PR #3776
    forced, est = _pool("0.1.32")  # Linux build with LLAMA_CUDA_FORCE_MMQ
    assert forced == 0
    assert any("LLAMA_CUDA_FORCE_MMQ" in a for a in est.assumptions)
    assert _pool("0.5.7")[0] == 0  # after PR #8075, an RTX 4090 has int8 tensor cores

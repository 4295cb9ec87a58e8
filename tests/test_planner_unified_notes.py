"""The planner's unified-memory note names the limit of each platform: Metal's working set on
a Mac, the firmware carve-out and GTT limit on an AMD APU, and on NVIDIA GB10 (DGX Spark) the
OS's MemTotal, which CUDA reports as the GPU's total (``oomkit/data/gpus.json`` dgx-spark
``cuda_total_source``: ``mem_get_info()[1] == MemTotal``)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def test_gb10_plan_notes_name_no_carve_out_or_gtt(capsys: pytest.CaptureFixture[str]) -> None:
    """DGX Spark: CUDA's total is the OS's MemTotal; the AMD APU advice (firmware carve-out, GTT
    limit) does not apply. A Strix Halo keeps it."""
    code, out, _ = run_cli(capsys, "plan", "llama-3.1-8b", "--gpu", "dgx-spark", "--json")
    assert code == 0
    notes = json.loads(out)["notes"]
    spark = [n for n in notes if "unified memory" in n]
    assert spark
    assert "MemTotal" in spark[0]
    assert not any("carve-out" in n or "GTT" in n for n in notes), notes
    assert not any("sysctl" in n for n in notes)
    code, out, _ = run_cli(
        capsys, "plan", "llama-3.1-8b", "--gpu", "ryzen-ai-max-395-128gb", "--json"
    )
    assert code == 0
    assert any("GTT" in n for n in json.loads(out)["notes"])

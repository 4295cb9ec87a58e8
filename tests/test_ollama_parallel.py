"""Ollama 0.2.0-0.9.x picks ``num_parallel`` itself when OLLAMA_NUM_PARALLEL is unset: 4 (2 from
0.6.7) when every layer still fits by llm/memory.go's estimate, else 1 (server/sched.go
``pickBestFullFitByLibrary``; oomkit.estimate.ollama_parallel). Real logs: the runner started
with ``--ctx-size`` num_ctx x 4 (or x 2) and ``parallel=4`` in the scheduler line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.ollama_parallel import default_parallel
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import parse_size

RUNS = Path(__file__).parent / "fixtures" / "verdict_runs"


def _record(part: str, rid: str) -> dict[str, Any]:
    for line in (RUNS / f"{part}.jsonl").read_text().splitlines():
        if line.strip() and json.loads(line)["id"] == rid:
            rec: dict[str, Any] = json.loads(line)
            return rec
    raise AssertionError(rid)


def _estimate_unset(rec: dict[str, Any]) -> tuple[int, int, tuple[str, ...]]:
    """(num_parallel, n_ctx, assumptions) of the record with its logged parallel removed."""
    settings = {k: v for k, v in rec["settings"].items() if k != "parallel"}
    s = InferenceSettings(
        runtime="ollama",
        quant=rec["quant"],
        ctx=rec["ctx"],
        runtime_version=rec["runtime_version"] or rec["date"],
        **settings,
    )
    vram = parse_size(rec["vram"]) if rec.get("vram") else None
    hw = hardware_for(parse_gpu_list(rec["gpu"]), vram_bytes=vram, os=rec.get("os"))
    est = estimate(rec["model"], s, hw, offline=True)
    return int(est.settings["parallel"]), int(est.settings["ctx"]), est.assumptions


@pytest.mark.parametrize(
    ("part", "rid", "logged"),
    [
        # 0.2.8-rc2, M2 Pro 32 GB: 'parallel=4', '--ctx-size 32768' for num_ctx 8192
        ("heldout14", "ollama-5862-mistralnemo-q40-m2pro32-np4-c8192", 4),
        # 2024-11, 8x H100: 'new model will fit in available VRAM, loading' parallel=4
        ("heldout2", "ollama-7548-dsv2-236b-f16-8xh100-np4", 4),
        # 2025-02, 2x RTX 4060 Ti 16GB: parallel=4 on both GPUs (no single one holds it)
        ("heldout6", "ollama-8825-r1distill-qwen32b-q4km-2x4060ti16-np4", 4),
        # 0.6.8 (defaultParallel 2): '--ctx-size 8192 ... --parallel 2' for num_ctx 4096
        ("heldout32", "log-autodoc-ollama-068-qwen25-7b-q4km-a100-40gb-pcie-np2-ok", 2),
    ],
)
def test_unset_parallel_is_what_the_log_shows(part: str, rid: str, logged: int) -> None:
    rec = _record(part, rid)
    parallel, ctx, notes = _estimate_unset(rec)
    assert parallel == logged
    assert ctx == rec["ctx"] * logged
    assert any("OLLAMA_NUM_PARALLEL not set" in a for a in notes)


def test_default_parallel_by_release_and_date() -> None:
    assert default_parallel("0.1.48") == 1  # NumParallel = 1 in envconfig
    assert default_parallel("0.1.49-rc1") == 4  # 17b7186cd "Enable concurrency by default"
    assert default_parallel("0.6.6") == 4
    assert default_parallel("0.6.7") == 2  # fe5b9bb21
    assert default_parallel("0.9.6") == 2
    assert default_parallel("0.9.7-rc0") == 1  # PR #11330
    assert default_parallel("0.12.0") == 1
    assert default_parallel("2024-07-06") == 1
    assert default_parallel("2024-07-07") == 4  # v0.2.0
    assert default_parallel("2025-05-01") == 2
    assert default_parallel("2025-07-30") == 1  # v0.10.0
    assert default_parallel(None) == 1  # the newest release


def _qwen(version: str, **kw: Any) -> InferenceSettings:
    base = InferenceSettings(runtime="ollama", quant="Q4_K_M", ctx=4096, runtime_version=version)
    return dataclasses.replace(base, **kw)


def test_no_choice_outside_the_window_or_when_set() -> None:
    hw = hardware_for(parse_gpu_list("rtx-4090"))
    for version in ("0.1.48", "0.10.0", "0.12.5"):
        est = estimate("qwen2.5-7b", _qwen(version), hw, offline=True)
        assert est.settings["parallel"] == 1, version
    est = estimate("qwen2.5-7b", _qwen("0.5.7", parallel=1), hw, offline=True)
    assert est.settings["parallel"] == 1  # OLLAMA_NUM_PARALLEL=1 given
    est = estimate("qwen2.5-7b", _qwen("0.5.7"), hw, offline=True)
    assert est.settings["parallel"] == 4
    assert est.settings["ctx"] == 4 * 4096


def test_no_full_fit_loads_with_one() -> None:
    # Llama-3.3-70B Q4_K_M does not fit a 24 GB card at any num_parallel: the partial load
    # (pickBestPartialFitByLibrary) runs with 1
    hw = hardware_for(parse_gpu_list("rtx-4090"))
    est = estimate("llama-3.3-70b", _qwen("0.5.7"), hw, offline=True)
    assert est.settings["parallel"] == 1
    assert any("no full fit with 4" in a for a in est.assumptions)


def test_partial_layer_count_keeps_one() -> None:
    # a log's partial count (gemma3:27b on a 3060, 28/63 layers) is the partial load's: 1
    rec = _record("heldout6", "ollama-9818-gemma3-27b-q4km-3060-28layers")
    parallel, ctx, _ = _estimate_unset(rec)
    assert (parallel, ctx) == (1, rec["ctx"])


def test_multimodal_kept_at_one_before_041() -> None:
    # v0.2.0-v0.4.0: every model with a vision part at 1; from v0.4.1 only mllama (6cd566872)
    hw = hardware_for(parse_gpu_list("a100-80gb-sxm"))
    s = InferenceSettings(runtime="ollama", ctx=2048, quant="Q4_K_M", runtime_version="0.3.12")
    assert estimate("gemma-3-12b", s, hw, offline=True).settings["parallel"] == 1
    s = dataclasses.replace(s, runtime_version="0.6.5")
    assert estimate("gemma-3-12b", s, hw, offline=True).settings["parallel"] == 4
    assert estimate("llama-3.2-11b-vision", s, hw, offline=True).settings["parallel"] == 1


def test_vision_weights_count_toward_the_full_fit() -> None:
    # gemma3:4b on a 4 GB laptop RTX 3050 (0.7.1, num_ctx 1024): Ollama's own partial offload,
    # so no full fit at 2; memory.go puts the F16 vision weights on the first GPU
    rec = _record("heldout6", "ollama-10884-gemma3-4b-q4km-3050laptop4gb-1k")
    parallel, ctx, notes = _estimate_unset(rec)
    assert (parallel, ctx) == (1, rec["ctx"])
    assert any("no full fit with 2" in a for a in notes)

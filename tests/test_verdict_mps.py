"""PyTorch's MPS allocator limit in the verdict for transformers on Apple silicon.

PyTorch (aten/src/ATen/mps/MPSAllocator.mm) refuses an allocation past
``PYTORCH_MPS_HIGH_WATERMARK_RATIO`` (1.7 on unified memory) x ``recommendedMaxWorkingSetSize``:
the "max allowed" of "MPS backend out of memory". The records: heldout15's accelerate 2778 /
lm-evaluation-harness 1835 runs on a Mac Studio M1 Ultra 128 GB.
"""

from __future__ import annotations

import json
from pathlib import Path

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.verdict import Platform, device_unified_bytes, verdict
from oomkit.estimate.verdict_mps import MPS_HIGH_WATERMARK_RATIO
from oomkit.hardware.catalog import find_gpu
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

_PART = Path(__file__).parent / "fixtures" / "verdict_runs" / "heldout15.jsonl"


def _level(model: str, quant: str, gpu: str, ratio: float | None = None) -> tuple[str, str]:
    gpus = parse_gpu_list(gpu)
    hw = hardware_for(gpus)
    s = InferenceSettings(runtime="transformers", quant=quant, ctx=2048, device_map="none")
    est = estimate(model, s, hw, offline=True)
    plat = Platform(
        segments=tuple(g.segment for g in gpus),
        unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices),
        mps_high_watermark_ratio=ratio,
    )
    v = verdict(est, plat)
    return v.level, " ".join(v.risks)


def test_max_allowed_is_the_ratio_times_the_catalog_working_set() -> None:
    # accelerate#2778: "max allowed: 163.20 GB" (PyTorch's format_size: 1024-based "GB")
    ws = find_gpu("m1-ultra-128gb").usable_memory_bytes
    assert ws is not None
    assert f"{MPS_HIGH_WATERMARK_RATIO * ws / GiB:.2f}" == "163.20"
    # Langchain-Chatchat#533 on a 16 GB Mac: "max allowed: 18.13 GB"
    ws16 = find_gpu("m2-pro-16gb").usable_memory_bytes
    assert ws16 is not None
    assert f"{MPS_HIGH_WATERMARK_RATIO * ws16 / GiB:.2f}" == "18.13"


def test_heldout15_mps_records_keep_their_levels() -> None:
    recs = {
        r["id"]: r
        for r in (json.loads(ln) for ln in _PART.read_text().splitlines() if ln.strip())
        if r["gpu"] == "m1-ultra-128gb"
    }
    fp32 = recs["tf-lmeval1835-mixtral-8x7b-fp32-m1ultra128-mps"]
    # 174 GiB of fp32 weights: past 1.7 x 96 GiB, the allocator refuses (died at load)
    assert _level(fp32["model"], fp32["quant"], fp32["gpu"])[0] == "does_not_fit"
    ok = recs["tf-accel2778-llama3-8b-fp16-m1ultra128-mps"]
    assert _level(ok["model"], ok["quant"], ok["gpu"])[0] == "fits"


def test_over_the_working_set_within_the_mps_limit_is_tight() -> None:
    # Llama-2-70B fp16 (~130 GiB) on the M1 Ultra 128 GB: over the 96 GiB working set, under
    # 163.2 GiB: MPS allocates it (swapping past the RAM)
    level, risks = _level("llama-2-70b", "fp16", "m1-ultra-128gb")
    assert level == "tight"
    assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in risks
    # the same run under a ratio of 1.0 is refused at the working set
    assert _level("llama-2-70b", "fp16", "m1-ultra-128gb", ratio=1.0)[0] == "does_not_fit"
    # ratio 0 disables the limit
    assert _level("mixtral-8x7b", "fp32", "m1-ultra-128gb", ratio=0.0)[0] == "tight"


def test_ggml_metal_keeps_its_own_rule() -> None:
    # the MPS limit is PyTorch's: llama.cpp (every layer on Metal) of the same size stays
    # "does not fit" (past 84% of the RAM, the newest macOS default)
    runtime = "llama.cpp"
    gpus = parse_gpu_list("m1-ultra-128gb")
    hw = hardware_for(gpus)
    est = estimate(
        "llama-2-70b", InferenceSettings(runtime=runtime, quant="F16", ctx=2048), hw, offline=True
    )
    plat = Platform(
        segments=tuple(g.segment for g in gpus),
        unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices),
    )
    assert verdict(est, plat).level == "does_not_fit"

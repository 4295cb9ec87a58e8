"""Apple silicon under partial offload (:mod:`oomkit.estimate.llamacpp_unified`) and the GPU that
stages CPU weights (:mod:`oomkit.estimate.llamacpp_buffers`).

Real records (tests/fixtures/verdict_runs/heldout7.jsonl): ollama-7255 (Ollama, Oct 2024, 18 of
81 layers of a 70B Q4_K_M on a 16 GB Mac: "signal: killed") and the savoirtech M4 runs (32
Ollama slots ran at "9.894Gi/16.000Gi").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.llamacpp_unified import (
    metal_op_offload,
    ollama_metal_no_mmap,
    unified_ram_blocker,
)
from oomkit.estimate.verdict import Platform, device_unified_bytes, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

RUNS = Path(__file__).parent / "fixtures" / "verdict_runs" / "heldout7.jsonl"


def _record(rid: str) -> dict[str, Any]:
    for line in RUNS.read_text().splitlines():
        rec: dict[str, Any] = json.loads(line)
        if rec["id"] == rid:
            return rec
    raise AssertionError(rid)


def _run(rec: dict[str, Any]) -> tuple[Estimate, str]:
    s = InferenceSettings(
        runtime=rec["runtime"],
        quant=rec["quant"],
        ctx=rec["ctx"],
        runtime_version=rec.get("runtime_version") or rec["date"],
        **rec["settings"],
    )
    hw = hardware_for(parse_gpu_list(rec["gpu"]))
    est = estimate(rec["model"], s, hw, offline=True)
    plat = Platform(unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices))
    return est, verdict(est, plat).level


def test_metal_op_offload_from_pr_15995() -> None:
    assert not metal_op_offload("2025-09-19")
    assert metal_op_offload("2025-09-20")
    assert not metal_op_offload("b3590")  # August 2024
    assert metal_op_offload(None)  # today's build


def test_ollama_reads_a_metal_partial_offload_in_from_0_1_40_to_0_29() -> None:
    assert not ollama_metal_no_mmap("0.1.39")
    assert ollama_metal_no_mmap("0.1.40")
    assert ollama_metal_no_mmap("2024-10-18")
    assert ollama_metal_no_mmap("0.29.9")
    assert not ollama_metal_no_mmap("0.30.0")  # llama-server only (ollama PR #16031)
    assert not ollama_metal_no_mmap(None)


def test_ollama_7255_dies_of_the_shared_ram_not_the_working_set() -> None:
    rec = _record("ollama-7255-nemotron70b-q4km-mac16gb-18l")
    assert rec["outcome"] == "oom"
    assert rec["gpu"] == "m1-16gb"
    est, level = _run(rec)
    gpu = est.devices[0]
    assert gpu.fits  # the 18 Metal layers are within the working set (no staged CPU layer)
    assert not any("stages one CPU layer" in a for a in est.assumptions)
    assert level == "does_not_fit"
    assert any(b.startswith("unified memory:") for b in est.blockers)


def test_slots_kv_on_the_cpu_does_not_count_against_the_ram() -> None:
    # 32 slots: ~4 GiB of the KV cache and the CPU compute buffer are on the CPU; the run used
    # 9.9 GiB of 16: zero-filled or untouched pages are not the weights' incompressible bytes
    rec = _record("ollama-savoirtech-mistral7b-q40-m4-16gb-np32")
    assert rec["outcome"] == "ok"
    est, level = _run(rec)
    assert sum(c.n_bytes for c in est.host.components) + est.devices[0].total_bytes > 16 * 2**30
    assert not est.blockers
    assert level != "does_not_fit"


def test_llamacpp_no_mmap_on_a_mac_counts_the_cpu_weights() -> None:
    kw: dict[str, Any] = {"quant": "Q4_K_M", "ctx": 2048, "n_gpu_layers": 18}
    hw = hardware_for(parse_gpu_list("m1-16gb"))
    mapped = estimate("llama-3.1-70b", InferenceSettings(runtime="llama.cpp", **kw), hw)
    read_in = estimate(
        "llama-3.1-70b", InferenceSettings(runtime="llama.cpp", mmap=False, **kw), hw
    )
    assert not mapped.blockers  # mmap: the CPU weights are file pages macOS can drop
    assert unified_ram_blocker(mapped, hw) is not None  # the same sum, had they been read in
    assert any(b.startswith("unified memory:") for b in read_in.blockers)
    # a discrete GPU has no shared RAM to check
    cuda = hardware_for(parse_gpu_list("rtx-3090"))
    assert unified_ram_blocker(mapped, cuda) is None


def _compute(est: Estimate, i: int) -> int:
    return sum(c.n_bytes for c in est.devices[i].components if c.label == "compute buffer")


def test_the_first_gpu_stages_even_without_layers() -> None:
    # ggml_backend_sched_backend_id_from_cur: the first backend (b = 0) whose offload_op accepts
    # the op; under -sm layer the context has a backend for every GPU, in device order
    kw: dict[str, Any] = {"quant": "Q4_K_M", "ctx": 4096, "n_gpu_layers": 30}
    hw = hardware_for(parse_gpu_list("2xrtx-3090"))

    def run(ts: tuple[float, float]) -> Estimate:
        return estimate(
            "llama-2-13b", InferenceSettings(runtime="llama.cpp", tensor_split=ts, **kw), hw
        )

    second, first = run((0.0, 1.0)), run((1.0, 0.0))
    assert _compute(first, 1) == 0  # -ts 1,0: GPU 1 runs nothing
    # -ts 0,1: the layers' graph is GPU 1's, but the CPU layers' staging split (a CPU layer's
    # K/V views, one weight copy) is GPU 0's, as it is when GPU 0 holds the layers
    assert _compute(second, 1) < _compute(first, 0)
    assert _compute(second, 0) >= _compute(second, 1)

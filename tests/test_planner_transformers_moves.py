"""The planner's transformers moves, each on a real catalog model: the generate() batch,
eager -> sdpa, the bitsandbytes formats, device_map="auto" offload under max_memory, the
expandable-segments note, and the computed safe change of a tight run (display-bound)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

import oomkit
from oomkit.catalog.models import find_model
from oomkit.estimate.registry import get_estimator
from oomkit.estimate.verdict import Platform, device_segment, device_unified_bytes, verdict
from oomkit.planner.core import plan
from oomkit.planner.knobs import LEVEL_GPU, LEVEL_LAYERS_CPU, Candidate
from oomkit.planner.request import PlanRequest
from oomkit.planner.search import Searcher
from oomkit.planner.transformers_moves import (
    EXPANDABLE_SEGMENTS,
    smaller_formats,
    transformers_safe_change,
)
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings


def _hw(gpu: str) -> Hardware:
    return Hardware(devices=(oomkit.find_gpu(gpu).to_device_target(),))


def _hw_nvml(gpu: str) -> Hardware:
    """``gpu`` budgeted at NVML's total (``--vram``; the RTX 4080's CUDA total is 15.69 GiB,
    these display-bound cases are built on its 16376 MiB)."""
    row = oomkit.find_gpu(gpu)
    target = dataclasses.replace(row.to_device_target(), capacity_bytes=row.memory_bytes)
    return Hardware(devices=(target,))


def _platform(hw: Hardware) -> Platform:
    return Platform(
        segments=tuple(device_segment(d) for d in hw.devices),
        unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices),
    )


def test_batch_move_is_the_largest_batch_that_fits_at_the_asked_prompt() -> None:
    hw = _hw("rtx-4090")
    req = PlanRequest(runtime="transformers", ctx=8192, parallel=8)
    spec = find_model("llama-3.1-8b").spec()
    best = plan(spec, hw, req).plans[0]
    batch = best.settings.parallel
    assert best.settings.ctx == 8192
    assert batch is not None
    assert 1 <= batch < 8
    s = Searcher(spec, "transformers", hw, req)
    q = best.settings.quant or "bf16"
    assert s.evaluate(Candidate(q, "auto", 8192, max_num_seqs=batch)).fits
    assert not s.evaluate(Candidate(q, "auto", 8192, max_num_seqs=batch + 1)).fits


def test_sdpa_move_replaces_eager_scores_at_the_asked_prompt() -> None:
    hw = _hw("rtx-4090")
    spec = find_model("llama-3.1-8b").spec()
    req = PlanRequest(runtime="transformers", ctx=8192)
    base = InferenceSettings(runtime="transformers", attn_implementation="eager")
    best = plan(spec, hw, req, base=base).plans[0]
    assert best.settings.attn_implementation == "sdpa"
    assert best.settings.ctx == 8192
    eager = get_estimator("transformers")(
        spec, dataclasses.replace(best.settings, attn_implementation="eager"), hw
    )
    # the move is worth what eager's fp32 S x S scores take at prefill
    assert eager.devices[0].activations_bytes > best.estimate.devices[0].activations_bytes
    assert Searcher(spec, "transformers", hw, req, base).evaluate(
        Candidate("bf16", "auto", 8192)
    ).fits is False  # fmt: skip


def test_no_sdpa_move_when_the_run_is_not_eager() -> None:
    hw = _hw("rtx-4090")
    res = plan("llama-3.1-8b", hw, PlanRequest(runtime="transformers", ctx=8192))
    assert all(p.settings.attn_implementation is None for p in res.plans)


def test_bitsandbytes_formats_on_a_small_gpu() -> None:
    hw = _hw("rtx-4060")
    req = PlanRequest(runtime="transformers", ctx=4096, no_offload=True)
    res = plan("llama-3.1-8b", hw, req)
    quants = [p.settings.quant for p in res.plans]
    assert "bf16" not in quants  # 15 GiB of weights on an 8 GiB card
    best = res.plans[0]
    assert best.settings.quant in ("int8", "nf4")
    cfg = "(load_in_8bit=True)" if best.settings.quant == "int8" else "(load_in_4bit=True, "
    assert f"quantization_config=BitsAndBytesConfig{cfg}" in best.command
    if best.settings.quant == "nf4":
        assert 'bnb_4bit_quant_type="nf4"' in best.command


def test_device_map_none_move_where_auto_offloads_what_fits_the_gpu() -> None:
    """accelerate's auto map keeps 10% of the GPU and the largest layer back: an nf4 8B on
    8 GiB offloads under device_map='auto' but runs whole with no device_map."""
    hw = _hw("rtx-4060")
    spec = find_model("llama-3.1-8b").spec()
    req = PlanRequest(runtime="transformers", ctx=4096)
    best = plan(spec, hw, req).plans[0]
    assert best.settings.device_map == "none"
    assert best.estimate.host.weights_bytes == 0
    assert best.level == LEVEL_GPU
    auto = Searcher(spec, "transformers", hw, req).evaluate(
        Candidate(best.settings.quant or "bf16", "auto", best.settings.ctx or 0)
    )
    assert auto.estimate.host.weights_bytes > 0  # what the move saves: the offload
    assert 'device_map={"": 0}' in best.command  # bitsandbytes: no .to("cuda")
    explicit = InferenceSettings(runtime="transformers", device_map="sequential")
    assert all(  # the user's own placement is kept
        p.settings.device_map == "sequential" for p in plan(spec, hw, req, base=explicit).plans
    )
    assert smaller_formats("bf16") == ("int8", "nf4")
    assert smaller_formats("fp16") == ("int8", "nf4")
    assert smaller_formats("fp32") == ("bf16", "int8", "nf4")
    assert smaller_formats("awq") == ()


def test_offload_under_max_memory_states_its_cost() -> None:
    hw = dataclasses.replace(_hw("rtx-4090"), host_ram_bytes=128 << 30)
    req = PlanRequest(runtime="transformers", ctx=2048)
    spec = find_model("llama-3.1-70b").spec()
    free = plan(spec, hw, req).plans[0]
    cap = InferenceSettings(runtime="transformers", max_memory_bytes=(16 << 30,))
    capped = plan(spec, hw, req, base=cap).plans[0]
    assert capped.level == LEVEL_LAYERS_CPU
    assert capped.estimate.host.weights_bytes > free.estimate.host.weights_bytes
    assert capped.estimate.devices[0].weights_bytes <= 16 << 30
    assert any("over PCIe" in c for c in capped.changes)
    assert "max_memory={i: 17179869184 for i in range(torch.cuda.device_count())}" in (
        capped.command
    )
    # the speed cost of the offload, in the plan's own decode estimate: more on the CPU, slower
    assert capped.speed is not None
    assert free.speed is not None
    assert capped.speed.decode_tokens_per_s is not None
    assert free.speed.decode_tokens_per_s is not None
    assert capped.speed.decode_tokens_per_s < free.speed.decode_tokens_per_s


def test_expandable_segments_note_where_the_allocator_decides() -> None:
    hw = _hw("rtx-4090")
    req = PlanRequest(runtime="transformers", ctx=3328, parallel=8)
    spec = find_model("llama-3.1-8b").spec()
    res = plan(spec, hw, req)
    s = Searcher(spec, "transformers", hw, req)
    asked = s.evaluate(Candidate("bf16", "auto", 3328))
    v = verdict(asked.estimate, s.platform)
    assert v.level == "tight"
    # the verdict's safe change is one the estimator prices (no generate() band with
    # expandable segments is measured); the planner names the variable as a note
    assert EXPANDABLE_SEGMENTS not in (v.safe_change or "")
    note = next(n for n in res.notes if EXPANDABLE_SEGMENTS in n)
    assert "3328-token prompt" in note
    assert "no band of generate() runs with it is measured" in note
    # Windows: PyTorch ignores expandable_segments (c10/cuda/CMakeLists.txt defines
    # PYTORCH_C10_DRIVER_API_SUPPORTED only if(NOT WIN32)): no note there
    win = plan(spec, dataclasses.replace(hw, os="windows"), req)
    assert not any(EXPANDABLE_SEGMENTS in n for n in win.notes)
    # and no such note where the asked run is not allocator-bound
    other = plan(spec, hw, PlanRequest(runtime="transformers", ctx=8192, parallel=1))
    assert not any(EXPANDABLE_SEGMENTS in n for n in other.notes)


@pytest.mark.parametrize(
    ("model", "gpu", "settings", "flag"),
    [
        ("llama-3.1-8b", "rtx-4080", {"quant": "bf16", "ctx": 512, "max_new_tokens": 64},
         "--quant"),
        ("qwen2.5-7b", "rtx-4080", {"quant": "bf16", "ctx": 256, "max_new_tokens": 64,
                                     "parallel": 8}, "--batch"),
    ],
)  # fmt: skip
def test_display_bound_tight_run_gets_a_computed_change(
    model: str, gpu: str, settings: dict[str, object], flag: str
) -> None:
    spec = find_model(model).spec()
    hw = _hw_nvml(gpu)
    s = InferenceSettings(runtime="transformers", **settings)  # type: ignore[arg-type]
    pf = _platform(hw)
    est = get_estimator("transformers")(spec, s, hw)
    v = verdict(est, pf)
    assert v.level == "tight"
    assert v.tightest is not None
    assert v.tightest.terms[0][0].startswith("desktop display")
    assert v.safe_change is None  # no prompt length frees the display's share
    change = transformers_safe_change(spec, s, hw, pf, est)
    assert change is not None
    assert change.startswith(flag + " ")
    value = change.split()[1]
    if flag == "--quant":
        applied = dataclasses.replace(s, quant=value)
    else:
        applied = dataclasses.replace(s, parallel=int(value))
    assert verdict(get_estimator("transformers")(spec, applied, hw), pf).level == "fits"
    if flag == "--batch":  # the largest batch that clears it: one more does not
        more = dataclasses.replace(s, parallel=int(value) + 1)
        assert verdict(get_estimator("transformers")(spec, more, hw), pf).level != "fits"
    assert "--headless" in change  # display unknown: leaving it out also clears the band
    headless = dataclasses.replace(pf, display=False)
    assert verdict(est, headless).level == "fits"


def test_estimate_cli_prints_the_safe_change_and_it_clears_the_band() -> None:
    args = ["llama-3.1-8b", "-r", "transformers", "--quant", "bf16", "--ctx", "512",
            "--max-new-tokens", "64", "--gpu", "rtx-4080", "--vram", "16376MiB"]  # fmt: skip
    run = [sys.executable, "-m", "oomkit", "estimate"]
    res = subprocess.run([*run, *args, "--json"], capture_output=True, text=True, check=False)
    assert res.returncode == 4  # tight
    doc = json.loads(res.stdout)
    change = doc["verdict_details"]["safe_change"]
    assert change.startswith("--quant int8 ")
    text = subprocess.run([*run, *args], capture_output=True, text=True, check=False).stdout
    assert "Safe margin: --quant int8 (bitsandbytes 8-bit;" in text
    applied = [*args[:4], "int8", *args[5:]]
    fixed = subprocess.run([*run, *applied, "--json"], capture_output=True, text=True, check=False)
    assert fixed.returncode == 0
    assert json.loads(fixed.stdout)["verdict"] == "fits"
    headless = subprocess.run([*run, *args, "--headless"], capture_output=True, check=False)
    assert headless.returncode == 0


def test_offloading_batch_becomes_a_smaller_batch_on_the_gpu() -> None:
    """accelerate's auto map is the same at any batch, so the batch lever runs without a
    device_map; the plan's batch is the one the estimate's safe change of the run names."""
    hw = _hw_nvml("rtx-4080")
    spec = find_model("qwen2.5-7b").spec()
    req = PlanRequest(runtime="transformers", ctx=256, parallel=8, quant="bf16")
    base = InferenceSettings(runtime="transformers", max_new_tokens=64)
    best = plan(spec, hw, req, base=base).plans[0]
    assert best.settings.device_map == "none"
    assert best.estimate.host.weights_bytes == 0
    assert best.settings.parallel is not None
    assert best.settings.parallel < 8
    asked = InferenceSettings(
        runtime="transformers", quant="bf16", ctx=256, parallel=8, max_new_tokens=64
    )
    est = get_estimator("transformers")(spec, asked, hw)
    change = transformers_safe_change(spec, asked, hw, _platform(hw), est)
    assert change is not None
    assert change.startswith(f"--batch {best.settings.parallel} ")


def test_rejected_lines_say_where_the_weights_sit_and_never_repeat() -> None:
    """A transformers run on device_map="auto" and its device_map=None move are two different
    candidates: each rejected line says which (the part accelerate put on the CPU, or every
    weight on the GPU), and no two lines of the "Does not fit" list read the same."""
    hw = _hw("rtx-3060")
    spec = find_model("llama-3.1-8b").spec()
    result = plan(spec, hw, PlanRequest(runtime="transformers", ctx=8192))
    lines = [(r.description, r.reason) for r in result.rejected]
    assert len(lines) == len(set(lines))
    texts = [d for d, _ in lines]
    assert any('of weights on CPU (device_map="auto")' in t for t in texts)
    assert any('all layers on GPU (device_map=None + .to("cuda"))' in t for t in texts)
    for r in result.rejected:
        if "of weights on CPU" in r.description:
            # the figure is the estimate's own host weights, printed in one module's format
            assert r.description.split(", ")[3].split(" of weights")[0].endswith(("MiB", "GiB"))

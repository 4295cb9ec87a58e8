"""Speed estimate: the mechanism on real measured records, and the laws it must obey."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from oomkit.catalog.models import find_model
from oomkit.estimate.llamacpp import estimate_llamacpp
from oomkit.estimate.vllm import estimate_vllm
from oomkit.hardware.catalog import find_gpu
from oomkit.planner.speed import (
    DEFAULT_HOST_BANDWIDTH_BYTES_PER_S,
    SpeedEstimate,
    backend_factors,
    estimate_speed,
)
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "tests" / "fixtures" / "throughput" / "records.jsonl"


def _bench() -> ModuleType:
    path = ROOT / "benchmarks" / "speed_accuracy.py"
    spec = importlib.util.spec_from_file_location("speed_accuracy", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["speed_accuracy"] = mod
    spec.loader.exec_module(mod)
    return mod


def _records() -> list[dict[str, object]]:
    return [json.loads(x) for x in RECORDS.read_text("utf-8").splitlines() if x.strip()]


def _hw(*keys: str) -> Hardware:
    return Hardware(devices=tuple(find_gpu(k).to_device_target() for k in keys))


def _speed(model: str, quant: str, hw: Hardware, fill: int = 256, **kw: object) -> SpeedEstimate:
    spec = find_model(model).spec()
    settings = InferenceSettings(quant=quant, ctx=4096, flash_attn=True, **kw)  # type: ignore[arg-type]
    est = estimate_llamacpp(spec, settings, hw)
    return estimate_speed(spec, est, hw, ctx_fill=fill, settings=settings)


# --- fixtures are real, sourced and split by thread


def test_records_have_sources_and_thread_split() -> None:
    # >= 25 public records; every one names its source, and the split is sha1(url) % 3
    recs = _records()
    assert len(recs) >= 25
    assert len({r["source"] for r in recs}) >= 10
    for r in recs:
        url = str(r["source"])
        assert url.startswith("https://github.com/")
        want = "heldout" if int(hashlib.sha1(url.encode()).hexdigest(), 16) % 3 == 0 else "dev"
        assert r["split"] == want, r["id"]
        assert float(r["tg_tokens_per_s"]) > 0  # type: ignore[arg-type]
        assert r["build"]
        assert r["runtime"] in ("llama.cpp", "ollama")
    assert {r["split"] for r in recs} == {"dev", "heldout"}


def test_stored_factors_are_the_dev_fit() -> None:
    # the shipped factors are exactly what fitting the dev records gives: nobody hand-tuned them
    bench = _bench()
    cases = [bench.build_case(r) for r in bench.load_records()]
    fitted = bench.fit(cases)["classes"]
    stored = json.loads((ROOT / "src/oomkit/data/speed_efficiency.json").read_text())["classes"]
    assert fitted == stored


def test_decode_median_error_on_real_records() -> None:
    # the mechanism (bytes over bandwidth x one factor per backend) lands within 25% median on
    # both halves; heldout records never saw the fit
    bench = _bench()
    cases = [bench.build_case(r) for r in bench.load_records()]
    _, summary = bench.evaluate(cases)
    assert summary["dev/tg"]["median"] <= 0.15
    assert summary["heldout/tg"]["median"] <= 0.25
    assert summary["dev/tg"]["n"] >= 25


def test_decode_reads_the_file_bytes_for_a_dense_model() -> None:
    # llama-3-8b Q4_K_M fully offloaded: the GPU reads every weight but the token embeddings
    # (a row lookup), i.e. the CUDA0 weight buffer
    hw = _hw("rtx-4090")
    spec = find_model("llama-3-8b").spec()
    s = InferenceSettings(quant="Q4_K_M", ctx=512, flash_attn=False)
    est = estimate_llamacpp(spec, s, hw)
    sp = estimate_speed(spec, est, hw, ctx_fill=0, settings=s)
    assert sp.host_bytes_per_token == 0
    assert sp.gpu_bytes_per_token == est.devices[0].weights_bytes
    assert sp.decode_tokens_per_s is not None
    assert "GB/token" in sp.basis
    assert "cuda efficiency" in sp.basis


# --- laws


def test_more_bandwidth_is_faster() -> None:
    # same model and quant: RTX 3090 (936 GB/s) < RTX 4090 (1008) < H100 SXM (3350)
    speeds = [
        _speed("llama-3.1-8b", "Q4_K_M", _hw(k)).decode_tokens_per_s
        for k in ("rtx-3090", "rtx-4090", "h100-sxm")
    ]
    assert speeds[0] is not None
    assert speeds[1] is not None
    assert speeds[2] is not None
    assert speeds[0] < speeds[1] < speeds[2]


def test_host_bandwidth_override_is_monotone() -> None:
    hw = _hw("rtx-4090")
    spec = find_model("llama-3.1-70b").spec()
    s = InferenceSettings(quant="Q4_K_M", ctx=4096, n_gpu_layers=40, flash_attn=True)
    est = estimate_llamacpp(spec, s, hw)
    slow = estimate_speed(spec, est, hw, settings=s, host_bandwidth_bytes_per_s=50 * 10**9)
    fast = estimate_speed(spec, est, hw, settings=s, host_bandwidth_bytes_per_s=200 * 10**9)
    assert slow.decode_tokens_per_s is not None
    assert fast.decode_tokens_per_s is not None
    assert slow.decode_tokens_per_s < fast.decode_tokens_per_s
    default = estimate_speed(spec, est, hw, settings=s)
    assert f"{DEFAULT_HOST_BANDWIDTH_BYTES_PER_S / 10**9:.1f} GB/s" in default.basis
    assert "DDR5-5600" in default.basis


def test_offloading_layers_to_host_is_slower() -> None:
    # every layer moved to host RAM moves its bytes from 1008 GB/s to ~90 GB/s
    hw = _hw("rtx-4090")
    rates = []
    for ngl in (33, 24, 16, 0):
        sp = _speed("llama-3.1-8b", "Q4_K_M", hw, n_gpu_layers=ngl)
        assert sp.decode_tokens_per_s is not None
        rates.append(sp.decode_tokens_per_s)
    assert rates == sorted(rates, reverse=True)
    assert len(set(rates)) == 4
    partial = _speed("llama-3.1-8b", "Q4_K_M", hw, n_gpu_layers=16)
    assert partial.host_bytes_per_token > 0
    assert partial.gpu_bytes_per_token > 0
    assert partial.prefill_tokens_per_s is None  # PCIe streaming is not modelled


def test_experts_on_cpu_are_slower_than_on_gpu() -> None:
    # --n-cpu-moe moves expert bytes (k/n of them read per token) to host RAM
    hw = _hw("rtx-4090")
    on_gpu = _speed("qwen3-30b-a3b", "Q4_K_M", hw)
    on_cpu = _speed("qwen3-30b-a3b", "Q4_K_M", hw, n_cpu_moe=24)
    assert on_cpu.host_bytes_per_token > 0
    assert on_gpu.decode_tokens_per_s is not None
    assert on_cpu.decode_tokens_per_s is not None
    assert on_cpu.decode_tokens_per_s < on_gpu.decode_tokens_per_s


def test_moe_is_faster_than_dense_of_the_same_total_size() -> None:
    # Qwen3-30B-A3B (30.5 B total, 3.3 B active) vs Qwen3-32B dense, same quant and card
    hw = _hw("h100-sxm")
    moe = _speed("qwen3-30b-a3b", "Q4_K_M", hw)
    dense = _speed("qwen3-32b", "Q4_K_M", hw)
    assert moe.decode_tokens_per_s is not None
    assert dense.decode_tokens_per_s is not None
    # the per-layer latency (48 layers vs 64) caps the gain below the 8x bytes ratio
    assert moe.decode_tokens_per_s > 2 * dense.decode_tokens_per_s
    assert moe.gpu_bytes_per_token * 4 < dense.gpu_bytes_per_token


def test_longer_fill_reads_more_kv_and_is_slower() -> None:
    hw = _hw("rtx-4090")
    short = _speed("llama-3.1-8b", "Q4_K_M", hw, fill=0)
    long = _speed("llama-3.1-8b", "Q4_K_M", hw, fill=4096)
    assert long.gpu_bytes_per_token > short.gpu_bytes_per_token
    assert short.decode_tokens_per_s is not None
    assert long.decode_tokens_per_s is not None
    assert long.decode_tokens_per_s < short.decode_tokens_per_s


def test_layer_split_adds_times_tensor_parallel_does_not() -> None:
    spec = find_model("llama-3.1-70b").spec()
    one, two = _hw("h100-sxm"), _hw("h100-sxm", "h100-sxm")
    s = InferenceSettings(quant="Q4_K_M", ctx=4096, flash_attn=True)
    l1 = estimate_speed(
        spec, estimate_llamacpp(spec, s, _hw("a100-80gb-sxm")), _hw("a100-80gb-sxm")
    )
    l2_hw = _hw("a100-80gb-sxm", "a100-80gb-sxm")
    l2 = estimate_speed(spec, estimate_llamacpp(spec, s, l2_hw), l2_hw)
    # llama.cpp layer split: the same bytes one device after another, so no faster
    assert l1.decode_tokens_per_s is not None
    assert l2.decode_tokens_per_s is not None
    assert l2.decode_tokens_per_s == pytest.approx(l1.decode_tokens_per_s, rel=0.05)
    v = InferenceSettings(runtime="vllm", quant="bf16", ctx=4096)
    v1 = estimate_speed(spec, estimate_vllm(spec, v, one), one)  # does not fit, still timed
    v2s = dataclasses.replace(v, tp=2)
    v2 = estimate_speed(spec, estimate_vllm(spec, v2s, two), two)
    # vLLM tensor parallel: shards read at once, about twice as fast
    assert v1.decode_tokens_per_s is not None
    assert v2.decode_tokens_per_s is not None
    assert v2.decode_tokens_per_s > 1.6 * v1.decode_tokens_per_s
    assert any("all-reduce" in n for n in v2.notes)


def test_unknown_gpu_gives_no_decode_and_says_why() -> None:
    hw = Hardware(devices=(DeviceTarget(name="Mystery Accelerator", capacity_bytes=80 * 2**30),))
    spec = find_model("llama-3.1-8b").spec()
    s = InferenceSettings(quant="Q4_K_M", ctx=4096)
    sp = estimate_speed(spec, estimate_llamacpp(spec, s, hw), hw)
    assert sp.decode_tokens_per_s is None
    assert "Mystery Accelerator" in sp.basis
    assert "bandwidth" in sp.basis
    assert sp.to_dict()["decode_tokens_per_s"] is None


def test_apple_unified_memory_and_no_tflops() -> None:
    hw = _hw("m2-ultra-192gb")
    sp = _speed("llama-3.1-8b", "Q4_K_M", hw, n_gpu_layers=16)
    # the CPU part reads the same unified memory at 800 GB/s
    assert "unified memory" in sp.basis
    assert "800 GB/s" in sp.basis
    full = _speed("llama-3.1-8b", "Q4_K_M", hw)
    assert full.prefill_tokens_per_s is None  # the catalog has no FP16 TFLOPS for Apple GPUs
    assert full.efficiency == backend_factors("metal").decode_efficiency


def test_cpu_only_uses_host_bandwidth() -> None:
    hw = Hardware(devices=())
    spec = find_model("llama-3.2-3b").spec()
    s = InferenceSettings(quant="Q4_K_M", ctx=4096)
    sp = estimate_speed(spec, estimate_llamacpp(spec, s, hw), hw, host_bandwidth_bytes_per_s=10**11)
    assert sp.gpu_bytes_per_token == 0
    assert sp.host_bytes_per_token > 0
    assert sp.decode_tokens_per_s is not None
    assert sp.efficiency is None
    assert sp.host_efficiency == backend_factors("cpu").decode_efficiency


def test_prefill_known_on_cuda_and_grows_with_tflops() -> None:
    a = _speed("llama-3.1-8b", "Q4_K_M", _hw("rtx-3090")).prefill_tokens_per_s
    b = _speed("llama-3.1-8b", "Q4_K_M", _hw("h100-sxm")).prefill_tokens_per_s
    assert a is not None
    assert b is not None
    assert b > a


def _any_speed(model: str, keys: tuple[str, ...], **kw: object) -> SpeedEstimate:
    from oomkit.api import estimate

    spec = find_model(model).spec()
    hw = _hw(*keys)
    settings = InferenceSettings(ctx=4096, **kw)  # type: ignore[arg-type]
    est = estimate(spec, settings, hw)
    return estimate_speed(spec, est, hw, ctx_fill=256, settings=settings)


def test_a_layer_split_computes_each_layer_once() -> None:
    # transformers device_map runs whole layers one GPU after another: two cards read the same
    # bytes and compute the same layers as one, so decode speed stays (it was counted twice)
    one = _any_speed("llama-3.1-8b", ("rtx-4090",), runtime="transformers")
    two = _any_speed("llama-3.1-8b", ("rtx-4090", "rtx-4090"), runtime="transformers")
    gpu_layers = [p.n_layers for p in two.parts if p.device != "cpu"]
    assert sum(gpu_layers) == 32
    assert all(n > 0 for n in gpu_layers)
    assert one.decode_tokens_per_s is not None
    assert two.decode_tokens_per_s is not None
    assert two.decode_tokens_per_s == pytest.approx(one.decode_tokens_per_s, rel=0.01)


def test_pipeline_stages_split_the_layers_and_tensor_parallel_does_not() -> None:
    pp = _any_speed("llama-3.1-8b", ("rtx-4090", "rtx-4090"), runtime="vllm", pp=2)
    tp = _any_speed("llama-3.1-8b", ("rtx-4090", "rtx-4090"), runtime="vllm", tp=2)
    one = _any_speed("llama-3.1-8b", ("rtx-4090",), runtime="vllm")
    assert [p.n_layers for p in pp.parts if p.device != "cpu"] == [16, 16]
    assert [p.n_layers for p in tp.parts if p.device != "cpu"] == [32, 32]
    assert pp.decode_tokens_per_s == pytest.approx(one.decode_tokens_per_s, rel=0.02)
    assert tp.decode_tokens_per_s > 1.4 * one.decode_tokens_per_s  # type: ignore[operator]

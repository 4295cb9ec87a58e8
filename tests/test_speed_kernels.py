"""transformers weight kernels the bandwidth model cannot rate: no tok/s figure, the reason."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

from oomkit.catalog.models import find_model
from oomkit.estimate.transformers import estimate_transformers
from oomkit.hardware.catalog import find_gpu
from oomkit.planner.speed import estimate_speed
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import QuantizationSpec
from oomkit.spec.settings import InferenceSettings

HW = Hardware(devices=(find_gpu("rtx-4090").to_device_target(),))


def _oomkit(*args: str) -> str:
    cmd = [sys.executable, "-m", "oomkit", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False).stdout


def _decode(quant: str | None, **spec_changes: object) -> tuple[float | None, str]:
    spec = dataclasses.replace(find_model("llama-3.1-8b").spec(), **spec_changes)  # type: ignore[arg-type]
    settings = InferenceSettings(quant=quant, ctx=2048)
    est = estimate_transformers(spec, settings, HW)
    sp = estimate_speed(spec, est, HW, settings=settings)
    return sp.decode_tokens_per_s, sp.basis


def test_bf16_keeps_its_bandwidth_figure() -> None:
    tps, basis = _decode("bf16")
    assert tps is not None
    assert tps > 0
    assert basis.startswith("Decode reads")


def test_bitsandbytes_int8_is_not_rated_faster_than_bf16() -> None:
    # LLM.int8() reads half the bytes of bf16 but measures slower (BLOOM-176B 286.6 vs
    # 230.4 ms/token): a bandwidth figure (about 1.5x bf16's) would contradict the source
    tps, basis = _decode("int8")
    assert tps is None
    assert "not modelled" in basis
    assert "LLM.int8()" in basis
    assert "230.4" in basis


def test_bitsandbytes_4bit_and_prequantized_checkpoints_are_not_modelled() -> None:
    for quant in ("nf4", "fp4"):
        tps, basis = _decode(quant)
        assert tps is None
        assert "bitsandbytes 4-bit" in basis
    for method in ("gptq", "awq"):
        q = QuantizationSpec(method=method, bits=4, group_size=128)
        tps, basis = _decode(None, quantization=q)
        assert tps is None
        assert method.upper() in basis


def test_plan_prints_the_reason_instead_of_a_speed() -> None:
    args = ["plan", "llama-3.1-8b", "-r", "transformers", "--gpu", "rtx-3060"]
    text = _oomkit(*args)
    lines = [x for x in text.splitlines() if x.startswith(("Plan", "Alternative"))]
    int8 = [x for x in lines if "weights int8" in x]
    assert int8, text
    for line in int8:
        assert "tok/s" not in line
        assert "(decode speed not modelled: int8: bitsandbytes LLM.int8() is not" in line
    data = json.loads(_oomkit(*args, "--json"))
    for p in data["plans"]:
        if "int8" in json.dumps(p["settings"]):
            assert p["speed"]["decode_tokens_per_s"] is None
            assert p["speed"]["basis"].startswith("Decode speed not modelled")


def test_llamacpp_q8_keeps_its_figure() -> None:
    # the limit is transformers' kernels: llama.cpp's Q8_0 GEMV is what the factors were fitted on
    from oomkit.estimate.llamacpp import estimate_llamacpp

    spec = find_model("llama-3.1-8b").spec()
    settings = InferenceSettings(quant="Q8_0", ctx=2048)
    est = estimate_llamacpp(spec, settings, HW)
    assert estimate_speed(spec, est, HW, settings=settings).decode_tokens_per_s is not None

"""``-ot`` rules that move only some routed-expert tensors of a layer to the CPU.

The real run: carteakey/lllms docs/bench-results.md at 827b960 (heldout26), gpt-oss-120b MXFP4
on an RTX 4070 12 GB, ``llama-bench -ngl 99 -ot ".ffn_(up|down)_exps=CPU" -fa 1 -mmp 0``: the
table says OOM, "mxfp4 matrices too wide for 12 GB VRAM". llama.cpp regex-searches each tensor
name, so the gate experts (a third of the expert bytes, ~20 GB over 36 layers) stay on the GPU;
``--n-cpu-moe 36`` (all three kinds) is the placement that loads.
"""

from __future__ import annotations

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.llamacpp_placement import moved_expert_kinds
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

UP_DOWN = ".ffn_(up|down)_exps=CPU"


def _run(**kw: object) -> Estimate:
    settings = InferenceSettings(
        runtime="llama.cpp",
        quant="MXFP4",
        ctx=640,
        runtime_version="2026-08-31",
        n_gpu_layers=99,
        flash_attn=True,
        mmap=False,
        batch_size=2048,
        ubatch=512,
        **kw,  # type: ignore[arg-type]
    )
    hw = hardware_for(parse_gpu_list("rtx-4070"), host_ram_bytes=64 * 10**9, n_devices=1)
    return estimate("gpt-oss-120b", settings, hw, offline=True)


def _gpu_model_bytes(est: Estimate) -> int:
    buffers = est.runtime_details["buffers"]
    assert isinstance(buffers, dict)
    model = buffers["model"]
    assert isinstance(model, dict)
    n = model.get("CUDA0", 0)
    assert isinstance(n, int)
    return n


def test_moved_kinds_follow_the_regex() -> None:
    assert moved_expert_kinds(None) == frozenset({"up", "down", "gate"})
    assert moved_expert_kinds((UP_DOWN,)) == frozenset({"up", "down"})
    assert moved_expert_kinds(("exps=CPU",)) == frozenset({"up", "down", "gate"})
    assert moved_expert_kinds((r"blk\.\d+\.ffn_gate_exps=CPU",)) == frozenset({"gate"})


def test_up_down_rule_keeps_the_gate_experts_on_the_gpu() -> None:
    all_cpu = _run(n_cpu_moe=36)
    up_down = _run(override_tensor=(UP_DOWN,))
    every = _run(override_tensor=("exps=CPU",))
    # the all-kinds rule is --n-cpu-moe 36
    assert _gpu_model_bytes(every) == _gpu_model_bytes(all_cpu)
    gate = _gpu_model_bytes(up_down) - _gpu_model_bytes(all_cpu)
    # 36 layers x 128 experts x 2880 x 2880 MXFP4 (17 bytes per 32 weights), plus biases
    assert gate >= 36 * 128 * 2880 * 2880 * 17 // 32
    assert verdict(up_down, Platform()).level == "does_not_fit"  # 12 GB card
    assert any("ffn_gate_exps stay" in a for a in up_down.assumptions)


def test_different_kinds_in_different_layers_are_refused() -> None:
    with pytest.raises(InvalidSettingError, match="different expert tensors"):
        _run(override_tensor=(r"blk\.0\.ffn_up_exps=CPU", r"blk\.1\.ffn_(up|down)_exps=CPU"))

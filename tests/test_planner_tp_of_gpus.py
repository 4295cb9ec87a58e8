"""The planner's vLLM/SGLang tensor-parallel size need not divide the GPUs named (review 22)."""

from __future__ import annotations

from oomkit.catalog.models import find_model
from oomkit.hardware.catalog import find_gpu
from oomkit.planner.core import plan_spec
from oomkit.planner.request import PlanRequest
from oomkit.spec.hardware import Hardware


def test_three_gpus_shard_over_two() -> None:
    """Review 22: a 70B on 3 x H100 planned on ONE GPU (fp8 weights, fp8 KV, utilization
    0.97, a sequence cap) because the planner's TP size had to divide the GPU count, though
    ``estimate`` lists "valid sizes on the 3 GPUs given: 1, 2" and vLLM runs
    ``--tensor-parallel-size 2`` on two of three GPUs (world size tp x pp)."""
    spec = find_model("llama-3.1-70b").spec()
    hw = Hardware(devices=tuple(find_gpu("h100-sxm").to_device_target() for _ in range(3)))
    result = plan_spec(spec, hw, PlanRequest(runtime="vllm", ctx=32768))
    top = result.plans[0]
    assert top.settings.tp == 2
    assert "--tensor-parallel-size 2" in top.command
    assert any(n.startswith("tensor parallel 2 of 3 GPUs") for n in result.notes)

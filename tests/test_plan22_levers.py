"""plan22: levers an expert reaches for that the planner lacked.

* a full fine-tune in pure bf16 (no fp32 master weights: torchtune's ``dtype=bf16`` default, the
  HF Trainer with a bf16-loaded model) before ZeRO-Offload and LoRA (review 21, finding 7).
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

_FULL_8B = ("plan", "llama-3.1-8b", "--train", "full", "--gpu", "a100-80gb-sxm", "--seq", "4096",
            "--offline")  # fmt: skip


@pytest.mark.parametrize("ram", [(), ("--ram", "64GiB")])
def test_full_8b_on_one_a100_runs_pure_bf16_before_offload_and_lora(
    capsys: pytest.CaptureFixture[str], ram: tuple[str, ...]
) -> None:
    """Llama-3.1-8B full s4096 on one A100 80GB: ZeRO-Offload (120 GiB of host RAM) first, and
    with --ram 64GiB LoRA; a bf16 run with checkpointing fits the GPU with no host RAM."""
    code, out, _ = run_cli(capsys, *_FULL_8B, *ram)
    assert code == 0
    plan = out.split("Alternative 1")[0]
    assert "no fp32 master weights (--no-master-weights)" in plan
    assert "rounds away" in plan  # the cost is stated
    assert "from_pretrained(..., dtype=torch.bfloat16)" in plan  # the Trainer's spelling
    assert "--no-master-weights" in plan.split("check: ")[1]
    assert "--offload-optimizer" not in plan
    assert "--train lora" not in plan
    code, doc, _ = run_cli(capsys, *_FULL_8B, *ram, "--json")
    first = json.loads(doc)["plans"][0]
    assert first["settings"]["master_weights"] is False


def test_pure_bf16_is_not_offered_where_the_engine_keeps_fp32_masters() -> None:
    """DeepSpeed ZeRO keeps fp32 master partitions whatever the model's dtype, FSDP under
    accelerate upcasts, fp16 has no loss scaling without masters, and LoRA's adapters are
    small: no pure-bf16 lever there."""
    from oomkit.planner.training import _pure_bf16, plan_levers
    from oomkit.spec.settings import TrainingSettings

    assert _pure_bf16 in plan_levers(TrainingSettings())
    assert _pure_bf16(TrainingSettings()) is not None
    for s in (TrainingSettings(zero=2, gpus=2), TrainingSettings(fsdp=True, gpus=2),
              TrainingSettings(mixed_precision="fp16"), TrainingSettings(method="lora"),
              TrainingSettings(master_weights=False)):  # fmt: skip
        assert _pure_bf16(s) is None, s
    levers = plan_levers(TrainingSettings())
    from oomkit.planner.training import _lora, _micro_batch, _offload

    assert levers.index(_micro_batch) < levers.index(_pure_bf16) < levers.index(_offload)
    assert levers.index(_offload) < levers.index(_lora)


_SGL_70B = ("plan", "llama-3.3-70b", "-r", "sglang", "--gpu", "h100-sxm", "--ctx", "32k",
            "--offline")  # fmt: skip


def test_sglang_raises_mem_fraction_static_within_its_own_activation_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama-3.3-70B on one H100 at --ctx 32k: at SGLang's default 0.835 the fp8 weights leave
    no pool ("Not enough memory. Please try to increase --mem-fraction-static."), so the planner
    answered AWQ only; the raise its error names keeps fp8 on the GPU, with at least the 5 GB
    SGLang's tuning guide asks for activations left outside the fraction."""
    code, out, _ = run_cli(capsys, *_SGL_70B)
    assert code == 0
    plan = out.split("Alternative 1")[0]
    assert "weights fp8" in plan
    assert "--mem-fraction-static 0.93 (default 0.835; raised" in plan
    assert "--mem-fraction-static 0.93" in plan.split("run:")[1]
    _, doc, _ = run_cli(capsys, *_SGL_70B, "--json")
    first = json.loads(doc)["plans"][0]
    assert first["settings"]["mem_fraction_static"] == 0.93


def test_sglang_raise_keeps_the_activation_floor_and_a_given_fraction() -> None:
    import oomkit
    from oomkit.catalog.models import find_model
    from oomkit.estimate.sglang import estimate_sglang
    from oomkit.planner.sglang_fraction import ACTIVATION_FLOOR, _available
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.settings import InferenceSettings
    from oomkit.units import GiB

    spec = find_model("llama-3.3-70b").spec()
    hw = Hardware(devices=(oomkit.find_gpu("h100-sxm").to_device_target(),))
    at = {f: estimate_sglang(spec, InferenceSettings(runtime="sglang", quant="fp8", ctx=27136,
                                                     cache_type_k="fp8", mem_fraction_static=f), hw)
          for f in (0.93, 0.94)}  # fmt: skip
    left = {f: _available(e) for f, e in at.items()}
    assert left[0.93] is not None
    assert left[0.93] >= ACTIVATION_FLOOR
    assert left[0.94] is not None
    assert left[0.94] < ACTIVATION_FLOOR
    assert left[0.93] < 6 * GiB


def test_sglang_given_fraction_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, *_SGL_70B, "--mem-fraction-static", "0.85")
    assert code == 0
    assert "raised" not in out
    assert "--mem-fraction-static 0.93" not in out


def _first(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    code, doc, _ = run_cli(capsys, *argv, "--offline", "--json")
    assert code == 0
    plan = json.loads(doc)["plans"][0]
    assert isinstance(plan, dict)
    return plan


def test_fp8_w8a8_keeps_a_typed_context_over_bf16_on_hopper(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama-3.3-70B on 2 x H100 at --ctx 128k: bf16 at 81152 with --max-num-seqs 1 ranked above
    fp8 at the full context; FP8 W8A8 is "effectively lossless across all model scales"
    (Kurtic et al., ACL 2025), so the typed context decides at that tier. bf16 still wins where
    both keep the context, and on an A100 (weight-only FP8 Marlin) nothing changes."""
    argv = ("plan", "llama-3.3-70b", "-r", "vllm", "--gpu", "2xh100-sxm", "--ctx", "128k")
    first = _first(capsys, *argv)
    assert first["settings"]["quant"] == "fp8"  # type: ignore[index]
    assert first["settings"]["ctx"] == 131072  # type: ignore[index]
    small = _first(
        capsys, "plan", "llama-3.1-8b", "-r", "vllm", "--gpu", "h100-sxm", "--ctx", "32k"
    )
    assert small["settings"]["quant"] == "bf16"  # type: ignore[index]
    untyped = _first(capsys, "plan", "llama-3.3-70b", "-r", "vllm", "--gpu", "2xh100-sxm")
    assert untyped["settings"]["quant"] == "bf16"  # type: ignore[index]


def test_fp8_tier_only_where_fp8_is_w8a8() -> None:
    from oomkit.planner.ranking import fp8_tier

    ladder = ("bf16", "fp8", "awq", "gptq")
    assert fp8_tier("vllm", ladder, [(9, 0), (9, 0)]) == {"fp8": 0}
    assert fp8_tier("sglang", ladder, [(8, 9)]) == {"fp8": 0}
    assert fp8_tier("vllm", ladder, [(9, 0), (8, 0)]) == {}  # an A100 runs FP8 Marlin W8A16
    assert fp8_tier("vllm", ladder, [None]) == {}
    assert fp8_tier("llama.cpp", ("Q8_0", "Q6_K"), [(9, 0)]) == {}


def test_fixed_ngl_takes_the_kv_cache_the_searched_offload_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """-ngl N at the split the searched offload picks gives the same KV cache type: the fixed
    path tries f16, q8_0, q4_0 at the asked context in that order at its one split, which is
    plan21's rule (q8_0 only where f16 does not fit the same split)."""
    base = ("plan", "llama-3.1-8b", "--gpu", "rtx-4060", "--ctx", "128k")
    searched = _first(capsys, *base)
    ngl = searched["settings"]["n_gpu_layers"]  # type: ignore[index]
    assert isinstance(ngl, int)
    fixed = _first(capsys, *base, "-ngl", str(ngl))
    assert fixed["settings"]["n_gpu_layers"] == ngl  # type: ignore[index]
    for key in ("cache_type_k", "cache_type_v", "ctx", "quant"):
        assert fixed["settings"][key] == searched["settings"][key], key  # type: ignore[index]

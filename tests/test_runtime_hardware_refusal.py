"""vLLM on a GPU it has no kernels for, and vLLM/SGLang on an Apple GPU: ``estimate`` refused
the Apple case, but ``plan``, ``models --fits`` and ``gpus --for`` answered with a ``vllm
serve`` command and rows for it; a Pascal card (P40, compute capability 6.1) was answered
"fits" everywhere. vLLM's installation docs of every release: "GPU: compute capability 7.0 or
higher (e.g., V100, T4, RTX20xx, A100, L4, H100, etc.)" — its wheels carry no sm_60/sm_61
kernels, so `vllm serve` stops with "no kernel image is available for execution on the
device". One rule, :func:`oomkit.estimate.checks.runtime_hardware_refusal`, answers all four."""

from __future__ import annotations

import pytest

from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.errors import InvalidSettingError
from oomkit.estimate.checks import runtime_hardware_refusal, vllm_kernel_caveat
from oomkit.hardware.catalog import find_gpu
from oomkit.planner.core import plan_spec
from oomkit.planner.request import PlanRequest
from oomkit.planner.reverse import fits_report, gpus_for
from oomkit.spec.hardware import Hardware


def _hw(key: str) -> Hardware:
    return Hardware(devices=(find_gpu(key).to_device_target(),))


def test_the_rule() -> None:
    # a Pascal card is caveated, not refused: vLLM runs there from a source build or a fork
    # (vllm#6567: 0.5.1 on two Tesla P40s; verdict runs heldout16/17 on P100s and a P40)
    assert runtime_hardware_refusal(_hw("p40"), "vllm") is None
    assert "compute capability 6.1" in (vllm_kernel_caveat(_hw("p40"), "vllm") or "")
    assert vllm_kernel_caveat(_hw("p40"), "llama.cpp") is None
    assert vllm_kernel_caveat(_hw("t4"), "vllm") is None  # 7.5
    assert vllm_kernel_caveat(_hw("v100-32gb-pcie"), "vllm") is None  # 7.0
    assert "Apple" in (runtime_hardware_refusal(_hw("m2-16gb"), "sglang") or "")


@pytest.mark.parametrize(
    ("gpu", "runtime", "says"),
    [
        ("m2-16gb", "vllm", "no Metal backend"),
        ("m2-16gb", "sglang", "no Metal backend"),
    ],
)
def test_plan_refuses_as_estimate_does(
    gpu: str, runtime: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for verb in ("estimate", "plan"):
        rc = main([verb, "llama-3.1-8b", "-r", runtime, "--gpu", gpu, "--ctx", "8k"])
        err = capsys.readouterr().err
        assert rc == 2, (verb, err)
        errors = [ln for ln in err.splitlines() if ln.startswith("Error:")]
        assert len(errors) == 1, (verb, err)
        assert says in errors[0], (verb, err)
        assert "Traceback" not in err


def test_plan_any_leaves_vllm_out_on_a_p40() -> None:
    spec = find_model("llama-3.1-8b").spec()
    result = plan_spec(spec, _hw("p40"), PlanRequest(runtime="any", ctx=8192))
    assert result.plans
    assert all(p.runtime != "vllm" for p in result.plans)
    assert any(n.startswith("vllm left out: vLLM's release wheels need") for n in result.notes)


def test_an_explicit_vllm_run_on_a_pascal_card_is_estimated_with_the_caveat(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for verb in ("estimate", "plan"):
        rc = main([verb, "qwen2.5-7b", "-r", "vllm", "--gpu", "2xp100-16gb-pcie", "--ctx", "4k"])
        out = capsys.readouterr().out
        assert rc in (0, 3, 4), (verb, out)  # a verdict: fits, does not fit or tight
        assert "need compute capability 7.0 or higher" in out, (verb, out)
        assert "source build" in out


def test_models_fits_and_gpus_for() -> None:
    with pytest.raises(InvalidSettingError, match=r"compute capability 6\.1"):
        fits_report(_hw("p40"), runtime="vllm", query="llama-3.1-8b")
    rows = gpus_for("llama-3.1-8b", runtime="vllm", ctx=8192, offline=True)
    keys = {f.gpu_key for f in rows}
    assert "p40" not in keys
    assert "p100-16gb-pcie" not in keys
    assert "t4" in keys  # the refusal is the capability, not the age

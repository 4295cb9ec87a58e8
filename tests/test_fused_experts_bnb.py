"""bitsandbytes through transformers >= 5 leaves fused MoE experts unquantized.

transformers 5.0.0 stores MoE experts as 3-D ``nn.Parameter`` s (``MixtralExperts.gate_up_proj``)
and ``replace_with_bnb_linear`` swaps ``nn.Linear`` only (bitsandbytes-foundation/bitsandbytes
#1849): ``load_in_4bit`` quantizes attention and dense layers, the experts stay in bf16. Before
v5 each expert was an ``nn.Linear`` and was quantized.
"""

from __future__ import annotations

from oomkit.api import load_model
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.training import estimate_training
from oomkit.estimate.transformers import estimate_transformers
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings, TrainingSettings
from oomkit.units import GiB

HW = Hardware(devices=(DeviceTarget(name="big", capacity_bytes=4096 * GiB),))


def _weights(model: str, version: str | None) -> int:
    s = InferenceSettings(runtime="transformers", quant="nf4", runtime_version=version)
    return estimate_transformers(load_model(model, offline=True), s, HW).devices[0].weights_bytes


def test_transformers_v5_keeps_fused_experts_unquantized() -> None:
    spec = load_model("mixtral-8x7b", offline=True)
    v4, v5 = _weights("mixtral-8x7b", "4.57.0"), _weights("mixtral-8x7b", None)
    moe = spec.moe
    assert moe is not None
    # three [E, out, in] expert tensors per layer, bf16 instead of ~0.53 bytes per weight
    expert_params = 3 * moe.num_experts * spec.hidden_size * moe.expert_intermediate_size
    expert_params *= spec.num_hidden_layers
    assert v5 - v4 > expert_params * 1.4
    assert v5 > 80 * GiB > 30 * GiB > v4
    est = estimate_transformers(spec, InferenceSettings(runtime="transformers", quant="nf4"), HW)
    assert any("bitsandbytes#1849" in n for n in est.assumptions)
    # a dense model is the same on both sides
    assert _weights("llama-3.1-8b", "4.57.0") == _weights("llama-3.1-8b", None)


def test_qlora_of_an_moe_keeps_its_experts_in_bf16() -> None:
    """The FakeTensor probe (transformers 5) and the formula agree: Mixtral QLoRA needs ~87 GiB,
    not the ~24 GiB an NF4 expert count would give."""
    s = TrainingSettings(method="qlora", micro_batch=1, seq=2048, grad_checkpointing="full")
    mixtral = estimate_training(load_model("mixtral-8x7b", offline=True), s, Hardware())
    peak = mixtral.runtime_details["peak_allocated_bytes"]
    assert isinstance(peak, int)
    assert 80 * GiB < peak < 95 * GiB
    dense = estimate_training(load_model("llama-3.1-8b", offline=True), s, Hardware())
    dense_peak = dense.runtime_details["peak_allocated_bytes"]
    assert isinstance(dense_peak, int)
    assert dense_peak < 12 * GiB


def _frozen(est: Estimate) -> tuple[int, str]:
    comps = [c for d in est.devices for c in d.components if c.label == "frozen base weights"]
    assert len(comps) == 1
    return int(comps[0].n_bytes), str(comps[0].formula)


def test_qlora_of_an_moe_on_transformers_4_quantizes_the_experts() -> None:
    """``fused_experts_unquantized=False`` (transformers 4.x): the experts' weights are NF4 like
    every other linear layer, so the frozen base is what inference on 4.57 loads."""
    spec = load_model("mixtral-8x7b", offline=True)
    v5 = estimate_training(spec, TrainingSettings(method="qlora"), Hardware())
    v4 = estimate_training(
        spec, TrainingSettings(method="qlora", fused_experts_unquantized=False), Hardware()
    )
    (f4, why4), (f5, why5) = _frozen(v4), _frozen(v5)
    assert abs(f4 - _weights("mixtral-8x7b", "4.57.0")) < 1e-6 * f4
    assert f5 - f4 > 60 * GiB
    assert "transformers 4.x" in why4
    assert "transformers 5+" in why5


def test_transformers_version_option() -> None:
    import json
    import subprocess
    import sys

    argv = [sys.executable, "-m", "oomkit", "estimate", "mixtral-8x7b", "--train", "qlora"]

    def weights(*extra: str) -> int:
        out = subprocess.run(
            [*argv, "--vram", "80GiB", "--json", *extra], capture_output=True, text=True
        )
        assert out.returncode in (0, 3, 4), out.stderr
        return int(json.loads(out.stdout)["devices"][0]["weights_bytes"])

    old, new = weights("--transformers-version", "4.57"), weights()
    assert new == weights("--transformers-version", "5.0.0")
    assert new - old > 60 * GiB
    bad = subprocess.run(
        [*argv, "--transformers-version", "banana"], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "Error: --transformers-version must be a transformers release such as 4.57 or 5.2 (or "
        "a date such as 2025-06), got 'banana'"
    ]

"""SGLang's start-up "Not enough memory" with a model whose weights exceed what any
--mem-fraction-static can hold (Llama-3.1-70B in bf16, 131 GiB, on one 80 GB A100): the fixes
shrink the weights per GPU (AWQ, --tp 2), each sized by the SGLang estimate; the doctor's only
sized fix was "--chunked-prefill-size 4096" and the generic one "raise --mem-fraction-static",
neither of which can load a model larger than the card."""

from __future__ import annotations

from oomkit.api import load_model
from oomkit.diagnose.doctor import diagnose_text
from oomkit.estimate.sglang import estimate_sglang
from oomkit.hardware.catalog import find_gpu
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings

MSG = (
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static=0.88"
)


def test_weights_larger_than_any_fraction_get_weight_fixes() -> None:
    spec = load_model("llama-3.1-70b")
    gpu = find_gpu("a100-80gb").to_device_target()
    d = diagnose_text(
        MSG,
        model=spec,
        hardware=Hardware(devices=(gpu,)),
        settings=InferenceSettings(runtime="sglang"),
        runtime="sglang",
    )
    titles = [f.title for f in d.fixes]
    assert not any("chunked-prefill" in t or "mem-fraction-static" in t for t in titles), titles
    tp = next(f for f in d.fixes if "--tp 2" in f.title)
    one = estimate_sglang(spec, InferenceSettings(runtime="sglang", mem_fraction_static=0.88),
                          Hardware(devices=(gpu,)))  # fmt: skip
    two = estimate_sglang(
        spec,
        InferenceSettings(runtime="sglang", mem_fraction_static=0.88, tp=2),
        Hardware(devices=(gpu, gpu)),
    )
    assert one.fits is False
    assert two.fits is True
    assert tp.expected_saving_bytes == one.devices[0].weights_bytes - two.devices[0].weights_bytes
    assert tp.hardware  # one GPU given: a second one is a hardware change, ranked last
    assert d.fixes[-1] is tp
    awq = next(f for f in d.fixes if "--quantization awq" in f.title)
    assert awq.fits is True
    assert d.fixes.index(awq) < d.fixes.index(tp)


def test_a_model_that_fits_keeps_the_fraction_fixes() -> None:
    gpu = find_gpu("a100-80gb").to_device_target()
    d = diagnose_text(
        MSG,
        model=load_model("llama-3.1-8b"),
        hardware=Hardware(devices=(gpu,)),
        settings=InferenceSettings(runtime="sglang"),
        runtime="sglang",
    )
    assert not any("--tp" in f.title or "Quantize the weights" in f.title for f in d.fixes)
    assert any("chunked-prefill" in f.title for f in d.fixes)

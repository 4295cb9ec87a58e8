"""vLLM "No available memory for the cache blocks" with --model llama-3.1-70b on one A100-80GB:
no single change fits (fp8 weights leave a 4.8 GiB pool for a 40 GiB request), so the doctor
offers the pair that does — fp8 weights with the longest --max-model-len that pool holds —
sized by the vLLM estimate, first among the fixes."""

from __future__ import annotations

from oomkit.api import load_model
from oomkit.diagnose.doctor import diagnose_text
from oomkit.estimate.vllm import plan_vllm
from oomkit.hardware.catalog import find_gpu
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings

MSG = (
    "ValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine."
)


def test_no_single_fix_fits_so_a_pair_is_offered() -> None:
    spec = load_model("llama-3.1-70b")
    gpu = find_gpu("a100-80gb").to_device_target()
    d = diagnose_text(
        MSG,
        model=spec,
        hardware=Hardware(devices=(gpu,)),
        settings=InferenceSettings(runtime="vllm"),
        runtime="vllm",
    )
    top = d.fixes[0]
    assert top.title.startswith("Use fp8 weights and a shorter context: --quantization fp8 ")
    assert top.fits is True
    n = int(top.title.rsplit(" ", 1)[1])
    # the longest --max-model-len vLLM's own check admits with fp8 weights on this card
    fp8 = plan_vllm(spec, InferenceSettings(runtime="vllm", quant="fp8", ctx=n + 4096), gpu)
    assert fp8.max_model_len_that_fits == n
    singles = [f for f in d.fixes[1:] if f.expected_saving_bytes is not None and not f.hardware]
    assert singles
    assert not any(f.fits for f in singles)


def test_a_single_fix_that_fits_gets_no_pair() -> None:
    gpu = find_gpu("l4").to_device_target()
    d = diagnose_text(
        MSG,
        model=load_model("llama-3.1-8b"),
        hardware=Hardware(devices=(gpu,)),
        settings=InferenceSettings(runtime="vllm", ctx=65536),
        runtime="vllm",
    )
    assert not any(f.title.startswith("Use fp8") for f in d.fixes)

"""vLLM online FP8 (``--quantization fp8`` on a bf16 checkpoint) up to 0.14: the load peak.

vllm-project/vllm PR #29196 (first released in v0.13.0) made online FP8 quantization
"streaming": each layer's ``process_weights_after_loading`` runs as soon as its weights are
loaded. PR #31914 (vkuzo, merged 2026-01-07) explains why that did not lower the peak: "the
linear|moe weights were created in bf16 and references to them were held for the entire
``load_weights`` loop in model loaders", so every layer's bf16 weight stays alive beside the FP8
copy made from it, until the loop ends; PR #32773 ("fix online fp8 quantization oom", 2026-01-21)
measured "increased peak memory usage (even exceeding the memory required by BF16)" and names
"vllm 0.13.0 and 0.14.0" as affected. Before (0.12 and older), all weights were loaded in bf16
and quantized module by module afterwards (``process_weights_after_loading`` replaces each
weight as it goes): the peak is the bf16 model, which the steady-state FP8 estimate does not see.
That is the loader's shape since online FP8 came (vLLM 0.4.x, PR #4118): ``load_model`` runs
``initialize_model`` (parameters created in the checkpoint dtype: ``Fp8LinearMethod.create_weights``
makes bf16 weights when the checkpoint is not FP8-serialized), then ``self.load_weights(model)``
over the whole checkpoint, then ``process_weights_after_loading(model, ...)`` (0.6.x
``model_loader/loader.py`` ``DefaultModelLoader.load_model``: the loop over ``named_modules``;
0.10-0.12 ``model_loader/base_loader.py`` ``BaseModelLoader.load_model``), and vLLM's FP8 page
says so: "Currently, we load the model at original precision before quantizing down to 8-bits, so
you need enough memory to load the whole model" (docs/features/quantization/fp8.md).

Per rank the 0.13-0.14 peak is the FP8 weights plus the bf16 copies of every quantized weight:
``weights + 2 x (bf16 - fp8 bytes of the model) x (the rank's share of the weights)``
(vllm-project/vllm#31273: Qwen2.5-72B-Instruct with ``--quantization fp8`` on a 141 GB H20
loads on 0.12.0 and dies loading the weights on 0.13.0).

Per rank the peak up to 0.12 is the rank's share of the bf16 model:
``weights + (bf16 - fp8 bytes of the model) x (the rank's share of the weights)``.

The detail is made only for a model whose checkpoint is not quantized (``spec.quantization`` is
None: the named checkpoint is bf16, so ``--quantization fp8`` quantizes it online); a peak over a
GPU makes the verdict "tight" (records name the base model for FP8 checkpoints too), and its fix
never names a release that loads the bf16 weights whole (0.12 and older) or beside their FP8
copies (0.13-0.14).
Only releases named as numbers are modelled; a date, no version and 0.15+ are not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from oomkit.errors import InvalidSettingError, UnknownNameError
from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.estimate.generations import parse_runtime_version
from oomkit.quant.hf_formats import hf_format, hf_weights_bytes
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import model_tensors

__all__ = [
    "AFFECTED",
    "estimate_vllm_server",
    "online_fp8_load_detail",
    "streams_online_fp8",
]

#: [first, first after) releases of PR #29196's streaming online FP8 without PR #31914's fix
AFFECTED: tuple[tuple[int, ...], tuple[int, ...]] = ((0, 13, 0), (0, 15, 0))
#: [first, first after) releases that load the whole bf16 model, then quantize it
BF16_FIRST: tuple[tuple[int, ...], tuple[int, ...]] = ((0, 0, 0), AFFECTED[0])
#: the first release that quantizes each layer as it loads, freeing its bf16 weight (PR #32773)
FIXED_IN = ".".join(str(n) for n in AFFECTED[1][:2])


def _release(version: str | None) -> tuple[int, ...] | None:
    if not version or not version.strip():
        return None
    try:
        when = parse_runtime_version("vllm", version)
    except InvalidSettingError:
        return None
    return when if isinstance(when, tuple) else None


def streams_online_fp8(version: str | None) -> bool:
    """``version`` names a vLLM release in :data:`AFFECTED` (a date is not enough)."""
    when = _release(version)
    return when is not None and AFFECTED[0] <= when < AFFECTED[1]


def loads_bf16_first(version: str | None) -> bool:
    """``version`` names a vLLM release in :data:`BF16_FIRST` (0.12 and older)."""
    when = _release(version)
    return when is not None and BF16_FIRST[0] <= when < BF16_FIRST[1]


def online_fp8_load_detail(
    spec: ModelSpec, settings: InferenceSettings, usages: Sequence[DeviceUsage]
) -> dict[str, dict[str, int]]:
    """``{"online_fp8_load_peak_bytes": {device: bytes}}`` for a release up to 0.14, an FP8
    ``quant`` and a checkpoint that is not already quantized; empty otherwise."""
    version = settings.runtime_version
    if spec.quantization is not None:
        return {}
    if streams_online_fp8(version):
        copies = 2  # the FP8 weights, plus every bf16 weight they were made from
    elif loads_bf16_first(version):
        copies = 1  # the bf16 model itself: FP8 weights + what quantizing them saves
    else:
        return {}
    try:
        if not settings.quant or hf_format(settings.quant).method != "fp8":
            return {}
    except UnknownNameError:
        return {}
    tensors = model_tensors(spec)
    saved = hf_weights_bytes("bf16", tensors) - hf_weights_bytes(settings.quant, tensors)
    total = sum(u.weights_bytes for u in usages)
    if saved <= 0 or total <= 0:
        return {}
    return {
        "online_fp8_load_peak_bytes": {
            u.device: u.weights_bytes + copies * saved * u.weights_bytes // total for u in usages
        }
    }


def estimate_vllm_server(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware
) -> Estimate:
    """:func:`oomkit.estimate.vllm.estimate_vllm` plus the online-FP8 load peak up to 0.14."""
    from oomkit.estimate.vllm import estimate_vllm

    est = estimate_vllm(spec, settings, hardware)
    extra = online_fp8_load_detail(spec, settings, est.devices)
    if not extra:
        return est
    # not a blocker: the records name the base model for FP8 checkpoints too (verdict tally:
    # 7 false "does not fit" with one), so the verdict makes a peak over the GPU "tight"
    return dataclasses.replace(est, runtime_details={**est.runtime_details, **extra})


def online_fp8_blocker(version: str | None, device: str, peak: int, capacity: int) -> str:
    """The one line that says why the load dies, and the change that avoids it."""
    from oomkit.units import format_bytes

    how = (
        "keeps every bf16 weight beside its FP8 copy until the load loop ends (PR #29196; "
        "PR #31914, PR #32773)"
        if streams_online_fp8(version)
        else "loads the whole bf16 model before quantizing it (docs: 'you need enough memory "
        "to load the whole model')"
    )
    return (
        f"vLLM {version} with --quantization fp8 on this bf16 checkpoint {how}: {device} needs "
        f"{format_bytes(peak)} while loading, has {format_bytes(capacity)}; use a pre-quantized "
        f"FP8 checkpoint, more GPUs (--tensor-parallel-size), or vLLM {FIXED_IN} or newer "
        "(quantizes each layer as it loads)"
    )

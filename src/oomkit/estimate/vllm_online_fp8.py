"""vLLM 0.13-0.14 online FP8 (``--quantization fp8`` on a bf16 checkpoint): the load peak.

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

Per rank the 0.13-0.14 peak is the FP8 weights plus the bf16 copies of every quantized weight:
``weights + 2 x (bf16 - fp8 bytes of the model) x (the rank's share of the weights)``
(vllm-project/vllm#31273: Qwen2.5-72B-Instruct with ``--quantization fp8`` on a 141 GB H20
loads on 0.12.0 and dies loading the weights on 0.13.0).

Whether the user's checkpoint is bf16 (online quantization) or already FP8 is not in the
settings (``quant="fp8"`` names both), so the peak is reported as a detail and the verdict calls
a run that exceeds the GPU with it "tight", never "does not fit"
(:func:`oomkit.estimate.verdict_runtime.online_fp8_load_over`). Only releases named as
0.13.x/0.14.x are affected; dates and later releases are not modelled.
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


def streams_online_fp8(version: str | None) -> bool:
    """``version`` names a vLLM release in :data:`AFFECTED` (a date is not enough)."""
    if not version or not version.strip():
        return False
    try:
        when = parse_runtime_version("vllm", version)
    except InvalidSettingError:
        return False
    return isinstance(when, tuple) and AFFECTED[0] <= when < AFFECTED[1]


def online_fp8_load_detail(
    spec: ModelSpec, settings: InferenceSettings, usages: Sequence[DeviceUsage]
) -> dict[str, dict[str, int]]:
    """``{"online_fp8_load_peak_bytes": {device: bytes}}`` for an affected release, an FP8
    ``quant`` and a checkpoint that is not already quantized; empty otherwise."""
    if spec.quantization is not None or not streams_online_fp8(settings.runtime_version):
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
            u.device: u.weights_bytes + 2 * saved * u.weights_bytes // total for u in usages
        }
    }


def estimate_vllm_server(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware
) -> Estimate:
    """:func:`oomkit.estimate.vllm.estimate_vllm` plus the 0.13-0.14 online-FP8 load peak."""
    from oomkit.estimate.vllm import estimate_vllm

    est = estimate_vllm(spec, settings, hardware)
    extra = online_fp8_load_detail(spec, settings, est.devices)
    if not extra:
        return est
    return dataclasses.replace(est, runtime_details={**est.runtime_details, **extra})

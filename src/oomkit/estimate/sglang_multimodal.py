"""SGLang's multimodal path per release: which architectures take it, whether chunked prefill
stays on, the ``mem_fraction_static`` factor and where the vision tower sits
(:func:`multimodal_policy`; the generation rows in ``generation_rows_sglang`` date each change).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from oomkit.spec.model import ModelSpec

__all__ = ["MULTIMODAL_ARCHS", "MultimodalPolicy", "multimodal_policy", "sglang_effects"]


#: ``multimodal_model_archs`` (python/sglang/srt/configs/model_config.py, v0.5.3): a model
#: whose architecture is listed takes the multimodal path unless it runs text-only by default
MULTIMODAL_ARCHS = frozenset(
    {
        "CLIPModel",
        "DeepseekVL2ForCausalLM",
        "Gemma3ForConditionalGeneration",
        "Gemma3nForConditionalGeneration",
        "Glm4vForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration",
        "Grok1VForCausalLM",
        "Grok1AForCausalLM",
        "LlavaLlamaForCausalLM",
        "Llama4ForConditionalGeneration",
        "LlavaMistralForCausalLM",
        "LlavaQwenForCausalLM",
        "LlavaForConditionalGeneration",
        "LlavaVidForCausalLM",
        "MiniCPMO",
        "MiniCPMV",
        "Mistral3ForConditionalGeneration",
        "MultiModalityCausalLM",
        "MllamaForConditionalGeneration",
        "Qwen2AudioForConditionalGeneration",
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "KimiVLForConditionalGeneration",
        "InternVLChatModel",
        "InternS1ForConditionalGeneration",
        "Phi4MMForCausalLM",
        "VILAForConditionalGeneration",
        "Step3VLForConditionalGeneration",
        "DotsVLMForCausalLM",
        "DotsOCRForCausalLM",
        "Sarashina2VisionForCausalLM",
    }
)
#: v0.4.1-v0.4.4 ``model_specific_adjustment``: the VLMs whose chunked prefill is turned off
_CHUNKED_OFF_LISTED = frozenset(
    {
        "MllamaForConditionalGeneration",
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "DeepseekVL2ForCausalLM",
    }
)
#: v0.4.6.post5+ ``is_multimodal_chunked_prefill_supported``: the unsupported list
_CHUNKED_UNSUPPORTED = frozenset(
    {
        "Grok1VForCausalLM",
        "Grok1AForCausalLM",
        "LlavaLlamaForCausalLM",
        "MllamaForConditionalGeneration",
        "CLIPModel",
    }
)
#: how today's SGLang builds vision towers of text-only-by-default models it still loads:
#: Gemma 3's SiglipVisionModel with TP layers (models/gemma3_mm.py, models/siglip.py); Llama 4's
#: only with --enable-multimodal (models/mllama4.py ``has_vision``, from v0.4.10)
_VISION_TODAY = "Gemma3ForConditionalGeneration:sharded"
#: today's ``mm_disabled_models`` (v0.5.3 configs/model_config.py): text-only by default
_TEXT_ONLY_TODAY = (
    "Gemma3ForConditionalGeneration,Llama4ForConditionalGeneration,Step3VLForConditionalGeneration"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MultimodalPolicy:
    """How a generation of SGLang serves a model (see the module docstring)."""

    multimodal: bool  # takes the multimodal path (listed and not text-only by default)
    fraction_factor: float  # mem_fraction_static multiplier (1.0: none modelled)
    default_only: bool  # the factor lowers only the default fraction
    chunked_prefill: bool | None  # False: off; None: not modelled (no prefill check)
    #: how the vision tower is built on each rank: "replicated" (a transformers module, whole
    #: on every rank), "sharded" (SGLang's TP layers), None (not built or not modelled)
    vision: str | None = None


def sglang_effects(version: str | None) -> Mapping[str, object]:
    """The generation's effects (the newest row's when no version: no dated table built)."""
    if version is None or not version.strip():
        from oomkit.estimate.generation_table import ROWS

        return ROWS["sglang"][-1][7]
    from oomkit.estimate.generations import resolve_generation

    return resolve_generation("sglang", version).effects


def multimodal_policy(spec: ModelSpec, runtime_version: str | None = None) -> MultimodalPolicy:
    """Whether SGLang at ``runtime_version`` serves ``spec`` as multimodal, and what follows.

    >>> from oomkit.catalog.models import find_model
    >>> gemma = find_model("gemma-3-4b").spec()
    >>> multimodal_policy(gemma, "0.4.4").fraction_factor, multimodal_policy(gemma).multimodal
    (0.95, False)
    """
    eff = sglang_effects(runtime_version)
    text_only = str(eff.get("mm_text_only", _TEXT_ONLY_TODAY)).split(",")
    arch = spec.architecture
    mm = arch in MULTIMODAL_ARCHS and arch not in text_only
    factor = eff.get("mm_fraction", 1.0)
    off = str(eff.get("mm_chunked_off", "unsupported"))
    chunked: bool | None
    if off == "not_modelled":
        chunked = None
    elif off == "all":
        chunked = not mm
    elif off == "listed":
        chunked = not (mm and arch in _CHUNKED_OFF_LISTED)
    else:
        chunked = not (mm and arch in _CHUNKED_UNSUPPORTED)
    towers = dict(
        item.split(":", 1)
        for item in str(eff.get("vision", _VISION_TODAY)).split(",")
        if ":" in item
    )
    return MultimodalPolicy(
        multimodal=mm,
        fraction_factor=float(factor) if mm and isinstance(factor, (int, float)) else 1.0,
        default_only=bool(eff.get("mm_fraction_default_only", False)),
        chunked_prefill=chunked,
        vision=towers.get(arch),
    )

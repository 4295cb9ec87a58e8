"""The per-family ``config.json`` adapters, by architecture (``architectures[0]``).

Each adapter reads the keys, and the defaults, of that family's ``transformers``
``configuration_<model>.py``; they live by family group: Llama and close relatives (Mixtral,
Granite, OLMoE, Qwen2/3) in :mod:`oomkit.loaders.hf_config_llama`; Gemma, Cohere, OLMo 2/3, GLM,
Phi and StarCoder2 in :mod:`oomkit.loaders.hf_config_gemma_phi`; DeepSeek-V2/V3 (MLA), GLM-4.5,
gpt-oss and Llama 4 in :mod:`oomkit.loaders.hf_config_moe`; older-style models (GPT-2, NeoX,
OPT, Falcon, BERT) and hybrids (Mamba, Granite-4, Qwen3-Next) in
:mod:`oomkit.loaders.hf_config_hybrid`; Mllama in :mod:`oomkit.loaders.hf_config_mllama`;
MiniMax-M2 in :mod:`oomkit.loaders.hf_config_minimax`; Nemotron-H in
:mod:`oomkit.loaders.hf_config_nemotron_h`; Gemma 4 in :mod:`oomkit.loaders.hf_config_gemma4`. The
fields every decoder shares are read by :mod:`oomkit.loaders.hf_config_decoder`. This module
gathers them (:data:`ADAPTERS`) and maps ``model_type`` to an architecture for configs without
``architectures`` (:data:`MODEL_TYPE_ARCHITECTURES`).
"""

from __future__ import annotations

from oomkit.loaders.hf_config_decoder import Adapter, decoder_kwargs
from oomkit.loaders.hf_config_llama import generic_decoder

__all__ = ["ADAPTERS", "MODEL_TYPE_ARCHITECTURES", "Adapter", "decoder_kwargs", "generic_decoder"]


def _adapters() -> dict[str, Adapter]:
    from oomkit.loaders import hf_config_gemma4 as g4
    from oomkit.loaders import hf_config_gemma_phi as gp
    from oomkit.loaders import hf_config_hybrid as hy
    from oomkit.loaders import hf_config_llama as ll
    from oomkit.loaders import hf_config_minimax as mm
    from oomkit.loaders import hf_config_mllama as ml
    from oomkit.loaders import hf_config_moe as mo
    from oomkit.loaders import hf_config_nemotron_h as nh

    table: dict[str, Adapter] = {**ll.ADAPTERS, **gp.ADAPTERS, **mo.ADAPTERS}
    table.update(hy.ADAPTERS)
    table.update(ml.ADAPTERS)
    table.update(mm.ADAPTERS)
    table.update(nh.ADAPTERS)
    table.update(g4.ADAPTERS)
    return table


ADAPTERS: dict[str, Adapter] = _adapters()

#: ``model_type`` -> architecture, for configs without ``architectures`` (catalog snippets).
MODEL_TYPE_ARCHITECTURES: dict[str, str] = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen2_moe": "Qwen2MoeForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "qwen3_next": "Qwen3NextForCausalLM",
    "qwen3_5": "Qwen3_5ForConditionalGeneration",
    "qwen3_5_text": "Qwen3_5ForCausalLM",
    "qwen3_5_moe": "Qwen3_5MoeForConditionalGeneration",
    "qwen3_5_moe_text": "Qwen3_5MoeForCausalLM",
    "gemma": "GemmaForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "gemma3": "Gemma3ForConditionalGeneration",
    "gemma4_text": "Gemma4ForCausalLM",
    "gemma4": "Gemma4ForConditionalGeneration",
    "phi3": "Phi3ForCausalLM",
    "phi": "PhiForCausalLM",
    "phimoe": "PhiMoEForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM",
    "deepseek_v3": "DeepseekV3ForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
    "glm": "GlmForCausalLM",
    "glm4": "Glm4ForCausalLM",
    "glm4_moe": "Glm4MoeForCausalLM",
    "minimax_m2": "MiniMaxM2ForCausalLM",
    "cohere": "CohereForCausalLM",
    "cohere2": "Cohere2ForCausalLM",
    "falcon": "FalconForCausalLM",
    "gpt2": "GPT2LMHeadModel",
    "gpt_neox": "GPTNeoXForCausalLM",
    "opt": "OPTForCausalLM",
    "granite": "GraniteForCausalLM",
    "granitemoe": "GraniteMoeForCausalLM",
    "granitemoeshared": "GraniteMoeSharedForCausalLM",
    "olmoe": "OlmoeForCausalLM",
    "deepseek": "DeepseekForCausalLM",
    "granitemoehybrid": "GraniteMoeHybridForCausalLM",
    "nemotron_h": "NemotronHForCausalLM",
    "mamba": "MambaForCausalLM",
    "falcon_mamba": "FalconMambaForCausalLM",
    "mamba2": "Mamba2ForCausalLM",
    "olmo2": "Olmo2ForCausalLM",
    "olmo3": "Olmo3ForCausalLM",
    "llama4": "Llama4ForConditionalGeneration",
    "llama4_text": "Llama4ForCausalLM",
    "internlm2": "InternLM2ForCausalLM",
    "baichuan": "BaichuanForCausalLM",
    "starcoder2": "Starcoder2ForCausalLM",
    "bert": "BertModel",
    "roberta": "RobertaModel",
    "xlm-roberta": "XLMRobertaModel",
}

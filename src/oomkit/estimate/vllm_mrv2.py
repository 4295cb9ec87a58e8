"""Which models vLLM 0.22-0.28 ran on Model Runner V2, whose CUDA-graph estimate was 0.

From vLLM 0.20.0 ``Worker.determine_available_memory`` subtracts
``self.model_runner.profile_cudagraph_memory()`` from the KV budget (PR #30515, default on by
PR #38284). The V1 runner (vllm/v1/worker/gpu_model_runner.py) measures it; Model Runner V2
(vllm/v1/worker/gpu/model_runner.py) carried a placeholder from PR #36520 until 0.28.x::

    def profile_cudagraph_memory(self) -> int:
        # NOTE(woosuk): It is TBD whether we keep this API or not.
        return 0

(0.22.0 line 620, 0.23.0 line 660, 0.24.0 line 684, 0.25.1 line 680, 0.28.0 line 843 of the
PyPI sdists). A model on V2 therefore sized its KV cache over the whole
``gpu_memory_utilization`` budget and captured its graphs afterwards, in the ``1 - util``
headroom, as before 0.20 (vllm-project/vllm issue #49224, 'Model Runner V2 (now default for
dense models) skips CUDA graph memory reservation'). 0.29.0's V2 runner measures its graphs
(``return _profile_cudagraph_memory(self)``, 0.29.0 sdist line 896).

Which models run V2 by default is ``VllmConfig.use_v2_model_runner`` (vllm/config/vllm.py):
``VLLM_USE_V2_MODEL_RUNNER`` when set, else ``_is_default_v2_model_runner_model`` (a
``runner_type == "generate"`` model) against ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``:

* 0.22.x (PR #39337): ``{"Qwen3ForCausalLM"}``, not MoE, not quantized;
* 0.23.x: ``{"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}``, not MoE, not
  quantized (0.23.0 sdist lines 69-75 and ``_is_default_v2_model_runner_model``);
* 0.24.x: those and ``DeepseekV2ForCausalLM``, ``Qwen2MoeForCausalLM``,
  ``GraniteMoeForCausalLM``, with no MoE or quantization test (0.24.0 sdist lines 68-76);
* 0.25.0-0.28.x (PR #44443 'Enable by default for all dense models'): every model that is
  not hybrid and not attention-free and is either listed (the three MoE above) or not MoE.

A pooling model (``settings.pooling``: ``runner_type == "pooling"``) keeps the V1 runner.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from oomkit.spec.model import LAYER_LINEAR, LAYER_MAMBA

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

__all__ = ["MRV2_RULES", "mrv2_note", "runs_model_runner_v2"]

_V022 = frozenset({"Qwen3ForCausalLM"})
_V023 = _V022 | {"LlamaForCausalLM", "MistralForCausalLM"}
_V024_MOE = frozenset({"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"})
_V024 = _V023 | _V024_MOE

#: the rule a release's generation row names (effect ``mrv2_default``) -> its first release
MRV2_RULES: dict[str, str] = {
    "qwen3": "0.22.0",
    "llama": "0.23.0",
    "listed": "0.24.0",
    "dense": "0.25.0",
}

# the dtypes vLLM loads without a quantization method (ModelConfig.quantization is None)
_UNQUANTIZED = frozenset({"", "auto", "bf16", "bfloat16", "fp16", "f16", "float16", "half"})


def _quantized(spec: ModelSpec, settings: InferenceSettings) -> bool:
    """``model_config.is_quantized``: a quantization method, from the checkpoint or
    ``--quantization``."""
    if spec.quantization is not None:
        return True
    return (settings.quant or "").lower() not in _UNQUANTIZED | {"fp32", "f32", "float32"}


def _env_choice() -> bool | None:
    """``VLLM_USE_V2_MODEL_RUNNER`` as ``maybe_convert_bool`` reads it (vllm/envs.py): unset is
    None, else ``bool(int(value))``."""
    raw = os.environ.get("VLLM_USE_V2_MODEL_RUNNER", "").strip()
    if not raw.lstrip("-").isdigit():
        return None
    return int(raw) != 0


def runs_model_runner_v2(spec: ModelSpec, settings: InferenceSettings, rule: str | None) -> bool:
    """Whether the release with ``rule`` (a :data:`MRV2_RULES` key; None: a release whose V2
    runner measures its graphs, or before 0.22) runs ``spec`` on Model Runner V2 with its
    placeholder CUDA-graph estimate of 0.

    >>> from oomkit.catalog.models import find_model
    >>> from oomkit.spec.settings import InferenceSettings
    >>> s = InferenceSettings(runtime="vllm")
    >>> runs_model_runner_v2(find_model("llama-3-8b").spec(), s, "qwen3")
    False
    >>> runs_model_runner_v2(find_model("llama-3-8b").spec(), s, "llama")
    True
    """
    if rule is None or settings.pooling:  # _is_default_v2_model_runner_model: "generate" only
        return False
    choice = _env_choice()
    if choice is not None:
        return choice
    arch = spec.architecture
    if rule in ("qwen3", "llama"):
        listed = _V022 if rule == "qwen3" else _V023
        return arch in listed and not spec.is_moe and not _quantized(spec, settings)
    if rule == "listed":
        return arch in _V024
    if rule != "dense":
        raise ValueError(f"unknown Model Runner V2 rule {rule!r}")
    kinds = set(spec.layer_types)
    if LAYER_MAMBA in kinds or LAYER_LINEAR in kinds:  # model_config.is_hybrid
        return False
    return arch in _V024_MOE or not spec.is_moe


def mrv2_note(version: str | None) -> str:
    """The assumption line of a run on Model Runner V2."""
    release = f"vLLM {version}" if version else "this vLLM"
    return (
        f"{release} runs this model on Model Runner V2, whose profile_cudagraph_memory() "
        "returns 0 (vllm/v1/worker/gpu/model_runner.py, until 0.29.0): the KV cache takes the "
        "whole gpu_memory_utilization budget and the CUDA graphs are captured afterwards in "
        "the 1 - util headroom (vllm-project/vllm issue #49224); VLLM_USE_V2_MODEL_RUNNER=0 "
        "runs the V1 runner, which reserves its graph estimate"
    )

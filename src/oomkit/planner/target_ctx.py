"""The context a plan aims for, and the least it may cut to.

The asked context (at most the model's maximum), else the runtime's own default; ``--runtime
any`` gives every runtime one common target so their plans compare.
"""

from __future__ import annotations

from oomkit.estimate.llamacpp_python import N_CTX as LLAMA_N_CTX
from oomkit.estimate.llamacpp_python import is_binding
from oomkit.planner.request import PlanRequest
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec

__all__ = ["default_target_ctx", "min_ctx"]

#: llama-server / llama-cli ``-c`` default (common/common.h); Ollama's ``num_ctx`` of 0.6.7-0.15.4
#: (from 0.15.5 it follows the VRAM: :mod:`oomkit.estimate.ollama_num_ctx`)
_DEFAULT_CTX = {"llama.cpp": 4096, "ollama": 4096}
#: when the user names no ``--min-ctx``, the planner never cuts the context below a quarter of
#: what was asked, nor below this (unless less was asked)
_MIN_CTX_FLOOR = 2048
#: the common target of ``--runtime any`` when no context is asked (runtimes' defaults differ)
_COMPARE_CTX = 8192


def default_target_ctx(
    runtime: str,
    spec: ModelSpec,
    request: PlanRequest,
    hardware: Hardware | None = None,
    version: str | None = None,
) -> int:
    """The context the plan aims for: the asked one (at most the model's maximum), else the
    runtime's default (Ollama's from 0.15.5 by the total VRAM of ``hardware``, as ``estimate``
    takes it: :func:`oomkit.estimate.ollama_num_ctx.ollama_default_num_ctx`); ``--runtime
    any`` gives every runtime the same target."""
    model_max = spec.max_position_embeddings
    if request.ctx is not None:
        return min(request.ctx, model_max) if model_max else request.ctx
    if request.runtime.strip().lower() == "any" and request.prefer != "context":
        return min(_COMPARE_CTX, model_max) if model_max else _COMPARE_CTX
    if request.prefer == "context" or runtime not in _DEFAULT_CTX:
        # vLLM/SGLang/transformers default max_model_len is the model's own maximum
        return model_max or 8192
    default = _DEFAULT_CTX[runtime]
    if runtime == "ollama":
        from oomkit.estimate.ollama_num_ctx import ollama_ctx_floor, ollama_default_num_ctx

        default = ollama_default_num_ctx(version, hardware)[0]
        floor = ollama_ctx_floor(spec, version, hardware)  # gpt-oss/qwen3vl, 0.11.0-0.15.4
        default = max(default, floor[0]) if floor is not None else default
    if runtime == "llama.cpp" and is_binding(request.runtime):
        default = LLAMA_N_CTX  # Llama(n_ctx=512), as estimate -r llama-cpp-python models
    return min(default, model_max) if model_max else default


def min_ctx(request: PlanRequest, target: int) -> int:
    if request.min_ctx is not None:
        return min(request.min_ctx, target)
    if request.ctx is None:  # no context asked: any useful one will do
        return min(target, _MIN_CTX_FLOOR)
    return min(target, max(_MIN_CTX_FLOOR, target // 4))

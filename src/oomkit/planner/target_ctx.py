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
from oomkit.spec.settings import InferenceSettings

__all__ = ["default_target_ctx", "fit_ctx_top", "min_ctx", "untyped_ctx_reason"]

#: llama-server / llama-cli ``-c`` default before ``--fit`` (common/common.h), and from it
#: (PR #16653, December 2025: ``n_ctx = 0``, the trained context, lowered by the fit) the least
#: the fit lowers an unset context to (``fit_params_min_ctx``, :data:`oomkit.estimate.
#: llamacpp_fit.FIT_MIN_CTX`): the plan passes ``-c`` so the fit keeps it; Ollama's ``num_ctx``
#: of 0.6.7-0.15.4 (from 0.15.5 it follows the VRAM: :mod:`oomkit.estimate.ollama_num_ctx`)
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


def fit_ctx_top(
    runtime: str, spec: ModelSpec, request: PlanRequest, base: InferenceSettings, *, c_api: bool
) -> int | None:
    """The context a llama-server of a ``--fit`` build would start from when the user gives no
    ``-c`` (the model's trained context), or None where that does not apply.

    Since ggml-org/llama.cpp PR #16653 ``-c/--ctx-size`` defaults to 0, "loaded from model"
    (common/arg.cpp), and ``common_fit_params`` (common/fit.cpp) lowers that context, then the
    layers, until ``fit_params_target`` stays free per device, never below
    ``fit_params_min_ctx`` (4096) (:mod:`oomkit.estimate.llamacpp_fit`). So a plan without
    ``--ctx`` keeps the quant the 4096-token search picks (quality first) and runs, with every
    layer on the GPU, the largest context up to this one that fits with it: what ``--fit``
    would reach with that quant and cache type. None for builds before the fit (their ``-c``
    default is 4096), programs on the C API (llama-cpp-python, LM Studio, koboldcpp: no fit),
    ``--runtime any`` (one common context), ``--prefer context`` (already the whole context),
    several slots (``-np``: the fit's context is shared by the slots) and ``--ctx``/``--ctx
    max``."""
    from oomkit.estimate.generations import resolve_generation

    trained = spec.max_position_embeddings
    if (
        runtime != "llama.cpp"
        or request.ctx is not None
        or request.ctx_max
        or request.ctx_from_max
        or request.prefer == "context"
        or request.runtime.strip().lower() == "any"
        or (request.parallel or 1) > 1
        or c_api
        or is_binding(request.runtime)
        or base.llama_server is False
        or not trained
        or trained <= _DEFAULT_CTX["llama.cpp"]
    ):
        return None
    if not resolve_generation("llama.cpp", base.runtime_version).effects.get("fit_params", True):
        return None
    return trained


def min_ctx(request: PlanRequest, target: int) -> int:
    if request.min_ctx is not None:
        return min(request.min_ctx, target)
    if request.ctx is None:  # no context asked: any useful one will do
        return min(target, _MIN_CTX_FLOOR)
    return min(target, max(_MIN_CTX_FLOOR, target // 4))


def untyped_ctx_reason(
    raw_runtime: str,
    prefer: str,
    target: int,
    *,
    version: str | None,
    server: bool | None,
    fit_top: int | None = None,
) -> str:
    """Why a plan without ``--ctx`` aims at ``target`` tokens (the "asked:" line says the
    context was not given, as Ollama's does). ``raw_runtime``: the ``-r`` as typed; ``version``
    and ``server`` (``llama_server``): the run's llama.cpp build and front end.

    A llama-server of a ``--fit`` build (PR #16653 on: the generation's ``fit_params``) given no
    ``-c`` starts at the model's trained context and lowers it, then the layers, until 1 GiB
    stays free per GPU (:mod:`oomkit.estimate.llamacpp_fit`), never below 4096 tokens: that
    floor is the least the plan takes; with ``fit_top`` (:func:`fit_ctx_top`) each plan keeps
    the quant chosen at the floor and runs the largest context up to ``fit_top`` that fits."""
    name = raw_runtime.strip().lower()
    if fit_top is not None:
        return (
            f"llama-server's --fit starts at the model's trained {fit_top} and lowers it until "
            "1 GiB stays free: each plan keeps the quality-first quant, all layers on the GPU, "
            f"and the largest context that fits, not below {target}; --ctx N asks for a given one"
        )
    if name == "any" and prefer != "context":
        return "one context for every runtime compared"
    if prefer == "context":
        return "--prefer context: the model's whole context"
    if name not in ("llama.cpp", "llamacpp") or target < _DEFAULT_CTX["llama.cpp"]:
        if is_binding(name):
            return f"Llama(n_ctx={LLAMA_N_CTX})'s default"
        if name in ("vllm", "sglang", "transformers"):
            return "the model's own maximum, the runtime's default"
        if target < _DEFAULT_CTX["llama.cpp"]:
            return "the model's trained context"
        return "the planner's default"
    if server is False:
        return "the planner's default (the C API runs no --fit)"
    from oomkit.estimate.generations import resolve_generation

    if resolve_generation("llama.cpp", version).effects.get("fit_params", True):
        return "the floor of llama-server's --fit; --ctx N or --ctx max asks for more"
    return "llama-server's default -c on builds before --fit"

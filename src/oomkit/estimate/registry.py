"""Runtime name -> estimator, imported lazily so the CLI loads only the runtime it needs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType

from oomkit.errors import UnknownNameError, close_matches
from oomkit.estimate.breakdown import Estimate
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["RUNTIMES", "RUNTIMES_HELP", "Estimator", "get_estimator", "normalize_runtime"]

Estimator = Callable[[ModelSpec, InferenceSettings, Hardware], Estimate]

#: canonical runtime name -> "module:function"
RUNTIMES: Mapping[str, str] = MappingProxyType(
    {
        # estimate_llamacpp, plus llama-server's draft model (-md) when one is set, on the
        # managed-memory pool of a Linux APU under GGML_CUDA_ENABLE_UNIFIED_MEMORY
        "llama.cpp": "oomkit.estimate.llamacpp_hip_managed:estimate_llamacpp_registry",
        "ollama": "oomkit.estimate.ollama:estimate_ollama",
        # estimate_vllm, plus the 0.13-0.14 online-FP8 load peak (vllm_online_fp8)
        "vllm": "oomkit.estimate.vllm_online_fp8:estimate_vllm_server",
        "sglang": "oomkit.estimate.sglang:estimate_sglang",
        "transformers": "oomkit.estimate.transformers:estimate_transformers",
    }
)

_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "llamacpp": "llama.cpp",
        "llama-cpp": "llama.cpp",
        "llama_cpp": "llama.cpp",
        "llama-server": "llama.cpp",
        "lmstudio": "llama.cpp",
        "koboldcpp": "llama.cpp",
        # the Python binding on the C API, with Llama(...)'s defaults (estimate/llamacpp_python.py)
        "llama-cpp-python": "llama.cpp",
        "llama_cpp_python": "llama.cpp",
        "hf": "transformers",
        "huggingface": "transformers",
        "sgl": "sglang",
    }
)


#: the aliases an error and ``--help`` name: the programs sized as another runtime (LM Studio,
#: koboldcpp and llama-cpp-python run llama.cpp), not every spelling of one name
_SHOWN_ALIASES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "llama.cpp": ("llamacpp", "lmstudio", "koboldcpp", "llama-cpp-python"),
        "transformers": ("hf",),
    }
)

#: the runtime list as the CLI's ``--help`` and the unknown-runtime error show it
RUNTIMES_HELP = " | ".join(
    f"{rt} (also: {', '.join(_SHOWN_ALIASES[rt])})" if rt in _SHOWN_ALIASES else rt
    for rt in RUNTIMES
)


def normalize_runtime(name: str) -> str:
    """Canonical runtime name (``llamacpp`` -> ``llama.cpp``).

    Raises:
        UnknownNameError: not a supported runtime.
    """
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in RUNTIMES:
        raise UnknownNameError(
            kind="runtime",
            name=name,
            suggestions=close_matches(name, (*RUNTIMES, *_ALIASES)),
            hint="Supported: " + RUNTIMES_HELP.replace(" | ", ", ") + ".",
        )
    return key


def get_estimator(name: str, *, planned: bool = False) -> Estimator:
    """The estimator function of runtime ``name`` (imported on first use).

    ``planned``: the settings are a plan's, whose llama.cpp command passes ``-c`` and ``-ngl``
    (``-ngl 99`` for "all layers"), so llama.cpp's ``--fit`` changes neither
    (:mod:`oomkit.estimate.llamacpp_fit`): a layer count left unset means all layers."""
    if planned and normalize_runtime(name) == "llama.cpp":
        from oomkit.estimate.llamacpp_draft import estimate_llamacpp_planned

        return estimate_llamacpp_planned
    target = RUNTIMES[normalize_runtime(name)]
    module_name, _, func = target.partition(":")
    module = importlib.import_module(module_name)
    fn: Estimator = getattr(module, func)
    return fn

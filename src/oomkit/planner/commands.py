"""Copy-paste commands for a planned configuration, checked against per-runtime flag tables.

:func:`emit_command` hands each runtime to the module that writes its lines:
:mod:`~oomkit.planner.commands_llamacpp` (llama-server), :mod:`~oomkit.planner.lmstudio`,
:mod:`~oomkit.planner.koboldcpp`, :mod:`~oomkit.planner.commands_llamacpp_python`
(``Llama(...)``), :mod:`~oomkit.planner.commands_ollama`,
:mod:`~oomkit.planner.commands_serving` (vLLM, SGLang) and
:mod:`~oomkit.planner.commands_transformers`. The flag tables and :func:`parse_command`, which
the tests check every emitted command with, are in :mod:`~oomkit.planner.flag_tables`.
"""

from __future__ import annotations

from oomkit.planner.commands_llamacpp import (
    gguf_name,
    llamacpp_command,
    llamacpp_cpu_moe_flags,
    llamacpp_fa_flags,
)
from oomkit.planner.commands_ollama import ollama_command, ollama_serve_line
from oomkit.planner.commands_serving import sglang_command, vllm_command
from oomkit.planner.commands_transformers import _transformers_snippet as _transformers_snippet
from oomkit.planner.commands_transformers import transformers_command
from oomkit.planner.flag_tables import (
    FLAG_TABLES,
    OLLAMA_ENV,
    OLLAMA_PARAMETERS,
    FlagTable,
    parse_command,
)
from oomkit.planner.prepare import prepare_checkpoint
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "FLAG_TABLES",
    "OLLAMA_ENV",
    "OLLAMA_PARAMETERS",
    "FlagTable",
    "emit_command",
    "llamacpp_cpu_moe_flags",
    "llamacpp_fa_flags",
    "ollama_serve_line",
    "parse_command",
    "prepare_lines",
]


def emit_command(
    runtime: str,
    settings: InferenceSettings,
    spec: ModelSpec,
    model_ref: str,
    *,
    n_layer_total: int | None = None,
    device_kind: str = "cuda",
    os: str | None = None,
) -> str:
    """The command (or, for Ollama and transformers, the few lines) that runs ``settings``;
    ``device_kind`` (``cuda``, ``rocm``, ``vulkan``, ``mps``) names ggml's devices; ``os``
    ``windows``: Ollama's lines in PowerShell (``$env:`` variables, ``Set-Content``)."""
    if runtime in ("llama.cpp", "koboldcpp", "lmstudio", "llama-cpp-python"):  # -ot as estimated
        from oomkit.planner.cpu_experts import command_expert_settings

        settings = command_expert_settings(spec, settings)
    if runtime == "lmstudio":  # -r lmstudio: sized as llama.cpp, loaded with LM Studio's lms
        from oomkit.planner.knobs import llamacpp_flash_off
        from oomkit.planner.lmstudio import lmstudio_command

        gguf = gguf_name(model_ref, spec, settings.quant or "Q4_K_M")
        n_all = n_layer_total or spec.num_hidden_layers + 1
        return lmstudio_command(settings, gguf, n_all, not llamacpp_flash_off(settings))
    if runtime == "koboldcpp":  # -r koboldcpp: sized as llama.cpp, started as koboldcpp.py
        from oomkit.planner.knobs import llamacpp_flash_off
        from oomkit.planner.koboldcpp import koboldcpp_command

        gguf = gguf_name(model_ref, spec, settings.quant or "Q4_K_M")
        n_all = n_layer_total or spec.num_hidden_layers + 1
        flash = not llamacpp_flash_off(settings)
        return koboldcpp_command(settings, gguf, n_all, flash, device_kind=device_kind, os=os)
    if runtime == "llama-cpp-python":  # sized as llama.cpp on the C API, loaded with Llama(...)
        from oomkit.planner.commands_llamacpp_python import llama_cpp_python_command
        from oomkit.planner.knobs import llamacpp_flash_off

        gguf = gguf_name(model_ref, spec, settings.quant or "Q4_K_M")
        n_all = n_layer_total or spec.num_hidden_layers + 1
        return llama_cpp_python_command(settings, gguf, n_all, not llamacpp_flash_off(settings))
    if runtime == "llama.cpp":
        return llamacpp_command(settings, spec, model_ref, device_kind)
    if runtime == "ollama":
        return ollama_command(settings, spec, model_ref, os)
    if runtime == "vllm":
        return vllm_command(settings, spec, model_ref)
    if runtime == "sglang":
        return sglang_command(settings, spec, model_ref)
    return transformers_command(settings, spec, model_ref)


def prepare_lines(
    runtime: str, settings: InferenceSettings, spec: ModelSpec, model_ref: str
) -> tuple[str, ...]:
    """Shell lines to run before :func:`emit_command`'s command: converting (and quantizing) a
    Hugging Face checkpoint directory for llama.cpp or Ollama (``planner/prepare.py``); empty
    when the model is a ``.gguf``, a catalog name or a runtime that loads the directory."""
    quant = settings.quant or "Q4_K_M"
    prep = prepare_checkpoint(runtime, model_ref, spec.source, quant, spec.torch_dtype)
    return () if prep is None else prep.lines

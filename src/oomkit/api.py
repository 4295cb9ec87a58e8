"""The library's front door: a model reference + settings + hardware -> Estimate."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.registry import get_estimator, normalize_runtime
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["estimate", "estimate_model", "load_model"]


def load_model(ref: str | os.PathLike[str], *, offline: bool | None = None) -> ModelSpec:
    """Resolve a catalog name, path (config.json, dir, .gguf, .safetensors) or Hub repo id.

    Raises:
        UnknownNameError: not in the catalog and not a path or repo id.
        SourceNotFoundError, FormatError, OfflineError: as the loaders say.
    """
    from oomkit.loaders.source import resolve_model

    if isinstance(ref, os.PathLike):
        ref = os.fspath(ref)
    if not isinstance(ref, str):
        raise InvalidSettingError(
            f"model reference must be a str or a path, got {type(ref).__name__}", setting="model"
        )
    return resolve_model(ref, offline=offline)


#: Ollama pulls GGUFs from the Hub as ``hf.co/{org}/{repo}:{QUANT}`` (docs/import.md)
_HF_CO = (
    r"^(?:https?://)?(?:hf\.co|huggingface\.co)/(?P<org>[\w.-]+)/(?P<repo>[\w.-]+?)"
    r"(?::(?P<quant>[\w.-]+))?$"
)


def _hf_co_ref(ref: str) -> tuple[str, str | None] | None:
    """``hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M`` -> (catalog-resolvable name,
    ``Q4_K_M``): GGUF repos are named after the model they quantize, so the catalog is asked
    for the repo name without its ``-GGUF`` suffix (then for ``org/repo``)."""
    # every match has ".co/" (no character but C/O folds to c/o, in lower() or in the
    # pattern's IGNORECASE): a plain name skips compiling the pattern (~0.2 ms)
    if ".co/" not in ref.lower():
        return None
    # ASCII: a repo id is (huggingface_hub validate_repo_id); another name is no hf.co ref
    m = re.match(_HF_CO, ref.strip(), re.IGNORECASE | re.ASCII)
    if m is None:
        return None
    quant = m.group("quant")
    if quant is not None and quant.lower() == "latest":
        quant = None
    base = re.sub(r"[-_.]gguf$", "", m.group("repo"), flags=re.IGNORECASE)
    return base, quant.upper() if quant else None


def _ollama_tag_quant(ref: str) -> str | None:
    if ":" not in ref or "/" in ref:
        return None
    from oomkit.catalog.models import ollama_default_quant

    return ollama_default_quant(ref)


def estimate_model(
    model: str | os.PathLike[str] | ModelSpec,
    settings: InferenceSettings | None = None,
    hardware: Hardware | None = None,
    *,
    offline: bool | None = None,
) -> Estimate:
    """Estimate memory per device for ``model`` on ``settings.runtime``.

    Args:
        model: a :class:`ModelSpec`, or a reference resolved by :func:`load_model`.
        settings: runtime options; defaults to llama.cpp defaults.
        hardware: target devices; defaults to one GPU of unknown capacity
            (``Hardware(devices=())`` means no GPU: the CPU backend).
        offline: force offline mode for Hub look-ups (None: ``HF_HUB_OFFLINE``/``OOMKIT_OFFLINE``).

    Returns:
        The per-device breakdown (bytes).
    """
    settings = settings or InferenceSettings()
    if not isinstance(settings, InferenceSettings):
        raise InvalidSettingError(
            f"settings must be InferenceSettings, got {type(settings).__name__}",
            setting="settings",
        )
    runtime = normalize_runtime(settings.runtime)
    original_runtime = settings.runtime
    kobold_note = _koboldcpp_note(settings)
    if kobold_note is not None:  # koboldcpp keeps flash attention opt-in (see the helper)
        settings = dataclasses.replace(settings, flash_attn=False)
    from oomkit.estimate.llamacpp_python import llama_cpp_python_defaults, with_binding_generation

    # -r llama-cpp-python: Llama(...)'s defaults (n_ctx/n_batch 512, n_gpu_layers 0, flash_attn
    # False) where the run leaves them unset; --runtime-version as the binding's release
    asked_version = settings.runtime_version
    from oomkit.estimate.frontend_versions import binding_flag_eras, check_frontend_version

    check_frontend_version(original_runtime, asked_version)  # KoboldCpp/LM Studio's own numbers
    settings, python_notes = llama_cpp_python_defaults(settings)
    if asked_version and original_runtime in ("llama-cpp-python", "llama_cpp_python"):
        # a flag the vendored llama.cpp lacks, refused in the binding's terms
        binding_flag_eras(settings, asked_version)
    if runtime != settings.runtime:
        settings = dataclasses.replace(settings, runtime=runtime)
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if isinstance(model, str) and (hf := _hf_co_ref(model)) is not None:
        model, tag_quant_hf = hf
        if settings.quant is None and tag_quant_hf is not None:
            settings = dataclasses.replace(settings, quant=tag_quant_hf)
    if isinstance(model, str):
        if settings.quant is None and runtime in ("ollama", "llama.cpp"):
            tag_quant = _ollama_tag_quant(model)
            if tag_quant is not None:
                settings = dataclasses.replace(settings, quant=tag_quant)
        spec = load_model(model, offline=offline)
    else:
        spec = model
    if not isinstance(spec, ModelSpec):
        raise InvalidSettingError(
            f"model must be a ModelSpec or a reference string, got {type(model).__name__}",
            setting="model",
        )
    if hardware is None:
        from oomkit.hardware.targets import hardware_for

        # GPUs of unknown capacity, one per rank; Hardware() means CPU only
        hardware = hardware_for(n_devices=(settings.tp or 1) * (settings.pp or 1))
    elif not isinstance(hardware, Hardware):
        raise InvalidSettingError(
            f"hardware must be Hardware, got {type(hardware).__name__}", setting="hardware"
        )
    if settings.draft_model is not None and runtime == "llama.cpp":
        # the draft resolves as MODEL does (same offline rule); the estimator then reads it
        # from the catalog, the file or the Hub cache without the network
        load_model(settings.draft_model, offline=offline)
    if settings.speculative_model is not None and settings.speculative_method not in (
        None,
        "mtp",
        "ngram",
    ):
        from oomkit.errors import SourceNotFoundError, UnknownNameError

        try:  # the vLLM/SGLang draft resolves as MODEL does; a missing one is a usage error
            load_model(settings.speculative_model, offline=offline)
        except (UnknownNameError, SourceNotFoundError) as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise InvalidSettingError(
                f"speculative draft model {settings.speculative_model!r}: {first}",
                setting="speculative_model",
                value=settings.speculative_model,
            ) from None
    from oomkit.estimate.checks import check_run, ignored_settings

    settings, notes = check_run(spec, settings, hardware, runtime)
    ignored = ignored_settings(settings, runtime)
    if ignored:
        notes = (*notes, f"ignored by {runtime}: {', '.join(ignored)}")
        # said ignored, so really ignored: Ollama's estimator runs llama.cpp's, which would
        # otherwise read -ts/-sm/--n-cpu-moe that Ollama has no way to set
        defaults: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(settings)}
        settings = dataclasses.replace(settings, **{name: defaults[name] for name in ignored})
    if spec.source == "gguf" and settings.quant and runtime in ("llama.cpp", "ollama"):
        # a named quant cannot change a file's tensors: say so rather than echo it silently
        notes = (
            *notes,
            f"quant {settings.quant} ignored: a .gguf file runs with the tensor types its "
            "header holds",
        )
    if spec.source == "safetensors" and runtime in ("llama.cpp", "ollama"):
        spec, settings, note = _as_converted_gguf(spec, settings)
        notes = (*notes, note)
    if kobold_note is not None:
        notes = (*notes, kobold_note)
    notes = (*notes, *python_notes)
    lms_note = _lmstudio_note(settings, original_runtime)
    if lms_note is not None:
        notes = (*notes, lms_note)
    est = get_estimator(runtime)(spec, settings, hardware)
    # the loader's own assumptions (e.g. an unknown architecture read as Llama) are part of
    # the answer; estimators that do not copy them would drop them silently
    # a check that the estimator repeats (vLLM's Transformers-backend note) is said once
    notes = (
        *(a for a in spec.assumptions if a not in est.assumptions),
        *(n for n in notes if n not in est.assumptions),
    )
    if notes:
        est = dataclasses.replace(est, assumptions=(*est.assumptions, *notes))
    est = _with_generation(est, runtime, settings.runtime_version, moe=spec.is_moe)
    return with_binding_generation(est, original_runtime, asked_version)


def _as_converted_gguf(
    spec: ModelSpec, settings: InferenceSettings
) -> tuple[ModelSpec, InferenceSettings, str]:
    """A safetensors checkpoint on llama.cpp/Ollama: the GGUF converted from it.

    llama.cpp runs the file ``convert_hf_to_gguf.py`` (then ``llama-quantize``) writes, not the
    checkpoint: the header's HF names are not the GGUF names llama.cpp places by (its
    ``token_embd`` stays in host memory) and its dtypes are not the file's types. Reading the
    header as the GGUF ignored ``--quant`` (even an unknown one) and put the embedding on the
    GPU. The config's tensors are the ones the converter writes; the quant is the one given,
    else the checkpoint's 16/32-bit dtype (the converter's outtype for it).
    """
    quant = settings.quant
    if quant is None:
        dtypes = {str(t.dtype).upper() for t in spec.tensors or ()}
        quant = next((d for d in ("BF16", "F16", "F32") if d in dtypes), None)
        if quant is not None:
            settings = dataclasses.replace(settings, quant=quant)
    note = (
        f"weights: the GGUF a conversion of this checkpoint gives as {quant} "
        "(convert_hf_to_gguf.py / llama-quantize): the safetensors header holds the "
        "checkpoint's names and dtypes, not the GGUF's"
        if quant is not None
        else "weights: the checkpoint's dtypes are quantized formats a GGUF does not keep"
    )
    return dataclasses.replace(spec, tensors=None), settings, note


def _with_generation(
    est: Estimate, runtime: str, version: str | None, *, moe: bool = True
) -> Estimate:
    """Echo the runtime generation modelled in ``runtime_details["generation"]``.

    A dense model's label drops a parenthetical that names MoE ("transformers 5.0+ (fused MoE
    experts)" reads "transformers 5.0+"): the release is the same, what it changed is not
    this model's."""
    from oomkit.estimate.generations import generation_details, predates_generations

    gen = generation_details(runtime, version)
    if gen is None:
        return est
    label = gen.get("label")
    if not moe and label and label.endswith(")") and "MoE" in label.rpartition(" (")[2]:
        gen = {**gen, "label": label.rpartition(" (")[0]}
    if predates_generations(runtime, version):
        note = (
            f"runtime version {version} predates every modelled {runtime} release: "
            f"modelled as the oldest, {gen['label']}"
        )
        est = dataclasses.replace(est, assumptions=(*est.assumptions, note))
    details = dict(est.runtime_details)
    switch = details.get("engine_switch")
    if isinstance(switch, str) and gen.get("label"):
        # the release's row says V1 but the run takes another engine (VLLM_USE_V1=0, Mllama's
        # V0 fallback): "modelled:" says which, not only the release's default
        gen = {**gen, "label": f"{gen['label']}, running the {switch}"}
    details["generation"] = gen
    return dataclasses.replace(est, runtime_details=details)


#: ``oomkit.estimate`` is the estimators' subpackage, so the top-level name is
#: ``oomkit.estimate_model``; inside the library both names work.
estimate = estimate_model


def _koboldcpp_note(settings: InferenceSettings) -> str | None:
    """koboldcpp bundles llama.cpp (``-r koboldcpp`` runs llama.cpp's estimator) but keeps
    flash attention opt-in: its ``koboldcpp.py`` declares ``--flashattention`` with
    ``action='store_true'`` (1.77 and 1.102 alike; the launcher's "Use FlashAttention" box starts
    unticked), where llama-server's ``-fa`` defaults to ``auto`` (on) since PR #15434. Without
    flash attention the compute buffer holds the n_ctx x n_ubatch x n_head attention scores.
    The note when that default applies, else None."""
    if settings.runtime.strip().lower() != "koboldcpp" or settings.flash_attn is not None:
        return None
    return (
        "flash attention off: koboldcpp's default (--flashattention / 'Use FlashAttention' is "
        "opt-in); pass --flash-attn if you enabled it"
    )


#: llama.cpp's ``-fa auto`` default (PR #15434): the generation row ``2025-08-fa-auto``
_FA_AUTO_SINCE = "2025-08-30"


def _lmstudio_note(settings: InferenceSettings, runtime: str) -> str | None:
    """LM Studio (``-r lmstudio``) runs llama.cpp with its own load settings. Its flash attention
    setting defaults to Auto, passed on as llama.cpp's ``auto``: LM Studio 0.4.0 with the CUDA 12
    runtime 1.104.2 logs "Flash Attention was auto, set to disabled" (lmstudio-bug-tracker #1454,
    2026-01-30) and 0.4.14 with the Vulkan runtime 2.15.0 loads with "Flash Attention set to
    Auto" untouched (#1943); 0.3.31 (runtimes 1.57.0, 2025-11-11) already had it on for a model
    without saved settings (#1215). Before, it was an opt-in "experimental" toggle (lmstudio-js
    PR #463 "Flash Attention is no longer experimental", 2025-11-03), off like llama.cpp's own
    default before ``-fa auto``: a ``--runtime-version`` before 2025-08-30 (llama.cpp's
    generation) models it off. The note when the user gave no ``--flash-attn``, else None."""
    if runtime.strip().lower() != "lmstudio" or settings.flash_attn is not None:
        return None
    version = (settings.runtime_version or "").strip()
    if version:
        from oomkit.estimate.generations import parse_runtime_version

        when = parse_runtime_version("llama.cpp", version)
        if str(when) < _FA_AUTO_SINCE:
            return (
                "flash attention off: LM Studio kept it an opt-in toggle before llama.cpp's "
                "-fa auto (pass --flash-attn if you enabled it)"
            )
    return (
        "flash attention 'auto': LM Studio's default (its llama.cpp engine passes Auto; on by "
        "default from 0.3.31, lmstudio-bug-tracker #1215/#1454); pass --no-flash-attn if you "
        "turned it off"
    )

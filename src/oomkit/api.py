"""The library's front door: a model reference + settings + hardware -> Estimate."""

from __future__ import annotations

import dataclasses

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.registry import get_estimator, normalize_runtime
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["estimate", "estimate_model", "load_model"]


def load_model(ref: str, *, offline: bool | None = None) -> ModelSpec:
    """Resolve a catalog name, path (config.json, dir, .gguf, .safetensors) or Hub repo id.

    Raises:
        UnknownNameError: not in the catalog and not a path or repo id.
        SourceNotFoundError, FormatError, OfflineError: as the loaders say.
    """
    from oomkit.loaders.source import resolve_model

    return resolve_model(ref, offline=offline)


def _ollama_tag_quant(ref: str) -> str | None:
    if ":" not in ref or "/" in ref:
        return None
    from oomkit.catalog.models import ollama_default_quant

    return ollama_default_quant(ref)


def estimate_model(
    model: str | ModelSpec,
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
    runtime = normalize_runtime(settings.runtime)
    if runtime != settings.runtime:
        settings = dataclasses.replace(settings, runtime=runtime)
    if isinstance(model, str):
        if settings.quant is None and runtime in ("ollama", "llama.cpp"):
            tag_quant = _ollama_tag_quant(model)
            if tag_quant is not None:
                settings = dataclasses.replace(settings, quant=tag_quant)
        spec = load_model(model, offline=offline)
    else:
        spec = model
    if hardware is None:
        from oomkit.hardware.targets import hardware_for

        hardware = hardware_for()  # one GPU of unknown capacity; Hardware() means CPU only
    est = get_estimator(runtime)(spec, settings, hardware)
    return _with_generation(est, runtime, settings.runtime_version)


def _with_generation(est: Estimate, runtime: str, version: str | None) -> Estimate:
    """Echo the runtime generation modelled in ``runtime_details["generation"]``."""
    from oomkit.estimate.generations import GENERATIONS, resolve_generation

    if runtime not in GENERATIONS:
        return est
    gen = resolve_generation(runtime, version)
    details = dict(est.runtime_details)
    details["generation"] = {
        "key": gen.key,
        "label": gen.label,
        "requested": version,
        "since": gen.since.isoformat(),
        "change": gen.change,
        "memory": gen.memory,
    }
    return dataclasses.replace(est, runtime_details=details)


#: ``oomkit.estimate`` is the estimators' subpackage, so the top-level name is
#: ``oomkit.estimate_model``; inside the library both names work.
estimate = estimate_model

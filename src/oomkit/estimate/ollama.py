"""Ollama: its defaults on top of the llama.cpp memory model.

Modelled behaviour: Ollama 0.12.x (late 2025) running a GGUF through its llama.cpp-based runner.
Ollama decides the settings, llama.cpp allocates the buffers, so the buffers come from
:func:`oomkit.estimate.llamacpp.estimate_llamacpp`; this module supplies Ollama's defaults:

* ``num_ctx``: 4096 (the default since Ollama 0.6.4; 2048 in older releases;
  ``OLLAMA_CONTEXT_LENGTH`` or the Modelfile/API ``num_ctx`` override it);
* ``OLLAMA_NUM_PARALLEL``: 1; with N parallel requests Ollama creates a context of
  ``num_ctx * N`` tokens shared by N sequences (llm/server.go: ``numCtx * numParallel``);
* ``OLLAMA_KV_CACHE_TYPE``: f16 (q8_0 / q4_0 need flash attention);
* ``OLLAMA_FLASH_ATTENTION``: off unless set (Ollama enables it by itself only for a few model
  families; pass ``flash_attn=True`` to model that);
* ``num_batch``: 512 (so ``n_ubatch`` 512);
* per-GPU reserve: Ollama keeps a minimum of 457 MiB free per CUDA/ROCm GPU (512 MiB on Metal)
  plus ``OLLAMA_GPU_OVERHEAD`` (default 0) — pass the sum as ``settings.overhead_bytes`` to
  override;
* quant: the library tag's default (``ollama_default_quant``; Q4_K_M for most tags).
"""

from __future__ import annotations

import dataclasses

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.llamacpp import estimate_llamacpp
from oomkit.estimate.llamacpp_params import LlamaCppOptions
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "OLLAMA_DEFAULT_NUM_BATCH",
    "OLLAMA_DEFAULT_NUM_CTX",
    "OLLAMA_DEFAULT_QUANT",
    "OLLAMA_VERSION_MODELLED",
    "estimate_ollama",
    "ollama_settings",
]

OLLAMA_VERSION_MODELLED = "0.12.x (llama.cpp runner)"
OLLAMA_DEFAULT_NUM_CTX = 4096  # since 0.6.4; 2048 before
OLLAMA_DEFAULT_NUM_BATCH = 512
OLLAMA_DEFAULT_QUANT = "Q4_K_M"


def ollama_settings(
    spec: ModelSpec, settings: InferenceSettings
) -> tuple[InferenceSettings, list[str]]:
    """Translate Ollama settings into the llama.cpp settings its runner starts with."""
    notes: list[str] = [f"Ollama {OLLAMA_VERSION_MODELLED} defaults"]
    num_ctx = settings.ctx or OLLAMA_DEFAULT_NUM_CTX
    if settings.ctx is None:
        notes.append(
            f"num_ctx not given: Ollama default {OLLAMA_DEFAULT_NUM_CTX} (2048 before 0.6.4)"
        )
    parallel = settings.parallel or 1
    quant = settings.quant
    if quant is None:
        quant = _tag_quant(spec.name) or OLLAMA_DEFAULT_QUANT
        notes.append(f"quant not given: Ollama library default {quant}")
    flash = settings.flash_attn if settings.flash_attn is not None else False
    if settings.flash_attn is None:
        notes.append("OLLAMA_FLASH_ATTENTION not set: flash attention off")
    batch = settings.batch_size or OLLAMA_DEFAULT_NUM_BATCH
    mapped = dataclasses.replace(
        settings,
        runtime="ollama",
        quant=quant,
        ctx=num_ctx * parallel,
        parallel=parallel,
        kv_unified=True if settings.kv_unified is None else settings.kv_unified,
        flash_attn=flash,
        batch_size=batch,
        ubatch=min(settings.ubatch or batch, batch),
    )
    return mapped, notes


def _tag_quant(name: str) -> str | None:
    try:
        from oomkit.catalog.models import ollama_default_quant
    except ImportError:  # the catalog is optional for this module
        return None
    try:
        return ollama_default_quant(name)
    except Exception:  # an unknown tag simply has no default
        return None


def estimate_ollama(spec: ModelSpec, settings: InferenceSettings, hardware: Hardware) -> Estimate:
    """Per-device memory of ``spec`` served by Ollama with ``settings`` on ``hardware``."""
    mapped, notes = ollama_settings(spec, settings)
    est = estimate_llamacpp(
        spec,
        mapped,
        hardware,
        options=LlamaCppOptions(),
        default_swa_full=False,
        runtime_name="ollama",
    )
    details = dict(est.runtime_details)
    details["ollama"] = {
        "version_modelled": OLLAMA_VERSION_MODELLED,
        "num_ctx": settings.ctx or OLLAMA_DEFAULT_NUM_CTX,
        "num_parallel": mapped.parallel,
        "kv_cache_type": (mapped.cache_type_k or "f16"),
        "flash_attention": mapped.flash_attn,
        "num_batch": mapped.batch_size,
    }
    return dataclasses.replace(
        est,
        runtime="ollama",
        runtime_details=details,
        assumptions=(*notes, *est.assumptions),
    )

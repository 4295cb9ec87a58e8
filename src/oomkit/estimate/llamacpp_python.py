"""llama-cpp-python (``-r llama-cpp-python``): llama.cpp's estimator with ``Llama(...)``'s defaults.

The Python binding runs llama.cpp on the C API (no llama-server, no ``common_params``), and its
``Llama.__init__`` has its own defaults (llama_cpp/llama.py of abetlen/llama-cpp-python, l.65-116
of v0.3.35, 2026-08-17; the same values in every tag v0.2.30-v0.3.35, where ``flash_attn`` is
absent before v0.2.68 and ``type_k``/``type_v`` before v0.2.58: llama.cpp's defaults then):

* ``n_gpu_layers: int = 0`` (l.65): no layer on the GPU; ``-1`` means all
  (``0x7FFFFFFF if n_gpu_layers == -1``, l.228-229). A CUDA build still allocates its compute
  buffer on the GPU and stages the large-batch matmuls there (op_offload), which the llama.cpp
  estimator models for ``-ngl 0``;
* ``flash_attn: bool = False`` (l.95): ``flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED if
  flash_attn else LLAMA_FLASH_ATTN_TYPE_DISABLED`` (l.354-358), not llama.cpp's ``auto``;
* ``n_ctx: int = 512``, ``n_batch: int = 512``, ``n_ubatch: int = 512`` (l.76-78), then
  ``self.n_batch = min(n_ctx, n_batch)`` (l.311); ``n_ctx=0`` means the model's trained context
  (l.400-403). llama-cli's ``common_params`` (``-c 4096``, ``-b 2048``) do not apply;
* ``type_k``/``type_v: Optional[int] = None`` (l.115-116): left at
  ``llama_context_default_params``' ``GGML_TYPE_F16``; ``offload_kqv: bool = True`` (l.94) and
  ``use_mmap: bool = True`` (l.70), llama.cpp's own defaults; ``n_seq_max`` stays the C API's 1
  (only ``embedding=True`` raises it, l.407-411).

``--runtime-version`` takes the binding's version (what ``pip show llama-cpp-python`` prints):
:mod:`oomkit.estimate.llamacpp_python_versions` maps it to the llama.cpp tree it vendors. With
none, the newest release listed there is modelled, not a llama.cpp newer than any binding ships.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "FLASH_ATTN",
    "NAMES",
    "N_BATCH",
    "N_CTX",
    "N_GPU_LAYERS",
    "binding_plan_base",
    "binding_version",
    "is_binding",
    "llama_cpp_python_defaults",
    "with_binding_generation",
]

#: the runtime names that mean the Python binding (aliases of llama.cpp in the registry)
NAMES = frozenset({"llama-cpp-python", "llama_cpp_python"})
N_CTX = 512  # Llama(n_ctx=512)
N_BATCH = 512  # Llama(n_batch=512); n_ubatch=512 is llama.cpp's -ub default already
N_GPU_LAYERS = 0  # Llama(n_gpu_layers=0)
FLASH_ATTN = False  # Llama(flash_attn=False)

#: a binding release as pip prints it (0.3.16), with an optional wheel/local suffix; any
#: version-shaped value (``1.0``, ``0.2.90``) is read as the binding's, never as a llama.cpp
#: build (llama.cpp has builds and dates, not dotted versions)
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9a-z.]+)?$")
#: a "version" whose major number is this or larger is a date written with dots (2024.06)
_DATE_LIKE_MAJOR = 100


def is_binding(runtime: str | None) -> bool:
    """``runtime`` names llama-cpp-python."""
    return (runtime or "").strip().lower() in NAMES


def binding_version(text: str | None) -> tuple[int, int, int] | None:
    """A llama-cpp-python release read from ``text`` (None: not one, e.g. a llama.cpp build).

    >>> binding_version("0.3.16"), binding_version("v0.3.35-cu124"), binding_version("1.0")
    ((0, 3, 16), (0, 3, 35), (1, 0, 0))
    >>> binding_version("b4500"), binding_version("2024-06-15")
    (None, None)
    """
    m = _VERSION_RE.match((text or "").strip().lower())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _vendored(text: str | None) -> tuple[str | None, dict[str, str] | None]:
    """The llama.cpp ``--runtime-version`` to model for the binding's ``text`` and what the
    ``modelled:`` line says (None: ``text`` is a llama.cpp build or date, left as it is)."""
    # the release table imports datetime: loaded only for a llama-cpp-python run, off the
    # estimate command's start-up path (tests/test_import_boundaries.py)
    from oomkit.estimate.llamacpp_python_versions import VENDORED_LLAMACPP, vendored_llamacpp

    newest, commit, when = VENDORED_LLAMACPP[-1]
    newest_text = ".".join(map(str, newest))
    if text is None or not text.strip():
        return when.isoformat(), {
            "version": newest_text,
            "llama_cpp_commit": commit,
            "llama_cpp_date": when.isoformat(),
            "why": "newest release listed; --runtime-version takes yours",
        }
    version = binding_version(text)
    if version is None:
        return text, None
    found = vendored_llamacpp(version)
    label = ".".join(map(str, version))
    if found is not None:
        return found[1].isoformat(), {
            "version": label,
            "llama_cpp_commit": found[0],
            "llama_cpp_date": found[1].isoformat(),
            "why": "",
        }
    if newest < version and version[0] < _DATE_LIKE_MAJOR:
        return None, {
            "version": label,
            "llama_cpp_commit": "",
            "llama_cpp_date": "",
            "why": f"newer than the releases listed (to {newest_text}): modelled as the "
            "newest llama.cpp",
        }
    oldest_version = VENDORED_LLAMACPP[0][0]
    oldest = ".".join(map(str, oldest_version))
    why = ""
    if version < oldest_version:  # llamacpp_python_versions' docstring: Llama's defaults differ
        why = " (older ones default offload_kqv=False or predate it: the KV cache on the CPU)"
    raise InvalidSettingError(
        f"Invalid --runtime-version {text!r} for llama-cpp-python: releases {oldest} to "
        f"{newest_text} are listed{why}; for another, give the llama.cpp build or date it "
        "vendors (b4500, 2024-06-15)",
        setting="runtime_version",
        value=text,
    )


def llama_cpp_python_defaults(
    settings: InferenceSettings,
) -> tuple[InferenceSettings, tuple[str, ...]]:
    """``settings`` with ``Llama(...)``'s defaults where the run names the binding and leaves
    them unset (and ``--runtime-version`` read as the binding's release), and the notes that
    say so (empty when the runtime is not the binding)."""
    if not is_binding(settings.runtime):
        return settings, ()
    notes: list[str] = []
    ctx = N_CTX if settings.ctx is None else settings.ctx
    batch = N_BATCH if settings.batch_size is None else settings.batch_size
    filled = [
        f"{name} {value}"
        for name, value, given in (
            ("n_ctx", N_CTX, settings.ctx),
            ("n_batch", N_BATCH, settings.batch_size),
        )
        if given is None
    ]
    if filled:
        notes.append(
            f"{' and '.join(filled)} not given: llama-cpp-python's Llama(...) defaults "
            "(llama_cpp/llama.py; n_ctx=0 asks for the model's trained context)"
        )
    ngl = settings.n_gpu_layers
    if ngl is None:
        ngl = N_GPU_LAYERS
        notes.append(
            "n_gpu_layers not given: 0 (Llama's default), every layer on the CPU (the GPU holds "
            "the compute buffer llama.cpp still allocates there); pass n_gpu_layers=-1 "
            "(-ngl 99) to offload all layers"
        )
    flash = settings.flash_attn
    if flash is None:
        flash = FLASH_ATTN
        notes.append(
            "flash_attn not given: False (Llama's default, LLAMA_FLASH_ATTN_TYPE_DISABLED, not "
            "llama.cpp's 'auto'); pass flash_attn=True (--flash-attn) to enable it"
        )
    if settings.cache_type_k is None and settings.cache_type_v is None:
        notes.append(
            "type_k/type_v not given: f16 (llama_context_default_params' GGML_TYPE_F16); "
            "offload_kqv=True and use_mmap=True are Llama's defaults too"
        )
    version, _ = _vendored(settings.runtime_version)
    out = dataclasses.replace(
        settings,
        ctx=ctx,
        batch_size=batch,
        n_gpu_layers=ngl,
        flash_attn=flash,
        runtime_version=version,
    )
    return out, tuple(notes)


def binding_plan_base(settings: InferenceSettings) -> InferenceSettings:
    """A plan's base settings for ``-r llama-cpp-python``: ``Llama(...)``'s ``n_batch`` 512
    where none is set and ``--runtime-version`` read as the binding's release. The plan's call
    passes ``n_ctx``, ``n_gpu_layers`` and ``flash_attn`` itself, so those stay the plan's."""
    version, _ = _vendored(settings.runtime_version)
    batch = N_BATCH if settings.batch_size is None else settings.batch_size
    return dataclasses.replace(settings, batch_size=batch, runtime_version=version)


def with_binding_generation(est: Estimate, runtime: str, runtime_version: str | None) -> Estimate:
    """``est`` (estimated as llama.cpp) with the binding's release in ``modelled:`` (the
    generation's label) and ``runtime_details["llama_cpp_python"]``, and the user's
    ``--runtime-version`` echoed in the settings (not the llama.cpp date it was read as)."""
    if not is_binding(runtime):
        return est
    _, binding = _vendored(runtime_version)
    if binding is None:
        return est
    details = dict(est.runtime_details)
    gen = details.get("generation")
    vendored = (
        f"vendors llama.cpp {binding['llama_cpp_commit']} of {binding['llama_cpp_date']}"
        if binding["llama_cpp_commit"]
        else binding["why"]
    )
    if binding["llama_cpp_commit"] and binding["why"]:
        vendored += f"; {binding['why']}"
    if isinstance(gen, Mapping):
        label = f"llama-cpp-python {binding['version']} ({vendored}): {gen.get('label')}"
        details["generation"] = {**gen, "label": label, "requested": runtime_version}
    details["llama_cpp_python"] = {k: v for k, v in binding.items() if k != "why"}
    settings = {k: v for k, v in est.settings.items() if k != "runtime_version"}
    if runtime_version is not None:  # the release asked, not the date it was modelled as
        settings["runtime_version"] = runtime_version
    return dataclasses.replace(est, runtime_details=details, settings=settings)

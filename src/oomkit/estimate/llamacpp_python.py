"""llama-cpp-python (``-r llama-cpp-python``): llama.cpp's estimator with ``Llama(...)``'s defaults.

The Python binding runs llama.cpp on the C API (no llama-server, no ``common_params``), and its
``Llama.__init__`` has its own defaults: ``n_ctx: int = 512``, ``n_batch: int = 512``,
``n_ubatch: int = 512`` (llama_cpp/llama.py l.75-77 of v0.3.16, 2025-08-14, through v0.3.35,
2026-08-17; l.76-78 of v0.3.9), then ``self.n_batch = min(n_ctx, n_batch)`` (l.311) and
``context_params.n_ctx = n_ctx`` (l.320). ``n_ctx=0`` means the model's trained context
("Text context, 0 = from model", l.160; l.400-403). The C API's own
``llama_context_default_params`` agrees on the context (``n_ctx = 512``, src/llama.cpp
l.9334-9338 of llama.cpp c392e50, 2025-02-20) but keeps ``n_batch = 2048``. So a Python run
that sets no context holds a 512-cell KV cache, not ``common_params``' ``-c 4096`` that
:mod:`oomkit.estimate.llamacpp_params` assumes for llama-cli.
"""

from __future__ import annotations

import dataclasses

from oomkit.spec.settings import InferenceSettings

__all__ = ["NAMES", "N_BATCH", "N_CTX", "llama_cpp_python_defaults"]

#: the runtime names that mean the Python binding (aliases of llama.cpp in the registry)
NAMES = frozenset({"llama-cpp-python", "llama_cpp_python"})
N_CTX = 512  # Llama(n_ctx=512)
N_BATCH = 512  # Llama(n_batch=512); n_ubatch=512 is llama.cpp's -ub default already


def llama_cpp_python_defaults(
    settings: InferenceSettings,
) -> tuple[InferenceSettings, str | None]:
    """``settings`` with ``Llama(...)``'s context and batch where the run names the binding
    and leaves them unset, and the note that says so (None when nothing was filled)."""
    if settings.runtime.strip().lower() not in NAMES:
        return settings, None
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
    if not filled:
        return settings, None
    note = (
        f"{' and '.join(filled)} not given: llama-cpp-python's Llama(...) defaults "
        "(llama_cpp/llama.py; n_ctx=0 asks for the model's trained context)"
    )
    return dataclasses.replace(settings, ctx=ctx, batch_size=batch), note

"""Gemma 2's context in vLLM 0.5.1-0.6.4: capped to its 4096-token sliding window.

vLLM PR #5908 ("[Model] Add Gemma 2", 2024-06-27, first in 0.5.1) could not run Gemma 2's
every-other-layer sliding window, so ``ModelConfig.__init__`` (vllm/config.py) disables the
sliding window for it and ``_get_and_verify_max_len`` then takes
``min(max_position_embeddings, sliding_window)`` as the derived maximum length: "Gemma 2 uses
sliding window attention for every odd layer, which is currently not supported by vLLM.
Disabling sliding window and capping the max length to the sliding window size (4096)." The rule
is in the 0.5.3.post1, 0.5.4 and 0.6.2 wheels (``model_type == "gemma2"``) and in the 0.6.3.post1
and 0.6.4.post1 wheels (``has_interleaved_attention``: a list ``sliding_window`` or
``model_type in ["gemma2"]``). So a server started without ``--max-model-len`` serves 4096
tokens, not the config's 8192, and a larger ``--max-model-len`` is refused ("User-specified
max_model_len (...) is greater than the derived max_model_len (sliding_window=4096 ...)") unless
``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``. PR #10584 ("[core] gemma2 full context length support",
first in 0.6.5, 2024-12-17) keeps the window inside the attention layer only and serves the
full 8192 tokens (the cap stays only with ``VLLM_ATTENTION_BACKEND=XFORMERS``, an environment
variable oomkit does not see).

The generations that cap carry the effect ``gemma2_window_cap``
(:mod:`oomkit.estimate.generation_table`).
"""

from __future__ import annotations

import dataclasses
import os

from oomkit.errors import InvalidSettingError
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["gemma2_max_len_cap", "gemma2_window_ctx"]


def gemma2_max_len_cap(spec: ModelSpec) -> int | None:
    """The derived ``max_model_len`` of a capping vLLM release for ``spec``: its sliding
    window (below ``max_position_embeddings``) for a Gemma 2 model, else None."""
    if spec.model_type != "gemma2" or not spec.sliding_window:
        return None
    limit = spec.max_position_embeddings
    return spec.sliding_window if limit is None else min(limit, spec.sliding_window)


def gemma2_window_ctx(
    spec: ModelSpec, settings: InferenceSettings
) -> tuple[InferenceSettings, tuple[str, ...]]:
    """``settings`` with the context a capping release serves, and the note that says so.

    No ``--ctx``: the window (vLLM's derived length). A ``--ctx`` above it: refused, as vLLM
    refuses it, unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is set (then vLLM only warns and
    serves it with every layer attending globally, which is how V0 caches it anyway).

    Raises:
        InvalidSettingError: ``--ctx`` above the window without ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``.
    """
    cap = gemma2_max_len_cap(spec)
    if cap is None:
        return settings, ()
    version = settings.runtime_version
    if settings.ctx is None:
        note = (
            f"vLLM {version} caps Gemma 2's max_model_len to its {cap}-token sliding window "
            "(PR #5908; the full context from 0.6.5, PR #10584)"
        )
        return dataclasses.replace(settings, ctx=cap), (note,)
    if settings.ctx <= cap:
        return settings, ()
    allow = os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").lower() in ("1", "true")
    if not allow:
        raise InvalidSettingError(
            f"--ctx {settings.ctx} is greater than the {cap} tokens vLLM {version} allows "
            f"Gemma 2 (capped to its sliding window before 0.6.5, PR #10584); vLLM refuses it "
            "unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
            setting="ctx",
            value=settings.ctx,
        )
    note = (
        f"--ctx {settings.ctx} above the {cap}-token cap vLLM {version} puts on Gemma 2 "
        "(VLLM_ALLOW_LONG_MAX_MODEL_LEN is set: vLLM only warns; every layer attends globally)"
    )
    return settings, (note,)

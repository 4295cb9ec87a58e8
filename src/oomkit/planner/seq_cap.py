"""The longest sequence a model was trained for: the cap on every "largest --seq / --ctx" answer.

A search for the largest sequence that fits in memory must not answer past the model's own
maximum: Llama-3.1-8B's "largest --seq that fits is 141056" on an H100 was longer than its
``max_position_embeddings`` (131072). The maximum is the config's ``max_position_embeddings``;
with a ``rope_scaling`` that stretches it (linear, dynamic, YaRN) it is the scaled length, as
vLLM's ``_get_and_verify_max_len`` derives it (:func:`oomkit.estimate.checks.vllm_max_model_len`:
``max_position_embeddings`` x ``factor``, YaRN from ``original_max_position_embeddings``; llama3,
longrope and su already state the scaled length). :func:`model_max_seq` names the field the cap
came from, so an answer capped by it says so ("the model's maximum") rather than passing it off
as what memory allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec

__all__ = ["SeqCap", "capped_words", "model_max_seq"]


@dataclass(frozen=True, slots=True)
class SeqCap:
    """The model's longest sequence (``tokens``) and the config fields it comes from."""

    tokens: int
    source: str


def model_max_seq(spec: ModelSpec) -> SeqCap | None:
    """The model's trained maximum sequence (see the module doc); None when the config states
    none (or a scaled RoPE whose factor the spec lost: then the search is not capped)."""
    from oomkit.estimate.checks import vllm_max_model_len

    limit = spec.max_position_embeddings
    if not limit:
        return None
    scaled = vllm_max_model_len(spec)
    if scaled is None:
        return SeqCap(limit, "max_position_embeddings")
    if scaled == limit:
        kind = spec.rope_scaling_type
        already = f", rope_scaling {kind} already scaled" if kind and kind != "mrope" else ""
        return SeqCap(limit, f"max_position_embeddings{already}")
    base = (
        "original_max_position_embeddings"
        if spec.rope_original_max_position_embeddings is not None
        and spec.rope_scaling_type in ("yarn", "deepseek_yarn")
        else "max_position_embeddings"
    )
    factor = spec.rope_scaling_factor
    return SeqCap(scaled, f"{base} x rope_scaling factor {factor:g} ({spec.rope_scaling_type})")


def capped_words(cap: SeqCap, memory_allows: int | None, *, searched_to: int = 0) -> str:
    """``"131072 (the model's maximum: max_position_embeddings; memory would allow 141056)"``:
    an answer the cap, not memory, decided (``memory_allows`` None: not known past it;
    ``searched_to``: the end of that search, where memory allows that "or more")."""
    if memory_allows is None:
        more = ""
    elif memory_allows >= searched_to > 0:
        more = f"; memory would allow {memory_allows} or more"
    else:
        more = f"; memory would allow {memory_allows}"
    return f"{cap.tokens} (the model's maximum: {cap.source}{more})"

"""A training ``--seq`` past the model's trained maximum: priced as asked, with a note.

The maximum is the rule of :mod:`oomkit.planner.seq_cap` (the "largest --seq" cap):
``max_position_embeddings``, or the length a stretching ``rope_scaling`` gives it
(:func:`oomkit.estimate.checks.vllm_max_model_len`, vLLM's ``_get_and_verify_max_len``).
A RoPE model runs past it (transformers computes the rotary angles for any position), so
the step is not refused, unlike a learned position table
(:func:`oomkit.estimate.transformers_layouts.training_position_blocker`), but the positions
past it were never trained.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec

__all__ = ["past_max_note"]


def past_max_note(spec: ModelSpec, seq: int, flag: str = "--seq") -> str | None:
    """The note for a ``seq``-token sequence past the model's trained maximum (None: within
    it, no maximum stated, or a learned position table, which refuses it instead)."""
    from oomkit.estimate.checks import vllm_max_model_len
    from oomkit.estimate.transformers_layouts import learned_position_limit

    limit = spec.max_position_embeddings
    if not limit or learned_position_limit(spec) is not None:
        return None
    longest = vllm_max_model_len(spec) or limit
    if seq <= longest:
        return None
    source = (
        "max_position_embeddings"
        if longest == limit
        else "max_position_embeddings x the rope_scaling factor"
    )
    return (
        f"{flag} {seq} is {seq / longest:.1f}x the model's trained maximum ({longest}: "
        f"{source}); priced as asked, but positions past {longest} were never trained "
        f"(give {flag} {longest} or less, or a model trained longer)"
    )

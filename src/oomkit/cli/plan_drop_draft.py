"""``plan``'s "drop the draft model" lever: speculative decoding costs memory, not quality.

A draft model (llama-server ``-md``, vLLM ``--speculative-config``, SGLang
``--speculative-algorithm``) is kept in every candidate the planner tries (it is pinned, as
the user's other flags). When the plan without it is better by the planner's own terms -- a
plan where none fits, a lower offload level, or a longer context -- the plan says so in a
note with the command that runs it. Dropping the draft costs decode speed (the draft's
accepted tokens), never output quality: speculative decoding verifies every drafted token
against the target, so the text is the target's either way. ``ngram`` has no draft model to
drop.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.planner.plan_result import PlanResult
    from oomkit.planner.request import PlanRequest
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.settings import InferenceSettings

__all__ = ["drop_draft_note", "without_draft"]


def without_draft(base: InferenceSettings) -> InferenceSettings | None:
    """``base`` without its draft model; None when it has none (or only n-gram lookup)."""
    if base.draft_model is not None:
        return dataclasses.replace(
            base,
            draft_model=None,
            draft_quant=None,
            draft_n_gpu_layers=None,
            draft_ctx=None,
            draft_cache_type_k=None,
            draft_cache_type_v=None,
            draft_devices=None,
        )
    if base.speculative_method not in (None, "ngram"):
        return dataclasses.replace(
            base,
            speculative_method=None,
            speculative_model=None,
            num_speculative_tokens=None,
            speculative_eagle_topk=None,
            speculative_num_draft_tokens=None,
            speculative_extra=None,
        )
    return None


def drop_draft_note(
    model: str,
    hardware: Hardware,
    request: PlanRequest,
    base: InferenceSettings | None,
    result: PlanResult,
    *,
    offline: bool | None,
) -> str | None:
    """The lever's note when planning without the draft does better than ``result``."""
    if base is None:
        return None
    plain = without_draft(base)
    if plain is None:
        return None
    from oomkit.errors import OomkitError
    from oomkit.planner.core import plan

    try:
        bare = plan(model, hardware, request, base=plain, offline=offline)
    except OomkitError:
        return None
    if not bare.plans:
        return None
    best = bare.plans[0]
    if result.plans:
        kept = result.plans[0]
        better = best.level < kept.level or (
            best.level == kept.level and (best.settings.ctx or 0) > (kept.settings.ctx or 0)
        )
        if not better:
            return None
    lead = "nothing fits with the draft model; " if not result.plans else ""
    return (
        f"{lead}lever: drop the draft model (speculative decoding costs decode speed, not "
        f"quality): {best.summary}; run: {best.command}"
    )

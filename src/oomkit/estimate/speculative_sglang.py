"""SGLang's speculative-decoding terms around its token pool (the draft worker's share).

The draft (:func:`oomkit.estimate.speculative.draft_terms`) enters SGLang's estimate three ways:
its KV token pool is budgeted by scaling the target's cell size by ``1 + draft_layers /
target_layers`` and allocated with the target's ``max_total_num_tokens``
(sglang/srt/model_executor/pool_configurator.py ``DefaultPoolConfigurator``); its weights load
after the target's KV pool, out of the ``1 - mem_fraction_static`` rest (eagle_worker.py
``EAGLEWorker``); and the default ``mem_fraction_static`` leaves 2 GiB (EAGLE family) / 6 GiB
(STANDALONE) for it (:func:`oomkit.estimate.speculative.sglang_reserve_bytes`).
"""

from __future__ import annotations

from typing import TypeVar

from oomkit.estimate.breakdown import Component, InputValue
from oomkit.estimate.hf_kv import KvLayer
from oomkit.estimate.speculative import (
    DraftTerms,
    draft_weights_component,
    sglang_cell_size,
    spoken_method,
)
from oomkit.spec.settings import InferenceSettings
from oomkit.units import format_bytes

__all__ = [
    "attention_layers",
    "draft_components",
    "draft_pool_share",
    "draft_rest",
    "scaled_stages",
    "speculative_details",
    "speculative_settings",
]

_W = TypeVar("_W")


def attention_layers(layers: tuple[KvLayer, ...]) -> int:
    """The layers SGLang's pool counts for a draft's share: those with a KV cache (a hybrid's
    recurrent layers have their own state pool)."""
    return sum(1 for lay in layers if lay.kind != "recurrent")


def scaled_stages(
    stages: list[tuple[_W, tuple[KvLayer, ...], int]], draft: DraftTerms
) -> list[tuple[_W, tuple[KvLayer, ...], int]]:
    """Each pipeline stage's cell size with the draft pool budgeted in (mambaish models:
    num_layers is the full-attention layers, pool_configurator.py)."""
    return [(w, lay, sglang_cell_size(c, attention_layers(lay), draft)) for w, lay, c in stages]


def draft_pool_share(draft: DraftTerms | None, pool: int, cell: int) -> int:
    """The draft token-to-KV pool inside ``pool``: ``max_total_num_tokens`` (``pool // cell``,
    ``cell`` the scaled cell size) x the draft layers' bytes per token; the draft worker
    allocates it with the target's token count (pool_configurator.py ``MemoryPoolConfig``)."""
    if draft is None or not draft.n_layers or not cell:
        return 0
    return min(pool, pool // cell * draft.kv_bytes_per_token)


def draft_rest(draft: DraftTerms | None, reserve: int, frac: float) -> tuple[int, str | None]:
    """The ``1 - mem_fraction_static`` rest once the draft's weights are loaded into it, and the
    blocker when they do not fit (the draft worker loads after the KV pool)."""
    if draft is None or not draft.weights_bytes:
        return reserve, None
    blocker = None
    if draft.weights_bytes > reserve:
        blocker = (
            f"the draft model's weights ({format_bytes(draft.weights_bytes)}) "
            f"exceed the {format_bytes(reserve)} SGLang leaves outside "
            f"mem_fraction_static {frac:.3f}: the draft worker loads after the KV "
            "pool and runs out of memory; lower --mem-fraction-static"
        )
    return max(0, reserve - draft.weights_bytes), blocker


def draft_components(
    draft: DraftTerms | None, pool: int, cell: int, tp: int
) -> tuple[Component, ...]:
    """The draft's lines: its weights (from the reserved rest) and its KV token pool."""
    if draft is None:
        return ()
    out = [draft_weights_component(draft, "sglang", tp=tp)]
    if draft.n_layers:
        out.append(
            Component(
                category="kv_cache",
                label=f"draft KV token pool ({draft.n_layers} layer(s))",
                n_bytes=draft_pool_share(draft, pool, cell),
                formula="the target's max_total_num_tokens x the draft layers' bytes per token "
                "(the cell size is scaled by 1 + draft_layers / target_layers)",
                inputs={"cell_size": cell, "draft_layers": draft.n_layers},
                source="sglang/srt/model_executor/pool_configurator.py "
                "DefaultPoolConfigurator.__init__",
            )
        )
    return tuple(out)


def speculative_settings(
    draft: DraftTerms | None, settings: InferenceSettings
) -> dict[str, InputValue]:
    """The estimate's settings entries for the draft (none without one)."""
    if draft is None:
        return {}
    return {
        "speculative_algorithm": spoken_method(draft.method, "sglang"),
        "speculative_draft_model_path": settings.speculative_model,
        "speculative_num_steps": draft.k,
    }


def speculative_details(draft: DraftTerms | None, target_cell: int) -> dict[str, object]:
    """The runtime-details entry for the draft (none without one)."""
    if draft is None:
        return {}
    return {
        "speculative": {
            "algorithm": spoken_method(draft.method, "sglang"),
            "num_steps": draft.k,
            "draft_layers": draft.n_layers,
            "draft_weights_bytes": draft.weights_bytes,
            "target_cell_size_bytes": target_cell,
        }
    }

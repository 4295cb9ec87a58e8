"""vLLM's KV cache blocks: how many a rank's pool holds and how many one request needs.

vllm/v1/core/kv_cache_utils.py ``get_kv_cache_config``: ``num_blocks = available // page_size
// num_layers`` with ``page_size = block_size x per-layer bytes per token``; with sliding-window
layers the hybrid manager groups layers so that ``num_blocks = available // page_size //
group_size`` and reports ``num_blocks // n_groups x block_size`` tokens
(``_get_kv_cache_config_uniform_page_size``). ``check_enough_kv_cache_memory`` bounds the
longest ``max_model_len`` (:func:`max_len_that_fits`). Used by :func:`oomkit.estimate.vllm.
plan_vllm`.

Layer types whose pages differ (Gemma 4: sliding layers 16 KV heads x 256, full layers 4 x 512,
half the bytes per token) are first brought to one page size by ``unify_kv_cache_spec_page_size``
(``get_kv_cache_groups``, vllm/v1/core/kv_cache_utils.py at 001cabc1): a smaller page's
``block_size`` is multiplied by ``max_page // page`` (full layers hold 32 tokens a block where
sliding ones hold 16); a page that does not divide the largest raises NotImplementedError there
(here: no grouping, every layer counted at full length). ``_report_kv_cache_config`` logs
``num_blocks // n_groups x min_block_size`` tokens.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from oomkit.estimate.hf_kv import KvLayer, kv_bytes, kv_bytes_per_token
from oomkit.estimate.vllm_engines import VllmEngine
from oomkit.units import ceil_div

__all__ = ["KvBlocks", "kv_blocks", "max_len_that_fits"]


def max_len_that_fits(
    layers: tuple[KvLayer, ...], pool: int, limit: int, block: int, eng: VllmEngine
) -> int:
    """Largest max_model_len whose blocks fit (``check_enough_kv_cache_memory``: every layer
    needs ``cdiv(max_model_len, block_size)`` pages). Sliding layers need pages only up to their
    window where the hybrid manager groups them (:func:`kv_blocks`); elsewhere (V0, and V1
    without the grouping) every layer is allocated alike, at full length, as :func:`kv_blocks`
    counts them."""
    grouped = eng.hybrid_kv_groups and _hybrid_groups(layers) is not None
    if not grouped:
        layers = tuple(
            replace(lay, kind="full", window=None) if lay.kind == "sliding" else lay
            for lay in layers
        )
    # full-attention pages of a unified smaller page hold block x multiplier tokens
    step = block * max((_block_multipliers(layers) or {}).values(), default=1) if grouped else block
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if kv_bytes(layers, seq_len=ceil_div(mid, step) * step) <= pool:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True, slots=True, kw_only=True)
class KvBlocks:
    """The KV blocks of one rank: how many the pool holds, the tokens they hold (``num_blocks //
    groups x block_size`` with the hybrid manager), the groups and the blocks one request of
    ``max_model_len`` tokens needs."""

    num_blocks: int
    tokens: int
    groups: int
    blocks_per_request: int


def _hybrid_groups(layers: tuple[KvLayer, ...]) -> tuple[int, int, int] | None:
    """(group_size, n_groups, page bytes per token) of V1's uniform-page hybrid grouping.

    ``_get_kv_cache_config_uniform_page_size``: layers of one type (full / sliding window)
    are split into groups of ``group_size`` = the smallest type's layer count (or the largest
    when all counts are within 25%); every group shares ``group_size`` pools of blocks. Page
    sizes are unified first (:func:`_block_multipliers`). None when the layers are of one type or
    their page sizes cannot be unified.
    """
    kinds = Counter((lay.kind, lay.window) for lay in layers if lay.kind != "recurrent")
    multipliers = _block_multipliers(layers)
    if len(kinds) < 2 or multipliers is None:
        return None
    lo, hi = min(kinds.values()), max(kinds.values())
    size = hi if hi < lo * 1.25 else lo
    page = max(lay.bytes_per_token for lay in layers if lay.kind != "recurrent")
    return size, sum(ceil_div(n, size) for n in kinds.values()), page


def _block_multipliers(layers: tuple[KvLayer, ...]) -> dict[tuple[str, int | None], int] | None:
    """``unify_kv_cache_spec_page_size``: each layer type's block-size multiplier
    (``max_page // page``), 1 for the types of the largest page; None when a type's page does not
    divide the largest (vLLM raises NotImplementedError) or one type has two page sizes."""
    pages: dict[tuple[str, int | None], int] = {}
    for lay in layers:
        if lay.kind == "recurrent":
            continue
        key = (lay.kind, lay.window)
        if pages.setdefault(key, lay.bytes_per_token) != lay.bytes_per_token:
            return None
    if not pages:
        return None
    top = max(pages.values())
    if any(p <= 0 or top % p for p in pages.values()):
        return None
    return {key: top // p for key, p in pages.items()}


def kv_blocks(
    layers: tuple[KvLayer, ...],
    pool: int,
    *,
    block: int,
    max_len: int,
    batched: int,
    eng: VllmEngine,
) -> KvBlocks | None:
    """The blocks a pool of ``pool`` bytes holds (None when the layers cache nothing per token)."""
    per_tok = kv_bytes_per_token(layers)
    if per_tok <= 0:
        return None
    grouping = _hybrid_groups(layers) if eng.hybrid_kv_groups else None
    if grouping is None:
        blocks = max(0, pool) // (per_tok * block)
        return KvBlocks(
            num_blocks=blocks,
            tokens=blocks * block,
            groups=1,
            blocks_per_request=ceil_div(max_len, block),
        )
    size, n_groups, page = grouping
    mult = _block_multipliers(layers) or {}
    blocks = max(0, pool) // (page * block * size)
    # SlidingWindowSpec.max_memory_usage_bytes: cdiv(min(window - 1 + batched, len), bs) + 1,
    # bs the type's own (unified) block size
    need = 0
    kinds = Counter((lay.kind, lay.window) for lay in layers if lay.kind != "recurrent")
    for key, n in kinds.items():
        window = key[1]
        bs = block * mult.get(key, 1)
        per_group = (
            ceil_div(max_len, bs)
            if window is None
            else ceil_div(min(window - 1 + batched, max_len), bs) + 1
        )
        need += per_group * ceil_div(n, size)
    return KvBlocks(
        num_blocks=blocks,
        tokens=blocks // n_groups * block,
        groups=n_groups,
        blocks_per_request=need,
    )

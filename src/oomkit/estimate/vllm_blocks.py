"""vLLM's KV cache blocks: how many a rank's pool holds and how many one request needs.

vllm/v1/core/kv_cache_utils.py ``get_kv_cache_config``: ``num_blocks = available // page_size
// num_layers`` with ``page_size = block_size x per-layer bytes per token``; with sliding-window
layers the hybrid manager groups layers so that ``num_blocks = available // page_size //
group_size`` and reports ``num_blocks // n_groups x block_size`` tokens
(``_get_kv_cache_config_uniform_page_size``). ``check_enough_kv_cache_memory`` bounds the
longest ``max_model_len`` (:func:`max_len_that_fits`). Used by :func:`oomkit.estimate.vllm.
plan_vllm`.
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
    if not (eng.hybrid_kv_groups and _hybrid_groups(layers) is not None):
        layers = tuple(
            replace(lay, kind="full", window=None) if lay.kind == "sliding" else lay
            for lay in layers
        )
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if kv_bytes(layers, seq_len=ceil_div(mid, block) * block) <= pool:
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
    when all counts are within 25%); every group shares ``group_size`` pools of blocks.
    None when the layers are of one type or their page sizes differ.
    """
    kinds = Counter((lay.kind, lay.window) for lay in layers if lay.kind != "recurrent")
    pages = {lay.bytes_per_token for lay in layers if lay.kind != "recurrent"}
    if len(kinds) < 2 or len(pages) != 1:
        return None
    lo, hi = min(kinds.values()), max(kinds.values())
    size = hi if hi < lo * 1.25 else lo
    return size, sum(ceil_div(n, size) for n in kinds.values()), pages.pop()


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
    blocks = max(0, pool) // (page * block * size)
    # SlidingWindowSpec.max_memory_usage_bytes: cdiv(min(window - 1 + batched, len), bs) + 1
    need = 0
    kinds = Counter((lay.kind, lay.window) for lay in layers if lay.kind != "recurrent")
    for (_, window), n in kinds.items():
        per_group = (
            ceil_div(max_len, block)
            if window is None
            else ceil_div(min(window - 1 + batched, max_len), block) + 1
        )
        need += per_group * ceil_div(n, size)
    return KvBlocks(
        num_blocks=blocks,
        tokens=blocks // n_groups * block,
        groups=n_groups,
        blocks_per_request=need,
    )

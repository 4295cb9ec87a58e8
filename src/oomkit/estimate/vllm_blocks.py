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
``num_blocks // n_groups x min_block_size`` tokens until 0.20.x; from 0.21.0 (the 0.21.0 sdist's
kv_cache_utils.py) ``int(max_concurrency x max_model_len)`` with ``max_concurrency = num_blocks /
cdiv(sum of the groups' max_memory_usage_bytes, page_size)``
(``get_max_concurrency_for_kv_cache_config``): the pool is the same, but a hybrid model's
sliding groups now count their window rather than every token, so Gemma 4 reports about ten
times the tokens of 0.20 (vllm-project/vllm#43308).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from oomkit.estimate.hf_kv import KvLayer, kv_bytes, kv_bytes_per_token
from oomkit.estimate.vllm_engines import VllmEngine
from oomkit.units import ceil_div

__all__ = ["KvBlocks", "kv_blocks", "max_len_that_fits", "request_bytes"]


def request_bytes(
    layers: tuple[KvLayer, ...], max_len: int, *, block: int, batched: int, eng: VllmEngine
) -> int:
    """The KV bytes vLLM's start-up check says one request of ``max_len`` tokens needs.

    * V1 with the hybrid manager (0.9.1+, PR #17996) and layers it groups:
      ``_max_memory_usage_bytes_from_groups`` (vllm/v1/core/kv_cache_utils.py at 001cabc1):
      ``group_size x page_size x sum over groups of cdiv(spec.max_memory_usage_bytes,
      page_size)``, i.e. :func:`kv_blocks`' ``blocks_per_request`` pages in each of the
      ``group_size`` pools, padding layers included;
    * V1 otherwise: the sum over layers of each layer's ``max_memory_usage_bytes``
      (``check_enough_kv_cache_memory``, 0.8-0.9.0 and every release for a model of one
      layer type). A sliding-window layer's ``SlidingWindowSpec`` needs
      ``cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block_size) + 1`` pages
      ("+1 here because the sliding window may not start from the beginning of the block"),
      a full layer's ``FullAttentionSpec`` ``cdiv(max_model_len, block_size)``. Before PR
      #17996 the check ran on these specs and only then did ``unify_hybrid_kv_cache_specs``
      turn every ``SlidingWindowSpec`` of a model that also has full layers into a
      ``FullAttentionSpec`` for the allocation (``get_kv_cache_config``, 0.9.0's
      kv_cache_utils.py): the check counts the window, the pool every token;
    * V0: ``_check_if_can_support_max_seq_len`` / ``raise_if_cache_size_invalid``:
      ``max_seq_len <= block_size x num_gpu_blocks``, every layer alike at full length.
    Where V1's page sizes cannot be unified (vLLM raises NotImplementedError) every layer is
    counted at full length, as :func:`kv_blocks` counts the pool.
    """
    if eng.name.startswith("v0"):
        full = tuple(_as_full(lay) for lay in layers)
        return kv_bytes(full, seq_len=ceil_div(max_len, block) * block)
    grouping = _hybrid_groups(layers) if eng.hybrid_kv_groups else None
    if grouping is not None:
        size, _, page = grouping
        return size * page * block * _group_blocks(layers, max_len, block, batched)
    if eng.hybrid_kv_groups and _mixed(layers):
        # page sizes that cannot be unified: no grouping here, every layer at full length
        full = tuple(_as_full(lay) for lay in layers)
        return kv_bytes(full, seq_len=ceil_div(max_len, block) * block)
    total = 0
    for lay in layers:
        if lay.kind == "recurrent":
            total += lay.state_bytes_per_seq
        elif lay.window is None or (lay.chunked and not eng.hybrid_kv_groups):
            # (before PR #17996 Llama 4's chunked layers had a FullAttentionSpec: 0.9.0's
            # kv_cache_interface.py has no ChunkedLocalAttentionSpec)
            total += ceil_div(max_len, block) * block * lay.bytes_per_token
        else:
            pages = _window_pages(lay, max_len, block, batched)
            total += pages * block * lay.bytes_per_token
    return total


def max_len_that_fits(
    layers: tuple[KvLayer, ...],
    pool: int,
    limit: int,
    block: int,
    eng: VllmEngine,
    batched: int,
) -> int:
    """Largest max_model_len whose one request fits ``pool`` by vLLM's own start-up check
    (``check_enough_kv_cache_memory`` / ``estimate_max_model_len``: a binary search over
    :func:`request_bytes`, which never decreases with the length)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if request_bytes(layers, mid, block=block, batched=batched, eng=eng) <= pool:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _as_full(lay: KvLayer) -> KvLayer:
    return replace(lay, kind="full", window=None) if lay.kind == "sliding" else lay


def _mixed(layers: tuple[KvLayer, ...]) -> bool:
    return len({(lay.kind, lay.window) for lay in layers if lay.kind != "recurrent"}) > 1


def _window_pages(lay: KvLayer, max_len: int, bs: int, batched: int) -> int:
    """``SlidingWindowSpec.max_memory_usage_bytes`` in pages of ``bs`` tokens:
    ``cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), bs) + 1``; for a chunked
    local attention layer (Llama 4) ``ChunkedLocalAttentionSpec``'s ``cdiv(min(chunk +
    max_num_batched_tokens, max_model_len), bs)`` (vllm/v1/kv_cache_interface.py at 001cabc1)."""
    window = lay.window or 0
    if lay.chunked:
        return ceil_div(min(window + batched, max_len), bs)
    return ceil_div(min(window - 1 + batched, max_len), bs) + 1


def _group_blocks(layers: tuple[KvLayer, ...], max_len: int, block: int, batched: int) -> int:
    """Blocks one request of ``max_len`` tokens takes over every hybrid KV cache group
    (``cdiv(group spec max_memory_usage_bytes, page_size)`` summed over the groups), each type
    at its unified block size."""
    mult = _block_multipliers(layers) or {}
    size = (_hybrid_groups(layers) or (1, 1, 0))[0]
    need = 0
    kinds: dict[tuple[str, int | None], tuple[KvLayer, int]] = {}
    for lay in layers:
        if lay.kind != "recurrent":
            first, n = kinds.get((lay.kind, lay.window), (lay, 0))
            kinds[(lay.kind, lay.window)] = (first, n + 1)
    for key, (lay, n) in kinds.items():
        bs = block * mult.get(key, 1)
        if lay.window is None:
            per_group = ceil_div(max_len, bs)
        else:
            per_group = _window_pages(lay, max_len, bs, batched)
        need += per_group * ceil_div(n, size)
    return need


@dataclass(frozen=True, slots=True, kw_only=True)
class KvBlocks:
    """The KV blocks of one rank: how many the pool holds, the tokens vLLM logs as "GPU KV cache
    size" (``num_blocks // groups x block_size`` with the hybrid manager until 0.20; from 0.21
    ``int(num_blocks / blocks_per_request x max_model_len)``), the groups and the blocks one
    request of ``max_model_len`` tokens needs."""

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
        need = ceil_div(max_len, block)
        return KvBlocks(
            num_blocks=blocks,
            tokens=_logged_tokens(blocks, need, max_len)
            if eng.concurrency_tokens
            else blocks * block,
            groups=1,
            blocks_per_request=need,
        )
    size, n_groups, page = grouping
    blocks = max(0, pool) // (page * block * size)
    # SlidingWindowSpec.max_memory_usage_bytes: cdiv(min(window - 1 + batched, len), bs) + 1,
    # bs the type's own (unified) block size
    need = _group_blocks(layers, max_len, block, batched)
    logged = (
        _logged_tokens(blocks, need, max_len)
        if eng.concurrency_tokens
        else blocks // n_groups * block
    )
    return KvBlocks(num_blocks=blocks, tokens=logged, groups=n_groups, blocks_per_request=need)


def _logged_tokens(blocks: int, need: int, max_len: int) -> int:
    """vLLM 0.21+'s "GPU KV cache size": ``int(max_concurrency x max_model_len)`` with
    ``max_concurrency = num_blocks / num_block_per_request`` (``_report_kv_cache_config``)."""
    return int(blocks / max(1, need) * max_len)

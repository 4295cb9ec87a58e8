"""KV-cache bytes per token per layer as vLLM, SGLang and transformers store them.

Full and sliding attention store K (``head_dim``) and V (``v_head_dim``) per KV head; with tensor
parallelism each rank holds ``max(1, kv_heads / tp)`` heads (vLLM replicates KV heads when
``kv_heads < tp``: vllm/config ``get_num_kv_heads``). MLA stores one latent of
``kv_lora_rank + qk_rope_head_dim`` elements per token, replicated on every TP rank
(vllm/v1/kv_cache_interface.py ``MLAAttentionSpec``). Recurrent layers (Mamba, gated delta-net)
hold a constant state per sequence (``MambaSpec``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oomkit.estimate.hf_weights import dtype_bytes
from oomkit.spec.model import LAYER_FFN, LAYER_SLIDING, ModelSpec
from oomkit.units import ceil_div

__all__ = [
    "KvLayer",
    "decode_regrow_block_bytes",
    "decode_regrow_bytes",
    "kv_bytes",
    "kv_bytes_per_token",
    "kv_elem_bytes",
    "kv_layers",
    "regrow_stranded_bytes",
]


def kv_elem_bytes(cache_dtype: str | None, model_elem_bytes: int) -> int:
    """Bytes per cached K/V element for ``--kv-cache-dtype`` (vLLM and SGLang spell it alike).

    ``auto`` (and vLLM's ``model``) keep the model's dtype; every ``fp8*`` variant is one byte.

    >>> kv_elem_bytes(None, 2), kv_elem_bytes("fp8_e5m2", 2), kv_elem_bytes("float32", 2)
    (2, 1, 4)
    """
    kv = (cache_dtype or "auto").lower()
    if kv in ("auto", "model"):
        return model_elem_bytes
    if kv.startswith("fp8"):
        return 1
    return dtype_bytes(kv)


@dataclass(frozen=True, slots=True, kw_only=True)
class KvLayer:
    """One layer's cache: its kind and bytes per token (per TP rank), a sliding window's
    tokens, a recurrent layer's state per sequence."""

    layer: int
    kind: str  # "full" | "sliding" | "mla" | "recurrent"
    bytes_per_token: int  # per TP rank
    window: int | None = None  # sliding layers: tokens kept per sequence
    state_bytes_per_seq: int = 0  # recurrent layers
    #: the window is an attention chunk (Llama 4's ``attention_chunk_size``), not a slide
    chunked: bool = False


def kv_layers(
    spec: ModelSpec, *, kv_elem_bytes: int, state_elem_bytes: int, tp: int = 1
) -> tuple[KvLayer, ...]:
    """One entry per layer that holds cache (attention or recurrent state)."""
    out: list[KvLayer] = []
    rec = spec.recurrent
    recurrent = frozenset(spec.recurrent_layers())  # once: O(n) for n layers, not O(n^2)
    for i, kind in enumerate(spec.layer_types):
        if i in recurrent:
            if rec is None:
                continue
            state = rec.conv_state_elements + rec.ssm_state_elements
            out.append(
                KvLayer(
                    layer=i,
                    kind="recurrent",
                    bytes_per_token=0,
                    state_bytes_per_seq=ceil_div(state, tp) * state_elem_bytes,
                )
            )
            continue
        if kind == LAYER_FFN:  # a Nemotron-H MLP/MoE block: no mixer, no cache
            continue
        if spec.mla is not None:
            out.append(
                KvLayer(layer=i, kind="mla", bytes_per_token=spec.mla.latent_dim * kv_elem_bytes)
            )
            continue
        heads = max(1, spec.kv_heads(i) // tp)
        per_tok = heads * (spec.layer_head_dim(i) + spec.layer_v_head_dim(i)) * kv_elem_bytes
        if kind == LAYER_SLIDING and spec.sliding_window:
            out.append(
                KvLayer(
                    layer=i, kind="sliding", bytes_per_token=per_tok, window=spec.sliding_window
                )
            )
        else:
            out.append(KvLayer(layer=i, kind="full", bytes_per_token=per_tok))
    return tuple(out)


def kv_bytes_per_token(layers: Sequence[KvLayer]) -> int:
    """Bytes per token of context summed over layers, counting sliding layers fully."""
    return sum(lay.bytes_per_token for lay in layers)


def kv_bytes(
    layers: Sequence[KvLayer], *, seq_len: int, n_seqs: int = 1, held_tokens: int = 0
) -> int:
    """Cache bytes for ``n_seqs`` sequences of ``seq_len`` tokens (sliding: min(len, window)).

    ``held_tokens``: tokens a sliding layer holds whatever its window, at least (transformers'
    ``DynamicSlidingWindowLayer`` keeps a view of the whole prefill's states: the prompt)."""
    total = 0
    for lay in layers:
        if lay.kind == "recurrent":
            total += lay.state_bytes_per_seq * n_seqs
        else:
            tokens = seq_len if lay.window is None else max(min(seq_len, lay.window), held_tokens)
            total += lay.bytes_per_token * tokens * n_seqs
    return total


def decode_regrow_bytes(
    layers: Sequence[KvLayer], prompt: int, new: int, n_seqs: int, held_tokens: int = 0
) -> int:
    """The prefill's K/V blocks that a ``DynamicCache`` re-requests one token larger at the
    first decode step (0 when ``generate()`` makes no decode step: ``new < 2``).

    transformers' ``DynamicLayer.update`` grows each layer's keys and values by
    ``torch.cat([self.keys, key_states], dim=-2)`` (``cache_utils.py``): a new tensor of
    ``prompt + 1`` tokens, after which the prompt-sized one is freed. PyTorch's caching
    allocator serves a request only from a free block at least as large (``get_free_block``,
    best fit, c10/cuda/CUDACachingAllocator.cpp), so a freed prefill block serves none of the
    next layers' one-token-larger requests unless it merges with free neighbours
    (``try_merge_blocks``); where the prefill placed it between blocks that stay (other
    layers' K/V, in segments split for the prefill's activations), it stays a hole that
    ``release_cached_blocks`` cannot return to CUDA (only whole free segments are released),
    and the new copies need new segments. These blocks are what can be stranded so: at most
    this many bytes (recurrent state is updated in place, not grown)."""
    if new < 2:
        return 0
    grown = [lay for lay in layers if lay.kind != "recurrent"]
    return kv_bytes(grown, seq_len=prompt, n_seqs=n_seqs, held_tokens=held_tokens)


def decode_regrow_block_bytes(
    layers: Sequence[KvLayer], prompt: int, n_seqs: int, held_tokens: int = 0
) -> int:
    """The smallest K or V block the prefill leaves in a ``DynamicCache`` (half a layer's
    K/V at ``prompt`` tokens; 0 when no layer grows): the unit :func:`regrow_stranded_bytes`
    packs into segments. At ``prompt + 1`` it is the decode's smallest request."""
    sizes = [
        kv_bytes([lay], seq_len=prompt, n_seqs=n_seqs, held_tokens=held_tokens) // 2
        for lay in layers
        if lay.kind != "recurrent"
    ]
    return min((s for s in sizes if s > 0), default=0)


#: c10/cuda/CUDACachingAllocator.cpp ``get_allocation_size``: a request under kMinLargeAlloc
#: (10 MiB) takes a kLargeBuffer (20 MiB) segment, a larger one its size rounded up to
#: kRoundLarge (2 MiB): no segment is larger than the largest request so rounded
_LARGE_BUFFER = 20 << 20
_MIN_LARGE_ALLOC = 10 << 20
_ROUND_LARGE = 2 << 20


def regrow_stranded_bytes(regrow: int, block: int, grown: int, largest_request: int) -> int:
    """Of the ``regrow`` bytes of K/V the first decode step re-requests one token larger, the
    most that can stand stranded when a request finds no free block (``block``: the smallest
    prefill K or V block, ``grown``: the same block one token larger, the smallest request).

    The prefill carves its K/V blocks (each at least ``block``) out of segments it split for
    its activations (``get_allocation_size``: none larger than the largest request rounded up
    to 2 MiB, or 20 MiB), so a segment has room for at most ``m = segment // block`` of them.
    When a decode request finds no free block (``get_free_block``: best fit, any free block at
    least as large serves it) every free run is shorter than ``grown``; freed neighbours have
    merged (``try_merge_blocks``), so free runs are separated by live blocks (K/V, each at least
    ``block``), and a segment with no live block is whole, which ``release_cached_blocks``
    returns to CUDA before the OOM. Of a segment's m blocks' room, free runs and live blocks
    alternate: at most ceil(m/2) runs, each under ``grown``, strand; ceil(m/2)/m is 1/2 at
    m = 2 and at most 2/3 (m = 3) above: this bound, scaled by grown/block. With room for less
    than two blocks the segment's other tenant is not a K/V block: no bound is claimed (the
    whole ``regrow``). Beyond it stays the remainder the prefill already stranded there."""
    if regrow <= 0 or block <= 0:
        return max(regrow, 0)
    segment = max(-(-largest_request // _ROUND_LARGE) * _ROUND_LARGE, _LARGE_BUFFER)
    m = segment // block
    if m < 2:
        return regrow
    num, den = (1, 2) if m == 2 else (2, 3)
    grown = max(grown, block)
    # the decode's own new segments: a request under kMinLargeAlloc shares a 20 MiB one with
    # the next (k per segment), a larger one takes its size rounded up to 2 MiB; the rest of
    # each is a run shorter than a request too
    size = _LARGE_BUFFER if grown < _MIN_LARGE_ALLOC else -(-grown // _ROUND_LARGE) * _ROUND_LARGE
    k = max(1, size // grown)
    slack = -(-(size - k * grown) // k)
    return min(regrow, -(-regrow * num * grown // (den * block)) + (regrow // block) * slack)

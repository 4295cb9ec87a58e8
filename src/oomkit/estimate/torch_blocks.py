"""What PyTorch's CUDA caching allocator reserves for weights loaded one tensor at a time (pure).

``from_pretrained`` puts every parameter on its GPU with its own allocation: accelerate's
``set_module_tensor_to_device`` (``value.to(device)``) under a ``device_map``, or
``Module._apply`` (one ``param.to`` each) for ``model.to("cuda")``. accelerate plans the
placement in raw bytes (``compute_module_sizes``: numel x element size), but each request is
served by the caching allocator (PyTorch c10/cuda/CUDACachingAllocator.cpp, the same since
PyTorch 1.x; constants in c10/core/AllocatorConfig.h from 2.8):

* ``round_size``: a request is rounded up to a multiple of ``kMinBlockSize`` = 512 bytes;
* ``get_allocation_size``: a new segment (one ``cudaMalloc``) is ``kSmallBuffer`` = 2 MiB for
  requests up to ``kSmallSize`` = 1 MiB, ``kLargeBuffer`` = 20 MiB for requests under
  ``kMinLargeAlloc`` = 10 MiB, else the request rounded up to ``kRoundLarge`` = 2 MiB;
* ``get_free_block``: a cached free block of the pool at least as large is reused first
  (best fit);
* ``should_split``: a large-pool block is split only when the rest is MORE than ``kSmallSize``
  (1 MiB); otherwise the request keeps the whole block and the rest is lost with it.

So a 15 MiB tensor (DeepSeek-V2's 5120 x 1536 bf16 expert projections) gets a 16 MiB segment and
keeps it whole: 1 MiB (6.7%) that accelerate never counted, per expert matrix. Split-off rests
stay cached in their segment; at an out-of-memory retry ``release_cached_blocks`` frees only
whole free segments, so a rest nothing later fits is reserved memory all the same.

MoE experts: transformers before 5.0 (generation ``moe_experts="loop"``) and the Hub's remote
code hold every routed expert as its own ``nn.Linear`` (one allocation per expert matrix);
families that fused them earlier, and 5.0+, allocate one stacked tensor.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence

from oomkit.estimate.breakdown import Component
from oomkit.estimate.hf_weights import PLAIN_DTYPES
from oomkit.estimate.transformers_placement import group_key
from oomkit.spec.model import ModelSpec, TensorInfo

__all__ = [
    "FUSED_EXPERT_FAMILIES",
    "allocation_units",
    "reserved_bytes",
    "weights_blocks_component",
]

_MIN_BLOCK = 512  # kMinBlockSize
_SMALL_SIZE = 1 << 20  # kSmallSize: largest "small" request
_SMALL_BUFFER = 2 << 20  # kSmallBuffer
_LARGE_BUFFER = 20 << 20  # kLargeBuffer
_MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc
_ROUND_LARGE = 2 << 20  # kRoundLarge

#: model types whose transformers 4.x modeling code already holds the routed experts as one
#: stacked parameter (GptOssExperts, Llama4TextExperts, DbrxExperts, GraniteMoe's and JetMoe's
#: ParallelExperts): one allocation per stacked tensor
FUSED_EXPERT_FAMILIES = frozenset(
    {"gpt_oss", "llama4", "llama4_text", "dbrx", "granitemoe", "jetmoe"}
)


def _round(n: int) -> int:
    return max(_MIN_BLOCK, -(-n // _MIN_BLOCK) * _MIN_BLOCK)


def _segment(size: int) -> int:
    if size <= _SMALL_SIZE:
        return _SMALL_BUFFER
    if size < _MIN_LARGE_ALLOC:
        return _LARGE_BUFFER
    return -(-size // _ROUND_LARGE) * _ROUND_LARGE


def reserved_bytes(requests: Iterable[int]) -> int:
    """Bytes of segments the caching allocator holds after serving ``requests`` in order, none
    freed (one stream). Small requests (<= 1 MiB) are packed into 2 MiB segments at 512-byte
    granularity; large ones are served best-fit from cached rests, split only when more than
    1 MiB would remain.

    >>> reserved_bytes([15 << 20])  # a 15 MiB tensor keeps its whole 16 MiB segment
    16777216
    >>> reserved_bytes([32 << 20, 8 << 20, 8 << 20])  # two 8 MiB tensors share a 20 MiB one
    54525952
    """
    total = 0
    pools: tuple[list[int], list[int]] = ([], [])  # cached rests (sorted): small, large pool
    for n in requests:
        if n <= 0:
            continue
        size = _round(n)
        small = size <= _SMALL_SIZE
        free = pools[0] if small else pools[1]
        i = bisect.bisect_left(free, size)
        if i < len(free):
            block = free.pop(i)
        else:
            block = _segment(size)
            total += block
        rest = block - size
        if rest >= _MIN_BLOCK if small else rest > _SMALL_SIZE:  # should_split
            bisect.insort(free, rest)
    return total


def allocation_units(
    tensors: Sequence[TensorInfo], sizes: Sequence[int], *, per_expert: bool
) -> list[int]:
    """One request per parameter as ``from_pretrained`` allocates them: a stacked expert tensor
    ``[n_expert, out, in]`` is ``n_expert`` requests when ``per_expert`` (one ``nn.Linear`` per
    expert), else one."""
    out: list[int] = []
    for t, sz in zip(tensors, sizes, strict=True):
        n_exp = t.shape[0] if len(t.shape) == 3 else 1
        if per_expert and t.role.rpartition(".")[0].endswith("_exps") and n_exp > 1:
            out.extend([sz // n_exp] * n_exp)
        else:
            out.append(sz)
    return out


def weights_blocks_component(
    spec: ModelSpec,
    quant: str | None,
    effects: Mapping[str, object],
    tensors: Sequence[TensorInfo],
    sizes: Sequence[int],
    where: Mapping[tuple[int, int], int],
    device: int,
    backend: str,
) -> Component:
    """The caching allocator's segments beyond the raw bytes of the weights on GPU ``device``
    (accelerate's placement ``where``, keyed by module group). Only for weights in a plain
    dtype (quantized formats allocate their own packed tensors) on a CUDA/ROCm device (MPS has
    its own allocator); routed experts one request each in the generations that loop over
    ``nn.Linear`` experts (``moe_experts="loop"``) outside :data:`FUSED_EXPERT_FAMILIES`."""
    plain = (
        spec.quantization is None and (quant or spec.torch_dtype or "bf16").lower() in PLAIN_DTYPES
    )
    on = backend in ("cuda", "rocm") and plain
    on_device = [on and where[group_key(t)] == device for t in tensors]
    per_expert = (
        effects.get("moe_experts") == "loop" and spec.model_type not in FUSED_EXPERT_FAMILIES
    )
    units = allocation_units(
        [t for t, on in zip(tensors, on_device, strict=True) if on],
        [s for s, on in zip(sizes, on_device, strict=True) if on],
        per_expert=per_expert,
    )
    return Component(
        category="weights",
        label="caching allocator rounding of the weights",
        n_bytes=reserved_bytes(units) - sum(units),
        formula=(
            "segments held for one allocation per parameter"
            + (" (one per routed expert matrix)" if per_expert else "")
            + " minus their bytes: 2 MiB rounding of requests >= 10 MiB, kept whole when "
            "<= 1 MiB would be left (should_split); 20 MiB segments for 1-10 MiB requests"
        ),
        source="PyTorch c10/cuda/CUDACachingAllocator.cpp (get_allocation_size, should_split)",
    )

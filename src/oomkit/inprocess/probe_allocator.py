"""Replay a probe's allocation trace through a model of PyTorch's CUDA caching allocator.

``torch.cuda.max_memory_allocated`` counts the blocks handed out; ``max_memory_reserved`` (and
what ``nvidia-smi`` shows, less the CUDA context) counts the *segments* the allocator took from
``cudaMalloc`` and keeps cached. The gap between the two is not a constant: it is what this
sequence of requests does to the allocator's pools. :func:`replay` runs the probe's trace
(:attr:`oomkit.inprocess.probe_tracker.MemoryTracker.events`) through the rules of
``c10/cuda/CUDACachingAllocator.cpp`` (pytorch/pytorch, ``DeviceCachingAllocator::malloc`` /
``free``), default settings (no ``max_split_size_mb``, no ``expandable_segments``, no
``roundup_power2_divisions``):

* ``round_size``: requests are rounded up to a multiple of ``kMinBlockSize`` = 512 bytes;
* two pools: *small* for blocks of at most ``kSmallSize`` = 1 MiB, *large* for the rest, each
  keyed by the stream a block was allocated on (a cached block serves only its own stream);
* ``get_free_block``: the best fit, the smallest cached block of the pool at least as large as
  the request (lowest address among equals: the ``std::set`` order of ``BlockComparatorSize``);
* ``alloc_block`` when nothing fits: a new segment of ``get_allocation_size``: 2 MiB
  (``kSmallBuffer``) for small requests, 20 MiB (``kLargeBuffer``) for large ones under
  ``kMinLargeAlloc`` = 10 MiB, else the request rounded up to 2 MiB (``kRoundLarge``);
* ``should_split``: the remainder of a block becomes a free block when it is at least 512 bytes
  (small pool) or more than 1 MiB (large pool); otherwise the whole block is handed out;
* ``free_block``: a freed block merges with free neighbours of its segment
  (``try_merge_blocks``) and goes back to its pool. Segments are never returned to CUDA
  while ``cudaMalloc`` succeeds;
* on a card that is full (``limit_bytes``: what the allocator may take from CUDA), a request
  no cached block fits calls ``release_cached_blocks``, which returns every cached block that
  is a whole segment, and retries ``cudaMalloc`` once; when that fails too, the request raises
  the OOM. A segment that holds one live block stays, however much of it is free: this is why a
  run needs more than its ``max_memory_allocated`` (:func:`smallest_limit`).

Ties in the best fit go to the lowest address, so where ``cudaMalloc`` puts a new segment
matters: on the H200 of ``benchmarks/gpu/results/allocator_traces_h200.json.gz`` it handed out
lower addresses than the segments before in 199 of 206 cases, and a replay that puts each new
segment below the others reproduces the real ``max_memory_reserved`` of all six recorded
``generate()`` runs to the byte (placing them above missed three by up to 268 MB).

The cuBLAS workspace is an allocation too: ``at::cuda::getCurrentCUDABlasHandle`` takes it from
the caching allocator (``CublasHandlePool.cpp`` ``getNewWorkspace``) at the first matmul, of
``getChosenWorkspaceSize()`` bytes: ``CUBLAS_WORKSPACE_CONFIG`` default ``:4096:2:16:8`` =
2 x 4096 KiB + 8 x 16 KiB; :data:`CUBLAS_WORKSPACE_BYTES` is prepended to the trace by
:func:`replay` when asked (one handle: one stream, one thread).

>>> MiB = 1 << 20
>>> r = replay([(1, 3 * MiB), (1, -1), (2, 2 * MiB)])  # 3 MiB -> 20 MiB segment, reused
>>> r.reserved_peak_bytes // MiB, r.allocated_peak_bytes // MiB
(20, 3)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["CUBLAS_WORKSPACE_BYTES", "AllocatorPeaks", "replay", "smallest_limit"]

K_MIN_BLOCK_SIZE = 512
K_SMALL_SIZE = 1 << 20
K_SMALL_BUFFER = 2 << 20
K_LARGE_BUFFER = 20 << 20
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20
#: CublasHandlePool.cpp getChosenWorkspaceSize(): default ":4096:2:16:8" (KiB x count)
CUBLAS_WORKSPACE_BYTES = 4096 * 1024 * 2 + 16 * 1024 * 8
_WORKSPACE_KEY = -1


@dataclass(frozen=True, slots=True)
class AllocatorPeaks:
    """Peaks of one replay: blocks handed out, and segments reserved from CUDA."""

    allocated_peak_bytes: int
    reserved_peak_bytes: int
    segments: int
    #: False when ``limit_bytes`` was given and a request could not be served under it
    survived: bool = True


class _OutOfMemory(Exception):
    """A request that neither a cached block nor a new segment under the limit can serve."""


class _Block:
    __slots__ = ("addr", "free", "next", "prev", "segment", "size", "small", "stream")

    def __init__(self, addr: int, size: int, small: bool, segment: int, stream: int = 0) -> None:
        self.addr = addr
        self.size = size
        self.small = small
        self.segment = segment
        self.stream = stream
        self.free = True
        self.prev: _Block | None = None
        self.next: _Block | None = None


def _round_size(n: int) -> int:
    if n < K_MIN_BLOCK_SIZE:
        return K_MIN_BLOCK_SIZE
    return -(-n // K_MIN_BLOCK_SIZE) * K_MIN_BLOCK_SIZE


def _allocation_size(n: int) -> int:
    if n <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if n < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return -(-n // K_ROUND_LARGE) * K_ROUND_LARGE


_TOP_ADDRESS = 1 << 62


class _Allocator:
    def __init__(self, limit: int | None = None) -> None:
        # per (stream, small) pool: sorted (size, addr) of free blocks, and addr -> block
        self.pools: dict[tuple[int, bool], list[tuple[int, int]]] = {}
        self.blocks: dict[int, _Block] = {}
        self.limit = limit
        self.low_addr = _TOP_ADDRESS  # each new segment goes below the others
        self.reserved = 0
        self.allocated = 0
        self.reserved_peak = 0
        self.allocated_peak = 0
        self.segments = 0

    def _insert(self, b: _Block) -> None:
        b.free = True
        bisect.insort(self.pools.setdefault((b.stream, b.small), []), (b.size, b.addr))

    def _remove(self, b: _Block) -> None:
        pool = self.pools[(b.stream, b.small)]
        i = bisect.bisect_left(pool, (b.size, b.addr))
        del pool[i]

    def malloc(self, n: int, stream: int = 0) -> _Block:
        size = _round_size(n)
        small = size <= K_SMALL_SIZE
        pool = self.pools.setdefault((stream, small), [])
        i = bisect.bisect_left(pool, (size, -1))
        if i < len(pool):
            block = self.blocks[pool[i][1]]
            del pool[i]
        else:
            seg = _allocation_size(size)
            if self.limit is not None and self.reserved + seg > self.limit:
                self._release_cached()
                if self.reserved + seg > self.limit:
                    raise _OutOfMemory
            self.low_addr -= seg + K_SMALL_BUFFER  # a gap: segments never merge
            block = _Block(self.low_addr, seg, small, self.segments, stream)
            self.blocks[block.addr] = block
            self.segments += 1
            self.reserved += seg
            self.reserved_peak = max(self.reserved_peak, self.reserved)
        remaining = block.size - size
        if (small and remaining >= K_MIN_BLOCK_SIZE) or (not small and remaining > K_SMALL_SIZE):
            rest = _Block(block.addr + size, remaining, small, block.segment, block.stream)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self.blocks[rest.addr] = rest
            self._insert(rest)
        block.free = False
        self.allocated += block.size
        self.allocated_peak = max(self.allocated_peak, self.allocated)
        return block

    def _release_cached(self) -> None:
        """``release_cached_blocks``: cudaFree every cached block that is a whole segment."""
        for pool in self.pools.values():
            keep = []
            for size, addr in pool:
                b = self.blocks[addr]
                if b.prev is None and b.next is None:
                    del self.blocks[addr]
                    self.reserved -= size
                else:
                    keep.append((size, addr))
            pool[:] = keep

    def free(self, block: _Block) -> None:
        self.allocated -= block.size
        old_addr = block.addr
        for other in (block.prev, block.next):
            if other is None or not other.free:
                continue
            self._remove(other)
            del self.blocks[other.addr]
            if other is block.prev:
                block.addr, block.prev = other.addr, other.prev
                if other.prev is not None:
                    other.prev.next = block
            else:
                block.next = other.next
                if other.next is not None:
                    other.next.prev = block
            block.size += other.size
        if block.addr != old_addr:
            del self.blocks[old_addr]
        self.blocks[block.addr] = block
        self._insert(block)


def replay(
    events: Iterable[tuple[int, int]],
    *,
    skip: frozenset[int] | set[int] = frozenset(),
    cublas_workspace: bool = False,
    repeat_from: int | None = None,
    repeats: int = 1,
    streams: Mapping[int, int] | None = None,
    limit_bytes: int | None = None,
    initial_blocks: Iterable[tuple[int, int]] = (),
) -> AllocatorPeaks:
    """Peaks of the caching allocator for a trace of ``(key, n_bytes)`` / ``(key, -1)`` events.

    Args:
        events: allocations (requested bytes) and frees, in program order.
        skip: keys of storages that never came from the caching allocator.
        cublas_workspace: allocate the cuBLAS workspace first (a training step runs matmuls).
        repeat_from: index of the first event of one training step; with ``repeats`` > 1 that
            step runs ``repeats`` times (the allocator reaches the steady state of a long run:
            each step finds the blocks the previous one left cached). What a step allocated
            and did not free is freed at the step's end (the next step frees it).
        streams: the stream each key was allocated on (absent: the default stream, 0). A
            block is cached in its allocation stream's pool and reused only by requests on that
            stream (``get_free_block`` looks up ``BlockPool`` by ``(stream, size)``), so FSDP's
            all-gather and reduce-scatter streams keep segments of their own.
        limit_bytes: the most the allocator may reserve (the card less what is not the
            allocator's: CUDA context, other processes); None: unlimited.
        initial_blocks: ``(segment_bytes, block_bytes)`` alive before the trace (a warm
            process's cuBLAS workspace inside a segment it once split for something else).
    """
    on = streams or {}
    a = _Allocator()
    live: dict[object, _Block] = {}
    for i, (segment_bytes, block_bytes) in enumerate(initial_blocks):
        a.free(a.malloc(segment_bytes))
        live[("initial", i)] = a.malloc(block_bytes)
    if cublas_workspace:
        live[_WORKSPACE_KEY] = a.malloc(CUBLAS_WORKSPACE_BYTES)
    a.limit = limit_bytes
    trace = list(events)

    def run(part: list[tuple[int, int]], tag: int) -> set[object]:
        made: set[object] = set()
        for key, n in part:
            if key in skip:
                continue
            k: object = key if tag == 0 else (key, tag)
            if n >= 0:
                if n > 0:
                    live[k] = a.malloc(n, on.get(key, 0))
                    made.add(k)
            else:
                block = live.pop(k, None)
                if block is not None:
                    a.free(block)
                    made.discard(k)
        return made

    survived = True
    try:
        run(trace, 0)
        if repeat_from is not None:
            step = trace[repeat_from:]
            left: set[object] = {k for k, _ in step if k in live}
            for tag in range(1, repeats):
                for k in left:
                    block = live.pop(k, None)
                    if block is not None:
                        a.free(block)
                left = run(step, tag)
    except _OutOfMemory:
        survived = False
    return AllocatorPeaks(
        allocated_peak_bytes=a.allocated_peak,
        reserved_peak_bytes=a.reserved_peak,
        segments=a.segments,
        survived=survived,
    )


def smallest_limit(
    events: Iterable[tuple[int, int]],
    *,
    step_bytes: int = 1 << 20,
    **kwargs: object,
) -> int:
    """The smallest ``limit_bytes`` (a multiple of ``step_bytes``) the trace survives under:
    what the allocator needs of the card, between ``max_memory_allocated`` (no segment could
    hold less) and the unlimited run's ``max_memory_reserved`` (which never needs
    ``release_cached_blocks``). ``kwargs`` are :func:`replay`'s."""
    trace = list(events)
    free = replay(trace, **kwargs)  # type: ignore[arg-type]
    lo = free.allocated_peak_bytes // step_bytes - 1  # dies at lo (at most the allocated peak)
    hi = -(-free.reserved_peak_bytes // step_bytes)  # survives at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if replay(trace, limit_bytes=mid * step_bytes, **kwargs).survived:  # type: ignore[arg-type]
            hi = mid
        else:
            lo = mid
    return hi * step_bytes

"""Storage-level memory accounting for the FakeTensor probe (a ``TorchDispatchMode``).

Every ATen op that runs while the tracker is active is seen here after it ran; each *storage*
its outputs hold is recorded once, by identity (views share their base's storage and cost
nothing), with its byte size. A weak reference with a callback on the ``UntypedStorage``
notices when autograd or Python drops the last reference, which is exactly when the CUDA
caching allocator would get the block back. This is the mechanism of PyTorch's own
``torch.distributed._tools.mem_tracker.MemTracker`` (``_WeakRefInfo`` + ``weakref.ref(st,
callback)``); it is re-implemented here so that categories, phases and the allocator's
rounding are ours to define.

Categories are decided by origin and settled when the run ends, so the breakdown at the peak
uses each storage's final role:

* ``parameters``, ``buffers``, ``inputs``: registered before the run;
* ``gradients``: a ``param.grad`` storage (``register_post_accumulate_grad_hook``);
* ``optimizer_state``: a tensor held in ``optimizer.state`` after the step;
* ``kv_cache`` / ``outputs``: what an inference forward returns;
* ``activations``: allocated in the forward and still alive when the forward returned (saved
  for backward, or the returned logits/loss);
* ``temporaries``: everything else (freed inside its phase: workspaces, upcasts, the
  gradients of activations, the optimizer's foreach intermediates).

Rounding (``round_to_cuda_blocks``) follows ``c10/cuda/CUDACachingAllocator.cpp``
(pytorch/pytorch): ``round_size`` rounds every request up to a multiple of
``kMinBlockSize`` = 512 bytes; a request of ``kMinLargeAlloc`` = 10 MiB or more gets a fresh
segment of ``get_allocation_size`` = a multiple of ``kRoundLarge`` = 2 MiB, and the block is
*not* split when the remainder is at most ``kSmallSize`` = 1 MiB (``should_split`` for the
large pool: ``remaining > kSmallSize``), so the whole segment is the allocated block. This is
what ``torch.cuda.memory_allocated`` counts (block sizes), for a fresh allocator; reuse of
larger cached blocks is not simulated.

Sharded runs (:mod:`oomkit.inprocess.probe_fsdp`): a ``DTensor`` (FSDP2's sharded parameters,
their gradients and optimizer states) is counted by its local shard, the storage this rank
holds; ``UntypedStorage.resize_`` (how FSDP2 frees and re-allocates its all-gathered
parameters, ``free_storage``/``alloc_storage`` in ``torch/distributed/fsdp/_fully_shard/
_fsdp_param.py``) is not an ATen op a dispatch mode sees, so while the tracker is active it is
wrapped, as PyTorch's ``MemTracker._track_resize`` does: a resize to 0 frees the storage, a
resize from 0 allocates it again; a storage ever resized counts as ``parameters`` (FSDP2 resizes
only the all-gathered parameters; its flat all-gather buffer is an ordinary allocation).
FSDP allocates its all-gather and reduce-scatter buffers inside ``device_handle.stream(s)`` on
its own streams; on the CPU that is ``torch.cpu.stream``, wrapped the same way so that each
allocation records its stream for the allocator replay's per-stream pools.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map_only
from torch.utils.weak import WeakIdKeyDictionary

__all__ = [
    "CATEGORIES",
    "K_MIN_BLOCK_SIZE",
    "K_MIN_LARGE_ALLOC",
    "K_ROUND_LARGE",
    "K_SMALL_SIZE",
    "MemoryTracker",
    "cuda_block_bytes",
]

#: c10/cuda/CUDACachingAllocator.cpp constants
K_MIN_BLOCK_SIZE = 512
K_SMALL_SIZE = 1 << 20
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20

CATEGORIES: tuple[str, ...] = (
    "parameters",
    "buffers",
    "inputs",
    "gradients",
    "optimizer_state",
    "activations",
    "kv_cache",
    "outputs",
    "temporaries",
)


def cuda_block_bytes(n_bytes: int) -> int:
    """Bytes the CUDA caching allocator's block for an ``n_bytes`` request occupies.

    ``round_size`` (512-byte multiple; 0-byte requests take no block), then for requests of
    10 MiB or more a fresh 2 MiB-rounded segment that is kept whole when the remainder is
    at most 1 MiB (``should_split``). See the module docstring.

    >>> cuda_block_bytes(1), cuda_block_bytes(513)
    (512, 1024)
    >>> MiB = 2**20  # 20 MiB + 1: the 22 MiB segment is split (2 MiB left); 21 MiB + 1: kept whole
    >>> cuda_block_bytes(20 * MiB + 1) / MiB, cuda_block_bytes(21 * MiB + 1) / MiB
    (20.00048828125, 22.0)
    """
    if n_bytes <= 0:
        return 0
    rounded = -(-n_bytes // K_MIN_BLOCK_SIZE) * K_MIN_BLOCK_SIZE
    if rounded < K_MIN_LARGE_ALLOC:
        return rounded
    segment = -(-rounded // K_ROUND_LARGE) * K_ROUND_LARGE
    return segment if segment - rounded <= K_SMALL_SIZE else rounded


def _local(t: torch.Tensor) -> torch.Tensor:
    """The tensor whose storage this process holds: a ``DTensor``'s local shard, else ``t``."""
    inner = getattr(t, "_local_tensor", None)
    return inner if isinstance(inner, torch.Tensor) else t


@dataclass(eq=False, slots=True)
class _Alloc:
    """One tracked storage."""

    n_bytes: int
    origin: str  # a category, or "forward"/"backward"/"step" for a new allocation
    phase: str
    freed: bool = False
    freed_phase: str | None = None
    role: str | None = None  # settled role (gradients, optimizer_state, kv_cache, outputs)
    weak: Any = field(default=None, repr=False)

    def category(self) -> str:
        if self.role is not None:
            return self.role
        if self.origin in CATEGORIES:
            return self.origin
        if self.origin == "forward" and (self.freed_phase in (None, "backward", "step")):
            return "activations"
        return "temporaries"


class MemoryTracker(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Track live storages, the peak, its phase and the peak per active module.

    Use as a context manager *inside* ``FakeTensorMode`` (so that it sees fake tensors).
    """

    def __init__(self, *, round_to_cuda_blocks: bool = True) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.round_to_cuda_blocks = round_to_cuda_blocks
        self._by_storage: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._live: dict[int, _Alloc] = {}
        self._all: list[_Alloc] = []
        self.live_bytes = 0
        self.peak_bytes = 0
        self.peak_phase = "setup"
        self.phase = "setup"
        self._peak_live: list[_Alloc] = []
        self.phase_peaks: dict[str, int] = {}
        self.ops = 0
        self._module_stack: list[tuple[str, int]] = []
        #: module name -> (peak bytes while active in the forward, peak - bytes at entry)
        self.module_peaks: dict[str, tuple[int, int]] = {}
        #: allocator trace for :mod:`oomkit.inprocess.probe_allocator`: ``(key, n_bytes)`` for
        #: an allocation of ``n_bytes`` requested bytes, ``(key, -1)`` when it is freed
        self.events: list[tuple[int, int]] = []
        #: keys of storages that never were the caching allocator's (see :meth:`forget`)
        self.forgotten: set[int] = set()
        self._orig_resize = torch.UntypedStorage.resize_
        self._orig_stream = torch.cpu.stream
        #: the stream allocations are made on now (0: the default stream) and, per allocation
        #: key of :attr:`events` made on another stream, that stream (see :meth:`__enter__`)
        self.stream = 0
        self.stream_of: dict[int, int] = {}
        self._streams: list[object] = []
        #: index in :attr:`events` where the traced step starts (after the setup)
        self.step_start = 0

    # -- storage bookkeeping -------------------------------------------------------------
    def __enter__(self) -> MemoryTracker:
        orig = torch.UntypedStorage.resize_
        self._orig_resize = orig

        @functools.wraps(orig)
        def resize_(st: torch.UntypedStorage, size: int) -> Any:
            before = int(st.nbytes())
            out = orig(st, size)
            self._resized(st, before, int(st.nbytes()))
            return out

        torch.UntypedStorage.resize_ = resize_  # type: ignore[method-assign,assignment]
        self._orig_stream = torch.cpu.stream
        torch.cpu.stream = self._stream_context  # type: ignore[assignment]
        super().__enter__()  # type: ignore[no-untyped-call]
        return self

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)  # type: ignore[no-untyped-call]
        torch.UntypedStorage.resize_ = self._orig_resize  # type: ignore[method-assign]
        torch.cpu.stream = self._orig_stream

    @contextlib.contextmanager
    def _stream_context(self, s: Any) -> Iterator[None]:
        """``torch.cpu.stream(s)``, noting which stream the allocations inside are made on."""
        prev = self.stream
        if s is None or s is torch.cpu.current_stream():
            self.stream = 0
        else:
            if not any(s is t for t in self._streams):
                self._streams.append(s)
            self.stream = next(i for i, t in enumerate(self._streams, 1) if t is s)
        try:
            with self._orig_stream(s):
                yield
        finally:
            self.stream = prev

    def _resized(self, st: torch.UntypedStorage, before: int, after: int) -> None:
        """A storage resized in place (FSDP2's ``free_storage`` / ``alloc_storage``)."""
        found = self._by_storage.get(st)  # type: ignore[no-untyped-call]
        if not isinstance(found, _Alloc) or before == after:
            return
        if found.origin not in ("parameters", "buffers", "inputs"):
            found.role = "parameters"  # FSDP2 resizes only its all-gathered parameters
        self._freed(found, None)
        if after > 0:
            self._register(st, after, "parameters")

    def _size(self, n: int) -> int:
        return cuda_block_bytes(n) if self.round_to_cuda_blocks else n

    def _freed(self, alloc: _Alloc, _ref: Any) -> None:
        if alloc.freed:
            return
        alloc.freed = True
        alloc.freed_phase = self.phase
        self._live.pop(id(alloc), None)
        self.live_bytes -= alloc.n_bytes
        self.events.append((id(alloc), -1))

    def _storage_alloc(self, t: torch.Tensor) -> _Alloc | None:
        st = _local(t).untyped_storage()
        found = self._by_storage.get(st)  # type: ignore[no-untyped-call]
        return found if isinstance(found, _Alloc) else None

    def track(self, t: torch.Tensor, origin: str) -> _Alloc:
        """Record ``t``'s storage (once) with ``origin``; return its record."""
        st = _local(t).untyped_storage()
        found = self._by_storage.get(st)  # type: ignore[no-untyped-call]
        if isinstance(found, _Alloc):
            return found
        return self._register(st, int(st.nbytes()), origin)

    def _register(self, st: Any, raw: int, origin: str) -> _Alloc:
        """A new live allocation of ``raw`` bytes backing storage ``st``."""
        alloc = _Alloc(n_bytes=self._size(raw), origin=origin, phase=self.phase)
        self.events.append((id(alloc), raw))
        if self.stream:
            self.stream_of[id(alloc)] = self.stream
        alloc.weak = weakref.ref(st, functools.partial(self._freed, alloc))
        self._by_storage[st] = alloc
        self._live[id(alloc)] = alloc
        self._all.append(alloc)
        self.live_bytes += alloc.n_bytes
        self._update_peak()
        return alloc

    def track_all(self, tensors: Iterable[torch.Tensor], origin: str) -> None:
        for t in tensors:
            self.track(t, origin)

    def forget(self, t: torch.Tensor) -> None:
        """Stop counting ``t``'s storage: memory outside the caching allocator (bitsandbytes
        paged optimizer states live in ``cudaMallocManaged`` memory)."""
        alloc = self._storage_alloc(t) or self.track(t, "temporaries")
        self.forgotten.add(id(alloc))
        self._freed(alloc, None)

    def set_role(self, t: torch.Tensor, role: str) -> None:
        """Settle the role of ``t``'s storage (tracked now if it was not yet)."""
        alloc = self._storage_alloc(t) or self.track(t, role)
        if alloc.origin in ("parameters", "buffers", "inputs"):
            return
        alloc.role = role

    def _update_peak(self) -> None:
        live = self.live_bytes
        if live > self.phase_peaks.get(self.phase, -1):
            self.phase_peaks[self.phase] = live
        if live > self.peak_bytes:
            self.peak_bytes = live
            self.peak_phase = self.phase
            self._peak_live = list(self._live.values())
        for name, entry in self._module_stack:
            peak, _ = self.module_peaks.get(name, (0, 0))
            if live > peak:
                self.module_peaks[name] = (live, live - entry)

    def reset_peak(self) -> None:
        """Forget the peak so far (the live storages stay); the step's trace starts here."""
        self.step_start = len(self.events)
        self.peak_bytes = self.live_bytes
        self.peak_phase = self.phase
        self._peak_live = list(self._live.values())
        self.phase_peaks = {self.phase: self.live_bytes}
        self.module_peaks = {}

    # -- results -------------------------------------------------------------------------
    def peak_by_category(self) -> dict[str, int]:
        """Bytes by category of the storages alive at the peak."""
        out = dict.fromkeys(CATEGORIES, 0)
        for a in self._peak_live:
            out[a.category()] += a.n_bytes
        return out

    def live_from(self, phase: str) -> int:
        """Bytes of live storages allocated during ``phase``."""
        return sum(a.n_bytes for a in self._live.values() if a.origin == phase)

    def live_by_category(self) -> dict[str, int]:
        out = dict.fromkeys(CATEGORIES, 0)
        for a in self._live.values():
            out[a.category()] += a.n_bytes
        return out

    # -- module attribution (forward) ------------------------------------------------------
    def module_hooks(self, model: torch.nn.Module) -> list[Any]:
        """Forward pre/post hooks on every named submodule; returns the handles."""
        handles: list[Any] = []
        wrapped = "_fsdp_wrapped_module"  # FSDP1's wrapper: named as the module it wraps
        for name, mod in model.named_modules():
            name = name.replace(wrapped + ".", "").removesuffix("." + wrapped)
            label = (name if name != wrapped else "") or type(mod).__name__

            def pre(_m: torch.nn.Module, _a: Any, label: str = label) -> None:
                if self.phase == "forward":
                    self._module_stack.append((label, self.live_bytes))

            def post(_m: torch.nn.Module, _a: Any, _o: Any, label: str = label) -> None:
                if self._module_stack and self._module_stack[-1][0] == label:
                    self._module_stack.pop()

            handles.append(mod.register_forward_pre_hook(pre))
            handles.append(mod.register_forward_hook(post))
        return handles

    # -- dispatch --------------------------------------------------------------------------
    def __torch_dispatch__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: Any = (),
        kwargs: Any = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        tree_map_only(torch.Tensor, lambda t: self.track(t, self.phase), out)
        return out

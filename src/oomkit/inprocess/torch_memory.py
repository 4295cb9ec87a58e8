"""Inside the user's PyTorch process: allocator stats, ``free_memory()``, allocator settings.

torch is imported lazily, inside the functions, and only when it is already importable; nothing
here runs at ``import oomkit``. Stats come from ``torch.cuda.memory_stats`` /
``torch.cuda.mem_get_info`` (``torch/cuda/memory.py``), ``torch.mps.current_allocated_memory``,
``driver_allocated_memory`` and ``recommended_max_memory`` on Apple, and ``/proc/meminfo`` for
the host.

Allocator settings: PyTorch >= 2.9 reads ``PYTORCH_ALLOC_CONF`` and still honours
``PYTORCH_CUDA_ALLOC_CONF`` "with lower priority" (``c10/core/AllocatorConfig.h``, Note
[AcceleratorAllocatorConfig design]); ROCm builds also read ``PYTORCH_HIP_ALLOC_CONF``.
"""

from __future__ import annotations

import gc
import os
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oomkit.units import GiB, MiB, format_bytes

__all__ = [
    "AllocConf",
    "AllocatorStats",
    "FreeReport",
    "Holder",
    "alloc_conf_advice",
    "allocator_stats",
    "free_memory",
    "parse_alloc_conf",
]

# Keys torch 2.13 accepts: c10/core/AllocatorConfig.h (common) + CUDAAllocatorConfig (device).
_KNOWN_KEYS = frozenset(
    {
        "max_split_size_mb",
        "max_non_split_rounding_mb",
        "garbage_collection_threshold",
        "roundup_power2_divisions",
        "expandable_segments",
        "pinned_use_background_threads",
        "backend",
        "release_lock_on_cudamalloc",
        "release_lock_on_hipmalloc",
        "pinned_use_cuda_host_register",
        "pinned_use_hip_host_register",
        "pinned_num_register_threads",
        "pinned_reserve_segment_size_mb",
        "graph_capture_record_stream_reuse",
        "per_process_memory_fraction",
    }
)
_ENV_NAMES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocConf:
    """The allocator settings in effect, as torch will read them.

    Attributes:
        source: the variable that wins (``None`` when none is set).
        raw: its text.
        settings: ``key -> value`` (list values keep their brackets as text).
        warnings: disagreements between variables, unknown keys, malformed entries.
    """

    source: str | None
    raw: str | None
    settings: Mapping[str, str]
    warnings: tuple[str, ...]

    @property
    def expandable_segments(self) -> bool:
        """Whether ``expandable_segments:True`` is in effect."""
        return self.settings.get("expandable_segments", "").lower() == "true"


def _split_conf(text: str) -> tuple[dict[str, str], list[str]]:
    """Split ``k:v,k2:[a,b]`` the way c10's ConfigTokenizer does (``,`` inside ``[]`` kept)."""
    settings: dict[str, str] = {}
    problems: list[str] = []
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    for part in parts:
        item = "".join(part.split())
        if not item:
            continue
        key, sep, value = item.partition(":")
        if not sep or not value:
            problems.append(f"'{item}' is not key:value")
            continue
        settings[key] = value
    return settings, problems


def parse_alloc_conf(env: Mapping[str, str] | None = None) -> AllocConf:
    """Read the allocator settings from ``env`` (``os.environ`` when ``None``).

    ``PYTORCH_ALLOC_CONF`` wins over ``PYTORCH_CUDA_ALLOC_CONF`` (lower priority in c10); a
    warning says so when both are set and differ.

    >>> conf = parse_alloc_conf({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    >>> conf.source, conf.expandable_segments
    ('PYTORCH_CUDA_ALLOC_CONF', True)
    >>> parse_alloc_conf({"PYTORCH_ALLOC_CONF": "max_split_size_mb:128",
    ...                   "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}).warnings[0][:60]
    'PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF disagree; tor'
    """
    environ = os.environ if env is None else env
    present = {name: environ[name] for name in _ENV_NAMES if environ.get(name, "").strip()}
    warnings: list[str] = []
    if not present:
        return AllocConf(source=None, raw=None, settings={}, warnings=())
    source = next(n for n in _ENV_NAMES if n in present)
    new, old = present.get("PYTORCH_ALLOC_CONF"), present.get("PYTORCH_CUDA_ALLOC_CONF")
    if new is not None and old is not None and _split_conf(new)[0] != _split_conf(old)[0]:
        warnings.append(
            f"PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF disagree; torch uses "
            f"PYTORCH_ALLOC_CONF='{new}' and ignores PYTORCH_CUDA_ALLOC_CONF='{old}'. "
            "Unset one of them."
        )
    settings, problems = _split_conf(present[source])
    warnings.extend(f"{source}: {p}" for p in problems)
    warnings.extend(
        f"{source}: unknown key '{key}' (torch rejects unknown keys when the allocator starts)"
        for key in settings
        if key not in _KNOWN_KEYS
    )
    if (
        settings.get("backend") == "cudaMallocAsync"
        and settings.get("expandable_segments", "").lower() == "true"
    ):
        warnings.append(
            f"{source}: expandable_segments has no effect with backend:cudaMallocAsync "
            "(it configures the native caching allocator)"
        )
    return AllocConf(
        source=source, raw=present[source], settings=settings, warnings=tuple(warnings)
    )


def alloc_conf_advice(
    conf: AllocConf,
    *,
    reserved_unallocated_bytes: int | None = None,
    requested_bytes: int | None = None,
    largest_free_block_bytes: int | None = None,
) -> tuple[str, ...]:
    """What to set, given the settings and (when known) the fragmentation numbers.

    Args:
        conf: from :func:`parse_alloc_conf`.
        reserved_unallocated_bytes: cached by the allocator but not handed out.
        requested_bytes: the allocation that failed.
        largest_free_block_bytes: the biggest free block the allocator holds.

    Returns:
        Advice lines, most useful first (empty when nothing applies).
    """
    advice: list[str] = list(conf.warnings)
    fragmented = reserved_unallocated_bytes is not None and reserved_unallocated_bytes >= GiB // 2
    split_fail = (
        requested_bytes is not None
        and largest_free_block_bytes is not None
        and reserved_unallocated_bytes is not None
        and largest_free_block_bytes < requested_bytes <= reserved_unallocated_bytes
    )
    if (fragmented or split_fail) and not conf.expandable_segments:
        why = f"{format_bytes(reserved_unallocated_bytes or 0)} is reserved but unallocated" + (
            f" and the largest free block ({format_bytes(largest_free_block_bytes or 0)}) is "
            f"smaller than the request ({format_bytes(requested_bytes or 0)})"
            if split_fail
            else ""
        )
        advice.append(
            f"Fragmentation: {why}. Start the process with "
            "PYTORCH_ALLOC_CONF=expandable_segments:True (set it before the first CUDA "
            "allocation; torch < 2.9 reads PYTORCH_CUDA_ALLOC_CONF)."
        )
    elif fragmented and conf.expandable_segments:
        advice.append(
            "expandable_segments is on and memory is still reserved but unallocated: call "
            "torch.cuda.empty_cache() between phases, or lower peak usage."
        )
    return tuple(advice)


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocatorStats:
    """Memory as the allocator and the device see it now; ``None`` where unknown."""

    device: str
    allocated_bytes: int | None
    reserved_bytes: int | None
    max_allocated_bytes: int | None
    free_bytes: int | None
    total_bytes: int | None
    num_alloc_retries: int | None = None
    num_ooms: int | None = None

    @property
    def reserved_unallocated_bytes(self) -> int | None:
        """Cached by the allocator but not handed out (fragmentation or a warm cache)."""
        if self.allocated_bytes is None or self.reserved_bytes is None:
            return None
        return max(0, self.reserved_bytes - self.allocated_bytes)

    def format(self) -> str:
        """One line for humans."""

        def b(v: int | None) -> str:
            return "n/a" if v is None else format_bytes(v)

        return (
            f"{self.device}: allocated {b(self.allocated_bytes)}, reserved {b(self.reserved_bytes)}"
            f" (unallocated {b(self.reserved_unallocated_bytes)}), free {b(self.free_bytes)} of "
            f"{b(self.total_bytes)}"
        )


def _host_meminfo() -> tuple[int | None, int | None]:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            info = {k: v for k, _, v in (line.partition(":") for line in fh)}
        total = int(info["MemTotal"].split()[0]) * 1024  # meminfo is in KiB
        free = int(info["MemAvailable"].split()[0]) * 1024
        return free, total
    except (OSError, KeyError, ValueError):
        return None, None


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        from oomkit.errors import MissingDependencyError

        raise MissingDependencyError(
            "PyTorch is not installed: free_memory() and allocator_stats() inspect a running "
            "torch process. Install it (pip install torch) in the environment that uses the GPU.",
            package="torch",
        ) from e
    return torch


def _default_device(torch: Any) -> str:
    if torch.cuda.is_available():
        return f"cuda:{torch.cuda.current_device()}"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def allocator_stats(device: str | None = None) -> AllocatorStats:
    """Read allocator and device memory for ``device`` (current accelerator, else ``"cpu"``).

    For ``"cpu"``, allocated/reserved are ``None`` (the CPU allocator keeps no totals) and
    free/total come from ``/proc/meminfo`` (``MemAvailable``/``MemTotal``).
    """
    torch = _torch()
    name = device or _default_device(torch)
    if name.startswith("cuda"):
        stats = torch.cuda.memory_stats(name)
        free, total = torch.cuda.mem_get_info(name)
        return AllocatorStats(
            device=name,
            allocated_bytes=int(stats.get("allocated_bytes.all.current", 0)),
            reserved_bytes=int(stats.get("reserved_bytes.all.current", 0)),
            max_allocated_bytes=int(stats.get("allocated_bytes.all.peak", 0)),
            free_bytes=int(free),
            total_bytes=int(total),
            num_alloc_retries=int(stats.get("num_alloc_retries", 0)),
            num_ooms=int(stats.get("num_ooms", 0)),
        )
    if name == "mps":
        allocated = int(torch.mps.current_allocated_memory())
        driver = int(torch.mps.driver_allocated_memory())
        limit = int(torch.mps.recommended_max_memory())
        return AllocatorStats(
            device=name,
            allocated_bytes=allocated,
            reserved_bytes=driver,
            max_allocated_bytes=None,
            free_bytes=max(0, limit - driver),
            total_bytes=limit,
        )
    free, total = _host_meminfo()
    return AllocatorStats(
        device="cpu",
        allocated_bytes=None,
        reserved_bytes=None,
        max_allocated_bytes=None,
        free_bytes=free,
        total_bytes=total,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Holder:
    """A live tensor (storage) that ``free_memory`` could not release, and who refers to it."""

    nbytes: int
    shape: tuple[int, ...]
    dtype: str
    device: str
    referrers: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FreeReport:
    """Before/after of :func:`free_memory`."""

    device: str
    before: AllocatorStats
    after: AllocatorStats
    collected_objects: int
    live_tensor_bytes: int
    holders: tuple[Holder, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())

    @property
    def freed_bytes(self) -> int | None:
        """Reserved memory returned to the device (``None`` on CPU)."""
        if self.before.reserved_bytes is None or self.after.reserved_bytes is None:
            return None
        return self.before.reserved_bytes - self.after.reserved_bytes

    def format(self) -> str:
        """Human-readable report (what was freed, what still holds memory)."""
        lines = [f"before: {self.before.format()}", f"after:  {self.after.format()}"]
        if self.freed_bytes is not None:
            lines.append(f"freed: {format_bytes(self.freed_bytes)}")
        lines.append(f"live tensors on {self.device}: {format_bytes(self.live_tensor_bytes)}")
        for h in self.holders:
            who = "; ".join(h.referrers) or "no Python referrer found (C++ or autograd graph)"
            lines.append(f"  {format_bytes(h.nbytes)} {h.dtype}{list(h.shape)} held by: {who}")
        lines.extend(self.notes)
        return "\n".join(lines)


def _describe_referrer(ref: Any, target: Any) -> str | None:
    """Name what ``ref`` is, as far as Python can tell (a variable, a module attribute, ...)."""
    import types

    if isinstance(ref, dict):
        keys = [k for k, v in ref.items() if v is target]
        if not keys:
            return None
        if ref.get("__name__") is not None and "__builtins__" in ref:
            return f"global '{keys[0]}' in module {ref['__name__']}"
        return f"dict key {keys[0]!r}"
    if isinstance(ref, types.FrameType):
        names = [k for k, v in ref.f_locals.items() if v is target]
        where = f"{ref.f_code.co_name} ({ref.f_code.co_filename}:{ref.f_lineno})"
        return f"local '{names[0]}' in {where}" if names else f"frame {where}"
    if isinstance(ref, list | tuple):
        return f"{type(ref).__name__} of {len(ref)} items"
    if isinstance(ref, types.CellType):
        return "a closure variable (cell)"
    return type(ref).__name__


def _live_tensors(torch: Any, device: str) -> list[Any]:
    """The live tensors on ``device``; a FakeTensor (a FakeTensorMode trace, such as
    ``oomkit probe``'s, left in the process) reports a device but holds no memory there and has
    no data pointer, so it is never named as a holder."""
    kind = device.split(":")[0]
    found: list[Any] = []
    with warnings.catch_warnings():  # isinstance() on deprecated torch proxies warns
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            try:
                if not isinstance(obj, torch.Tensor) or type(obj).__name__ == "FakeTensor":
                    continue
                if getattr(obj, "is_meta", False):
                    continue
                where = str(obj.device)
            except Exception:  # pragma: no cover - proxies that fail isinstance/device
                continue
            if where.startswith(kind) and (":" not in device or where == device):
                found.append(obj)
    return found


def _caller_frames() -> list[Any]:
    frames: list[Any] = []
    frame = sys._getframe(2)
    while frame is not None:
        frames.append(frame)
        frame.f_locals  # noqa: B018 - syncs the frame's locals cache (CPython < 3.13)
        frame = frame.f_back  # type: ignore[assignment]
    return frames


def _holder(t: Any, frames: list[Any], *, ignore: set[int]) -> Holder:
    refs: list[str] = []
    cache_ids = set(ignore)
    for f in frames:
        local_vars = f.f_locals
        if local_vars is not f.f_globals:
            cache_ids.add(id(local_vars))
        where = f"{f.f_code.co_name} ({f.f_code.co_filename}:{f.f_lineno})"
        for k, v in list(local_vars.items()):  # a loop, not a comprehension: no cell for t
            if v is t:
                refs.append(f"local '{k}' in {where}")
    for r in gc.get_referrers(t):
        if id(r) in cache_ids:
            continue
        described = _describe_referrer(r, t)
        if described is not None:
            refs.append(described)
    return Holder(
        nbytes=int(t.untyped_storage().nbytes()),
        shape=tuple(int(s) for s in t.shape),
        dtype=str(t.dtype).removeprefix("torch."),
        device=str(t.device),
        referrers=tuple(dict.fromkeys(refs)),
    )


def free_memory(device: str | None = None, *, top: int = 5) -> FreeReport:
    """Collect garbage, empty the allocator cache, and report what was freed and what was not.

    Steps: drop ``sys.last_value``/``sys.last_traceback`` (the last uncaught exception keeps its
    frames' tensors alive, the usual reason memory stays full after an OOM in a REPL or
    notebook), ``gc.collect()``, then ``torch.cuda.empty_cache()`` / ``torch.mps.empty_cache()``.
    Tensors still alive afterwards are listed, largest first, with their referrers.

    Args:
        device: ``"cuda:0"``, ``"mps"``, ``"cpu"``; the current accelerator when ``None``.
        top: how many of the largest live tensors to explain.

    Returns:
        A :class:`FreeReport` (bytes as ints).
    """
    torch = _torch()
    name = device or _default_device(torch)
    before = allocator_stats(name)
    notes: list[str] = []
    for attr in ("last_value", "last_traceback", "last_exc"):
        if getattr(sys, attr, None) is not None:
            setattr(sys, attr, None)
            notes.append(f"cleared sys.{attr} (it kept the failed frames' tensors alive)")
    collected = gc.collect()
    if name.startswith("cuda"):
        torch.cuda.empty_cache()
    elif name == "mps":
        torch.mps.empty_cache()
    after = allocator_stats(name)
    # Running frames are not GC objects on CPython 3.11+, so the callers' locals are read
    # directly. Reading f_locals first also re-syncs each frame's locals cache, so a variable
    # the caller already deleted is not reported (or kept alive) through a stale cache.
    frames = _caller_frames()
    tensors = _live_tensors(torch, name)
    by_storage: dict[int, Any] = {}
    for t in tensors:
        try:
            key = t.untyped_storage().data_ptr()
        except RuntimeError:  # pragma: no cover - meta/fake tensors have no storage
            continue
        by_storage.setdefault(key, t)
    del tensors
    live = sum(int(t.untyped_storage().nbytes()) for t in by_storage.values())
    largest = sorted(by_storage.values(), key=lambda t: -int(t.untyped_storage().nbytes()))
    del by_storage
    chosen = largest[:top]
    del largest
    holders = [_holder(t, frames, ignore={id(chosen), id(frames)}) for t in chosen]
    del chosen, frames
    if holders and after.reserved_bytes is not None and after.reserved_bytes > 64 * MiB:
        notes.append(
            "memory still reserved is held by the tensors listed above: drop those references "
            "(del, or reassign) and call free_memory() again"
        )
    return FreeReport(
        device=name,
        before=before,
        after=after,
        collected_objects=collected,
        live_tensor_bytes=live,
        holders=tuple(holders),
        notes=tuple(notes),
    )

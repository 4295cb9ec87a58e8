"""Read a ``torch.cuda.memory._dump_snapshot()`` pickle safely and explain it.

The file is a pickled ``torch.cuda.memory._snapshot()`` dict (``torch/cuda/memory.py``)::

    {"segments": [{"device", "address", "total_size", "allocated_size", "active_size",
                   "stream", "segment_type": "small"|"large", "segment_pool_id", "frames",
                   "blocks": [{"address", "size", "requested_size",
                               "state": "active_allocated"|"active_pending_free"|"inactive",
                               "frames": [{"filename", "line", "name"}, ...]}, ...]}, ...],
     "device_traces": [[{"action": "alloc"|"free_requested"|...|"oom"|"snapshot",
                         "addr", "size", "stream", "device_free" (oom only), "frames"}, ...]],
     "allocator_settings": {...}, ...}

Pickles can run code on load, so the file is read with a restricted unpickler that resolves no
global except plain containers and scalars (what a snapshot holds); anything else — ``os.system``,
``torch`` classes, ``eval`` — is refused with :class:`~oomkit.errors.SnapshotFormatError` before it
runs. Files over :data:`MAX_SNAPSHOT_BYTES` and absurd sizes inside are refused too.

The report follows ``torch/cuda/_memory_viz.py`` (``segsum``: per segment, allocated vs free
inside it; ``trace``: the ``oom`` entry with the failed request and ``device_free``).
"""

from __future__ import annotations

import collections
import io
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oomkit.errors import SnapshotFormatError
from oomkit.inprocess.torch_memory import alloc_conf_advice, parse_alloc_conf
from oomkit.units import GiB, TiB, format_bytes

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "AllocationSite",
    "SegmentUsage",
    "SnapshotReport",
    "load_snapshot",
    "snapshot_report",
    "summarize_snapshot",
]

#: Snapshots larger than this are refused (torch warns they reach GBs with long histories).
MAX_SNAPSHOT_BYTES = 2 * GiB
_MAX_SIZE_BYTES = 64 * TiB  # no device has more; larger "sizes" mean a corrupt or hostile file
_ALLOWED_GLOBALS: Mapping[tuple[str, str], Any] = {
    ("builtins", "dict"): dict,
    ("builtins", "list"): list,
    ("builtins", "tuple"): tuple,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "str"): str,
    ("builtins", "int"): int,
    ("builtins", "float"): float,
    ("builtins", "bool"): bool,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("__builtin__", "dict"): dict,  # protocol 0-2 pickles written by Python 2
    ("__builtin__", "list"): list,
}
_PENDING = ("active_pending_free", "active_awaiting_free")
_INTERNAL_FRAMES = ("/torch/", "\\torch\\", "<frozen", "<built-in>")


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the globals in the allowlist; everything else raises."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"global '{module}.{name}' is not allowed") from None

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not allowed")


def load_snapshot(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Unpickle a snapshot with the restricted unpickler and check its shape.

    Raises:
        SnapshotFormatError: missing/unreadable file, too large, a disallowed object, or not
            the ``{"segments": [...]}`` structure.
    """
    where = os.fspath(path)
    try:
        size = os.stat(where).st_size
    except OSError as exc:
        raise SnapshotFormatError(
            f"Reading the memory snapshot failed for '{where}' (stat): {exc.strerror}. "
            "Pass the file written by torch.cuda.memory._dump_snapshot().",
            path=where,
        ) from exc
    if size > MAX_SNAPSHOT_BYTES:
        raise SnapshotFormatError(
            f"Reading the memory snapshot failed for '{where}' (size {format_bytes(size)}): it is "
            f"larger than the {format_bytes(MAX_SNAPSHOT_BYTES)} limit. Record fewer entries "
            "(_record_memory_history(max_entries=...)).",
            path=where,
        )
    try:
        # unpickle from memory: a length claim of 2^40 then reads what exists and fails as
        # truncated, where a file object would first try to allocate the claimed size
        with open(where, "rb") as fh:
            raw = fh.read(MAX_SNAPSHOT_BYTES + 1)
        data = _RestrictedUnpickler(io.BytesIO(raw)).load()
        del raw
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        RecursionError,
        MemoryError,
        IndexError,
        KeyError,
        OverflowError,
    ) as exc:
        raise SnapshotFormatError(
            f"Reading the memory snapshot failed for '{where}' (unpickle): {exc}. Only plain "
            "snapshot data is loaded; this file holds something else.",
            path=where,
        ) from exc
    _check_bounded(data, where, size)
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list):
        raise SnapshotFormatError(
            f"Reading the memory snapshot failed for '{where}' (key 'segments'): not a "
            "torch.cuda.memory._snapshot() dict. Pass the _dump_snapshot() pickle.",
            path=where,
            key="segments",
        )
    return data


#: values visited while checking a snapshot, per byte of the file: every value of a plain pickle
#: costs at least one opcode byte, so more visits than 2 x the file size means shared
#: references fanned out (a list holding itself 1000 times, 30 levels deep)
_VISITS_PER_BYTE = 2
#: nesting depth of a snapshot (real: dict > list > dict > list > dict, ~6)
MAX_SNAPSHOT_DEPTH = 32


def _check_bounded(data: object, where: str, file_bytes: int) -> None:
    """Walk ``data`` iteratively: refuse nesting deeper than MAX_SNAPSHOT_DEPTH and more than
    MAX_SNAPSHOT_NODES container visits (memo fan-out), before any recursive code sees it."""
    stack: list[tuple[object, int]] = [(data, 0)]
    visits = 0
    budget = _VISITS_PER_BYTE * file_bytes + 1024
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple | set | frozenset):
            children = node
        else:
            continue
        visits += 1 + len(node)
        if depth >= MAX_SNAPSHOT_DEPTH or visits > budget:
            why = (
                f"nested deeper than {MAX_SNAPSHOT_DEPTH} levels"
                if depth >= MAX_SNAPSHOT_DEPTH
                else f"more than {budget:,} values in {file_bytes:,} bytes (shared references "
                "fanned out)"
            )
            raise SnapshotFormatError(
                f"Reading the memory snapshot failed for '{where}' (structure): {why}. "
                "The file is corrupt or not a snapshot.",
                path=where,
            )
        stack.extend(
            (c, depth + 1) for c in children if isinstance(c, dict | list | tuple | set | frozenset)
        )


def _size(value: object, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_SIZE_BYTES:
        raise SnapshotFormatError(
            f"Reading the memory snapshot failed for '{where}' (key '{key}'): size {value!r} is "
            f"not an int in [0, {_MAX_SIZE_BYTES}]. The file is corrupt or not a snapshot.",
            path=where,
            key=key,
        )
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentUsage:
    """One cudaMalloc'd segment: how much of it is in use and how its free space is split."""

    device: int | None
    address: int | None
    stream: int | None
    segment_type: str | None
    total_size_bytes: int
    allocated_bytes: int
    pending_free_bytes: int
    unallocated_bytes: int
    largest_free_block_bytes: int
    block_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationSite:
    """Where live memory was allocated (first user frame of the recorded stack)."""

    location: str
    allocated_bytes: int
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotReport:
    """What a snapshot says about fragmentation, the failed request and who allocated what."""

    path: str
    segment_count: int
    reserved_bytes: int
    allocated_bytes: int
    pending_free_bytes: int
    reserved_unallocated_bytes: int
    largest_free_block_bytes: int
    failed_request_bytes: int | None
    device_free_at_oom_bytes: int | None
    request_fits_largest_free_block: bool | None
    segments: tuple[SegmentUsage, ...]
    top_sites: tuple[AllocationSite, ...]
    advice: tuple[str, ...]

    def format(self) -> str:
        """Human-readable report."""
        lines = [
            f"snapshot {self.path}: {self.segment_count} segments, reserved "
            f"{format_bytes(self.reserved_bytes)}, allocated {format_bytes(self.allocated_bytes)}, "
            f"reserved but unallocated {format_bytes(self.reserved_unallocated_bytes)}",
            f"largest free block: {format_bytes(self.largest_free_block_bytes)}",
        ]
        if self.failed_request_bytes is not None:
            lines.append(
                f"failed request: {format_bytes(self.failed_request_bytes)}"
                + (
                    f" (device had {format_bytes(self.device_free_at_oom_bytes)} free)"
                    if self.device_free_at_oom_bytes is not None
                    else ""
                )
            )
        if self.segments:
            lines.append("most fragmented segments (unallocated / size, largest free block):")
            lines.extend(
                f"  dev {s.device} {s.segment_type or '?':<5} {format_bytes(s.unallocated_bytes)}"
                f" / {format_bytes(s.total_size_bytes)}, {format_bytes(s.largest_free_block_bytes)}"
                for s in self.segments
            )
        if self.top_sites:
            lines.append("top allocation sites:")
            lines.extend(
                f"  {format_bytes(site.allocated_bytes)} in {site.count} blocks: {site.location}"
                for site in self.top_sites
            )
        lines.extend(f"advice: {a}" for a in self.advice)
        return "\n".join(lines)


def _site(frames: object) -> str:
    if not isinstance(frames, list) or not frames:
        return "<no stack recorded: call torch.cuda.memory._record_memory_history() first>"
    python = [
        f for f in frames if isinstance(f, dict) and str(f.get("filename", "")).endswith(".py")
    ]
    user = [f for f in python if not any(m in str(f.get("filename")) for m in _INTERNAL_FRAMES)]
    pick = (user or python or [f for f in frames if isinstance(f, dict)] or [{}])[0]
    return f"{pick.get('filename', '?')}:{pick.get('line', '?')} in {pick.get('name', '?')}"


def summarize_snapshot(
    data: Mapping[str, Any], *, path: str = "<memory>", top: int = 10
) -> SnapshotReport:
    """Build the report from an already-loaded snapshot dict (pure; no I/O).

    Raises:
        SnapshotFormatError: a segment or block has the wrong shape or an absurd size.
    """
    segments: list[SegmentUsage] = []
    sites: dict[str, list[int]] = {}
    for si, seg in enumerate(data.get("segments", [])):
        if not isinstance(seg, dict) or not isinstance(seg.get("blocks", []), list):
            raise SnapshotFormatError(
                f"Reading the memory snapshot failed for '{path}' (segment {si}): not a dict "
                "with a 'blocks' list. The file is not a torch memory snapshot.",
                path=path,
                key=f"segments[{si}]",
            )
        total = _size(seg.get("total_size"), path, f"segments[{si}].total_size")
        allocated = pending = largest_free = 0
        blocks = seg.get("blocks", [])
        for bi, block in enumerate(blocks):
            key = f"segments[{si}].blocks[{bi}]"
            if not isinstance(block, dict):
                raise SnapshotFormatError(
                    f"Reading the memory snapshot failed for '{path}' ({key}): not a dict. "
                    "The file is not a torch memory snapshot.",
                    path=path,
                    key=key,
                )
            size = _size(block.get("size"), path, f"{key}.size")
            state = block.get("state")
            if state == "active_allocated":
                allocated += size
                site = sites.setdefault(_site(block.get("frames")), [0, 0])
                site[0] += size
                site[1] += 1
            elif state in _PENDING:
                pending += size
            else:
                largest_free = max(largest_free, size)
        segments.append(
            SegmentUsage(
                device=seg.get("device") if isinstance(seg.get("device"), int) else None,
                address=seg.get("address") if isinstance(seg.get("address"), int) else None,
                stream=seg.get("stream") if isinstance(seg.get("stream"), int) else None,
                segment_type=str(seg["segment_type"]) if "segment_type" in seg else None,
                total_size_bytes=total,
                allocated_bytes=allocated,
                pending_free_bytes=pending,
                unallocated_bytes=max(0, total - allocated - pending),
                largest_free_block_bytes=largest_free,
                block_count=len(blocks),
            )
        )
    request: int | None = None
    device_free: int | None = None
    for trace in data.get("device_traces", []) or []:
        for entry in trace if isinstance(trace, list) else []:
            if isinstance(entry, dict) and entry.get("action") == "oom":
                request = _size(entry.get("size"), path, "device_traces[].size")
                free = entry.get("device_free")
                device_free = _size(free, path, "device_traces[].device_free") if free else None
    reserved = sum(s.total_size_bytes for s in segments)
    allocated_total = sum(s.allocated_bytes for s in segments)
    pending_total = sum(s.pending_free_bytes for s in segments)
    unallocated = sum(s.unallocated_bytes for s in segments)
    largest = max((s.largest_free_block_bytes for s in segments), default=0)
    settings = data.get("allocator_settings")
    conf = parse_alloc_conf()
    if isinstance(settings, dict) and settings.get("expandable_segments") is True:
        conf = parse_alloc_conf({"PYTORCH_ALLOC_CONF": "expandable_segments:True"})
    ranked = sorted(segments, key=lambda s: (-s.unallocated_bytes, -s.total_size_bytes))
    return SnapshotReport(
        path=path,
        segment_count=len(segments),
        reserved_bytes=reserved,
        allocated_bytes=allocated_total,
        pending_free_bytes=pending_total,
        reserved_unallocated_bytes=unallocated,
        largest_free_block_bytes=largest,
        failed_request_bytes=request,
        device_free_at_oom_bytes=device_free,
        request_fits_largest_free_block=None if request is None else request <= largest,
        segments=tuple(s for s in ranked[:top] if s.unallocated_bytes > 0),
        top_sites=tuple(
            AllocationSite(location=loc, allocated_bytes=v[0], count=v[1])
            for loc, v in sorted(sites.items(), key=lambda kv: -kv[1][0])[:top]
        ),
        advice=alloc_conf_advice(
            conf,
            reserved_unallocated_bytes=unallocated,
            requested_bytes=request,
            largest_free_block_bytes=largest,
        ),
    )


def snapshot_report(path: str | os.PathLike[str], *, top: int = 10) -> SnapshotReport:
    """Load ``path`` safely (see :func:`load_snapshot`) and summarise it.

    Args:
        path: a ``torch.cuda.memory._dump_snapshot()`` pickle.
        top: how many segments and allocation sites to list.

    Returns:
        A :class:`SnapshotReport` (bytes as ints; ``.format()`` for text).

    Raises:
        SnapshotFormatError: see :func:`load_snapshot`.
    """
    return summarize_snapshot(load_snapshot(path), path=os.fspath(path), top=top)

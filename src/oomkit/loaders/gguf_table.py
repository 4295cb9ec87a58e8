"""The tensor infos of a GGUF header as columns, and the fast scan that reads them.

A 20k-layer header holds 180k tensor infos (issue 10). One Python object per tensor per stage
(the loader's record, :class:`~oomkit.spec.model.TensorInfo`, the placement's row) cost ~5 us
each; here the infos are kept as parallel tuples (names, ``ne`` dims, type ids, offsets, exact
bytes, type names) and a :class:`GgufTensor` is built only when a consumer indexes or iterates
the table.

:func:`scan_tensor_infos` reads the infos with one ``unpack_from`` per field group and no
per-tensor checks beyond the record's framing; everything else is validated in bulk over the
*distinct* values (a many-layer file repeats a dozen (dims, type) pairs): type ids, dimension
overflow, rows that are not whole blocks, duplicate names, UTF-8, and the offsets as one
comparison against the running sum of aligned sizes. Any anomaly (or a name over 4 KiB) returns
None, and the caller re-reads the infos with the per-tensor reader of
:mod:`oomkit.loaders.gguf`, so a bad file gets exactly the error and byte offset it always got.
Counts and lengths were bounded before this runs (``MAX_TENSOR_COUNT``), so nothing here
allocates from an unchecked size.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from math import prod
from operator import getitem, itemgetter
from typing import BinaryIO, cast, overload

from oomkit.quant.ggml_types import ggml_type_by_id

__all__ = ["GgufTensor", "GgufTensorTable", "scan_tensor_infos"]

_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class GgufTensor:
    """One tensor info; ``dims`` in GGUF ``ne`` order (innermost first), ``shape`` reversed."""

    name: str
    dims: tuple[int, ...]
    ggml_type: str  # "Q4_K", "F16", ...
    type_id: int
    offset: int  # relative to the data region
    n_bytes: int  # exact: ceil(elements / block size) * type size

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(reversed(self.dims))

    @property
    def n_elements(self) -> int:
        return prod(self.dims)


class GgufTensorTable(Sequence[GgufTensor]):
    """Validated tensor infos as parallel tuples; a :class:`GgufTensor` per item on access.

    Equal to (and hashed like) another table with the same columns.

    >>> t = GgufTensorTable(("a",), ((4,),), (0,), (0,), (16,), ("F32",))
    >>> len(t), t[0].n_bytes, t == GgufTensorTable.of((t[0],))
    (1, 16, True)
    """

    __slots__ = ("dims", "ggml_types", "n_bytes", "names", "offsets", "type_ids")

    def __init__(
        self,
        names: tuple[str, ...],
        dims: tuple[tuple[int, ...], ...],
        type_ids: tuple[int, ...],
        offsets: tuple[int, ...],
        n_bytes: tuple[int, ...],
        ggml_types: tuple[str, ...],
    ) -> None:
        n = len(names)
        if not all(len(c) == n for c in (dims, type_ids, offsets, n_bytes, ggml_types)):
            raise ValueError("GgufTensorTable columns differ in length")
        self.names = names
        self.dims = dims
        self.type_ids = type_ids
        self.offsets = offsets
        self.n_bytes = n_bytes
        self.ggml_types = ggml_types

    @classmethod
    def of(cls, tensors: Sequence[GgufTensor]) -> GgufTensorTable:
        """A table of ``tensors`` (a table itself is returned as is)."""
        if isinstance(tensors, GgufTensorTable):
            return tensors
        return cls(
            tuple(t.name for t in tensors),
            tuple(t.dims for t in tensors),
            tuple(t.type_id for t in tensors),
            tuple(t.offset for t in tensors),
            tuple(t.n_bytes for t in tensors),
            tuple(t.ggml_type for t in tensors),
        )

    @classmethod
    def concat(cls, tables: Sequence[GgufTensorTable]) -> GgufTensorTable:
        """The tables one after the other (the shards of a split GGUF)."""
        return cls(
            tuple(x for t in tables for x in t.names),
            tuple(x for t in tables for x in t.dims),
            tuple(x for t in tables for x in t.type_ids),
            tuple(x for t in tables for x in t.offsets),
            tuple(x for t in tables for x in t.n_bytes),
            tuple(x for t in tables for x in t.ggml_types),
        )

    def __len__(self) -> int:
        return len(self.names)

    def _row(self, i: int) -> GgufTensor:
        return GgufTensor(
            name=self.names[i],
            dims=self.dims[i],
            ggml_type=self.ggml_types[i],
            type_id=self.type_ids[i],
            offset=self.offsets[i],
            n_bytes=self.n_bytes[i],
        )

    @overload
    def __getitem__(self, i: int) -> GgufTensor: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[GgufTensor, ...]: ...

    def __getitem__(self, i: int | slice) -> GgufTensor | tuple[GgufTensor, ...]:
        if isinstance(i, slice):
            return tuple(self._row(j) for j in range(len(self))[i])
        return self._row(range(len(self))[i])  # negative indices; IndexError past the end

    def __iter__(self) -> Iterator[GgufTensor]:
        return (self._row(i) for i in range(len(self)))

    def _columns(self) -> tuple[tuple[object, ...], ...]:
        return (self.names, self.dims, self.type_ids, self.offsets, self.n_bytes)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GgufTensorTable):
            return self._columns() == other._columns()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._columns())

    def __repr__(self) -> str:
        return f"GgufTensorTable({len(self)} tensors)"


#: names longer than this take the per-tensor reader (no real model comes near it)
_FAST_NAME = 4096
#: bytes read per chunk
_CHUNK = 1 << 20
#: the most bytes one record with a name of at most _FAST_NAME bytes takes
_FAST_RECORD = 8 + _FAST_NAME + 4 + 8 * 4 + 4 + 8


def scan_tensor_infos(
    f: BinaryIO, start: int, file_bytes: int, n_tensors: int, order: str, alignment: int
) -> tuple[GgufTensorTable, int] | None:
    """Read and validate ``n_tensors`` infos from file offset ``start`` (``f`` is there).

    Returns the table and the file offset just past the infos, or None when anything is not
    plainly valid (the caller then re-reads them tensor by tensor for the exact error). The
    position of ``f`` is unspecified afterwards.
    """
    u64 = struct.Struct(f"{order}Q").unpack_from
    u32 = struct.Struct(f"{order}I").unpack_from
    rests = [struct.Struct(f"{order}{d}QIQ").unpack_from for d in range(5)]
    raw_names: list[bytes] = []
    recs: list[tuple[int, ...]] = []
    add_name = raw_names.append
    add_rec = recs.append
    buf = b""
    base = start  # file offset of buf[0]
    off = 0
    refill_at = -1  # refill when a record starts past this (fewer than _FAST_RECORD bytes left)
    try:
        for _ in range(n_tensors):
            if off > refill_at:
                more = f.read(min(_CHUNK, file_bytes - base - len(buf)))
                buf = buf[off:] + more
                base += off
                off = 0
                at_end = base + len(buf) >= file_bytes or not more
                refill_at = len(buf) if at_end else len(buf) - _FAST_RECORD
            (n,) = u64(buf, off)
            if n > _FAST_NAME:
                return None
            name_end = off + 8 + n
            (n_dims,) = u32(buf, name_end)  # struct.error when the file ends inside the name
            if n_dims > 4:
                return None
            rec = rests[n_dims](buf, name_end + 4)
            add_name(buf[off + 8 : name_end])
            add_rec(rec)
            off = name_end + 16 + 8 * n_dims
    except struct.error:  # truncated
        return None
    end = base + off
    if end > file_bytes:
        return None
    return _validated(raw_names, recs, alignment, end)


def _validated(
    raw_names: list[bytes], recs: list[tuple[int, ...]], alignment: int, end: int
) -> tuple[GgufTensorTable, int] | None:
    """The columns, checked in bulk over distinct values; None on any anomaly."""
    try:
        names = tuple(map(bytes.decode, raw_names))
    except UnicodeDecodeError:
        return None
    if len(set(names)) != len(names):
        return None
    # (dims..., type id) per tensor; a many-layer file has a dozen distinct ones, each checked
    # once and mapped to (dims, type name, bytes, padded bytes) shared by its tensors
    keys = cast("list[tuple[int, ...]]", list(map(getitem, recs, repeat(slice(None, -1)))))
    facts: dict[tuple[int, ...], tuple[tuple[int, ...], str, int, int]] = {}
    for key in set(keys):
        dims = key[:-1]
        total = 1
        for d in dims:
            total *= d
            if d > _INT64_MAX or total > _INT64_MAX:
                return None
        gt = ggml_type_by_id(key[-1])
        if gt is None or (dims and dims[0] % gt.block_size):
            return None
        n_bytes = gt.tensor_bytes(total)
        facts[key] = (dims, gt.name, n_bytes, -(-n_bytes // alignment) * alignment)
    rows = list(map(facts.__getitem__, keys))
    offsets = tuple(map(itemgetter(-1), recs))
    expected = list(accumulate(map(itemgetter(3), rows), initial=0))
    expected.pop()
    if list(offsets) != expected:
        return None
    table = GgufTensorTable(
        names,
        tuple(map(itemgetter(0), rows)),
        tuple(map(itemgetter(-2), recs)),
        offsets,
        tuple(map(itemgetter(2), rows)),
        tuple(map(itemgetter(1), rows)),
    )
    return table, end

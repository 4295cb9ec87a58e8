"""GGUF headers: metadata and tensor infos, read sequentially with ``struct``; data is never read.

Layout (ggml ``docs/gguf.md``; reader ``ggml/src/gguf.cpp`` ``gguf_init_from_file_impl``):
``"GGUF"``, uint32 version (2 or 3), uint64 tensor count, uint64 KV count, the KV pairs
(string key, uint32 value type, value), then per tensor: string name, uint32 n_dims,
n_dims x uint64 ``ne`` (innermost first), uint32 ggml type, uint64 offset relative to the data
region. The data region starts at the end of the tensor infos rounded up to
``general.alignment`` (default 32); each tensor's offset must equal the running sum of the
previous tensors' sizes padded to the alignment, as gguf.cpp checks ("tensor ... has offset
..., expected ..."). Big-endian files (version field byte-swapped) are read too, as gguf-py does.

The tensor infos are kept as columns (:class:`GgufTensorTable`): the scan of
:mod:`oomkit.loaders.gguf_table` reads them and checks them in bulk; anything it does not find
plainly valid is re-read here tensor by tensor, which raises the error with its byte offset.

Absurd counts and lengths are refused *before* anything is allocated, so a hostile or corrupt
file cannot exhaust memory. Large arrays (tokenizer vocabularies) keep only their item type
and length.

>>> from oomkit.loaders.gguf import GgufArray
>>> GgufArray(item_type="STRING", length=128256, values=None).length
128256
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from math import prod
from types import MappingProxyType
from typing import BinaryIO, TypeAlias

from oomkit._gcpause import gc_paused
from oomkit.errors import GgufFormatError, SourceNotFoundError
from oomkit.loaders.gguf_table import GgufTensor, GgufTensorTable, scan_tensor_infos
from oomkit.quant.ggml_types import GgmlType, ggml_type_by_id
from oomkit.units import MiB, align_up

__all__ = [
    "DEFAULT_ALIGNMENT",
    "MAX_ARRAY_LENGTH",
    "MAX_ARRAY_NESTING",
    "MAX_DIMS",
    "MAX_KEPT_ARRAY_LENGTH",
    "MAX_KV_COUNT",
    "MAX_STRING_BYTES",
    "MAX_TENSOR_COUNT",
    "GgufArray",
    "GgufFile",
    "GgufTensor",
    "GgufTensorTable",
    "GgufValue",
    "load_gguf",
    "read_gguf",
]

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT (ggml/include/gguf.h)
MAX_TENSOR_COUNT = 1_000_000
MAX_KV_COUNT = 1_000_000
MAX_STRING_BYTES = 64 * MiB
MAX_ARRAY_LENGTH = 100_000_000
MAX_DIMS = 4  # GGML_MAX_DIMS
#: arrays of arrays deeper than this are refused (no model writes more than 2 levels)
MAX_ARRAY_NESTING = 8
#: arrays longer than this keep only item type and length (tokenizer tokens, merges, scores)
MAX_KEPT_ARRAY_LENGTH = 4096
_INT64_MAX = (1 << 63) - 1

# gguf_type enum (ggml/include/gguf.h) -> (name, struct code); STRING=8 and ARRAY=9 are special.
_SCALARS: Mapping[int, tuple[str, str]] = {
    0: ("UINT8", "B"),
    1: ("INT8", "b"),
    2: ("UINT16", "H"),
    3: ("INT16", "h"),
    4: ("UINT32", "I"),
    5: ("INT32", "i"),
    6: ("FLOAT32", "f"),
    7: ("BOOL", "?"),
    10: ("UINT64", "Q"),
    11: ("INT64", "q"),
    12: ("FLOAT64", "d"),
}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True, slots=True, kw_only=True)
class GgufArray:
    """A GGUF array value. ``values`` is None when longer than :data:`MAX_KEPT_ARRAY_LENGTH`."""

    item_type: str  # "UINT32", "STRING", "ARRAY", ...
    length: int
    values: tuple[GgufValue, ...] | None


GgufValue: TypeAlias = int | float | bool | str | GgufArray


@dataclass(frozen=True, slots=True, kw_only=True)
class GgufFile:
    """Everything in a GGUF header."""

    path: str
    version: int
    byte_order: str  # "<" little-endian, ">" big-endian
    metadata: Mapping[str, GgufValue]
    #: the tensor infos as columns; indexing or iterating builds :class:`GgufTensor` records
    tensors: GgufTensorTable
    alignment: int
    data_offset: int  # absolute file offset of the data region
    file_bytes: int

    def __post_init__(self) -> None:
        if not isinstance(self.tensors, GgufTensorTable):  # a sequence of GgufTensor records
            object.__setattr__(self, "tensors", GgufTensorTable.of(self.tensors))

    @property
    def data_bytes(self) -> int:
        """Bytes the tensors span in the data region (last tensor unpadded)."""
        t = self.tensors
        return t.offsets[-1] + t.n_bytes[-1] if len(t) else 0

    @property
    def tensor_bytes(self) -> int:
        """Sum of the tensors' exact sizes, without alignment padding."""
        return sum(self.tensors.n_bytes)

    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else None


class _Reader:
    """Sequential reader that knows its offset and the file size, and never reads past a limit."""

    def __init__(self, f: BinaryIO, path: str, file_bytes: int) -> None:
        self.f = f
        self.path = path
        self.file_bytes = file_bytes
        self.pos = 0
        self.order = "<"

    def error(
        self, why: str, *, offset: int | None = None, key: str | None = None
    ) -> GgufFormatError:
        at = self.pos if offset is None else offset
        ctx = f"byte offset {at}" + (f", key '{key}'" if key else "")
        return GgufFormatError(
            f"Reading GGUF header failed for '{self.path}' ({ctx}): {why}. "
            "Re-download the file or check that it is a GGUF model.",
            path=self.path,
            offset=at,
            key=key,
        )

    def need(self, n: int) -> None:
        if self.pos + n > self.file_bytes:
            raise self.error(
                f"truncated at offset {self.pos}: {n} more bytes needed, the file ends at "
                f"{self.file_bytes} (incomplete download?)"
            )

    def read(self, n: int) -> bytes:
        self.need(n)
        data = self.f.read(n)
        if len(data) != n:  # the file shrank while we read it
            raise self.error(f"truncated at offset {self.pos + len(data)}")
        self.pos += n
        return data

    def skip(self, n: int) -> None:
        self.need(n)
        self.f.seek(n, os.SEEK_CUR)
        self.pos += n

    def unpack(self, code: str, count: int = 1) -> tuple[int | float | bool, ...]:
        size = struct.calcsize(f"<{code}") * count
        return struct.unpack(f"{self.order}{count}{code}", self.read(size))

    def u32(self) -> int:
        return int(self.unpack("I")[0])

    def u64(self) -> int:
        return int(self.unpack("Q")[0])

    def string(self, what: str) -> str:
        start = self.pos
        n = self.u64()
        if n > MAX_STRING_BYTES:
            raise self.error(
                f"{what} length {n} is over the {MAX_STRING_BYTES}-byte limit", offset=start
            )
        raw = self.read(n)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.error(f"{what} is not valid UTF-8 ({e.reason})", offset=start + 8) from e

    def skip_string(self, what: str) -> None:
        start = self.pos
        n = self.u64()
        if n > MAX_STRING_BYTES:
            raise self.error(
                f"{what} length {n} is over the {MAX_STRING_BYTES}-byte limit", offset=start
            )
        self.skip(n)

    def skip_strings(self, n: int, what: str) -> None:
        """Skip ``n`` length-prefixed strings, reading 1 MiB at a time: one read and one seek per
        string took 2.4 s for a 2M-entry array (a real vocabulary and its merges: 0.4M), over
        the 2 s an estimate may take. Same limits and errors as :meth:`skip_string`."""
        unpack = struct.Struct(f"{self.order}Q").unpack_from
        buf, off, size, base = b"", 0, 0, self.pos  # base: the file offset of buf[0]
        for _ in range(n):
            if size - off < 8:
                base, buf, off = base + off, buf[off:] + self.f.read(1 << 20), 0
                size = len(buf)
                if size < 8:
                    self.pos = base
                    self.need(8)  # raises: the file ends inside the length
            length = unpack(buf, off)[0]
            off += 8
            if length > size - off:  # past the buffer (any over-limit length is)
                if length > MAX_STRING_BYTES:
                    raise self.error(
                        f"{what} length {length} is over the {MAX_STRING_BYTES}-byte limit",
                        offset=base + off - 8,
                    )
                self.pos = base + off
                self.need(length)
                base, buf, off, size = base + off + length, b"", 0, 0
                self.f.seek(base)
            else:
                off += length
        self.pos = base + off
        self.f.seek(self.pos)

    def value(
        self, type_id: int, key: str, *, keep: bool = True, depth: int = 0
    ) -> GgufValue | None:
        """Read one value; with ``keep=False`` skip it (nothing is stored, not even a list)."""
        start = self.pos
        if type_id in _SCALARS:
            v = self.unpack(_SCALARS[type_id][1])[0]
            return v if keep else None
        if type_id == _STRING:
            if keep:
                return self.string(f"string value of '{key}'")
            self.skip_string(f"string value of '{key}'")
            return None
        if type_id != _ARRAY:
            why = f"value type {type_id} is not a GGUF type (0-12)"
            raise self.error(why, offset=start - 4, key=key)
        if depth >= MAX_ARRAY_NESTING:
            why = f"arrays nested deeper than {MAX_ARRAY_NESTING} levels"
            raise self.error(why, offset=start, key=key)
        item = self.u32()
        n = self.u64()
        if n > MAX_ARRAY_LENGTH:
            why = f"array length {n} is over the {MAX_ARRAY_LENGTH} limit"
            raise self.error(why, offset=start + 4, key=key)
        kept = keep and n <= MAX_KEPT_ARRAY_LENGTH
        values: tuple[GgufValue, ...] | None = None
        if item in _SCALARS:
            code = _SCALARS[item][1]
            if kept:
                values = self.unpack(code, n)
            else:
                self.skip(struct.calcsize(f"<{code}") * n)
        elif item in (_STRING, _ARRAY):
            if kept:
                items = (self.value(item, key, depth=depth + 1) for _ in range(n))
                values = tuple(v for v in items if v is not None)
            elif item == _STRING:
                self.skip_strings(n, f"string value of '{key}'")
            else:
                for _ in range(n):
                    self.value(item, key, keep=False, depth=depth + 1)
        else:
            why = f"array item type {item} is not a GGUF type"
            raise self.error(why, offset=start, key=key)
        if not keep:
            return None
        return GgufArray(item_type=_type_name(item), length=n, values=values)


def _type_name(type_id: int) -> str:
    return {_STRING: "STRING", _ARRAY: "ARRAY"}.get(type_id) or _SCALARS[type_id][0]


def _read_header(r: _Reader) -> tuple[int, int, int]:
    magic = r.read(4)
    if magic != GGUF_MAGIC:
        raise r.error(f"magic is {magic!r}, expected b'GGUF' (not a GGUF file)", offset=0)
    (version,) = struct.unpack("<I", r.read(4))
    if version & 0xFFFF == 0 and version != 0:
        # gguf-py GGUFReader: a byte-swapped version means a big-endian file
        r.order = ">"
        version = struct.unpack(">I", struct.pack("<I", version))[0]
    if version == 1:
        raise r.error("GGUF version 1 is no longer supported by llama.cpp", offset=4)
    if version not in (2, 3):
        raise r.error(f"unsupported GGUF version {version} (this reader knows 2 and 3)", offset=4)
    n_tensors = r.u64()
    if n_tensors > MAX_TENSOR_COUNT:
        raise r.error(f"tensor count {n_tensors} is over the {MAX_TENSOR_COUNT} limit", offset=8)
    n_kv = r.u64()
    if n_kv > MAX_KV_COUNT:
        raise r.error(f"metadata count {n_kv} is over the {MAX_KV_COUNT} limit", offset=16)
    return version, n_tensors, n_kv


def _read_alignment(r: _Reader, metadata: Mapping[str, GgufValue]) -> int:
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if (
        not isinstance(alignment, int)
        or isinstance(alignment, bool)
        or alignment <= 0
        or alignment & (alignment - 1)
    ):
        raise r.error(
            f"general.alignment {alignment!r} is not a positive power of two",
            offset=24,
            key="general.alignment",
        )
    return alignment


def _read_tensor(r: _Reader, index: int) -> tuple[str, tuple[int, ...], int, int, int]:
    # three reads per tensor (name length; name + n_dims; dims + type + offset): the header of
    # a many-layer model holds ~10 tensors per layer, so this loop dominates the read
    start = r.pos
    (n,) = struct.unpack(f"{r.order}Q", r.read(8))
    if n > MAX_STRING_BYTES:
        raise r.error(
            f"name of tensor {index} length {n} is over the {MAX_STRING_BYTES}-byte limit",
            offset=start,
        )
    raw = r.read(n + 4)
    try:
        name = raw[:n].decode("utf-8")
    except UnicodeDecodeError as e:
        raise r.error(
            f"name of tensor {index} is not valid UTF-8 ({e.reason})", offset=start + 8
        ) from e
    (n_dims,) = struct.unpack(f"{r.order}I", raw[n:])
    if n_dims > MAX_DIMS:
        raise r.error(
            f"tensor '{name}' has {n_dims} dimensions, at most {MAX_DIMS} allowed", offset=start
        )
    rest = r.read(8 * n_dims + 12)
    *dims_raw, type_id, offset = struct.unpack(f"{r.order}{n_dims}QIQ", rest)
    dims = tuple(int(d) for d in dims_raw)
    total = 1
    for d in dims:
        total *= d
        if d > _INT64_MAX or total > _INT64_MAX:
            raise r.error(f"tensor '{name}' dimensions {list(dims)} overflow int64", offset=start)
    type_pos = r.pos - 12
    return name, dims, int(type_id), int(offset), type_pos


#: bytes of tensor infos read per chunk by :func:`_read_tensors`
_TENSOR_CHUNK = 1 << 20


def _read_tensors(r: _Reader, n_tensors: int) -> list[tuple[str, tuple[int, ...], int, int, int]]:
    """All tensor infos, as :func:`_read_tensor` returns them, parsed from 1 MiB reads.

    One read and three ``unpack_from`` per tensor instead of three reads: the tensor infos of a
    20k-layer header are 180k entries. The first entry that is not plainly valid (a name over
    the limit or not UTF-8, too many dimensions, an int64 overflow, the file ending) is re-read
    by :func:`_read_tensor` from its start, with the remaining entries, so the error and its
    offset are exactly the ones it raises.
    """
    order = r.order
    u64 = struct.Struct(f"{order}Q")
    u32 = struct.Struct(f"{order}I")
    rests = [struct.Struct(f"{order}{d}QIQ") for d in range(MAX_DIMS + 1)]
    out: list[tuple[str, tuple[int, ...], int, int, int]] = []
    base = r.pos  # file offset of buf[0]
    buf = b""
    off = 0

    def refill(k: int) -> None:  # at an entry's start: keep the unread tail, read >= k more
        nonlocal buf, base, off
        want = min(max(k, _TENSOR_CHUNK), r.file_bytes - base - len(buf))
        if want > 0:
            buf = buf[off:] + r.f.read(want)
            base += off
            off = 0

    index = 0
    while index < n_tensors:
        if len(buf) - off < 8:
            refill(8)
            if len(buf) - off < 8:
                break
        (n,) = u64.unpack_from(buf, off)
        if n > MAX_STRING_BYTES:
            break
        if len(buf) - off < 24 + n + 8 * MAX_DIMS:
            refill(24 + n + 8 * MAX_DIMS)
            if len(buf) - off < 12 + n:
                break
        start = off
        try:
            name = buf[off + 8 : off + 8 + n].decode("utf-8")
        except UnicodeDecodeError:
            break
        (n_dims,) = u32.unpack_from(buf, off + 8 + n)
        off += 12 + n
        if n_dims > MAX_DIMS or off + 8 * n_dims + 12 > len(buf):
            off = start
            break
        *dims_raw, type_id, offset = rests[n_dims].unpack_from(buf, off)
        off += 8 * n_dims + 12
        total = 1
        for d in dims_raw:
            total *= d
            if d > _INT64_MAX or total > _INT64_MAX:
                break
        else:
            out.append((name, tuple(dims_raw), type_id, offset, base + off - 12))
            index += 1
            continue
        off = start
        break
    r.f.seek(base + off)
    r.pos = base + off
    out.extend(_read_tensor(r, i) for i in range(index, n_tensors))
    return out


def _checked_tensors(r: _Reader, n_tensors: int, alignment: int) -> GgufTensorTable:
    """The tensor infos read and checked one by one (the first problem raises, with its offset)."""
    raw = _read_tensors(r, n_tensors)
    names: list[str] = []
    n_bytes_col: list[int] = []
    type_names: list[str] = []
    seen: set[str] = set()
    expected = 0
    types: dict[int, GgmlType | None] = {}
    for name, dims, type_id, offset, type_pos in raw:
        gt = types.get(type_id)
        if gt is None:
            gt = types[type_id] = ggml_type_by_id(type_id)
        if gt is None:
            raise r.error(f"tensor '{name}' has unknown ggml type {type_id}", offset=type_pos)
        if name in seen:
            raise r.error(f"duplicate tensor name '{name}'", offset=type_pos)
        seen.add(name)
        if dims and dims[0] % gt.block_size:
            raise r.error(
                f"tensor '{name}' of type {gt.name} has {dims[0]} elements per row, not a "
                f"multiple of the block size {gt.block_size}",
                offset=type_pos,
            )
        if offset != expected:
            raise r.error(
                f"tensor '{name}' has data offset {offset}, expected {expected} "
                f"(tensors are stored in order, each padded to {alignment} bytes)",
                offset=type_pos + 4,
            )
        n_bytes = gt.tensor_bytes(prod(dims))
        names.append(name)
        n_bytes_col.append(n_bytes)
        type_names.append(gt.name)
        expected = offset - (-n_bytes // alignment) * alignment  # + align_up(n_bytes)
    return GgufTensorTable(
        tuple(names),
        tuple(row[1] for row in raw),
        tuple(row[2] for row in raw),
        tuple(row[3] for row in raw),
        tuple(n_bytes_col),
        tuple(type_names),
    )


def load_gguf(path: str | os.PathLike[str]) -> GgufFile:
    """Read a GGUF file's header: version, metadata and tensor infos. The data is never read.

    Raises:
        GgufFormatError: bad magic or version, a truncated header, absurd counts or lengths,
            an unknown tensor type, misplaced offsets, or tensors past the end of the file; the
            message names the byte offset.
        SourceNotFoundError: the file does not exist.
    """
    p = os.fspath(path)
    try:
        if not stat.S_ISREG(os.stat(p).st_mode):  # a FIFO would block open()/read()
            raise GgufFormatError(
                f"Opening GGUF file failed for '{p}': not a regular file (a pipe or device?). "
                "Pass the .gguf file's path.",
                path=p,
                offset=0,
            )
        f = open(p, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError as e:
        raise SourceNotFoundError(
            f"Opening GGUF file failed for '{p}': no such file. Check the path.", source=p
        ) from e
    except OSError as e:
        raise GgufFormatError(
            f"Opening GGUF file failed for '{p}': {e.strerror or e}. "
            "Check the path and permissions.",
            path=p,
            offset=0,
        ) from e
    with f:
        return read_gguf(f, path=p, file_bytes=os.fstat(f.fileno()).st_size)


@gc_paused
def read_gguf(f: BinaryIO, *, path: str, file_bytes: int) -> GgufFile:
    """Read a GGUF header from a binary stream of ``file_bytes`` bytes (see :func:`load_gguf`).

    Raises:
        GgufFormatError: as :func:`load_gguf`; an ``OSError`` while reading is wrapped too.
    """
    try:
        return _parse(_Reader(f, path, file_bytes))
    except OSError as e:
        raise GgufFormatError(
            f"Reading GGUF header failed for '{path}': {e.strerror or e}. Check the file and disk.",
            path=path,
        ) from e


def _parse(r: _Reader) -> GgufFile:
    version, n_tensors, n_kv = _read_header(r)
    metadata: dict[str, GgufValue] = {}
    for i in range(n_kv):
        start = r.pos
        key = r.string(f"key of metadata entry {i}")
        if key in metadata:
            raise r.error(f"duplicate metadata key '{key}'", offset=start, key=key)
        value = r.value(r.u32(), key)
        assert value is not None
        metadata[key] = value
    alignment = _read_alignment(r, metadata)

    start = r.pos
    fast = scan_tensor_infos(r.f, start, r.file_bytes, n_tensors, r.order, alignment)
    if fast is not None:
        table, r.pos = fast
    else:  # something is off: re-read tensor by tensor, for the exact error and offset
        r.f.seek(start)
        table = _checked_tensors(r, n_tensors, alignment)
    data_offset = align_up(r.pos, alignment)
    gguf = GgufFile(
        path=r.path,
        version=version,
        byte_order=r.order,
        metadata=MappingProxyType(metadata),
        tensors=table,
        alignment=alignment,
        data_offset=data_offset,
        file_bytes=r.file_bytes,
    )
    if len(table) and data_offset + gguf.data_bytes > r.file_bytes:
        raise r.error(
            f"truncated at offset {r.file_bytes}: the tensors end at byte "
            f"{data_offset + gguf.data_bytes} (incomplete download?)",
            offset=r.file_bytes,
        )
    return gguf

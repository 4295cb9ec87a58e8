"""Safetensors headers: exact tensor names, dtypes, shapes and bytes, without reading the data.

A safetensors file is an 8-byte little-endian header length ``N``, ``N`` bytes of JSON, then the
raw data. The JSON maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}``
(offsets relative to the data region) plus an optional ``"__metadata__"`` of string pairs.
The checks below follow the format's reference implementation (safetensors ``tensor.rs``:
``MAX_HEADER_SIZE = 100_000_000``, ``Metadata::validate`` requires contiguous offsets starting at 0,
``end - begin == nelements * bitsize / 8``, and the file to end exactly at the last tensor).
Only the header is read: a 140 GB checkpoint costs two small reads.

>>> from oomkit.loaders.safetensors import dtype_bits
>>> dtype_bits("BF16"), dtype_bits("F4")
(16, 4)
"""

from __future__ import annotations

import json
import os
import stat
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import prod
from pathlib import Path
from types import MappingProxyType

from oomkit.errors import SafetensorsFormatError, SourceNotFoundError, close_matches
from oomkit.loaders.tensor_roles import classify_tensor_names, is_quant_sidecar, logical_shape
from oomkit.spec.model import TensorInfo
from oomkit.units import MB

__all__ = [
    "MAX_HEADER_BYTES",
    "SAFETENSORS_DTYPES",
    "DtypeTotal",
    "SafetensorsHeader",
    "SafetensorsTensor",
    "dtype_bits",
    "dtype_totals",
    "load_safetensors_header",
    "load_safetensors_tensors",
    "parse_safetensors_header",
    "parse_safetensors_index",
    "tensor_infos",
]

#: safetensors ``MAX_HEADER_SIZE`` (tensor.rs): larger headers are refused before reading.
MAX_HEADER_BYTES = 100 * MB
#: most shards one index may name (real checkpoints: <= ~200)
MAX_SHARDS = 100_000

#: dtype name -> bits per element (safetensors ``Dtype::bitsize``).
SAFETENSORS_DTYPES: Mapping[str, int] = MappingProxyType(
    {
        "BOOL": 8,
        "U8": 8,
        "I8": 8,
        "F8_E5M2": 8,
        "F8_E4M3": 8,
        "F8_E8M0": 8,
        "I16": 16,
        "U16": 16,
        "F16": 16,
        "BF16": 16,
        "I32": 32,
        "U32": 32,
        "F32": 32,
        "C64": 64,
        "F64": 64,
        "I64": 64,
        "U64": 64,
        "F4": 4,
        "F6_E2M3": 6,
        "F6_E3M2": 6,
    }
)
# Names some writers use for the same types.
_DTYPE_ALIASES: Mapping[str, str] = {"E8M0": "F8_E8M0", "FP4": "F4", "F4_E2M1": "F4"}


def dtype_bits(dtype: str) -> int:
    """Bits per element of a safetensors dtype name (aliases ``E8M0``, ``FP4`` accepted).

    Raises:
        KeyError: not a safetensors dtype.
    """
    return SAFETENSORS_DTYPES[_DTYPE_ALIASES.get(dtype, dtype)]


@dataclass(frozen=True, slots=True, kw_only=True)
class SafetensorsTensor:
    """One tensor entry of a safetensors header, as stored."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int  # offset of the first byte, relative to the data region
    end: int  # offset past the last byte, relative to the data region

    @property
    def n_bytes(self) -> int:
        """Stored size in bytes (``end - begin``, checked against shape x dtype)."""
        return self.end - self.begin

    @property
    def n_elements(self) -> int:
        """Stored elements (1 for a scalar)."""
        return prod(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class SafetensorsHeader:
    """The parsed header of one safetensors file."""

    path: str
    header_bytes: int  # N, the JSON header length
    tensors: tuple[SafetensorsTensor, ...]  # in data-offset order
    metadata: Mapping[str, str]

    @property
    def data_offset(self) -> int:
        """Absolute file offset of the data region (8 + N)."""
        return 8 + self.header_bytes

    @property
    def data_bytes(self) -> int:
        """Size of the data region: sum of the tensors' bytes (offsets are contiguous)."""
        return self.tensors[-1].end if self.tensors else 0

    @property
    def file_bytes(self) -> int:
        """Exact size of a well-formed file with this header."""
        return self.data_offset + self.data_bytes


def _error(
    path: str, why: str, *, offset: int | None = None, key: str | None = None
) -> SafetensorsFormatError:
    where = f"byte offset {offset}" if offset is not None else f"tensor '{key}'"
    return SafetensorsFormatError(
        f"Reading safetensors header failed for '{path}' ({where}): {why}. "
        "Re-download the file or check that it is a safetensors checkpoint.",
        path=path,
        offset=offset,
        key=key,
    )


def _read_header_length(prefix: bytes, path: str) -> int:
    if len(prefix) < 8:
        raise _error(
            path,
            f"file is truncated: {len(prefix)} bytes, the 8-byte header length is missing",
            offset=0,
        )
    (n,) = struct.unpack("<Q", prefix[:8])
    if n > MAX_HEADER_BYTES:
        raise _error(
            path,
            f"header length claims {n} bytes, over the {MAX_HEADER_BYTES}-byte limit "
            "(not a safetensors file, or corrupted)",
            offset=0,
        )
    return int(n)


def _as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _parse_entry(name: str, raw: object, path: str) -> SafetensorsTensor:
    if not isinstance(raw, dict):
        raise _error(path, f"entry is {type(raw).__name__}, expected an object", key=name)
    dtype = raw.get("dtype")
    if not isinstance(dtype, str) or _DTYPE_ALIASES.get(dtype, dtype) not in SAFETENSORS_DTYPES:
        hint = close_matches(str(dtype), SAFETENSORS_DTYPES)
        did = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise _error(path, f"unknown dtype {dtype!r}{did}", key=name)
    shape_raw = raw.get("shape")
    if not isinstance(shape_raw, list) or any(_as_int(d) is None for d in shape_raw):
        raise _error(path, f"shape {shape_raw!r} is not a list of non-negative integers", key=name)
    offsets = raw.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or any(_as_int(o) is None for o in offsets)
        or offsets[1] < offsets[0]
    ):
        raise _error(
            path, f"data_offsets {offsets!r} is not [begin, end] with begin <= end", key=name
        )
    tensor = SafetensorsTensor(
        name=name, dtype=dtype, shape=tuple(shape_raw), begin=offsets[0], end=offsets[1]
    )
    n_bits = tensor.n_elements * dtype_bits(dtype)
    if n_bits % 8:
        raise _error(
            path,
            f"{tensor.n_elements} elements of {dtype} are not a whole number of bytes",
            key=name,
        )
    if tensor.n_bytes != n_bits // 8:
        raise _error(
            path,
            f"data_offsets span {tensor.n_bytes} bytes but shape {list(tensor.shape)} of {dtype} "
            f"needs {n_bits // 8}",
            key=name,
        )
    return tensor


def parse_safetensors_header(
    header: bytes, *, path: str, file_bytes: int | None = None
) -> SafetensorsHeader:
    """Parse and validate the JSON header of a safetensors file (pure; no I/O).

    Args:
        header: the ``N`` JSON bytes that follow the 8-byte length.
        path: the file (or URL) for error messages.
        file_bytes: the file's total size when known; it must equal ``8 + N + data size``.

    Returns:
        The header, tensors sorted by data offset.

    Raises:
        SafetensorsFormatError: invalid UTF-8 or JSON, unknown dtype, bad shape, overlapping or
            non-contiguous offsets, size mismatch, or a file size that does not match.
    """
    if not header.startswith(b"{"):
        raise _error(path, "header does not start with '{' (not a safetensors file)", offset=8)
    try:
        doc = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise _error(path, f"header is not valid UTF-8 JSON ({e})", offset=8) from e
    meta_raw = doc.pop("__metadata__", None) or {}
    if not isinstance(meta_raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in meta_raw.items()
    ):
        raise _error(path, "__metadata__ must map strings to strings", key="__metadata__")
    tensors = sorted(
        (_parse_entry(name, raw, path) for name, raw in doc.items()), key=lambda t: (t.begin, t.end)
    )
    expected = 0
    for t in tensors:
        if t.begin != expected:
            kind = (
                "overlaps the previous tensor" if t.begin < expected else "leaves a gap before it"
            )
            raise _error(
                path,
                f"data_offsets begin at {t.begin}, expected {expected}: the tensor {kind}",
                key=t.name,
            )
        expected = t.end
    parsed = SafetensorsHeader(
        path=path,
        header_bytes=len(header),
        tensors=tuple(tensors),
        metadata=MappingProxyType(meta_raw),
    )
    if file_bytes is not None and file_bytes != parsed.file_bytes:
        why = "truncated (incomplete download?)" if file_bytes < parsed.file_bytes else "longer"
        raise _error(
            path,
            f"file is {why}: it has {file_bytes} bytes, the header describes {parsed.file_bytes} "
            f"(8 + {parsed.header_bytes} header + {parsed.data_bytes} data)",
            offset=parsed.data_offset,
        )
    return parsed


def load_safetensors_header(path: str | os.PathLike[str]) -> SafetensorsHeader:
    """Read the header of a safetensors file; the data region is never read.

    Raises:
        SafetensorsFormatError: the header is absurd or malformed (see
            :func:`parse_safetensors_header`).
        SourceNotFoundError: the file does not exist.
    """
    p = os.fspath(path)
    try:
        # never open a FIFO or device an index names: open() would block forever
        if not stat.S_ISREG(os.stat(p).st_mode):
            raise _error(
                p, "cannot be read (not a regular file: a directory, pipe or device)", offset=0
            )
        with open(p, "rb") as f:
            file_bytes = os.fstat(f.fileno()).st_size
            n = _read_header_length(f.read(8), p)
            header = f.read(n)
    except FileNotFoundError as e:
        raise SourceNotFoundError(
            f"Opening safetensors file failed for '{p}': no such file. Check the path.", source=p
        ) from e
    except OSError as e:
        raise _error(p, f"cannot be read ({e.strerror or e})", offset=0) from e
    if len(header) < n:
        raise _error(
            p, f"file is truncated: header claims {n} bytes, only {len(header)} follow", offset=8
        )
    return parse_safetensors_header(header, path=p, file_bytes=file_bytes)


def parse_safetensors_index(text: bytes, *, path: str) -> dict[str, tuple[str, ...]]:
    """Parse a ``model.safetensors.index.json``: shard file name -> tensor names (pure).

    Raises:
        SafetensorsFormatError: not JSON, or no ``weight_map`` of string pairs.
    """
    try:
        doc = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise SafetensorsFormatError(
            f"Reading safetensors index failed for '{path}' (JSON): {e}. "
            "Re-download the index file.",
            path=path,
            key="weight_map",
        ) from e
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if (
        not isinstance(weight_map, dict)
        or not weight_map
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items())
    ):
        raise SafetensorsFormatError(
            f"Reading safetensors index failed for '{path}' (weight_map): expected a non-empty "
            "object mapping tensor names to shard files. Re-download the index file.",
            path=path,
            key="weight_map",
        )
    shards: dict[str, list[str]] = {}
    for tensor, shard in weight_map.items():
        if "/" in shard or "\\" in shard or shard in ("", ".", ".."):
            raise SafetensorsFormatError(
                f"Reading safetensors index failed for '{path}' (weight_map['{tensor}']): shard "
                f"'{shard}' is not a plain file name. Re-download the index file.",
                path=path,
                key=tensor,
            )
        shards.setdefault(shard, []).append(tensor)
    return {k: tuple(v) for k, v in shards.items()}


def tensor_infos(
    headers: tuple[SafetensorsHeader, ...], *, bits: int | None = None
) -> tuple[TensorInfo, ...]:
    """Convert headers to :class:`TensorInfo` rows (pure).

    ``name`` is the HF name, ``role``/``layer`` come from :func:`classify_tensor_names`, ``dtype``
    and ``n_bytes`` are as stored, and ``shape`` is the logical (unpacked) shape of packed
    quantized weights (see :mod:`oomkit.loaders.tensor_roles`), so ``n_params`` counts the
    original weights. ``bits`` is the checkpoint's quantization bits when known.
    """
    shapes = {t.name: t.shape for h in headers for t in h.tensors}
    roles = classify_tensor_names(list(shapes))
    rows = []
    for h in headers:
        for t in h.tensors:
            role, layer = roles[t.name]
            rows.append(
                TensorInfo(
                    name=t.name,
                    shape=logical_shape(t.name, t.shape, t.dtype, shapes, bits=bits),
                    role=role,
                    layer=layer,
                    dtype=t.dtype,
                    n_bytes=t.n_bytes,
                )
            )
    return tuple(rows)


@dataclass(frozen=True, slots=True, kw_only=True)
class DtypeTotal:
    """Totals of one stored dtype in a checkpoint."""

    dtype: str
    n_tensors: int
    n_bytes: int  # stored bytes, exact
    n_params: int  # logical parameters (packed weights unpacked; quantization sidecars count 0)


def dtype_totals(tensors: Iterable[TensorInfo]) -> tuple[DtypeTotal, ...]:
    """Exact stored bytes and parameters per stored dtype, largest first (pure).

    >>> from oomkit.spec.model import TensorInfo
    >>> dtype_totals([TensorInfo(name="w", shape=(4, 8), role="attn_q.weight", dtype="BF16",
    ...     n_bytes=64)])
    (DtypeTotal(dtype='BF16', n_tensors=1, n_bytes=64, n_params=32),)
    """
    acc: dict[str, list[int]] = {}
    for t in tensors:
        row = acc.setdefault(t.dtype or "?", [0, 0, 0])
        row[0] += 1
        row[1] += t.n_bytes or 0
        row[2] += 0 if is_quant_sidecar(t.role) else t.n_params
    rows = (
        DtypeTotal(dtype=k, n_tensors=v[0], n_bytes=v[1], n_params=v[2]) for k, v in acc.items()
    )
    return tuple(sorted(rows, key=lambda r: (-r.n_bytes, r.dtype)))


def load_safetensors_tensors(
    path: str | os.PathLike[str], *, bits: int | None = None
) -> tuple[TensorInfo, ...]:
    """Exact tensors of a ``.safetensors`` file or a sharded ``*.safetensors.index.json``.

    For an index, each shard's header is read (never its data) and every tensor the index lists
    must be in the shard it names.

    Raises:
        SafetensorsFormatError: a malformed header or index, or index and shards disagree.
        SourceNotFoundError: the file or a shard is missing.
    """
    p = Path(path)
    if not p.name.endswith(".json"):
        return tensor_infos((load_safetensors_header(p),), bits=bits)
    try:
        if not stat.S_ISREG(os.stat(p).st_mode):
            raise _error(
                str(p), "cannot be read (not a regular file: a directory, pipe or device)", offset=0
            )
        with open(p, "rb") as f:
            text = f.read(MAX_HEADER_BYTES + 1)
        if len(text) > MAX_HEADER_BYTES:
            raise _error(str(p), f"index is over the {MAX_HEADER_BYTES}-byte limit", offset=0)
    except FileNotFoundError as e:
        raise SourceNotFoundError(
            f"Opening safetensors index failed for '{p}': no such file. Check the path.",
            source=str(p),
        ) from e
    shards = parse_safetensors_index(text, path=str(p))
    if len(shards) > MAX_SHARDS:
        raise SafetensorsFormatError(
            f"Reading safetensors index failed for '{p}': {len(shards)} shards, over the "
            f"{MAX_SHARDS} limit. Re-download the index file.",
            path=str(p),
        )
    absent = [s for s in sorted(shards) if not (p.parent / s).exists()]
    if absent:
        head = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        raise SourceNotFoundError(
            f"Opening safetensors shards failed for '{p}': {len(absent)} missing: {head}. "
            "Download every shard the index names.",
            source=str(p),
        )
    headers_by_real: dict[str, SafetensorsHeader] = {}
    for shard in sorted(shards):  # a symlinked shard is read (and counted) once
        real = os.path.realpath(p.parent / shard)
        if real not in headers_by_real:
            headers_by_real[real] = load_safetensors_header(p.parent / shard)
        header = headers_by_real[real]
        present = {t.name for t in header.tensors}
        missing = [n for n in shards[shard] if n not in present]
        if missing:
            raise SafetensorsFormatError(
                f"Reading safetensors index failed for '{p}' (weight_map['{missing[0]}']): "
                "the index "
                f"puts {len(missing)} tensor(s) in '{shard}' but that shard lacks them. "
                "Re-download the checkpoint; the index and shards are from different versions.",
                path=str(p),
                key=missing[0],
            )
    return tensor_infos(tuple(headers_by_real.values()), bits=bits)

"""A checkpoint's tensors as columns: a :class:`TensorInfo` per item only when one is asked for.

A 20k-layer GGUF holds 180k tensors (issue 10); a validated :class:`TensorInfo` costs ~2.5 us to
build, and the llama.cpp estimate needs only sums and a few columns of them. A
:class:`TensorTable` keeps names, shapes, roles, layers, dtypes, stored bytes and parameter
counts as parallel tuples, validated in bulk with the same one-line errors as
:class:`TensorInfo` (the checks run over the *distinct* shapes and byte sizes: a many-layer
model repeats a dozen). It is a ``Sequence[TensorInfo]``, so every consumer that iterates
``spec.tensors`` works unchanged; hot paths read the columns.

>>> t = TensorTable(("blk.0.attn_q.weight",), ((8, 8),), ("attn_q.weight",), (0,), ("F16",),
...     (128,))
>>> t.n_params, t[0].n_params, t == TensorTable.of(tuple(t))
((64,), 64, True)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from oomkit.spec.model import TensorInfo, tensor_limits

__all__ = ["TensorTable"]


class TensorTable(Sequence[TensorInfo]):
    """Immutable columns of tensor facts (see the module docstring); hashable, comparable."""

    __slots__ = (
        "_hash",
        "_rows",
        "dtypes",
        "layers",
        "n_bytes",
        "n_params",
        "names",
        "roles",
        "shapes",
    )

    def __init__(
        self,
        names: tuple[str, ...],
        shapes: tuple[tuple[int, ...], ...],
        roles: tuple[str, ...],
        layers: tuple[int | None, ...],
        dtypes: tuple[str | None, ...],
        n_bytes: tuple[int | None, ...],
    ) -> None:
        n = len(names)
        if not all(len(c) == n for c in (shapes, roles, layers, dtypes, n_bytes)):
            raise ValueError("TensorTable columns differ in length")
        self.names = names
        self.shapes = shapes
        self.roles = roles
        self.layers = layers
        self.dtypes = dtypes
        self.n_bytes = n_bytes
        self._hash: int | None = None
        self._rows: tuple[TensorInfo, ...] | None = None
        self.n_params = self._checked_counts()

    def _checked_counts(self) -> tuple[int, ...]:
        """Parameters per tensor, checked in bulk over the distinct shape and byte-size
        *objects* (a header's columns share a dozen; by identity, so ``4.0`` or ``True`` never
        hides behind an equal ``4`` or ``1``); on anything unusual every row is built as a
        :class:`TensorInfo`, which raises exactly the error it always raised for the first bad
        one."""
        max_dim, max_elements, max_bytes = tensor_limits()
        shapes = dict(zip(map(id, self.shapes), self.shapes, strict=True))
        sizes = dict(zip(map(id, self.n_bytes), self.n_bytes, strict=True))
        elements: dict[int, int] = {}
        ok = True
        for key, shape in shapes.items():
            count = 1
            ok = type(shape) is tuple and len(shape) <= 8
            for d in shape if ok else ():
                if type(d) is not int or not 0 <= d <= max_dim:
                    ok = False
                    break
                count *= d
            if not ok or count > max_elements:
                ok = False
                break
            elements[key] = count
        ok = ok and all(
            nb is None or (type(nb) is int and 0 <= nb <= max_bytes) for nb in sizes.values()
        )
        if not ok:
            rows = tuple(self._build(i) for i in range(len(self.names)))  # raises on a bad row
            self._rows = rows
            return tuple(t.n_params for t in rows)
        return tuple(map(elements.__getitem__, map(id, self.shapes)))

    @classmethod
    def of(cls, tensors: Sequence[TensorInfo]) -> TensorTable:
        """A table of ``tensors`` (a table itself is returned as is)."""
        if isinstance(tensors, TensorTable):
            return tensors
        table = cls(
            tuple(t.name for t in tensors),
            tuple(t.shape for t in tensors),
            tuple(t.role for t in tensors),
            tuple(t.layer for t in tensors),
            tuple(t.dtype for t in tensors),
            tuple(t.n_bytes for t in tensors),
        )
        table._rows = tuple(tensors)
        return table

    def _build(self, i: int) -> TensorInfo:
        return TensorInfo(
            name=self.names[i],
            shape=self.shapes[i],
            role=self.roles[i],
            layer=self.layers[i],
            dtype=self.dtypes[i],
            n_bytes=self.n_bytes[i],
        )

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, i: int) -> TensorInfo: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[TensorInfo, ...]: ...

    def __getitem__(self, i: int | slice) -> TensorInfo | tuple[TensorInfo, ...]:
        if isinstance(i, slice):
            return tuple(self._build(j) for j in range(len(self))[i])
        return self._build(range(len(self))[i])  # negative indices; IndexError past the end

    def __iter__(self) -> Iterator[TensorInfo]:
        # built once, on the first full iteration (the columns serve the hot paths)
        if self._rows is None:
            self._rows = tuple(self._build(i) for i in range(len(self)))
        return iter(self._rows)

    def _columns(self) -> tuple[tuple[object, ...], ...]:
        return (self.names, self.shapes, self.roles, self.layers, self.dtypes, self.n_bytes)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, TensorTable):
            return self._columns() == other._columns()
        return NotImplemented

    def __hash__(self) -> int:
        # the estimator keys lru_caches on the spec: hash the columns once
        if self._hash is None:
            self._hash = hash(self._columns())
        return self._hash

    def __repr__(self) -> str:
        return f"TensorTable({len(self)} tensors)"

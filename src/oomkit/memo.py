"""Results memoised by the identity of an immutable argument.

The estimator's weights tables and tensor lists are tuples of 10^2-10^5 frozen records, themselves
memoised: hashing one for an ``lru_cache`` key costs about as much as the work it would save. An
:class:`IdentityMemo` keys on ``id(obj)`` plus any small extra key, keeps ``obj`` alive in the
entry (so the id cannot be reused while the entry exists) and checks it is the same object on a
hit. It is bounded: full, it starts over.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["IdentityMemo"]

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """``memo.get(obj, extra)`` / ``memo.put(obj, value, extra)`` for immutable ``obj`` (tuples,
    columnar tables).

    >>> m: IdentityMemo[int] = IdentityMemo(2)
    >>> t = (1, 2, 3)
    >>> m.put(t, 6)
    >>> m.get(t), m.get((1, 2, 3)), m.get(t, extra=("other",))
    (6, None, None)
    """

    __slots__ = ("_entries", "_maxsize")

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._entries: dict[tuple[int, Hashable], tuple[object, V]] = {}

    def get(self, obj: object, extra: Hashable = ()) -> V | None:
        hit = self._entries.get((id(obj), extra))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return None

    def put(self, obj: object, value: V, extra: Hashable = ()) -> None:
        """Remember ``value`` for ``obj``; only hashable (immutable) objects are remembered: a
        tuple, or a columnar table (a list or dict is not)."""
        if not isinstance(obj, Hashable):
            return
        if len(self._entries) >= self._maxsize:
            self._entries.clear()
        self._entries[(id(obj), extra)] = (obj, value)

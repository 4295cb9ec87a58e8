"""Fixes: what to change, the exact command or flag, and the bytes it is expected to free.

A :class:`Fix` computed from the log's numbers has ``expected_saving_bytes`` set and ``generic``
False. When the log lacks the numbers, :func:`generic` builds a fix whose ``why`` says so and whose
saving is ``None``. :func:`rank` orders fixes by expected saving (largest first, unknown last).

>>> f = Fix(title="t", why="w", commands=("x",), expected_saving_bytes=5)
>>> [x.title for x in rank([generic("g", "because", ("y",)), f])]
['t', 'g']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from oomkit.units import MiB, TiB, format_bytes_fine

__all__ = [
    "GENERIC_CONTEXT_CAP",
    "KV_TYPE_BYTES",
    "Fix",
    "floor_to",
    "generic",
    "kv_type_ratio",
    "mib",
    "rank",
    "shorter_context",
    "size_text",
    "util_up",
]

# Bytes per element of llama.cpp KV cache types (ggml type_size / block_size, ggml/src/ggml.c
# type_traits: f16 2/1, q8_0 34/32, q4_0 18/32, q4_1 20/32, q5_0 22/32, q5_1 24/32, iq4_nl 18/32).
KV_TYPE_BYTES: dict[str, tuple[int, int]] = {
    "f32": (4, 1),
    "f16": (2, 1),
    "bf16": (2, 1),
    "q8_0": (34, 32),
    "q5_1": (24, 32),
    "q5_0": (22, 32),
    "q4_1": (20, 32),
    "q4_0": (18, 32),
    "iq4_nl": (18, 32),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Fix:
    """One remedy: a title, why it helps (with the arithmetic), commands, and expected saving.

    ``expected_saving_bytes`` is the memory the change frees on the failing device (or host), or
    ``None`` when the log does not give enough numbers; ``generic`` marks advice not computed
    from the log; ``hardware`` marks a change that needs hardware the log does not show (more
    GPUs, tensor parallelism, a bigger card): such fixes rank last and their title says so.
    """

    title: str
    why: str
    commands: tuple[str, ...]
    expected_saving_bytes: int | None
    generic: bool = False
    hardware: bool = False
    #: the estimate says the run fits after this change (None: not known)
    fits: bool | None = None
    #: among fixes that fit, the smaller ``order`` (a less intrusive change) ranks first
    order: int | None = None
    #: the change costs much speed (llama.cpp ``-nkvo``: every decoded token reads the KV cache
    #: over PCIe): it ranks after the sized fixes that cost none, whatever it saves
    slow: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON shape of the doctor contract (``title, why, commands, expected_saving_bytes``)."""
        return {
            "title": self.title,
            "why": self.why,
            "commands": list(self.commands),
            "expected_saving_bytes": self.expected_saving_bytes,
            "generic": self.generic,
            "hardware": self.hardware,
            **({"fits": self.fits} if self.fits is not None else {}),
            **({"slow": True} if self.slow else {}),
        }


def generic(title: str, why: str, commands: Sequence[str]) -> Fix:
    """A fix the log's numbers cannot size; its ``why`` says so."""
    return Fix(
        title=title,
        why="Generic advice (the log does not give the numbers to size it): " + why,
        commands=tuple(commands),
        expected_saving_bytes=None,
        generic=True,
    )


def rank(fixes: Iterable[Fix]) -> tuple[Fix, ...]:
    """Fixes by expected saving, largest first; unsized fixes keep their order, after sized ones;
    hardware changes come last whatever they would save (the user can apply the others now).
    Sized fixes the estimate says make the run fit come first (the least intrusive first, by
    ``order``), those that are not enough alone after the ones not known either way; within
    each, a fix with a large speed cost (``slow``) after those without.

    Duplicate titles keep the first occurrence.
    """
    seen: set[str] = set()
    unique: list[Fix] = []
    for f in fixes:
        if f.title in seen:
            continue
        seen.add(f.title)
        unique.append(f)
    hw = [f for f in unique if f.hardware]
    unique = [f for f in unique if not f.hardware]
    sized = sorted(
        (f for f in unique if f.expected_saving_bytes is not None),
        key=lambda f: (
            0 if f.fits else 2 if f.fits is False else 1,  # makes it fit, unknown, not enough
            f.slow,
            f.order if f.fits and f.order is not None else 0,
            -(f.expected_saving_bytes or 0),
        ),
    )
    return tuple(sized) + tuple(f for f in unique if f.expected_saving_bytes is None) + tuple(hw)


#: the context a generic "cap the context" fix suggests when the log states none
GENERIC_CONTEXT_CAP = 32768
_MIN_CONTEXT_CAP = 2048


def shorter_context(current: int | None) -> int | None:
    """The ``--context-length`` a generic fix suggests: :data:`GENERIC_CONTEXT_CAP` when the
    log states no context, else one below the stated one (never equal or above it: that is no
    change), half of it down to 2048 tokens; None when the stated context is already shorter.

    >>> shorter_context(None), shorter_context(131072), shorter_context(32768)
    (32768, 32768, 16384)
    >>> shorter_context(3000) is None
    True
    """
    if current is None:
        return GENERIC_CONTEXT_CAP
    if current > GENERIC_CONTEXT_CAP:
        return GENERIC_CONTEXT_CAP
    half = floor_to(current // 2, 256)
    return half if half >= _MIN_CONTEXT_CAP else None


def floor_to(value: int, multiple: int) -> int:
    """Round down to a multiple (at least ``multiple``).

    >>> floor_to(81537, 16)
    81536
    """
    return max(multiple, value // multiple * multiple)


def util_up(fraction: float) -> float:
    """Round a memory fraction up to two decimals (``--gpu-memory-utilization`` style).

    >>> util_up(0.9277)
    0.93
    """
    return -(-round(fraction * 10000) // 100) / 100


def kv_type_ratio(current: str | None, new: str) -> float | None:
    """Size ratio new/current of a KV cache element type; ``None`` if a type is unknown.

    >>> kv_type_ratio("f16", "q8_0")
    0.53125
    """
    if current is None:
        return None
    a = KV_TYPE_BYTES.get(current.lower())
    b = KV_TYPE_BYTES.get(new.lower())
    if a is None or b is None:
        return None
    return (b[0] / b[1]) / (a[0] / a[1])


def mib(n_bytes: int) -> int:
    """Whole MiB, rounded up (for flags that take MiB)."""
    return -(-n_bytes // MiB)


def size_text(n_bytes: int | None) -> str:
    """A size for explanations: ``?`` if unknown, bytes under 1 KiB, KiB under 1 MiB, else
    binary units.

    >>> size_text(256), size_text(983040), size_text(3 << 30), size_text(None)
    ('256 bytes', '960.00 KiB', '3.00 GiB', '?')
    """
    if n_bytes is None:
        return "?"
    if abs(n_bytes) >= TiB << 40:
        return f"{n_bytes} bytes"
    return format_bytes_fine(n_bytes)

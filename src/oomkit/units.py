"""Byte units, exact integer helpers, and the one place sizes are parsed and printed.

Inside oomkit every memory quantity is an ``int`` number of bytes. Binary (IEC) and
decimal (SI) units are kept distinct: ``"80GB" == 80 * GB`` and ``"80GiB" == 80 * GiB``.
A single-letter suffix (``24G``, ``512M``) is binary, as in llama.cpp's and Ollama's memory
flags and logs (``--cache-ram``/``OLLAMA_GPU_OVERHEAD`` docs, ``ggml`` "MiB" reports) and as a
"24G" card holds 24 GiB. A bare number is rejected because it is ambiguous.

>>> parse_size("24GiB") == 24 * GiB
True
>>> parse_size("1.5 GB")
1500000000
>>> format_bytes(13 * GiB + 500 * MiB)
'13.49 GiB'
>>> ceil_div(10, 4)
3
>>> align_up(257, 256)
512
"""

from __future__ import annotations

import re
from functools import cache

__all__ = [
    "CONTEXT_FORMS",
    "GB",
    "KB",
    "MB",
    "TB",
    "GiB",
    "KiB",
    "MiB",
    "TiB",
    "align_up",
    "ceil_div",
    "format_bytes",
    "format_bytes_fine",
    "format_params",
    "is_context_max",
    "k8s_quantity",
    "parse_count",
    "parse_size",
]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40
KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12

_UNITS: dict[str, int] = {
    "b": 1,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": TiB,
    "kb": KB,
    "mb": MB,
    "gb": GB,
    "tb": TB,
    # single-letter suffixes: binary (llama.cpp / Ollama / GPU spec sheets: "24G" = 24 GiB)
    "k": KiB,
    "m": MiB,
    "g": GiB,
    "t": TiB,
}


# The patterns are compiled when first used (compiling costs ~0.1 ms each; ``oomkit estimate``
# without a size or count option uses none of them).
@cache
def _size_re() -> re.Pattern[str]:
    return re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]+)\s*$")


def ceil_div(a: int, b: int) -> int:
    """Return ``ceil(a / b)`` for non-negative ints without floats."""
    if b <= 0:
        raise ValueError(f"ceil_div divisor must be positive, got {b}")
    return -(-a // b)


def align_up(x: int, n: int) -> int:
    """Round ``x`` up to a multiple of ``n`` (GGML_PAD in ggml/include/ggml.h)."""
    return ceil_div(x, n) * n


def parse_size(text: str) -> int:
    """Parse a size with a required unit into bytes.

    Args:
        text: e.g. ``"24GiB"``, ``"80 GB"``, ``"512MiB"``, ``"1.5TB"``, ``"24G"`` (= 24 GiB).
            Units are case-insensitive; GB/MB are decimal, GiB/MiB and G/M are binary.

    Returns:
        The size in bytes (int, rounded down to a whole byte).

    Raises:
        ValueError: the text has no unit, an unknown unit, or is not a number.
    """
    m = _size_re().match(text)
    if m is None:
        stripped = text.strip()
        if re.fullmatch(r"[0-9]+(?:\.[0-9]*)?", stripped):
            raise ValueError(
                f"size '{text}' has no unit: write {stripped}GiB (binary) or {stripped}GB (decimal)"
            )
        raise ValueError(f"cannot read size '{text}': expected a number and a unit such as 24GiB")
    number, unit = m.group(1), m.group(2).lower()
    if unit not in _UNITS:
        raise ValueError(
            f"size '{text}' has an unknown unit '{m.group(2)}': use B, KiB, MiB, GiB, TiB "
            "(binary; also K, M, G, T), or KB, MB, GB, TB (decimal)"
        )
    whole, _, frac = number.partition(".")
    if len(whole) > 15 or len(frac) > 15:
        raise ValueError(f"size '{text}' is out of range (at most 15 digits each side of '.')")
    scale = _UNITS[unit]
    value = int(whole or "0") * scale
    if frac:
        value += int(frac) * scale // (10 ** len(frac))
    return value


@cache
def _count_re() -> re.Pattern[str]:
    return re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmM]?)\s*$")


def parse_count(text: str) -> int:
    """Parse a token count such as ``8192``, ``32k`` (= 32768) or ``1M`` (= 1048576).

    ``k`` means 1024 here, as context lengths are powers of two in every runtime's docs.

    Raises:
        ValueError: not a non-negative count.
    """
    m = _count_re().match(text)
    if m is None:
        raise ValueError(f"cannot read count '{text}': expected an integer such as 8192 or 32k")
    mult = {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    whole, _, frac = m.group(1).partition(".")
    value = int(whole) * mult
    if frac:
        if mult == 1:
            raise ValueError(f"cannot read count '{text}': a count must be a whole number")
        value += int(frac) * mult // (10 ** len(frac))
    return value


#: what a context (``--ctx`` of estimate and plan, the web's ``ctx``) may be: one wording for
#: the command line's error and the web's 422
CONTEXT_FORMS = "an integer such as 8192 or 32k, or max (the largest context that fits)"


def is_context_max(text: str) -> bool:
    """``text`` is a context's ``max``; raises ``ValueError`` (naming ``max`` with the counts
    :data:`CONTEXT_FORMS` lists) when it is neither ``max`` nor readable as a count.

    >>> is_context_max(" MAX "), is_context_max("32k")
    (True, False)
    """
    if text.strip().lower() == "max":
        return True
    if _count_re().match(text) is None:
        raise ValueError(f"cannot read context '{text}': expected {CONTEXT_FORMS}")
    return False


def format_bytes(n_bytes: int) -> str:
    """Format bytes for display, always binary: GiB with two decimals, MiB below 1 GiB."""
    sign = "-" if n_bytes < 0 else ""
    n = abs(n_bytes)
    if n >= GiB:
        return f"{sign}{n / GiB:.2f} GiB"
    return f"{sign}{n / MiB:.2f} MiB"


def k8s_quantity(n_bytes: int) -> str:
    """A Kubernetes resource quantity with a binary suffix, rounded up to whole Gi (or Mi).

    >>> k8s_quantity(32 << 30), k8s_quantity(600 << 20)
    ('32Gi', '600Mi')
    """
    if n_bytes >= GiB:
        return f"{ceil_div(n_bytes, GiB)}Gi"
    return f"{ceil_div(n_bytes, MiB)}Mi"


def format_bytes_fine(n_bytes: int) -> str:
    """Like :func:`format_bytes`, but sizes under 1 MiB in KiB and under 1 KiB in bytes (what
    PyTorch's own messages print, e.g. ``960.00 KiB`` reserved but unallocated).

    >>> format_bytes_fine(256), format_bytes_fine(983040), format_bytes_fine(3 << 30)
    ('256 bytes', '960.00 KiB', '3.00 GiB')
    """
    n = abs(n_bytes)
    if n < KiB:
        return f"{n_bytes} bytes"
    if n < MiB:
        return f"{'-' if n_bytes < 0 else ''}{n / KiB:.2f} KiB"
    return format_bytes(n_bytes)


def format_params(n_params: float) -> str:
    """A parameter count for display, in decimal units: billions (``B``) from 10^9, millions
    (``M``) from 10^6, thousands (``K``) from 10^3, two decimals (a tiny test model printed as
    ``0.00 B`` before). JSON keeps the plain integer.

    >>> [format_params(n) for n in (8_030_261_248, 124_439_808, 70_144, 12)]
    ['8.03 B', '124.44 M', '70.14 K', '12']
    """
    n = abs(n_params)
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n_params / scale:.2f} {unit}"
    return f"{n_params:.0f}"

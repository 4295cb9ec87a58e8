"""Option values the CLI parses, without click: the click types in ``params`` and the
click-free ``estimate`` path (``estimate_fast``) both convert through these functions."""

from __future__ import annotations

from oomkit.units import parse_count, parse_size

__all__ = ["CTX_MAX", "parse_context", "parse_count", "parse_size"]

#: what ``--ctx max`` converts to (no real context is negative)
CTX_MAX = -1


def parse_context(text: str) -> int:
    """A token count (``8192``, ``32k``), or ``max`` -> :data:`CTX_MAX`.

    Raises:
        ValueError: not a count.
    """
    if text.strip().lower() == "max":
        return CTX_MAX
    return parse_count(text)

"""An English memory noun inside a Chinese, Japanese or Korean sentence (issue 9, docrec32).

Chinese, Japanese and Korean users often keep the English technical noun and write the rest in
their language: "cuda memory가 부족하다" (Korean: CUDA memory is insufficient), "GPU memory不够用",
"memoryが足りない". The CJK report grammars (:mod:`parse_wordings_report_i18n`) know the native
nouns only (메모리, メモリ, 显存/内存), so such a sentence read as neither language.

:func:`native_noun` rewrites the English noun into the native noun of the script that follows it
(Hangul -> 메모리, kana -> メモリ, Han -> 显存 for a device's memory, else 内存), and the existing
grammar, with its vetoes for advice, prevention and questions, reads the result. Nothing is
recognised that the same sentence written with the native noun would not be.
"""

from __future__ import annotations

import re

__all__ = ["native_noun"]

# the noun, with an optional device qualifier, right before a CJK character (one space allowed)
_MIXED = re.compile(
    r"(?:\b(?P<dev>gpu|cuda|video|device|vram|graphics)[ _-]?)?"
    r"\b(?P<noun>memory|mem|ram|vram)(?= ?(?P<next>[\u3040-\u30ff\uac00-\ud7a3\u4e00-\u9fff]))",
    re.IGNORECASE,
)


def _native(m: re.Match[str]) -> str:
    nxt = m.group("next")
    if "\uac00" <= nxt <= "\ud7a3":
        return "메모리"
    if "\u3040" <= nxt <= "\u30ff":
        return "メモリ"
    device = m.group("dev") is not None or m.group("noun").lower() == "vram"
    return "显存" if device else "内存"


def native_noun(s: str) -> str | None:
    """``s`` with each English memory noun that a CJK word follows written as the native noun,
    else ``None`` (no such noun, or ``s`` has no CJK character at all)."""
    if s.isascii():
        return None
    out, n = _MIXED.subn(_native, s)
    return out if n else None

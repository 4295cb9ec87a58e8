"""The lines in the middle of a long log that the generic fallback can read at all.

:func:`oomkit.diagnose.parse_extra.parse_generic` reads a line only if its lower case holds one
of its own keywords or a wording that :func:`oomkit.diagnose.parse_wordings.harvested_match`
finds with ``prose=False`` (the runtimes' own wordings, paste damage and runtime codes: every
such family is tried only when one of its needles occurs). Away from a paste's head and tail
(``PROSE_HEAD`` / ``PROSE_TAIL``) a line holding none of :data:`MIDDLE_NEEDLES` is read for
nothing: :func:`generic_lines` passes over those with one search of the lowered middle instead
of a ``lower()``, an any() and five gates a line (docperf17: 1.2 us a line, 0.6 s for a log of
500,000 short lines).

>>> from oomkit.diagnose.text import split_lines
>>> lines = split_lines("a\\n" * 10 + "CUDA out of memory\\n" + "b\\n" * 10)
>>> list(generic_lines(lines, 2, 3))
[0, 1, 10, 19, 20, 21]
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import accumulate

from oomkit.diagnose import parse_wordings, parse_wordings_damage, parse_wordings_exits
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["MIDDLE_NEEDLES", "generic_lines"]


def _needles(*families: Sequence[tuple[Sequence[str], object]]) -> tuple[str, ...]:
    return tuple(n for fam in families for needles, _ in fam for n in needles)


#: every literal one of whose presence in a line's lower case the generic fallback's middle
#: path needs before it can match: parse_extra._GENERIC_KEYS (added by parse_extra), the own
#: families of parse_wordings._own_match and parse_wordings_exits.exit_match(prose=False), the
#: families of parse_wordings_damage.damage_match and its two keyword tests ("_ex"/"ce_e" for
#: a status typo, "out of m" for a misspelt "memory"), and the three codes of
#: parse_wordings_codes.code_match (tests/test_doctor_scan_speed.py checks the union)
MIDDLE_NEEDLES: tuple[str, ...] = (
    *_needles(parse_wordings._OWN, parse_wordings_exits._OWN, parse_wordings_damage._FAMILIES),
    "_ex",
    "ce_e",
    "out of m",
    "nvml_success",
    "nv_err_no_memory",
    "synhelper",
)


@lru_cache(maxsize=8)
def _gate(keys: tuple[str, ...]) -> re.Pattern[str]:
    return needles_re((*MIDDLE_NEEDLES, *keys))


def _first_of(middle: Sequence[str]) -> dict[str, int]:
    """Each distinct line of ``middle`` and the index of its first occurrence (built in C)."""
    return dict(zip(reversed(middle), range(len(middle) - 1, -1, -1), strict=True))


def generic_lines(
    lines: Lines, head: int, tail: int, keys: Sequence[str] = (), *, first_only: bool = False
) -> Iterator[int]:
    """Indices, in log order, of every line of the first ``head`` and the last ``tail`` and of
    each line between them whose lower case holds a needle of :data:`MIDDLE_NEEDLES` or
    ``keys``. Exact: a needle holds no newline, so it matches the lowered middle joined by
    newlines inside one line; where lowering changes a length (``"İ"``), every line is given.
    ``first_only``: of the middle's lines only the first occurrence of each text (when at least
    half the middle are repeats), for a reader that stops at the first line it accepts."""
    n = len(lines.text)
    lo, hi = min(head, n), max(min(head, n), n - tail)
    yield from range(lo)
    middle = lines.text[lo:hi]
    text = "\n".join(middle)
    low = text.lower()
    gate = _gate(tuple(keys))
    if len(low) != len(text) or text.count("\n") != max(0, len(middle) - 1) or not middle:
        yield from range(lo, hi)
    elif first_only and len(first := _first_of(middle)) * 2 <= len(middle):
        # a reader whose outcome in the middle depends on the line's text alone reads each
        # text once: a log that repeats its lines gives the first of each (perf23b: a CJK word
        # a line admitted every line of the middle, one by one)
        for k in sorted(first.values()):
            if gate.search(middle[k].lower()) is not None:
                yield lo + k
    else:
        starts = (0, *accumulate(len(t) + 1 for t in middle[:-1]))
        pos = 0
        k = -1
        last = len(middle)
        search = gate.search
        while (m := search(low, pos)) is not None:
            # after line ``k``: the next line when the match starts before the one after it
            at = m.start()
            k = (
                k + 1
                if k + 2 >= last or at < starts[k + 2]
                else bisect_right(starts, at, k + 2) - 1
            )
            yield lo + k
            if k + 1 >= last:
                break
            pos = starts[k + 1]
    yield from range(hi, n)

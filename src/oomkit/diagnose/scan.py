"""The one prefilter-and-scan loop that the family parsers (``parse_*.py``) share.

Every family parser reads a log the same way: a compiled alternation of the family's literal
needles (:func:`oomkit.diagnose.text.needles_re`, one C-speed search a line) passes over the lines
that cannot hold any of its wordings, and the family's reader runs on the lines left, in log
order. :func:`admitted` is that loop (for the parsers that also gather facts line by line);
:func:`scan_events` adds the common body: one event at most a line, kept in log order, with an
optional test that drops a message read again from its next line (a hard-wrapped paste, a
runtime that prints the same failure for every kernel).

>>> import re
>>> from oomkit.diagnose.text import split_lines
>>> lines = split_lines("ok\\nboom: out of memory\\nboom: out of memory\\n")
>>> [lines.number[i] for i in admitted(lines, re.compile("boom"))]
[2, 3]
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.text import Lines, literal_gate, lowered_twin

__all__ = ["EventAt", "admitted", "on_cleaned", "on_raw", "read_ends", "scan_events"]

EventAt = Callable[[Lines, int], "OomEvent | None"]
"""A family's reader: the event that line ``i`` of ``lines`` states, or ``None``."""


def admitted(lines: Lines, prefilter: re.Pattern[str]) -> Iterator[int]:
    """Indices of the lines in which ``prefilter`` occurs, in log order.

    A literal gate (:func:`oomkit.diagnose.text.literal_gate`) searches the lines joined by
    newlines: one C-speed search per admitted line instead of a Python step per line (~20
    parsers each walked every line: a log of 500,000 short lines paid 2 s in these loops).
    A needle without a newline matches inside one line, so the lines are the same."""
    search = prefilter.search
    joined = lines.joined() if literal_gate(prefilter) else None
    if joined is None:
        for i, raw in enumerate(lines.text):
            if search(raw):
                yield i
        return
    text, starts = joined
    twin = lowered_twin(prefilter)  # a case-insensitive gate: its twin on the lowered text
    lowered = lines.joined_lower() if twin is not None else None
    if twin is not None and lowered is not None:
        search, text = twin.search, lowered
    n = len(starts)
    pos = 0
    i = -1
    while (m := search(text, pos)) is not None:
        # the match lies after line ``i``: in the next line when it starts before the one after
        # (every line a match: no bisect), else wherever bisect puts it
        at = m.start()
        i = i + 1 if i + 2 >= n or at < starts[i + 2] else bisect_right(starts, at, i + 2) - 1
        yield i
        if i + 1 >= n:
            return
        pos = starts[i + 1]


def on_raw(read: Callable[[str, int], OomEvent | None]) -> EventAt:
    """A reader of (the line as logged, its line number) as an :data:`EventAt`."""
    return lambda lines, i: read(lines.text[i], lines.number[i])


def on_cleaned(read: Callable[[str, int], OomEvent | None]) -> EventAt:
    """A reader of (the cleaned line, its line number) as an :data:`EventAt`."""
    return lambda lines, i: read(lines.cleaned(i), lines.number[i])


def scan_events(
    lines: Lines,
    prefilter: re.Pattern[str],
    event_at: EventAt,
    *,
    repeat: Callable[[OomEvent, OomEvent], bool] | None = None,
) -> list[OomEvent]:
    """The events ``event_at`` reads on the lines ``prefilter`` admits (log order). Never raises
    unless ``event_at`` does.

    ``repeat(last, new)`` true drops ``new``: the same failure as the event kept before it.
    """
    events: list[OomEvent] = []
    for i in admitted(lines, prefilter):
        ev = event_at(lines, i)
        if ev is None or (repeat is not None and events and repeat(events[-1], ev)):
            continue
        events.append(ev)
    return events


_SEEN_MAX = 4096  # distinct lines whose outcome read_ends remembers in the middle of a log


def read_ends(
    idx: Sequence[int],
    read: Callable[[int], OomEvent | None],
    *,
    head: int,
    tail: int,
    key: Callable[[int], str | None],
) -> tuple[list[OomEvent], int]:
    """The events ``read`` finds on the lines ``idx`` (log order): the first ``head`` and the
    last ``tail`` of them, and how many others there are (counted, not kept).

    ``read`` must depend on its line alone (no state carried from line to line), so the ends
    can be read from either side: a log whose every line is an OOM built an event a line
    before the dispatcher kept 200 of them (docperf18: 2.2 s per 100 MB). In the middle a line
    is only counted, and ``key(i)``, when not ``None``, names what ``read(i)`` depends on but
    the line number (its text): a line seen before is counted without being read again.
    """
    events: list[OomEvent] = []
    f = 0
    while f < len(idx) and len(events) < head:
        ev = read(idx[f])
        f += 1
        if ev is not None:
            events.append(ev)
    last: list[OomEvent] = []
    b = len(idx)
    while b > f and len(last) < tail:
        b -= 1
        ev = read(idx[b])
        if ev is not None:
            last.append(ev)
    seen: dict[str, bool] = {}
    middle = 0
    for i in idx[f:b]:
        k = key(i)
        hit = seen.get(k) if k is not None else None
        if hit is None:
            hit = read(i) is not None
            if k is not None and len(seen) < _SEEN_MAX:
                seen[k] = hit
        middle += hit
    return events + last[::-1], middle

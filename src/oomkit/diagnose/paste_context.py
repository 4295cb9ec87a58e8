"""The lines around the failing message: facts the rest of a paste states about the failure.

A runtime rule reads the failing message, and the prose rules (:mod:`oomkit.diagnose.rules_stated`,
:mod:`oomkit.diagnose.rules_stated_alloc`) read that message's own line. Users paste more: an
issue title above a traceback, a sentence between two log excerpts ("all tensors are sent to
cuda:0 first"), the launcher's command line, the progress bar of the loader that was running.
The deciding fact then sits lines away from the OOM. :func:`read_surroundings` gathers what the
rules need from those lines. It splits the paste once (in C, linear in its size) and examines in
Python only the lines a deciding sentence sits on in a report: the first and the last
:data:`EDGE_LINES` (a title, the poster's conclusion) and the :data:`NEAR_LINES` on either side
of every OOM message (the command, the remark just above it), so a 100 MB log costs one split
and at most a few thousand lines of work, and keeps at most :data:`MAX_PROSE` prose lines:

* ``prose``: the lines a person wrote, outside every OOM message (an issue title, a sentence of
  the report): a line that starts with a letter, holds at least :data:`MIN_WORDS` words and is
  neither a traceback frame, an exception line nor code (a log line's rank, timestamp and
  level prefixes are stripped first, as the parsers strip them). The first and the
  last :data:`MAX_PROSE` // 2 are kept (a title sits at the top, the poster's conclusion at the
  bottom). The prose rules read them with :func:`oomkit.diagnose.rules_evidence.refine_by_evidence`
  after the failing line itself, so a statement lines away decides only what the message and its
  own line left open.

Facts with a reader of their own are not read again here: a loader's progress bar still
running (``parse_torch_frames``: ``frame_phase = model_load``), a loop's bar at 0/N
(``first_step_bar``), steps completed (``completed_steps``), a pasted ``nvidia-smi`` table
(``parse_smi``), the launcher's process count and the training settings (``training_context``),
llama.cpp's ``offloaded k/N layers`` and vLLM's ``model weights took`` (their parsers).

Pure: text in, value out; never raises.

>>> s = read_surroundings(
...     "With torchrun all tensors are sent to cuda:0 first\\n"
...     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
...     ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",),
... )
>>> s.prose
((1, 'With torchrun all tensors are sent to cuda:0 first'),)
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from oomkit.diagnose.text import clean

__all__ = [
    "EDGE_LINES",
    "MAX_PROSE",
    "MIN_WORDS",
    "NEAR_LINES",
    "Surroundings",
    "read_surroundings",
]

#: prose lines kept (half from the top of the paste, half from the bottom)
MAX_PROSE = 64
#: CJK characters that make a line a sentence (about two or three words' worth)
MIN_CJK = 6
#: lines read at the top and at the bottom of the paste (a title, the poster's conclusion)
EDGE_LINES = 256
#: lines read on either side of each OOM message (the command, the remark just above it)
NEAR_LINES = 12
#: words (of two letters or more) a line needs to read as a sentence
MIN_WORDS = 5
#: a line longer than this is a data dump (a tensor, a JSON blob), not a sentence
_MAX_LINE = 600

# what an issue comment wraps a pasted line in (bold, italics, a quote, inline code)
_MARKDOWN = "*_`> "
# a terminal's colour codes (a log copied from a terminal)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# a logger's bracketed tag left after the timestamp and level: "[worker-1] ", "[main] "
_TAG = re.compile(r"^\[[A-Za-z][\w.:/-]{0,40}\]\s*")
_WORD = re.compile(r"[A-Za-z]{2,}")
# (doccause18) a sentence written in Chinese, Japanese or Korean has no Latin words to count:
# its ideographs / syllables stand in for them ("我的显卡只有8G跑不起来" beside the message)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# traceback frames and code, log lines (timestamp, level, [tag]) and tables are not prose
_NOT_PROSE = re.compile(
    r"""^\s*(?:File\s+"|Traceback\b|at\s+[\w.$<>]+\(|\w+(?:\.\w+)*Error\b|\w+Exception\b"""
    r"""|\d{2,4}[-/:]\d{1,2}"""
    r"""|\[\s*\d|\||[=#*+-]{3}|(?:def|class|import|from|return|raise|if|for|with)\s)"""
)
_CODE = re.compile(r"[=(){};]\s*$|^\s*[\w.]+\s*=\s*\S|^\s+\w+\(")


@dataclass(frozen=True, slots=True)
class Surroundings:
    """What the lines around the OOM messages state (empty / ``None`` when nothing)."""

    #: (1-based line, text) of the sentences outside every OOM message, in paste order
    prose: tuple[tuple[int, str], ...] = ()


def _bare(line: str) -> str:
    """The line without the prefixes a log or a comment adds: rank, process, timestamp and level
    (:func:`oomkit.diagnose.text.clean`, as the parsers read it), a logger's ``[tag]``, ANSI
    colour codes, Markdown
    emphasis (``**...**``, ``> ``, backticks)."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    s = clean(line.strip().strip(_MARKDOWN))
    return _TAG.sub("", s, count=1).strip(_MARKDOWN).strip()


def _is_prose(s: str) -> bool:
    if not s or len(s) > _MAX_LINE or not (s[0].isalpha() or s[0] in "\"'`>"):
        return False
    if _NOT_PROSE.match(s) or _CODE.search(s):
        return False
    return len(_WORD.findall(s)) >= MIN_WORDS or len(_CJK.findall(s)) >= MIN_CJK


def _candidates(n_lines: int, event_lines: Collection[int]) -> list[int]:
    """0-based indexes of the lines read: the head, the tail, and a window around each message."""
    keep = set(range(min(n_lines, EDGE_LINES)))
    keep.update(range(max(0, n_lines - EDGE_LINES), n_lines))
    for line in event_lines:
        lo = max(0, line - 1 - NEAR_LINES)
        keep.update(range(lo, min(n_lines, line + NEAR_LINES)))
    return sorted(keep)


#: a jump over more lines than this counts newlines in blocks (C) instead of finding each one
_WALK_LINES = 32
_BLOCK = 1 << 16


def _lines_at(text: str, indexes: list[int], width: int) -> Iterator[tuple[int, str]]:
    """``(i, text.split("\\n")[i][:width])`` for the sorted ``indexes``, without splitting the
    whole text: a long gap between two wanted lines is crossed by counting newlines in blocks,
    a short one by finding them one by one."""
    at, pos = 0, 0  # line ``at`` starts at ``pos``
    for index in indexes:
        gap = index - at
        if gap > _WALK_LINES:
            pos, gap = _skip_newlines(text, pos, gap), 0
        for _ in range(gap):
            pos = text.find("\n", pos) + 1
        at = index
        end = text.find("\n", pos, pos + width)
        yield index, text[pos : end if end >= 0 else pos + width]


def _skip_newlines(text: str, pos: int, k: int) -> int:
    """The start of the line after the ``k``-th newline from ``pos`` (the text holds it)."""
    while True:  # whole blocks first
        c = text.count("\n", pos, pos + _BLOCK)
        if c >= k:
            break
        k, pos = k - c, pos + _BLOCK
    lo, hi = pos, pos + _BLOCK  # the k-th newline is in [lo, hi): halve the span
    while hi - lo > 256:
        mid = (lo + hi) // 2
        c = text.count("\n", lo, mid)
        if c >= k:
            hi = mid
        else:
            k, lo = k - c, mid
    for _ in range(k):
        lo = text.find("\n", lo) + 1
    return lo


def read_surroundings(
    text: str, message_lines: Collection[str] = (), event_lines: Collection[int] = ()
) -> Surroundings:
    """The sentences of ``text`` outside the OOM messages (module docstring).

    Args:
        text: the whole paste.
        message_lines: the stripped lines of every OOM message the parsers found
            (``OomEvent.text``); a line of the paste equal to one of them was read by the rules
            already and is skipped. A line that holds a message and more words (``everything
            goes to cuda:0 and then CUDA out of memory``) is kept: the message's own text is
            only part of it.
        event_lines: the 1-based lines where those messages start (``OomEvent.line``): the
            :data:`NEAR_LINES` lines either side of each are read besides the first and the
            last :data:`EDGE_LINES` of the paste.
    """
    skip = frozenset(_bare(m) for m in message_lines)
    half = MAX_PROSE // 2
    head: list[tuple[int, str]] = []
    tail: deque[tuple[int, str]] = deque(maxlen=half)
    n_lines = text.count("\n") + 1  # in C; a 100 MB log is never split into its lines
    prev: tuple[int, str] | None = None
    for index, line in _lines_at(text, _candidates(n_lines, event_lines), _MAX_LINE + 1):
        bare = _bare(line)
        # (doccause22) a sentence hard-wrapped over two lines (an issue body copied at 72-80
        # columns, a commit message): "... when another process (apr-train)" / "uses 12.7GB of
        # the RTX 4090's 24GB." Neither half states the fact; joined, the line before (even the
        # message's own line) and its continuation are read as one sentence
        joined = _continued(prev, index, bare)
        prev = (index, bare)
        for no, sentence in (*(() if joined is None else ((index - 1, joined),)), (index, bare)):
            if (
                not _is_prose(sentence)
                or sentence in skip
                or (no == index and line.strip() in skip)
            ):
                continue
            if len(head) < half:
                head.append((no + 1, sentence))
            else:
                tail.append((no + 1, sentence))
    return Surroundings(prose=(*head, *tail))


#: a hard wrap breaks at the last space before the column (72-80 for issue bodies and commit
#: messages), so a wrapped line is at least this long; a short line ("step 17 loss 0.25") ended
#: where its writer ended it
_WRAPPED_MIN = 50
# a line that ends a sentence or a clause: the next one starts anew
_ENDS = (".", "!", "?", ":", ";", "。", "！", "？", "：", "；")


def _continued(prev: tuple[int, str] | None, index: int, bare: str) -> str | None:
    """The sentence ``prev`` starts and line ``index`` continues, joined; ``None`` when the lines
    are not adjacent, the first ends a sentence, or the second starts one (a capital, a digit,
    a symbol): only a lower-case word continues a wrapped sentence."""
    if prev is None or prev[0] != index - 1 or not bare or not prev[1]:
        return None
    first = prev[1]
    if len(first) < _WRAPPED_MIN or first.endswith(_ENDS):
        return None
    if not bare[0].islower() or not bare[0].isascii():
        return None
    # neither half is a frame, an exception line ("torch.OutOfMemoryError: ..." starts
    # lower-case) or a log line; the joined sentence must still read as prose (_is_prose)
    if any(_NOT_PROSE.match(x) for x in (first, bare)):
        return None
    joined = f"{first} {bare}"
    return joined if len(joined) <= _MAX_LINE else None

"""Text plumbing shared by the parsers: bounded lines, prefix stripping, wrapped-message windows.

Everything here is linear in the input: lines longer than :data:`MAX_LINE` characters are cut into
pieces, every regex uses bounded quantifiers, and a log larger than :data:`FULL_SCAN_CHARS` is read
as its head, its tail and windows around OOM keywords (found with ``str.find``, which runs in C).

>>> clean("[rank0]: torch.OutOfMemoryError:   CUDA out of memory.")
'torch.OutOfMemoryError: CUDA out of memory.'
>>> clean("(VllmWorker rank=1 pid=254) ERROR 02-11 07:40:49 worker.py:12] boom")
'boom'
>>> clean('time=2024-06-01T10:00:00.000Z level=INFO source=server.go:100 msg="offload to cuda"')
'msg="offload to cuda"'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from oomkit.diagnose.sizes import to_bytes

__all__ = [
    "FULL_SCAN_CHARS",
    "MAX_LINE",
    "NUM",
    "FamilyIndex",
    "Lines",
    "clean",
    "has_any",
    "needles_re",
    "size_of",
    "split_lines",
    "sz",
    "window",
]

MAX_LINE = 8192  # characters of one physical line considered at a time
FULL_SCAN_CHARS = 4 << 20  # logs up to this size are read line by line in full
_HEAD_CHARS = 256 << 10
_TAIL_CHARS = 1 << 20
_WINDOW_CHARS = 2048
_MAX_WINDOWS_EACH_SIDE = 16

# Keywords that every OOM message of every supported runtime contains at least one of. Used only
# to pick windows in the middle of huge logs; str.find runs at memchr speed.
_ANCHORS = (
    "emory",  # out of memory, Out of memory, OutOfMemory, system memory, Not enough memory...
    "lloc",  # Tried to allocate, failed to allocate, cudaMalloc, OOM when allocating
    "ALLOC",  # CUBLAS_STATUS_ALLOC_FAILED
    "illed",  # Killed, killed (OOM killer, shell, Ollama "signal: killed")
    "KV cache",  # vLLM capacity errors
    "status 5",  # Metal command buffer failure
    "mem_buffer != NULL",  # ggml_init's host malloc (parse_hosts)
    "in-use ",  # TF BFC allocator's dump after a failed allocation (parse_wordings)
    "Chunks of size",
    # localized UIs (upstream_wordings.py): 存 of 显存/内存/顯存/內存, 記憶體, メモリ, 메모리; a
    # wider-kind needle in an ASCII log costs nothing
    "存",
    "記憶體",
    "メモリ",
    "메모리",
)

_PREFIXES = (
    # [rank0]:  [rank12]:
    re.compile(r"^\[rank\d{1,6}\]:\s?"),
    # (VllmWorker rank=1 pid=254)  (EngineCore_DP0 pid=268)  (RayWorkerWrapper pid=1)
    re.compile(r"^\([A-Za-z_][\w-]{0,60}(?: [\w]{1,20}=[\w.-]{1,20}){0,4}\)\s{0,4}"),
    # vLLM/SGLang: INFO 02-26 09:54:05 worker.py:267]   ERROR 02-11 07:40:49 x.py:124]
    re.compile(
        r"^(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s{1,4}\d{2}-\d{2}\s\d{2}:\d{2}:\d{2}"
        r"(?:\.\d{1,9})?\s{1,4}(?:\[[^\]\s]{1,120}\]|[\w./-]{1,120}:\d{1,6}\])\s?"
    ),
    # dmesg: [2059991.491436]
    re.compile(r"^\[\s{0,12}\d{1,12}\.\d{1,9}\]\s?"),
    # ISO timestamps with optional level and logger: 2023-09-26T21:48:00.969072Z ERROR name:
    re.compile(
        r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?"
        r"(?:\s{1,4}(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b:?)?"
        r"(?:\s{1,4}[\w.]{1,80}:(?=\s))?\s{0,4}"
    ),
    # [2024-01-01 12:00:00,123] [INFO] ... and [INFO] [utils.py:12:fn]
    re.compile(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?\]\s?"),
    # Ollama slog: time=... level=INFO source=server.go:100  (keep msg=...)
    re.compile(r"^time=\S{1,64}\s{1,4}level=\w{1,10}(?:\s{1,4}source=\S{1,200})?\s{0,4}"),
    # glog (TF/XLA/TRT): W0000 00:00:1700000000.123 12345 file.cc:123]  E1212 10:10:10.1 1 f.cc:1]
    re.compile(r"^[IWEF]\d{4}\s{1,4}[\d:.]{4,30}\s{1,4}\d{1,10}\s{1,4}[\w./-]{1,120}:\d{1,6}\]\s?"),
    # llama-server: srv  load_model: / 0.00.123.456 E  (new common_log prefix)
    re.compile(r"^\d{1,4}\.\d{2}\.\d{3}\.\d{3}\s[IWED]\s"),
    # (docrec28) a terminal Markdown renderer's quote bar (normalize._QUOTE) left after another
    # prefix: "[rank3]: \u258e text"
    re.compile(r"^[\u258c-\u258f] "),
)

NUM = r"-?\d{1,15}(?:\.\d{1,8})?"
_TORCH_UNITS = "bytes|KiB|MiB|GiB|TiB|B"


def sz(name: str, units: str = _TORCH_UNITS, space: str = " ?") -> str:
    """Regex for ``<number><space><unit>`` as named groups ``name`` and ``name_u`` (bounded)."""
    return rf"(?P<{name}>{NUM}){space}(?P<{name}_u>{units})\b"


def size_of(m: re.Match[str], name: str, runtime: str) -> int | None:
    """Bytes of the ``sz(name)`` groups of a match; ``None`` when the group did not take part."""
    number = m.group(name)
    unit = m.group(name + "_u")
    if number is None or unit is None:
        return None
    return to_bytes(number, unit, runtime)


def clean(line: str) -> str:
    """Strip rank/process/timestamp/level prefixes (repeatedly) and collapse whitespace."""
    s = line[:MAX_LINE].strip()
    for _ in range(4):
        before = s
        for rx in _PREFIXES:
            m = rx.match(s)
            if m is not None and m.end() > 0:
                s = s[m.end() :].lstrip()
        if s == before:
            break
    return " ".join(s.split())


def needles_re(needles: Sequence[str]) -> re.Pattern[str]:
    """A pattern that finds a line holding any of ``needles`` (a cheaper prefilter than any()).

    For presence tests only (``search(line)`` is a match or ``None``): the needles are merged
    into a prefix tree (``"alloc", "allocate", "all"`` -> ``al(?:l)``), so ``re`` tries each
    distinct first character once at a position instead of every needle in turn (a third less
    time on a long log), and a match is the shortest needle that starts there, not a whole one.

    >>> bool(needles_re(["out of memory", "OOM", "out of mem"]).search("CUDA out of memory"))
    True
    >>> needles_re(["a.b", "a+"]).search("ab") is None
    True
    """
    pattern = _needles_pattern(needles)
    if pattern.pattern and not any("\n" in n for n in needles):
        _LITERAL_GATES.add(pattern)
        _LITERAL_SOURCES.add(pattern.pattern)
    return pattern


def _needles_pattern(needles: Sequence[str]) -> re.Pattern[str]:
    if not needles:
        return re.compile("")  # as the empty alternation: every line passes
    trie: dict[str, dict[str, Any]] = {}
    for needle in needles:
        node = trie
        for ch in needle:
            node = node.setdefault(ch, {})
        node[""] = {}  # a needle ends here
    if "" in trie:
        return re.compile("")  # an empty needle occurs in every line
    return re.compile(_trie_re(trie))


#: the :func:`needles_re` patterns of needles without a newline: a match of one lies inside one
#: line, so :func:`oomkit.diagnose.scan.admitted` may search the lines joined by newlines
_LITERAL_GATES: set[re.Pattern[str]] = set()
#: their sources: ``re.compile(needles_re(...).pattern, re.IGNORECASE)`` is a literal gate too
_LITERAL_SOURCES: set[str] = set()


def literal_gate(pattern: re.Pattern[str]) -> bool:
    """True if ``pattern`` came from :func:`needles_re` and no needle holds a newline (or is
    such a pattern compiled again with ``re.IGNORECASE``: no case of a needle is a newline)."""
    return pattern in _LITERAL_GATES or (
        pattern.pattern in _LITERAL_SOURCES and not pattern.flags & ~(re.IGNORECASE | re.UNICODE)
    )


#: the characters that ``re.IGNORECASE`` matches to an ASCII letter though ``str.lower`` does not
#: map them to it (U+0130 lowers to two characters, U+0131 and U+017F to themselves; found by
#: matching every code point against ``[\x20-\x7e]`` with the flag: tests/test_doctor_scan_speed)
CASE_FOLD_ODD = "\u0130\u0131\u017f"
_ODD = re.compile(f"[{CASE_FOLD_ODD}]")
#: needle characters without case (CJK, kana, Hangul): each matches only itself, either way
_CASELESS = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_TWINS: dict[re.Pattern[str], re.Pattern[str] | None] = {}


def lowered_twin(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """For an ``re.IGNORECASE`` literal gate, the case-sensitive pattern of its lowered needles
    (``None`` for any other pattern): on a text without :data:`CASE_FOLD_ODD` characters,
    ``twin.search(text.lower(), pos)`` finds the match ``pattern.search(text, pos)`` finds, at
    the same place (``str.lower`` keeps every other character one character long), ~15 times
    faster (``re`` cannot skip ahead on a case-insensitive alternation)."""
    if pattern in _TWINS:
        return _TWINS[pattern]
    twin = None
    source = pattern.pattern
    if (
        pattern.flags & re.IGNORECASE
        and literal_gate(pattern)
        and re.search(r"\\[A-Za-z]", source) is None  # no escape that lowering would change
        and all(c.isascii() or _CASELESS.fullmatch(c) for c in source)
    ):
        twin = re.compile(source.lower())
    _TWINS[pattern] = twin
    return twin


def _trie_re(node: dict[str, dict[str, Any]]) -> str:
    alts = [re.escape(ch) + ("" if "" in rest else _trie_re(rest)) for ch, rest in node.items()]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def needles_gate(families: Sequence[tuple[Sequence[str], object]]) -> re.Pattern[str]:
    """One alternation of every needle of ``families`` (``(needles, pattern)`` pairs): a line in
    which it finds nothing holds no family's needle, so a loop that tries a family only when
    one of its needles occurs would try none. Longest needles first; an empty family list gives
    a pattern that never matches."""
    needles = sorted({n for ns, _ in families for n in ns}, key=len, reverse=True)
    return needles_re(needles) if needles else re.compile(r"(?!)")


class FamilyIndex:
    """Which of ``needle_sets`` have a needle in a line: the families a loop of
    ``if any(n in low for n in needles)`` would try, found with one C-speed ``findall`` instead
    of a Python any() per family (~130 families: ~90 us a line that holds one common needle,
    "显存" or "memory", and every such line of a 100 MB log pays it).

    ``present(low)`` is the indices, in family order, of the sets with a needle that is a
    substring of ``low``; exactly ``[i for i, ns in enumerate(needle_sets) if any(n in low for n
    in ns)]``. How: a zero-width lookahead at every position captures the longest needle that
    starts there (a prefix tree with greedy optional branches); every needle that occurs starts
    somewhere and is a prefix of the longest one found there, so each found needle stands for
    the sets holding any prefix of it (precomputed).

    >>> FamilyIndex([("alloc",), ("allocate", "x"), ("cat",)]).present("allocated")
    (0, 1, 2)
    >>> FamilyIndex([("mem",), ("oom",)]).present("nothing")
    ()
    """

    __slots__ = ("_always", "_findall", "_sets_of")

    def __init__(self, needle_sets: Sequence[Sequence[str]]) -> None:
        self._always = frozenset(i for i, ns in enumerate(needle_sets) if "" in ns)
        needles = {n for ns in needle_sets for n in ns if n}
        trie: dict[str, dict[str, Any]] = {}
        for needle in needles:
            node = trie
            for ch in needle:
                node = node.setdefault(ch, {})
            node[""] = {}
        body = _trie_longest(trie) if trie else "(?!)"
        self._findall = re.compile(f"(?=({body}))").findall
        self._sets_of = {
            n: frozenset(
                i for i, ns in enumerate(needle_sets) if any(p and n.startswith(p) for p in ns)
            )
            for n in needles
        }

    def present(self, low: str) -> tuple[int, ...]:
        found = set(self._findall(low))
        if not found:
            return tuple(sorted(self._always))
        sets = set(self._always)
        for n in found:
            sets |= self._sets_of[n]
        return tuple(sorted(sets))


def _trie_longest(node: dict[str, dict[str, Any]]) -> str:
    """The prefix tree of ``node`` as a pattern whose match is the longest needle (greedy)."""
    alts = []
    for ch, rest in node.items():
        if not ch:
            continue
        tail = _trie_longest(rest) if any(rest) else ""
        if tail and "" in rest:
            tail = f"(?:{tail})?"
        alts.append(re.escape(ch) + tail)
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


_HAS_ANY_MAX = 1024  # needle tuples whose search has_any keeps (the module constants)
_HAS_ANY: dict[int, tuple[Sequence[str], Callable[[str], re.Match[str] | None]]] = {}


def has_any(line: str, needles: Sequence[str]) -> bool:
    """True if any needle occurs in ``line``: ``any(n in line for n in needles)``.

    A tuple of needles is searched with one prefix-tree pattern (:func:`needles_re`'s, built
    once per tuple and kept while the tuple lives: the key is its ``id`` and the entry holds the
    tuple): one C-speed search instead of a generator step per needle (perf23b: ``_frames`` and
    :func:`window` ask it of every line of a log, ~1.5 us a line).
    """
    entry = _HAS_ANY.get(id(needles))
    if entry is not None and entry[0] is needles:
        return entry[1](line) is not None
    if type(needles) is not tuple or not needles or len(_HAS_ANY) >= _HAS_ANY_MAX:
        return any(n in line for n in needles)
    search = _needles_pattern(needles).search
    _HAS_ANY[id(needles)] = (needles, search)
    return search(line) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Lines:
    """The physical lines a parser looks at, each with its 1-based line number in the log."""

    text: tuple[str, ...]
    number: tuple[int, ...]
    skipped_chars: int = 0
    _cleaned: dict[int, str] = field(default_factory=dict, repr=False, compare=False)
    _joined: list[tuple[str, tuple[int, ...]] | None] = field(
        default_factory=list, repr=False, compare=False
    )
    _lowered: list[str | None] = field(default_factory=list, repr=False, compare=False)

    def joined(self) -> tuple[str, tuple[int, ...]] | None:
        """The lines joined by newlines and the offset of each in it (computed once), or
        ``None`` when a line holds a newline itself (the offsets would not name its line)."""
        if not self._joined:
            joined = "\n".join(self.text)
            if joined.count("\n") != max(0, len(self.text) - 1):
                self._joined.append(None)
            else:
                starts = (0, *accumulate(len(t) + 1 for t in self.text[:-1]))
                self._joined.append((joined, starts))
        return self._joined[0]

    def joined_lower(self) -> str | None:
        """The joined lines lowered (computed once) when they hold no :data:`CASE_FOLD_ODD`
        character (see :func:`lowered_twin`), else ``None``."""
        if not self._lowered:
            joined = self.joined()
            ok = joined is not None and (joined[0].isascii() or not _ODD.search(joined[0]))
            self._lowered.append(joined[0].lower() if ok and joined is not None else None)
        return self._lowered[0]

    def cleaned(self, i: int) -> str:
        """``clean(text[i])``, computed once per line (several parsers read the same lines)."""
        c = self._cleaned.get(i)
        if c is None:
            c = clean(self.text[i])
            self._cleaned[i] = c
        return c


def _cut(piece: str, first_line: int, out_text: list[str], out_num: list[int]) -> None:
    n = first_line
    if "\r" in piece:
        piece = piece.replace("\r\n", "\n").replace("\r", "\n")
    for raw in piece.split("\n"):
        if len(raw) <= MAX_LINE:
            out_text.append(raw)
            out_num.append(n)
        else:
            for start in range(0, len(raw), MAX_LINE):
                out_text.append(raw[start : start + MAX_LINE])
                out_num.append(n)
        n += 1


def _windows(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """Spans around anchor keywords between ``lo`` and ``hi`` (first and last few of each)."""
    spans: list[tuple[int, int]] = []
    for key in _ANCHORS:
        pos = lo
        found_all = False
        for _ in range(_MAX_WINDOWS_EACH_SIDE):
            p = text.find(key, pos, hi)
            if p < 0:
                found_all = True
                break
            spans.append((max(lo, p - _WINDOW_CHARS), min(hi, p + _WINDOW_CHARS)))
            pos = p + _WINDOW_CHARS
        if found_all:
            # no occurrence after ``pos``: the search from the end below would find nothing,
            # after scanning the middle once more (100 MB for a keyword the log does not hold)
            continue
        end = hi
        for _ in range(_MAX_WINDOWS_EACH_SIDE):
            p = text.rfind(key, pos, end)
            if p < 0:
                break
            spans.append((max(lo, p - _WINDOW_CHARS), min(hi, p + _WINDOW_CHARS)))
            end = p - _WINDOW_CHARS
            if end <= pos:
                break
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def split_lines(text: str) -> Lines:
    """Split a log into bounded lines; huge logs keep head, tail and windows around OOM keywords.

    >>> ls = split_lines("a\\r\\nb\\nc")
    >>> ls.text, ls.number
    (('a', 'b', 'c'), (1, 2, 3))
    """
    out_text: list[str] = []
    out_num: list[int] = []
    if len(text) <= FULL_SCAN_CHARS:
        _cut(text, 1, out_text, out_num)
        return Lines(text=tuple(out_text), number=tuple(out_num))
    head_end = _HEAD_CHARS
    tail_start = len(text) - _TAIL_CHARS
    spans = [(0, head_end), *_windows(text, head_end, tail_start), (tail_start, len(text))]
    covered = 0
    last_end = 0
    line_no = 1
    for start, end in spans:
        start = max(start, last_end)
        if end <= start:
            continue
        # snap to line boundaries (bounded look-around so one huge line stays cheap)
        if start > last_end:
            nl = text.rfind("\n", max(last_end, start - MAX_LINE), start)
            start = nl + 1 if nl >= 0 else start
        nl_end = text.find("\n", end, min(len(text), end + MAX_LINE))
        end = nl_end if nl_end >= 0 else end
        line_no += text.count("\n", last_end, start)
        _cut(text[start:end], line_no, out_text, out_num)
        line_no += text.count("\n", start, end)
        covered += end - start
        last_end = end
    return Lines(
        text=tuple(out_text), number=tuple(out_num), skipped_chars=max(0, len(text) - covered)
    )


def window(lines: Lines, i: int, *, max_lines: int = 10, stop: Sequence[str] = ()) -> str:
    """Join line ``i`` with the following lines of a wrapped message, prefixes stripped.

    Joining stops after ``max_lines`` lines, about 4 KiB of text, or after a line containing one of
    ``stop`` (the message's known tail).
    """
    parts: list[str] = []
    size = 0
    for j in range(i, min(len(lines.text), i + max_lines)):
        part = lines.cleaned(j)
        parts.append(part)
        size += len(part)
        if size > 4 * MAX_LINE // 8 or (stop and has_any(lines.text[j], stop)):
            break
    return " ".join(p for p in parts if p)

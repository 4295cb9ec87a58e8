"""Undo what copying a message does to it, before any parser reads it.

Users paste OOM messages from wherever they saw them, and the paste is rarely the runtime's own
bytes: a coloured terminal leaves ANSI escapes, a web page non-breaking spaces and HTML entities,
a structured logger or a Python ``repr`` a JSON-escaped string with literal ``\\n``, an issue
comment a Markdown quote (``> ``) on every line, a log collector its own timestamp and logger
prefix. The parsers match the runtimes' wordings; this module turns such a paste back into those
wordings. Measured on the 1,310 development records (``benchmarks/doctor_metamorphic.py``):
before this module, ANSI colours lost 30 recognitions, non-breaking spaces 607, JSON escaping 36,
HTML escaping 6, quoting 12.

Every step is a no-op on text that does not show the distortion, and linear in the input:

* :func:`normalize_text` (the whole paste, up to :data:`WHOLE_TEXT_CHARS`): JSON/``repr``
  escapes when the text carries more literal ``\\n`` than real line breaks; HTML entities when it
  has any of the common ones; glibc's translated memory messages back in English
  (:mod:`oomkit.diagnose.normalize_locale`).
* :func:`normalize_line` (every physical line, any log size): ANSI escape sequences removed,
  Unicode space characters made ASCII spaces, a Markdown quote prefix removed, Markdown bold or
  inline code around the whole line removed (``**Killed**``), and a log collector's
  ISO-timestamp prefix with its level and ``[logger]`` removed.
"""

from __future__ import annotations

import html
import json
import re
import urllib.parse

from oomkit.diagnose.normalize_locale import delocalize
from oomkit.diagnose.text import Lines

__all__ = [
    "UNWRAP_MAX_CHARS",
    "WHOLE_TEXT_CHARS",
    "complete_cut_head",
    "complete_cut_tail",
    "decode_transport",
    "loosen_layout",
    "normalize_line",
    "normalize_lines",
    "normalize_text",
    "unwrap_word_wrapped",
]

#: whole-text steps run only on pastes up to this size (a multi-GB log is the runtime's own file)
WHOLE_TEXT_CHARS = 4 << 20

# CSI sequences (colours, cursor moves) and the two-byte escapes; OSC titles up to BEL/ST
_ANSI = re.compile(
    r"\x1b(?:\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\][^\x07\x1b]{0,256}(?:\x07|\x1b\\)|[@-Z\\-_])"
)
# no-break, figure, narrow no-break, thin, hair, en/em spaces, ideographic space, BOM/zero-width
_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
# zero-width characters, and the soft hyphen a web page leaves inside a word it may break
_ZERO_WIDTH = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
# Markdown quote (possibly nested), as GitHub and forums render a quoted paste; a terminal
# Markdown renderer draws the quote as a left block bar and a space instead of "> " (rich's
# markdown.py BlockQuote "\u258c "; TUI renderers' renderQuote `const bar = "\u258e "`), and a
# quoted paste copied from the terminal keeps the bar on every line (docrec28, heldout31's vLLM
# KV-cache error split over "\u258e "-quoted lines); a bar with no space after it is a progress
# bar's glyph
_QUOTE = re.compile(r"^[ \t]{0,8}(?:(?:>|[\u258c-\u258f] )[ \t]?){1,8}")
_QUOTE_LEAD = ">\u258c\u258d\u258e\u258f"
_QUOTE_LEAD_IN = re.compile(f"[{_QUOTE_LEAD}]").search
# a line with neither kind of character is left as it is by the two substitutions (one search
# instead of two substitutions a line: perf23b, a log of CJK lines)
_SPACE_OR_ZERO_WIDTH = re.compile(
    "[\u00a0\u2000-\u200a\u202f\u205f\u3000\u00ad\u200b\u200c\u200d\u2060\ufeff]"
).search
# a log collector's prefix: 2024-05-01 12:00:00,123 ERROR [worker-1]  /  [2024-05-01T12:00:00Z]
# (the runtimes' own prefixes are stripped later by ``text.clean``; this one also for raw lines)
_STAMP = re.compile(
    r"^\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"(?:[ \t]{1,4}\|?[ \t]{0,4}(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b:?)?"
    r"(?:[ \t]{1,4}\|?[ \t]{0,4}\[[^\]\n]{1,80}\])?[ \t]{0,4}(?:\|[ \t]{0,4})?"
    # Python logging's "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
    r"(?:(?:[ \t]{0,4}[-|][ \t]{1,4}[\w.\[\]:-]{1,80}){0,3}[ \t]{0,4}[-|][ \t]{1,4})?"
)
# A log whose line breaks were lost (a chat or form that collapses them, a one-line title):
# break it again before the tokens that start a runtime's log lines, in each line of at least
# _ONE_LINE_MIN characters; a break goes only where a space is.
_ONE_LINE_MIN = 400
_LOG_LINE_START = re.compile(
    r"(?<=\S)[ \u00a0]{1,8}(?=(?:llama_[a-z_]{2,40}:|ggml_[a-z_]{2,40}:|llm_load_[a-z_]{2,40}:|"
    r"print_info:|load_tensors:|llama_model_load|common_init_from_params:|srv {1,4}\w|"
    r"slot {1,4}\w|main: |time=\d|Traceback \(most recent call last\):|File \"|"
    r"\[rank\d{1,5}\]:|(?:INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d |"
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d))"
)
# Markdown emphasis or inline code around a whole line, as an issue comment highlights the
# last line of a log: **Killed**, `Killed`, ***CUDA out of memory***
_EMPHASIS = re.compile(
    r"^([ \t]{0,8})(\*{2,4}|`{1,3})(?=\S)((?:(?!\2).){1,4000}?)(?<=\S)\2[ \t]{0,8}$"
)
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#\d{1,7}|#[xX][0-9a-fA-F]{1,6});")
_ESCAPED_NL = re.compile(r"\\r\\n|\\n")
_ESCAPE_LEVELS = 3
_ESCAPE = re.compile(r"\\([nrt\"'\\/])")
# a Python repr of a one-string list or tuple: ['Killed'], ("CUDA out of memory",)
_REPR_LIST = re.compile(
    r"\s{0,8}[\[(]\s{0,8}[bru]{0,2}(['\"])[^\n]*\1\s{0,8},?\s{0,8}[\])]\s{0,8}\Z"
)
# a Python repr of bytes (subprocess output printed as is): b'...\n...' or b"Killed"
_REPR_BYTES = re.compile(r"\s{0,8}b(['\"])[^\n]*\1\s{0,8}\Z")
# where a repr starts: a list/tuple bracket, or a (b/r/u-prefixed) quote
_REPR_HEAD = re.compile(r"\s{0,8}(?:[\[(]|[bru]{0,2}['\"])")
# what a Python repr of a list/tuple of strings leaves around the text: ['...'] ("...",)
_REPR_WRAPPER = re.compile(
    r"\A\s{0,8}[\[(]?\s{0,8}[bru]{0,2}['\"]|['\"]\s{0,8},?\s{0,8}[\])]?\s{0,8}\Z"
)


def normalize_line(line: str) -> str:
    """One physical line as the runtime printed it (see the module docstring)."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if not line.isascii() and _SPACE_OR_ZERO_WIDTH(line) is not None:
        line = _ZERO_WIDTH.sub("", _SPACES.sub(" ", line))
    head = line[:24]
    if ">" in head or (not head.isascii() and _QUOTE_LEAD_IN(head) is not None):
        m = _QUOTE.match(line)
        if m is not None and m.end() > 0:
            line = line[m.end() :]
    for _ in range(2):  # bold inside inline code, or bold twice
        if not (line.rstrip()[-1:] in ("*", "`") and line.lstrip()[:1] in ("*", "`")):
            break
        m = _EMPHASIS.match(line)
        if m is None:
            break
        line = m.group(1) + m.group(3)
    if line[:1] in "[0123456789" and line[:1]:
        m = _STAMP.match(line)
        if m is not None and m.end() >= 19:
            line = line[m.end() :]
            if line[:1] in _QUOTE_LEAD and (m := _QUOTE.match(line)) is not None:
                # a collector's stamp before a quoted paste
                line = line[m.end() :]
    return line


_MEMO_LINES = 4096


def normalize_lines(lines: Lines) -> Lines:
    """``lines`` with every line normalized (the same object when none changes)."""
    # a line repeated (a progress bar, a hostile log of one line 200,000 times) is normalized
    # once: the memo is bounded so that a log of distinct lines costs no memory (docperf17)
    memo: dict[str, str] = {}
    out: list[str] = []
    for t in lines.text:
        n = memo.get(t)
        if n is None:
            if len(memo) >= _MEMO_LINES:
                memo.clear()
            n = memo[t] = normalize_line(t)
        out.append(n)
    text = tuple(out)
    if text == lines.text:
        return lines
    return Lines(text=text, number=lines.number, skipped_chars=lines.skipped_chars)


def _unescape_json(text: str) -> str:
    # one left-to-right pass, so "\\n" (an escaped backslash before n) stays a backslash + n
    table = {"n": "\n", "r": "", "t": "\t", '"': '"', "'": "'", "\\": "\\", "/": "/"}

    def sub(m: re.Match[str]) -> str:
        return table.get(m.group(1), m.group(0))

    return _ESCAPE.sub(sub, text)


def _strings(doc: object, limit: int = 10_000) -> list[str]:
    """The string leaves of a parsed JSON document, in order (iterative: no recursion)."""
    out: list[str] = []
    stack: list[object] = [doc]
    while stack and len(out) < limit:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return out


def _json_document(text: str) -> str | None:
    """The string values of a paste that is one JSON document, one per line; else ``None``."""
    head = text.lstrip()[:1]
    if head not in ("{", "[", '"'):
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    strings = _strings(doc)
    # a wrapper around the message ({"error": "<the paste>"}), not a structured report whose
    # fields a parser reads (LM Studio's load failure is a JSON document of short values)
    if not strings or 2 * max(len(x) for x in strings) < len(text):
        return None
    return "\n".join(strings)


#: the field that holds the printed line in structured loggers' records (Docker's json-file
#: ``log``, slog/zap/logrus ``msg``, Python json loggers ``message``, ...)
_MESSAGE_KEYS = ("log", "msg", "message", "text", "error", "err", "detail", "line")


def _json_lines(text: str) -> str:
    """Each JSON-object line (a structured logger's record) replaced by its message field (else
    its longest string)."""

    def one(line: str) -> str:
        stripped = line.strip()
        if not (stripped.startswith('{"') and stripped.endswith("}")) or len(stripped) > 65536:
            return line
        try:
            doc = json.loads(stripped)
        except (ValueError, RecursionError):
            return line
        if isinstance(doc, dict):
            for key in _MESSAGE_KEYS:
                value = doc.get(key)
                if isinstance(value, str):
                    return value
        strings = _strings(doc)
        return max(strings, key=len) if strings else line

    return "\n".join(one(line) for line in text.split("\n"))


# A traceback drawn in a box (rich's ``Traceback`` / ``Panel``, used by many Python CLIs): every
# line framed by box-drawing bars, the message word-wrapped inside at the box's width. The
# frames are removed and the wrapped lines joined again (a line is a continuation when the
# previous one could not take its first word). Only the box-drawing bar, never ASCII "|" (the
# column separator of nvidia-smi's tables).
_BOXED = re.compile(r"^[ \t]{0,8}[│┃║] ?(?P<body>.{0,2000}?) ?[│┃║][ \t]{0,8}$")


def _unbox(text: str) -> str:
    """``text`` with box frames removed and the lines wrapped inside the box joined."""
    lines = text.split("\n")
    bodies: list[str | None] = []
    framed = 0
    for line in lines:
        m = _BOXED.match(line) if ("│" in line or "┃" in line or "║" in line) else None
        bodies.append(m.group("body").rstrip() if m is not None else None)
        framed += m is not None
    if framed < 2:
        return text
    width = max(len(b) for b in bodies if b is not None)
    out: list[str] = []
    prev: str | None = None
    for line, body in zip(lines, bodies, strict=True):
        if body is None:
            out.append(line)
            prev = None
            continue
        first = body.lstrip().split(" ", 1)[0]
        if prev and first and not body[:1].isspace() and len(prev) + 1 + len(first) > width:
            out[-1] = out[-1] + " " + body
        else:
            out.append(body)
        prev = body
    return "\n".join(out)


def normalize_text(text: str) -> str:
    """The whole paste with JSON/``repr`` escapes and HTML entities undone (when it shows them).

    >>> normalize_text('{"error": "CUDA out of memory.\\\\nTried to allocate 2.00 GiB"}')
    'CUDA out of memory.\\nTried to allocate 2.00 GiB'
    >>> normalize_text("Tried to allocate &gt; 2 GiB")
    'Tried to allocate > 2 GiB'
    """
    if len(text) > WHOLE_TEXT_CHARS:
        return text
    text = _undo_transport(text)
    document = _json_document(text)
    if document is not None:
        text = document
    elif '{"' in text:
        text = _json_lines(text)
    # escapes nest (a JSON error body inside a Python repr): undo them level by level
    for level in range(_ESCAPE_LEVELS):
        escaped = len(_ESCAPED_NL.findall(text))
        quoted = _REPR_HEAD.match(text) is not None
        if (escaped >= 2 or (escaped and quoted)) and escaped > text.count("\n"):
            text = _REPR_WRAPPER.sub("", _unescape_json(text))
        elif level == 0 and quoted and (_REPR_LIST.match(text) or _REPR_BYTES.match(text)):
            # a one-line repr still escapes its quote character and backslashes ("doesn\'t")
            text = _REPR_WRAPPER.sub("", _unescape_json(text))
        else:
            break
    if "&" in text and _ENTITY.search(text):
        text = html.unescape(text)
    if "│" in text or "┃" in text or "║" in text:
        text = _unbox(text)
    # a squashed log is one long line (or a few), wherever it sits in the paste: a trailing
    # newline, or the level a JSON log line carries beside it, must not keep it squashed
    if len(text) >= _ONE_LINE_MIN:
        text = "\n".join(
            _LOG_LINE_START.sub("\n", line) if len(line) >= _ONE_LINE_MIN else line
            for line in text.split("\n")
        )
    # the C library's memory messages in the user's language (normalize_locale)
    return delocalize(text)


#: the widths a paste is word-wrapped at (an e-mail client's 72, a terminal's 80, a forum's 120)
_WRAP_WIDTHS = (60, 200)
#: a wrap is what copying a message does; a log file is the runtime's own (and a second parse of
#: a multi-MB text whose joined lines are megabytes long would cost seconds)
UNWRAP_MAX_CHARS = 128 << 10


def unwrap_word_wrapped(text: str) -> str | None:
    """The paste with a word wrap undone, or ``None`` when it shows none.

    A word wrap (an e-mail client, a forum, ``fold -s``, ``textwrap``) breaks a line only where
    the next word would not fit: the line plus a space plus the next line's first word is longer
    than the wrap width, and the continuation starts without indentation. The width is the
    longest line. Lines that a runtime printed are joined only when both hold, so a paste whose
    lines are short or indented stays as it is; the caller (``parse_log``) uses the result only
    when the paste as given held no OOM, so a recognised paste never changes.
    """
    if "\n" not in text or len(text) > UNWRAP_MAX_CHARS:
        return None
    lines = text.replace("\r\n", "\n").split("\n")
    head, tail = _shared_margins(lines)
    if head or tail:
        # a log collector, a quote or a Markdown wrapper put the same margin on every line of
        # the wrapped message: the wrap is in what lies between
        lines = [line[len(head) : len(line) - len(tail)] for line in lines]
    width = max(len(line) for line in lines)
    if not _WRAP_WIDTHS[0] <= width <= _WRAP_WIDTHS[1]:
        return None
    out = [lines[0]]
    prev = lines[0]
    changed = False
    for line in lines[1:]:
        first = line.split(" ", 1)[0]
        if prev.strip() and first and not line[:1].isspace() and len(prev) + 1 + len(first) > width:
            out[-1] = out[-1] + " " + line
            changed = True
        else:
            out.append(line)
        prev = line
    return "\n".join(head + line + tail for line in out) if changed else None


def _shared_margins(lines: list[str]) -> tuple[str, str]:
    """The prefix and suffix every line of a multi-line paste shares (a timestamp and level, a
    ``> `` quote, ``[rank0]:``, a tab, ``**``/backticks), cut back to a non-word boundary so
    that a word the lines happen to start or end with stays; ``("", "")`` when there is none."""
    if len(lines) < 2 or any(not line for line in lines):
        return "", ""
    first = lines[0]
    n = min(len(line) for line in lines)
    i = 0
    while i < n and all(line[i] == first[i] for line in lines):
        i += 1
    while i > 0 and first[i - 1].isalnum():
        i -= 1
    j = 0
    while j < n - i and all(line[len(line) - 1 - j] == first[len(first) - 1 - j] for line in lines):
        j += 1
    while j > 0 and first[len(first) - j].isalnum():
        j -= 1
    head, tail = first[:i], first[len(first) - j :] if j else ""
    # an ANSI colour code is read per line later (normalize_line): never cut one in half
    return ("", "") if "\x1b" in head + tail else (head, tail)


# A paste or an issue title cut at a character limit ends inside the OOM word itself: "Allocator
# (GPU_0_bfc) ran out of memo", "ray.exceptions.OutOfMe". Only the last word of the whole text
# is completed, and only from a prefix long enough that no other word starts that way
# ("out of mem", "OutOfMe", "_OUT_OF_MEM").
_CUT_TAIL = re.compile(
    r"(?:(?P<p>\b[Oo]ut of mem(?:o|or)?)|(?P<c>(?<![A-Za-z])OutOfMe(?:m|mo|mor|mory|moryE|moryEr"
    r"|moryErr|moryErro)?)|(?P<u>_OUT_OF_MEM(?:O|OR)?)|(?P<a>\bcudaErrorMemoryAlloc(?:a|at|ati"
    r"|atio)?)|(?P<f>\ballocation of size \d{1,20} (?:fa|fai|fail|faile))|(?P<n>\b(?:[Nn]ot enough|"
    r"[Ii]nsufficient) mem(?:o|or)?))"
    r"(?:\.{2,3}|\u2026)?\s{0,8}$"
)


_TAIL_PROBE = 4096


def complete_cut_tail(text: str) -> str | None:
    """The paste with a cut-off OOM word at its very end completed, or ``None``.

    >>> complete_cut_tail("Allocator (GPU_0_bfc) ran out of memo")
    'Allocator (GPU_0_bfc) ran out of memory'
    >>> complete_cut_tail("ray.exceptions.OutOfMe")
    'ray.exceptions.OutOfMemoryError'
    >>> complete_cut_tail("ggml_vulkan: Device memory allocation of size 2147483648 fai")
    'ggml_vulkan: Device memory allocation of size 2147483648 failed.'
    >>> complete_cut_tail("ran out of memory") is None
    True
    """
    # the end of the paste without trailing blanks, found without copying a 100 MB log
    tail = text[-_TAIL_PROBE:].rstrip()
    end = len(text) - min(len(text), _TAIL_PROBE) + len(tail)
    if not tail and end > 0:
        end = len(text.rstrip())  # a long blank run at the end: strip it in full
    nl = text.rfind("\n", max(0, end - 4096), end)
    # the last line as the parsers see it (ANSI colour, Markdown emphasis, odd spaces undone)
    last = normalize_line(text[nl + 1 if nl >= 0 else max(0, end - 4096) : end]).rstrip()
    m = _CUT_TAIL.search(last[-64:])
    if m is None:
        return None
    head, sep, last = text[:end].rpartition("\n")
    last = normalize_line(last[-4096:]).rstrip()
    start = len(last) - len(last[-64:]) + m.start()
    if m.group("p"):
        word = m.group("p")[:6] + " memory"
    elif m.group("c"):
        word = "OutOfMemoryError"
    elif m.group("a"):
        word = "cudaErrorMemoryAllocation"
    elif m.group("n"):
        word = m.group("n").rsplit(" ", 1)[0] + " memory"
    elif m.group("f"):
        # ggml-vulkan's "Device memory allocation of size %zu failed." cut in its last word
        word = m.group("f").rsplit(" ", 1)[0] + " failed."
    else:
        word = "_OUT_OF_MEMORY"
    return head + sep + last[:start] + word


# The layout of a paste can hide its words from the wordings: a justified or column-aligned copy
# ("CUDA   out   of   memory", a tab between words), full-width Latin letters typed with a CJK
# input method ("ＣＵＤＡ ｏｕｔ ｏｆ ｍｅｍｏｒｙ"), a word hyphenated at a line break ("out-of-" /
# "memory", "mem-" / "ory"). These readings are tried only when the paste as given held no OOM.
# (a run of no-break or other Unicode spaces too: "out of\u00a0\u00a0memory", a double space
# that a web page or an editor turned into no-break spaces)
_SPACE_RUN = re.compile(
    "(?<=\\S)[ \\t\u00a0\u2000-\u200a\u202f\u205f\u3000]{2,16}(?=\\S)|(?<=\\S)\\t(?=\\S)"
)
_FULLWIDTH_CHAR = re.compile("[\uff01-\uff5e]")
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
_HYPHEN_WRAP = re.compile(r"(?<=[A-Za-z])-[ \t]{0,4}\r?\n[ \t]{0,8}(?=[a-z])")


# Encodings a paste went through on its way (tried, like the layouts, only when the paste as
# given held no OOM): a JSON dump with ``ensure_ascii`` (Python's default) writes a Chinese
# message as ``\\u663e\\u5b58\\u4e0d\\u8db3``; a ``repr`` of bytes writes UTF-8 as
# ``\\xe6\\x98\\xbe``; a Windows console or an editor that reads UTF-8 as cp1252 / Latin-1
# shows "æ˜¾å­˜ä¸è¶³" (mojibake); a link or form field percent- or plus-encodes it
# ("CUDA%20out%20of%20memory", "CUDA+out+of+memory").
_U_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}")
_X_ESCAPE_RUN = re.compile(r"(?:\\x[0-9a-fA-F]{2}){2,4096}")
# a UTF-8 lead byte read as one cp1252/Latin-1 character, then a continuation byte read so
_MOJIBAKE = re.compile(
    "[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d"
    "\u017e\u0192\u02c6\u02dc\u2013\u2014\u2018-\u201e\u2020-\u2022"
    "\u2026\u2030\u2039\u203a\u20ac\u2122]"
)
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_PERCENT_SPACE = re.compile(r"%(?:20|0A|0D|09)", re.IGNORECASE)
_PLUS_WORDS = re.compile(r"\A[^\s+]{1,64}(?:\+[^\s+]{1,64}){2,}")


def _cp1252_table() -> dict[int, int]:
    """cp1252's characters for the bytes 0x80-0x9F, mapped back to those bytes' code points."""
    # bytes undefined in cp1252 decode to U+FFFD here and are left out: a Latin-1 reader shows
    # them as the C1 control characters themselves, which encode back as they are
    shown = bytes(range(0x80, 0xA0)).decode("cp1252", errors="replace")
    return {ord(c): 0x80 + i for i, c in enumerate(shown) if c != "\ufffd"}


_CP1252_BACK = _cp1252_table()


def _unmojibake_line(line: str) -> str:
    """``line`` read back as UTF-8 when it is UTF-8 shown as cp1252 / Latin-1, else unchanged."""
    if not _MOJIBAKE.search(line):
        return line
    try:
        return line.translate(_CP1252_BACK).encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return line


def _u_unescape(m: re.Match[str]) -> str:
    return chr(int(m.group(0)[2:], 16))


def _x_unescape(m: re.Match[str]) -> str:
    try:
        return bytes.fromhex(m.group(0).replace("\\x", "")).decode("utf-8")
    except UnicodeDecodeError:
        return m.group(0)


def _undo_transport(text: str) -> str:
    """The transport encodings that cannot be a runtime's own text, undone before parsing: a
    paste without a single space that percent-encodes its spaces or line breaks, and lines of
    UTF-8 shown as cp1252 / Latin-1 that read back as UTF-8 (each line whole or not at all)."""
    if "%" in text and " " not in text and _PERCENT_SPACE.search(text[:4096]):
        text = urllib.parse.unquote(text)
    if _MOJIBAKE.search(text):
        text = "\n".join(_unmojibake_line(line) for line in text.split("\n"))
    return text


def decode_transport(text: str) -> str | None:
    """The paste with the encodings of its transport undone, or ``None`` when it shows none.

    >>> decode_transport(r"\\u663e\\u5b58\\u4e0d\\u8db3")
    '显存不足'
    >>> decode_transport("CUDA%20out%20of%20memory")
    'CUDA out of memory'
    >>> decode_transport("æ˜¾å­˜ä¸\x8dè¶³")
    '显存不足'
    >>> decode_transport("CUDA out of memory") is None
    True
    """
    if len(text) > UNWRAP_MAX_CHARS:
        return None
    out = text
    if "\\u" in out and _U_ESCAPE.search(out):
        out = _U_ESCAPE.sub(_u_unescape, out)
        out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if "\\x" in out and _X_ESCAPE_RUN.search(out):
        out = _X_ESCAPE_RUN.sub(_x_unescape, out)
    if _MOJIBAKE.search(out):
        out = "\n".join(_unmojibake_line(line) for line in out.split("\n"))
    if "%" in out and len(_PERCENT.findall(out[:4096])) >= 2:
        out = urllib.parse.unquote(out)
    if "+" in out and " " not in out.strip() and _PLUS_WORDS.match(out.strip()):
        out = out.replace("+", " ")
    return out if out != text else None


def loosen_layout(text: str) -> tuple[str, ...]:
    """Other readings of a paste whose layout hides its words (none when it shows no such layout).

    >>> loosen_layout("CUDA   out   of   memory")
    ('CUDA out of memory',)
    >>> loosen_layout("CUDA out-of-\\nmemory")
    ('CUDA out-of-memory', 'CUDA out-ofmemory')
    >>> loosen_layout("CUDA out of memory")
    ()
    """
    if len(text) > UNWRAP_MAX_CHARS:
        return ()
    loose = text.translate(_FULLWIDTH) if _FULLWIDTH_CHAR.search(text) else text
    loose = _SPACE_RUN.sub(" ", loose)
    out = [loose] if loose != text else []
    if "-" in loose and _HYPHEN_WRAP.search(loose):
        # "out-of-" + "memory" keeps its hyphen, "mem-" + "ory" loses it: try both
        out += [_HYPHEN_WRAP.sub("-", loose), _HYPHEN_WRAP.sub("", loose)]
    decoded = decode_transport(text)
    if decoded is not None:
        out.append(decoded)
    return tuple(out)


# A paste cut at its start, inside the OOM word: "ut of memory. Tried to allocate ...",
# "utOfMemoryError: CUDA out of ...", "OfMemoryError". Only the very first word of the text is
# completed, and only from a fragment no other word ends with ("ut of memory" is only "out of
# memory"; "t of memory" could be "amount of memory" and stays as it is).
_CUT_HEAD = re.compile(
    r"\A\W{0,4}(?:(?P<p>ut[ _]of[ _](?:(?:gpu|cuda|device|host|video) )?memory\b)|"
    r"(?P<c>(?:u?tOf|Of)MemoryError\b))"
)


def complete_cut_head(text: str) -> str | None:
    """The paste with a cut-off OOM word at its very start completed, or ``None``.

    >>> complete_cut_head("ut of memory. Tried to allocate 2.00 GiB")
    'out of memory. Tried to allocate 2.00 GiB'
    >>> complete_cut_head("OfMemoryError: CUDA")
    'OutOfMemoryError: CUDA'
    >>> complete_cut_head("amount of memory") is None
    True
    """
    body = text.lstrip()
    m = _CUT_HEAD.match(normalize_line(body[:256]))
    if m is None:
        return None
    if m.group("p"):
        return "o" + body[m.start("p") :]
    return "OutOfMemoryError" + body[m.end("c") :]

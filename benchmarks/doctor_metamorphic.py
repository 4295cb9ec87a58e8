"""The doctor on distorted copies of the development corpus: what a paste does to a message.

A message reaches the doctor the way the user copied it: from a coloured terminal (ANSI escapes),
a web page (non-breaking spaces, HTML entities), a structured logger or a Python ``repr`` (a
JSON-escaped string), an issue comment (a Markdown quote, bold or inline code), a log
collector (its own timestamp and logger prefix), Windows (CRLF). For every development record
the doctor recognises, each transform below is applied and the diagnosis compared with the
undistorted one: a recognition lost or a cause changed is a failure of generalization that needs
no new data to find.

Usage (from the repository root)::

    python benchmarks/doctor_metamorphic.py                 # every transform, every dev part
    python benchmarks/doctor_metamorphic.py --only ansi,nbsp --show 5

Only development parts are read (``doctor_corpus.DEVELOPMENT_PARTS``), never a fresh held-out
part. ``wrap80`` (a hard wrap at 80 columns) and ``one_line`` (every line break lost) are
reported but not required: a wrapped message's line structure is gone, and undoing it would
guess. The doctor undoes a word wrap only where it is certain (``normalize.unwrap_word_wrapped``:
a line is joined to the next when the next line's first word would not have fit, and only for a
paste in which nothing was found), so ``wrap80`` losses are what that rule cannot see:
``textwrap`` keeps the paste's own line breaks inside a wrapped line, which no real wrap does.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
import textwrap
import urllib.parse
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doctor_corpus import DEVELOPMENT_PARTS, load, part_files

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.normalize import normalize_text


def _per_line(f: Callable[[str], str]) -> Callable[[str], str]:
    return lambda t: "\n".join(f(line) for line in t.split("\n"))


#: the transforms the doctor must survive (name -> function of the message text)
REQUIRED: dict[str, Callable[[str], str]] = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "ansi": lambda t: "\x1b[31m" + t.replace("\n", "\x1b[0m\n\x1b[1;31m") + "\x1b[0m",
    "timestamp": _per_line(lambda line: "2024-05-01 12:00:00,123 ERROR [worker-1] " + line),
    "quote": _per_line(lambda line: "> " + line),
    "json_escaped": lambda t: json.dumps({"error": t}),
    "json_lines": _per_line(lambda line: json.dumps({"level": "error", "msg": line})),
    "html": html.escape,
    "rank": _per_line(lambda line: "[rank3]: " + line),
    "indent_tabs": _per_line(lambda line: "\t  " + line + "  "),
    "nbsp": lambda t: t.replace(" ", "\u00a0"),
    "repr_list": lambda t: repr([t]),
    # an issue comment that highlights the pasted lines (Markdown bold / inline code)
    "markdown_bold": _per_line(lambda line: f"**{line.strip()}**" if line.strip() else line),
    "inline_code": _per_line(lambda line: f"`{line.strip()}`" if line.strip() else line),
}
#: reported, not required (see the module docstring)
INFORMATIVE: dict[str, Callable[[str], str]] = {
    "wrap80": lambda t: "\n".join(textwrap.wrap(t, 80, replace_whitespace=False)),
    "one_line": lambda t: " ".join(t.split()),
    # transport encodings (normalize.decode_transport): UTF-8 shown as Latin-1 (a console or
    # editor in the wrong code page), a link's percent-encoding, a repr of the UTF-8 bytes
    "mojibake": lambda t: t.encode("utf-8").decode("latin-1"),
    "url_quoted": lambda t: urllib.parse.quote(t),
    "bytes_repr": lambda t: repr(t.encode("utf-8")),
}


def records() -> list[dict[str, object]]:
    """Every record of the development parts."""
    return [r for part in DEVELOPMENT_PARTS for r in load(part_files(part))]


def baseline(recs: list[dict[str, object]]) -> dict[str, tuple[str, str]]:
    """Record id -> (text, cause) of the records the doctor recognises as they are."""
    base = {}
    for r in recs:
        d = diagnose_text(str(r["text"]))
        if d.oom_found:
            base[str(r["id"])] = (str(r["text"]), d.cause)
    return base


def compare(
    recs: list[dict[str, object]],
    transforms: dict[str, Callable[[str], str]],
    base: dict[str, tuple[str, str]] | None = None,
) -> dict[str, list[tuple[str, str]]]:
    """Per transform, the (record id, what changed) pairs over the recognised records
    (``base``: :func:`baseline` of ``recs``, when the caller already has it)."""
    base = baseline(recs) if base is None else base
    # diagnose_text reads only normalize_text(text) (its first step): a distorted copy that
    # normalizes to the undistorted text's normal form is read the same, so its diagnosis is the
    # undistorted one (json_escaped, html, repr_list undone whole); the others are read in full
    normal = {rid: normalize_text(text) for rid, (text, _) in base.items()}
    out: dict[str, list[tuple[str, str]]] = {}
    for name, f in transforms.items():
        bad: list[tuple[str, str]] = []
        for rid, (text, cause) in base.items():
            distorted = f(text)
            if normalize_text(distorted) == normal[rid]:
                continue  # the undistorted reading: recognised, the same cause
            d = diagnose_text(distorted)
            if not d.oom_found:
                bad.append((rid, "not recognised"))
            elif d.cause != cause:
                bad.append((rid, f"{cause} -> {d.cause}"))
        out[name] = bad
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    ap.add_argument("--only", default="", help="comma-separated transform names")
    ap.add_argument("--show", type=int, default=3, help="examples printed per transform")
    a = ap.parse_args()
    every = {**REQUIRED, **INFORMATIVE}
    names = [n.strip() for n in a.only.split(",") if n.strip()] or list(every)
    unknown = [n for n in names if n not in every]
    if unknown:
        ap.error(f"unknown transform(s): {', '.join(unknown)}; known: {', '.join(every)}")
    recs = records()
    base = baseline(recs)  # read once: compare and the count below share it
    result = compare(recs, {n: every[n] for n in names}, base)
    n_base = len(base)
    print(f"{len(recs)} development records, {n_base} recognised undistorted")
    failed = False
    for name, bad in result.items():
        lost = sum(1 for _, what in bad if what == "not recognised")
        kind = "required" if name in REQUIRED else "informative"
        print(f"  {name:13s} {kind:11s} lost {lost:4d}  cause changed {len(bad) - lost:4d}")
        for rid, what in bad[: a.show]:
            print(f"      {rid}: {what}")
        failed = failed or (name in REQUIRED and bool(bad))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

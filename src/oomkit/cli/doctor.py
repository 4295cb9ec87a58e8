"""``oomkit doctor [LOG|-]``: read an OOM message or log, say what happened and what to change.

Exit codes: 0 an OOM was diagnosed, 3 no OOM found in the text, 1 the file could not be read.
"""

from __future__ import annotations

import os
import sys

import click

from oomkit.cli.output import EXIT_ERROR, EXIT_NEGATIVE, print_error, print_hint, print_json
from oomkit.diagnose.doctor import Diagnosis, diagnose_text
from oomkit.diagnose.fixes import size_text

__all__ = ["doctor_command", "read_log"]


class _ReadError(Exception):
    pass


def read_log(arg: str | None) -> str:
    """The text to diagnose: a file path, ``-``/nothing for stdin, or a pasted message.

    An argument that is not an existing file but contains spaces is taken as the message itself.
    """
    if arg is None or arg == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    if os.path.isfile(arg):
        try:
            with open(arg, "rb") as fh:
                return fh.read().decode("utf-8", errors="replace")
        except OSError as e:
            raise _ReadError(
                f"Reading the log failed for '{arg}' ({e.strerror or e}): the file is not "
                "readable. Check its permissions, or pipe it in with `cat LOG | oomkit doctor -`."
            ) from e
    if " " in arg or "\n" in arg:
        return arg
    reason = "it is a directory" if os.path.isdir(arg) else "no such file"
    raise _ReadError(
        f"Reading the log failed for '{arg}' (doctor LOG): {reason}. Pass a log file, `-` for "
        "stdin, or the message itself in quotes."
    )


def _size(n: int | None) -> str:
    return size_text(n)


def _print_human(d: Diagnosis) -> None:
    out = click.echo
    out(f"Cause: {d.cause}  (confidence {d.confidence:.2f})")
    out("")
    out(d.explanation)
    out("")
    out(f"Found {len(d.events)} OOM message(s):")
    for e in d.events[:10]:
        nums = []
        if e.requested_bytes is not None:
            nums.append(f"requested {_size(e.requested_bytes)}")
        if e.total_bytes is not None:
            nums.append(f"total {_size(e.total_bytes)}")
        if e.free_bytes is not None:
            nums.append(f"free {_size(e.free_bytes)}")
        dev = f" device {e.device}" if e.device is not None else ""
        extra = f" ({', '.join(nums)})" if nums else ""
        out(f"  line {e.line}: {e.runtime} {e.format or e.kind}{dev}{extra}")
    if len(d.events) > 10:
        out(f"  ... and {len(d.events) - 10} more")
    if d.fixes:
        out("")
        out("Fixes (largest expected saving first):")
        for i, f in enumerate(d.fixes, 1):
            saving = (
                f"  [saves ~{_size(f.expected_saving_bytes)}]"
                if f.expected_saving_bytes is not None
                else ""
            )
            out(f"  {i}. {f.title}{saving}")
            out(f"     {f.why}")
            for c in f.commands:
                out(f"       $ {c}")


@click.command("doctor")
@click.argument("log", required=False, metavar="[LOG|-]")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (schema_version 1).")
def doctor(log: str | None, as_json: bool) -> None:
    """Diagnose an out-of-memory error: LOG is a file, `-` (stdin), or the pasted message.

    \b
    Exit codes: 0 an OOM was diagnosed, 1 the file could not be read,
                3 no OOM message was found.
    """
    try:
        text = read_log(log)
    except _ReadError as e:
        print_error(str(e))
        sys.exit(EXIT_ERROR)
    d = diagnose_text(text)
    if as_json:
        print_json(d.to_dict())
    elif d.oom_found:
        _print_human(d)
    else:
        click.echo("No out-of-memory message was found.")
        print_hint("Paste the full error (the line with 'out of memory' and the lines around it).")
    if not d.oom_found:
        sys.exit(EXIT_NEGATIVE)


doctor_command = doctor

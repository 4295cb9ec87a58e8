"""The CLI's only printer: data on stdout, messages on stderr, and the exception table.

click is imported when a line is first echoed, not with this module: ``estimate --json``
(``estimate_fast``) prints its document with :func:`print_json` and never needs click.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from oomkit import errors
from oomkit.serialize import dumps

__all__ = [
    "EXIT_ERROR",
    "EXIT_NEGATIVE",
    "EXIT_OK",
    "EXIT_TIGHT",
    "EXIT_USAGE",
    "debug_enabled",
    "echo",
    "error_exit_code",
    "print_error",
    "print_hint",
    "print_json",
    "print_warning",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NEGATIVE = 3
#: estimate: it fits, but inside the band real runs sit from oomkit's numbers (verdict "tight")
EXIT_TIGHT = 4

#: exception -> (exit code, hint); subclasses first (hf ``CLI_ERROR_MAPPINGS``)
_ERROR_TABLE: tuple[tuple[type[BaseException], int, str | None], ...] = (
    (
        errors.OfflineError,
        EXIT_ERROR,
        "Use a catalog name or a local path, or unset HF_HUB_OFFLINE.",
    ),
    (errors.GatedRepoError, EXIT_ERROR, None),
    (errors.SourceNotFoundError, EXIT_ERROR, None),
    # a malformed model name (no catalog name, no Hub repo id): a usage error, as a bad flag
    (errors.InvalidModelNameError, EXIT_USAGE, None),
    (errors.UnknownNameError, EXIT_ERROR, None),
    (errors.FormatError, EXIT_ERROR, None),
    (errors.UnsupportedModelError, EXIT_ERROR, None),
    (errors.InvalidSettingError, EXIT_USAGE, None),
    (errors.OomkitError, EXIT_ERROR, None),
)


def debug_enabled() -> bool:
    """Tracebacks only with ``--debug`` or ``OOMKIT_DEBUG=1`` (read at call time)."""
    return os.environ.get("OOMKIT_DEBUG", "") not in ("", "0", "false", "False")


def _offline_env() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() not in ("", "0", "false", "no", "off")
        for v in ("HF_HUB_OFFLINE", "OOMKIT_OFFLINE")
    )


#: ``UnknownNameError.kind`` values only ever read from a flag (``--gpu``, ``--runtime``): a
#: misspelt one is a usage error (exit 2); a model or quant name may come from a file or repo
_USAGE_NAME_KINDS = frozenset({"GPU", "runtime"})


def error_exit_code(exc: BaseException) -> tuple[int, str | None]:
    if isinstance(exc, errors.UnknownNameError) and exc.kind in _USAGE_NAME_KINDS:
        return EXIT_USAGE, None
    for cls, code, hint in _ERROR_TABLE:
        if isinstance(exc, cls):
            if cls is errors.OfflineError and not _offline_env():
                # the offline switch is not what stopped us: the network or --offline did
                hint = "Use a catalog name or a local path, or check the network."
            return code, hint
    return EXIT_ERROR, None


#: longest message printed; a longer one (e.g. thousands of missing shard names) is cut
MAX_MESSAGE_CHARS = 2000


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    if len(line) > MAX_MESSAGE_CHARS:
        line = (
            line[: MAX_MESSAGE_CHARS - 40] + f" … ({len(line) - MAX_MESSAGE_CHARS + 40} more chars)"
        )
    return line


def echo(message: str = "", *, err: bool = False) -> None:
    """``click.echo`` (one line on stdout, or stderr with ``err``), click imported on first use."""
    import click

    click.echo(message, err=err)


def print_error(message: str) -> None:
    echo(f"Error: {_one_line(message)}", err=True)


def print_warning(message: str) -> None:
    echo(f"Warning: {_one_line(message)}", err=True)


def print_note(message: str) -> None:
    """What oomkit read or assumed (not a problem): ``Note: ...`` on stderr."""
    echo(f"Note: {_one_line(message)}", err=True)


def print_hint(message: str) -> None:
    echo(f"Hint: {_one_line(message)}", err=True)


def print_json(doc: Any) -> None:
    sys.stdout.write(dumps(doc) + "\n")
    sys.stdout.flush()

"""``oomkit.install()``: append a diagnosis and live allocator stats to every OOM traceback.

Plain Python: :data:`sys.excepthook` is wrapped (the previous hook still prints the traceback
first). IPython/Jupyter: ``InteractiveShell.set_custom_exc`` is used, as its docs recommend for
extra output after a traceback; IPython is only touched when it is already imported.

Nothing here imports torch: stats are read only when torch is already loaded in the process.
The diagnosis comes from ``oomkit.diagnose.doctor.diagnose_text`` (imported when an OOM
happens); when that cannot be imported the report holds the allocator stats alone.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from oomkit.inprocess.retry import is_oom_error
from oomkit.units import format_bytes

__all__ = ["format_oom_report", "install", "installed", "uninstall"]

_STATE: dict[str, Any] = {"previous": None, "ipython": None, "ipython_saved": None}


def _diagnosis_lines(text: str) -> list[str]:
    try:
        from oomkit.diagnose.doctor import (  # type: ignore[import-not-found, unused-ignore]
            diagnose_text,
        )
    except ImportError:
        return ["diagnosis unavailable (oomkit.diagnose.doctor could not be imported)"]
    try:
        diag = diagnose_text(text)
    except Exception as exc:  # never break the user's error display
        return [f"diagnosis failed: {type(exc).__name__}: {exc}"]
    lines = [f"cause: {diag.cause} (confidence {diag.confidence:.0%})", str(diag.explanation)]
    for fix in diag.fixes:
        saving = getattr(fix, "expected_saving_bytes", None)
        lines.append(f"fix: {fix.title}" + (f" (saves ~{format_bytes(saving)})" if saving else ""))
        lines.extend(f"    {cmd}" for cmd in fix.commands)
    return lines


def _stats_lines() -> list[str]:
    if "torch" not in sys.modules:
        return []
    from oomkit.inprocess.torch_memory import allocator_stats, parse_alloc_conf

    lines: list[str] = []
    try:
        lines.append("allocator now: " + allocator_stats().format())
    except Exception as exc:  # a dead CUDA context after a driver-level OOM
        lines.append(f"allocator stats unavailable: {type(exc).__name__}: {exc}")
    lines.extend(f"warning: {w}" for w in parse_alloc_conf().warnings)
    return lines


def format_oom_report(exc: BaseException) -> str | None:
    """The text appended under an OOM traceback; ``None`` when ``exc`` is not an OOM."""
    if not is_oom_error(exc):
        return None
    cls = type(exc)
    qual = (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )
    text = f"{qual}: {exc}"
    lines = ["", "---- oomkit: out-of-memory diagnosis ----", *_diagnosis_lines(text)]
    lines.extend(_stats_lines())
    lines.append(
        "next: oomkit.free_memory() shows what still holds memory; `oomkit gpus` lists the "
        "processes on each GPU"
    )
    return "\n".join(lines)


def _excepthook(etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    previous = _STATE["previous"] or sys.__excepthook__
    previous(etype, value, tb)
    report = format_oom_report(value)
    if report:
        print(report, file=sys.stderr)


def _ipython_handler(
    shell: Any,
    etype: type[BaseException],
    value: BaseException,
    tb: TracebackType | None,
    tb_offset: int | None = None,
) -> None:
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    report = format_oom_report(value)
    if report:
        print(report, file=sys.stderr)


def installed() -> bool:
    """Whether :func:`install` is active."""
    return sys.excepthook is _excepthook


def install(*, ipython: bool = True) -> None:
    """Append the OOM diagnosis to uncaught OOM tracebacks (idempotent).

    Args:
        ipython: also hook the running IPython/Jupyter shell, when there is one.
    """
    if sys.excepthook is not _excepthook:
        _STATE["previous"] = sys.excepthook
        sys.excepthook = _excepthook
    if not ipython or "IPython" not in sys.modules or _STATE["ipython"] is not None:
        return
    get_ipython: Any = getattr(sys.modules["IPython"], "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    if shell is None:
        return
    _STATE["ipython_saved"] = (shell.custom_exceptions, getattr(shell, "CustomTB", None))
    shell.set_custom_exc((Exception,), _ipython_handler)
    _STATE["ipython"] = shell


def uninstall() -> None:
    """Undo :func:`install` (restores the previous hooks)."""
    if sys.excepthook is _excepthook:
        sys.excepthook = _STATE["previous"] or sys.__excepthook__
    _STATE["previous"] = None
    shell = _STATE["ipython"]
    if shell is not None:
        exceptions, custom_tb = _STATE["ipython_saved"]
        shell.custom_exceptions = exceptions
        if custom_tb is not None:
            shell.CustomTB = custom_tb
    _STATE["ipython"] = None
    _STATE["ipython_saved"] = None

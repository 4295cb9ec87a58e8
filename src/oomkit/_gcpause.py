"""Pause Python's cyclic garbage collector while a loop builds many acyclic objects.

Reading a 20k-layer GGUF header builds ~540k objects (tensor infos, their tuples, the
``TensorInfo`` and ``PlacedTensor`` rows); as the heap grows the collector runs full passes over
all of them again and again, which took ~35% of reading and estimating such a file (issue 10).
None of these objects form cycles, so pausing the collector for the loop frees nothing later
that it would have freed earlier. The previous state is restored on exit, also on an error, so
a caller that disabled the collector keeps it disabled.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["gc_paused", "pause_for_command_start", "take_start_pause"]

P = ParamSpec("P")
R = TypeVar("R")


def gc_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` with the cyclic garbage collector paused (restored afterwards)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return wrapper


#: True from :func:`pause_for_command_start` until :func:`take_start_pause` reads it
_start_paused = False


def _is_the_command() -> bool:
    """This process runs ``oomkit`` itself: the console script, or ``python -m oomkit``
    (``sys.orig_argv``; not ``-m`` with another module of the package, which imports this one
    first too)."""
    if os.path.basename(sys.argv[0] if sys.argv else "") in ("oomkit", "oomkit.exe"):
        return True
    orig: list[str] = list(getattr(sys, "orig_argv", ()))
    i = 1
    while i < len(orig):
        arg = orig[i]
        if arg == "-m":
            return orig[i + 1 : i + 2] == ["oomkit"]
        if arg.startswith("-m"):
            return arg == "-moomkit"
        if arg in ("-c", "-", "--") or not arg.startswith("-") or arg.startswith("-c"):
            return False
        i += 2 if arg in ("-X", "-W") else 1  # their value is the next argument
    return False


def pause_for_command_start() -> None:
    """Pause the collector from ``import oomkit`` in the ``oomkit`` command until its ``main``.

    Importing the ~60 modules of ``oomkit estimate`` creates ~9k code objects, functions and
    classes, none of them garbage: the young generation fills and is collected a dozen times
    (~2 ms of a ~60 ms cold start, issue 10). ``oomkit.cli.main`` takes the pause over
    (:func:`take_start_pause`) and turns the collector back on before it returns, and before
    any command other than the click-free ``estimate`` runs.
    """
    global _start_paused
    if gc.isenabled() and _is_the_command():
        gc.disable()
        _start_paused = True


def take_start_pause() -> bool:
    """Whether :func:`pause_for_command_start` paused the collector (once: the caller now
    owns the pause and turns the collector back on)."""
    global _start_paused
    paused, _start_paused = _start_paused, False
    return paused and not gc.isenabled()

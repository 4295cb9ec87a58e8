"""A byte-code cache for the methods ``dataclasses`` writes for oomkit's classes (start-up time).

``@dataclass`` writes the source of ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and,
for frozen classes, ``__setattr__``/``__delattr__`` of every class and compiles it with
``exec`` each time a module is imported: about 0.5 ms a class, some 20 ms of the 60 ms budget
``oomkit estimate`` has for a cold start (issue 10). Python caches the byte code of modules in
``__pycache__`` but not these strings, so :func:`install` gives the ``dataclasses`` module an
``exec`` that looks a string up first: for a module under ``oomkit`` the compiled code is read
from ``__pycache__/<module>.<cache tag>.dcfn`` next to the module's ``.pyc`` (a ``marshal`` of
source text -> code object) and compiled only when missing; at exit the file is rewritten
with the entries this process used for that module, so it never keeps stale ones.

The code object is exactly what ``exec`` would have compiled from the same text (same file name
``<string>``, no inherited ``__future__`` flags: ``dataclasses`` has none), so the classes are
identical; every other ``exec`` — other packages' dataclasses, any non-string — goes to the
built-in untouched. Like ``.pyc`` files nothing is written under ``sys.dont_write_bytecode``
(``PYTHONDONTWRITEBYTECODE``), an unreadable or foreign cache file is ignored, and
``OOMKIT_NO_CODE_CACHE=1`` turns the cache off. ``tests/test_codecache.py`` checks that every
oomkit dataclass gets the same methods with and without it.

:func:`install` also imports ``dataclasses`` without ``inspect`` (with ``ast``, ``dis`` and
``tokenize``, ~4 ms of a cold start) and ``copy``: on Python 3.10 and 3.11 ``dataclasses`` uses
``inspect`` only to write a docstring for a class without one (``inspect.signature``), and
every oomkit dataclass has one, and ``copy`` only in ``asdict``/``astuple``. Each is a
stand-in that imports the real module on first use and then puts it in its place;
``sys.modules`` never holds a stand-in after the import, so any other ``import inspect`` gets
the real module as always. Where ``dataclasses`` needs ``inspect`` for every class (3.12+:
``inspect.get_annotations``) the first class loads it: nothing is lost.
"""

from __future__ import annotations

import builtins
import contextlib
import marshal
import os
import sys
from types import CodeType, ModuleType
from typing import Any

__all__ = ["install"]

_SUFFIX = ".dcfn"
#: module name -> the cache file's entries (source text -> code), as read
_read: dict[str, dict[str, CodeType]] = {}
#: module name -> the entries this process used; written back when one had to be compiled
_used: dict[str, dict[str, CodeType]] = {}
_dirty: set[str] = set()
_files: dict[str, str | None] = {}


def _cache_file(module: str, source_file: object) -> str | None:
    if module not in _files:
        path: str | None = None
        tag = sys.implementation.cache_tag
        if isinstance(source_file, str) and source_file.endswith(".py") and tag:
            try:
                from importlib.util import cache_from_source

                path = cache_from_source(source_file)[: -len(".pyc")] + _SUFFIX
            except (NotImplementedError, ValueError):
                path = None
        _files[module] = path
    return _files[module]


def _load(module: str, path: str | None) -> dict[str, CodeType]:
    entries: dict[str, CodeType] = {}
    if path is not None:
        try:
            with open(path, "rb") as f:
                doc = marshal.loads(f.read())
        except (OSError, ValueError, EOFError, TypeError):
            doc = None
        if isinstance(doc, dict):
            entries = {
                k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, CodeType)
            }
    _read[module] = entries
    return entries


def _code(module: str, source_file: object, text: str) -> CodeType:
    entries = _read.get(module)
    if entries is None:
        entries = _load(module, _cache_file(module, source_file))
    code = entries.get(text)
    if code is None:
        code = compile(text, "<string>", "exec", dont_inherit=True)
        entries[text] = code
        _dirty.add(module)
    _used.setdefault(module, {})[text] = code
    return code


def _exec(source: Any, *args: Any, **kwargs: Any) -> Any:
    """``exec`` for the ``dataclasses`` module: oomkit's strings through the cache.

    Any other string is compiled here as ``dataclasses``' own ``exec`` would: a string given
    to ``exec`` inherits the ``__future__`` flags of the calling code, and this module's
    ``annotations`` would turn the generated ``__init__``'s annotations into strings
    (``'_type_x'``).
    """
    if type(source) is str:
        module = args[0].get("__name__") if args and isinstance(args[0], dict) else None
        if isinstance(module, str) and (module == "oomkit" or module.startswith("oomkit.")):
            source = _code(module, args[0].get("__file__"), source)
        else:
            source = compile(source, "<string>", "exec", dont_inherit=True)
    return builtins.exec(source, *args, **kwargs)


def _save() -> None:
    if sys.dont_write_bytecode:
        return
    for module in sorted(_dirty):
        path = _files.get(module)
        if path is None:
            continue
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(marshal.dumps(_used[module]))
            os.replace(tmp, path)
        except OSError:  # a read-only install: no cache, as with .pyc files
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    _dirty.clear()


def running_as_cli() -> bool:
    """True when this process is the ``oomkit`` command (console script or ``python -m``).

    The cache swaps ``dataclasses.exec`` process-wide, so a program that merely imports oomkit
    as a library does not get it; ``OOMKIT_CODE_CACHE=1`` forces it on (tests).
    """
    if os.environ.get("OOMKIT_CODE_CACHE", "") not in ("", "0"):
        return True
    argv0 = sys.argv[0] if sys.argv else ""
    # python -m oomkit: argv[0] is "-m" while the package is imported
    return argv0 == "-m" or os.path.basename(argv0) in ("oomkit", "oomkit.exe", "oomkit-script.py")


#: modules ``dataclasses`` imports but a plain oomkit command never uses (see the docstring)
_DEFERRED = ("inspect", "copy")


class _Deferred(ModuleType):
    """One of ``dataclasses``' modules until first used: then the real module, in its place."""

    def __getattr__(self, name: str) -> Any:
        import dataclasses
        import importlib

        module = importlib.import_module(self.__name__)
        if getattr(dataclasses, self.__name__, None) is self:
            setattr(dataclasses, self.__name__, module)
        return getattr(module, name)


def _import_dataclasses_deferring() -> None:
    """Import ``dataclasses`` with a :class:`_Deferred` stand-in for each of ``_DEFERRED``
    (see the module docstring); nothing happens when any of them is imported already."""
    if any(m in sys.modules for m in ("dataclasses", *_DEFERRED)):
        return
    stand_ins = {name: _Deferred(name) for name in _DEFERRED}
    sys.modules.update(stand_ins)
    try:
        import dataclasses  # noqa: F401
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


def install() -> None:
    """Route ``dataclasses``' ``exec`` through the cache (once; a no-op when switched off)."""
    if os.environ.get("OOMKIT_NO_CODE_CACHE", "") not in ("", "0"):
        return
    import atexit

    _import_dataclasses_deferring()
    import dataclasses

    if getattr(dataclasses, "exec", None) is _exec:
        return
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(_save)

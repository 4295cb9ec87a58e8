"""``oomkit._codecache``: dataclass methods read from ``__pycache__`` are the ones ``exec`` builds.

Every oomkit module that imports without optional extras is imported three times in fresh
interpreters with their own pycache prefix: without the cache, with an empty cache (compiles
and writes), and with the written cache (must compile nothing). The generated methods of every
dataclass must be the same byte code, constants, names, defaults and annotations each time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).parents[1] / "src")

_SCRIPT = r"""
import dataclasses, importlib, json, pkgutil, sys
import oomkit
from oomkit import _codecache

methods = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
out = {}
for info in pkgutil.walk_packages(oomkit.__path__, "oomkit."):
    if info.name.endswith("__main__"):
        continue
    try:
        mod = importlib.import_module(info.name)
    except ImportError:  # an optional extra (torch, fastapi, ...) that is not installed
        continue
    for name, obj in sorted(vars(mod).items()):
        if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
            continue
        if obj.__module__ != info.name:
            continue
        for m in methods:
            fn = obj.__dict__.get(m)
            code = getattr(fn, "__code__", None)
            if code is None:
                continue
            out[f"{obj.__module__}.{obj.__qualname__}.{m}"] = [
                code.co_code.hex(),
                repr(code.co_consts),
                list(code.co_names),
                list(code.co_varnames),
                code.co_filename,
                code.co_flags,
                repr(fn.__defaults__),
                repr(fn.__kwdefaults__),
                sorted(getattr(fn, "__annotations__", {})),
                fn.__qualname__,
            ]
stats = {
    "compiled": sorted(_codecache._dirty),
    "cached_entries": sum(len(v) for v in _codecache._read.values()),
}
print(json.dumps({"methods": out, "stats": stats}))
"""


def _run(env_extra: dict[str, str]) -> dict[str, object]:
    # a fixed hash seed: the repr of a frozenset default is the same in each interpreter
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONHASHSEED": "0", **env_extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    doc: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return doc


def test_cached_dataclass_methods_are_identical(tmp_path: Path) -> None:
    plain = _run({"OOMKIT_NO_CODE_CACHE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path / "off")})
    prefix = {"PYTHONPYCACHEPREFIX": str(tmp_path / "on"), "OOMKIT_CODE_CACHE": "1"}
    first = _run(prefix)
    second = _run(prefix)
    methods = plain["methods"]
    assert isinstance(methods, dict)
    assert len(methods) > 300  # the check covers the package, not a handful of classes
    assert first["methods"] == methods
    assert second["methods"] == methods
    stats1, stats2 = first["stats"], second["stats"]
    assert isinstance(stats1, dict)
    assert isinstance(stats2, dict)
    assert stats1["compiled"]  # the first run compiled and wrote the cache files ...
    assert list((tmp_path / "on").rglob("*.dcfn"))
    assert stats2["compiled"] == []  # ... the second compiled nothing
    assert stats2["cached_entries"] > 300
    assert not list((tmp_path / "off").rglob("*.dcfn"))


def test_nothing_written_without_bytecode_writing(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "PYTHONPYCACHEPREFIX": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "OOMKIT_CODE_CACHE": "1",
    }
    subprocess.run([sys.executable, "-c", "import oomkit.estimate.breakdown"], env=env, check=True)
    assert not list(tmp_path.rglob("*.dcfn"))


def test_other_packages_dataclasses_are_untouched() -> None:
    code = (
        "import dataclasses, oomkit, oomkit._codecache as c\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class P:\n    x: int = 1\n"
        "assert P() == P() and repr(P()) == 'P(x=1)'\n"
        "assert P.__init__.__annotations__ == {'x': int, 'return': None}\n"
        "assert not c._used and not c._read, (c._used, c._read)\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC, "OOMKIT_CODE_CACHE": "1"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def test_a_program_importing_the_library_keeps_its_dataclasses_module() -> None:
    """Only the oomkit command swaps ``dataclasses.exec``; a library user's process does not."""
    code = (
        "import dataclasses, builtins, oomkit\n"
        "assert getattr(dataclasses, 'exec', builtins.exec) is builtins.exec\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OOMKIT_CODE_CACHE"}
    subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": SRC}, check=True)


def test_dataclasses_imported_without_inspect_until_needed() -> None:
    """The command imports ``dataclasses`` without ``inspect`` and ``copy``; a class without a
    docstring (the one use of ``inspect`` on 3.10/3.11) still gets the docstring ``dataclasses``
    writes, and ``asdict`` still deep-copies, with the real modules."""
    code = (
        "import sys, dataclasses as d0\n"
        "plain = d0.dataclass(type('P', (), {'__annotations__': {'x': 'int'}, 'x': 1}))\n"
        "want = plain.__doc__\n"
        "for m in [m for m in sys.modules if m in ('dataclasses', 'inspect', 'copy')]:\n"
        "    del sys.modules[m]\n"
        "import oomkit, dataclasses\n"
        "assert dataclasses is not d0\n"
        "assert 'inspect' not in sys.modules, 'inspect imported with dataclasses'\n"
        "import oomkit.spec.settings\n"
        "assert 'inspect' not in sys.modules, 'an oomkit dataclass needed inspect'\n"
        "P = dataclasses.dataclass(type('P', (), {'__annotations__': {'x': 'int'}, 'x': 1}))\n"
        "assert P.__doc__ == want == \"P(x: 'int' = 1)\", (P.__doc__, want)\n"
        "import inspect\n"
        "assert dataclasses.inspect is inspect and sys.modules['inspect'] is inspect\n"
        "assert inspect.signature(P) is not None\n"
        "assert 'copy' not in sys.modules, 'copy imported with dataclasses'\n"
        "assert dataclasses.asdict(P(x=[1])) == {'x': [1]}\n"  # deepcopy: the real copy
        "import copy\n"
        "assert dataclasses.copy is copy and sys.modules['copy'] is copy\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC, "OOMKIT_CODE_CACHE": "1"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def test_without_the_cache_dataclasses_keeps_inspect() -> None:
    code = "import sys, oomkit, dataclasses\nassert 'inspect' in sys.modules\n"
    env = {**os.environ, "PYTHONPATH": SRC, "OOMKIT_NO_CODE_CACHE": "1"}
    env.pop("OOMKIT_CODE_CACHE", None)
    subprocess.run([sys.executable, "-c", code], env=env, check=True)

"""``oomkit._gcpause.gc_paused``: the collector is off inside, and its state restored after."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from oomkit._gcpause import gc_paused


@pytest.fixture
def gc_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@gc_paused
def _state(fail: bool = False) -> bool:
    if fail:
        raise ValueError("boom")
    return gc.isenabled()


def test_paused_inside_and_restored(gc_enabled: None) -> None:
    assert _state() is False
    assert gc.isenabled()


def test_restored_after_an_error(gc_enabled: None) -> None:
    with pytest.raises(ValueError, match="boom"):
        _state(fail=True)
    assert gc.isenabled()


def test_a_caller_that_disabled_it_keeps_it_disabled(gc_enabled: None) -> None:
    gc.disable()
    assert _state() is False
    assert not gc.isenabled()
    gc.enable()


def test_nested_pauses_restore_the_outer_state(gc_enabled: None) -> None:
    @gc_paused
    def outer() -> tuple[bool, bool]:
        return _state(), gc.isenabled()

    assert outer() == (False, False)
    assert gc.isenabled()


@pytest.mark.parametrize(
    ("orig_argv", "argv0", "expected"),
    [
        (["python", "-m", "oomkit", "estimate", "x"], "-m", True),
        (["python", "-X", "importtime", "-m", "oomkit"], "-m", True),
        (["python", "-moomkit", "gpus"], "-m", True),
        (["python", "-m", "oomkit.quant.mix_table", "--write"], "-m", False),
        (["python", "-c", "import oomkit"], "-c", False),
        (["python", "script.py", "-m", "oomkit"], "script.py", False),
        (["/usr/bin/python3", "/venv/bin/oomkit", "estimate"], "/venv/bin/oomkit", True),
    ],
)
def test_the_command_is_recognised(
    monkeypatch: pytest.MonkeyPatch, orig_argv: list[str], argv0: str, expected: bool
) -> None:
    from oomkit import _gcpause

    monkeypatch.setattr(sys, "orig_argv", orig_argv, raising=False)
    monkeypatch.setattr(sys, "argv", [argv0])
    assert _gcpause._is_the_command() is expected


_COMMAND = """
import gc, io, sys
sys.argv = ["oomkit", *{args!r}]
import oomkit  # as the command starts: the collector is paused from here ...
assert not gc.isenabled()
import oomkit.cli as c
import oomkit.cli.estimate_run as r
seen = []
for mod, name in ((c, "_run_click"), (r, "run_estimate")):
    def spy(*a, _real=getattr(mod, name), **k):
        seen.append(gc.isenabled())
        return _real(*a, **k)
    setattr(mod, name, spy)
sys.stdout = io.StringIO()
rc = c.main()
sys.stdout = sys.__stdout__
print(rc, seen, gc.isenabled())  # ... and on again when main returns
"""


@pytest.mark.parametrize(
    ("args", "seen"),
    [
        (["estimate", "llama-3.1-8b", "--json"], "[False]"),  # the click-free path: paused
        (["models", "--search", "llama-3.1-8b"], "[True]"),  # any other command: back on
    ],
)
def test_the_start_pause_ends_in_main(args: list[str], seen: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    out = subprocess.run(
        [sys.executable, "-c", _COMMAND.format(args=args)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert out.split() == ["0", seen, "True"]


def test_a_program_importing_oomkit_keeps_the_collector() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    code = "import gc, oomkit, oomkit.api\nassert gc.isenabled()\n"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)

"""A short seeded run of benchmarks/fuzz_cli.py: odd option values never end in a traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def _fuzz() -> ModuleType:
    path = Path(__file__).parents[1] / "benchmarks" / "fuzz_cli.py"
    spec = importlib.util.spec_from_file_location("fuzz_cli", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_odd_option_values_never_crash() -> None:
    mod = _fuzz()
    assert mod.fuzz(120, seed=11, commands=["estimate", "plan", "doctor", "models"]) == {}


def test_the_fuzzer_sees_a_crash() -> None:
    # the detector itself: an exception inside a command is reported, not swallowed
    mod = _fuzz()
    import oomkit.cli as cli_mod

    real = cli_mod._run_click

    def boom(args: list[str]) -> object:
        raise ZeroDivisionError("planted")

    cli_mod._run_click = boom  # type: ignore[assignment]
    try:
        problem = mod.run_one(["gpus", "--catalog"])
    finally:
        cli_mod._run_click = real  # type: ignore[assignment]
    assert problem is not None
    assert "ZeroDivisionError" in problem

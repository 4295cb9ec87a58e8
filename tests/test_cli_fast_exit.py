"""Commands that end without the interpreter's teardown still deliver all their output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).parents[1] / "src")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_models_fits_json_is_complete_after_a_fast_exit() -> None:
    proc = _run("models", "--fits", "rtx-4090", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # the whole document arrived (flushed before os._exit)
    assert len(doc["models"]) > 100
    assert doc["schema_version"]


def test_models_fits_text_ends_with_its_summary_line() -> None:
    proc = _run("models", "--fits", "rtx-3060")
    assert proc.returncode == 0, proc.stderr
    n = len(proc.stdout.splitlines())
    assert f"{n} model(s) fit" in proc.stderr

"""``oomkit probe FILE.gguf``: a binary file is named as such (it printed Python's
"'utf-8' codec can't decode byte 0x80 in position 213")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="oomkit probe is the [torch] extra")

GGUF = Path(__file__).parent / "fixtures" / "gguf" / "tiny-llama-mixed.gguf"


def test_probe_of_a_gguf_says_it_needs_a_config() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "probe", str(GGUF)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr.startswith(f"Error: Cannot read config for '{GGUF}': it is a binary file")
    assert "codec" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1

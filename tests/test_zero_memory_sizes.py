"""``--vram 0GiB`` / ``--ram 0GB`` are refused (exit 2) by every command that takes them: a
device with no memory is a mistyped value, and answering for it ("does not fit", a 0-byte
bar) hides the typo."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oomkit.errors import InvalidSettingError
from oomkit.hardware.targets import hardware_for


@pytest.mark.parametrize(
    "args",
    [
        ("estimate", "llama-3.1-8b", "--vram", "0GiB"),
        ("estimate", "llama-3.1-8b", "--gpu", "rtx-4090", "--ram", "0GB"),
        ("estimate", "llama-3.1-8b", "--train", "lora", "--vram", "0GiB"),
        ("plan", "llama-3.1-8b", "--vram", "0GiB"),
        ("models", "--fits", "rtx-4090", "--vram", "0GiB"),
    ],
)
def test_cli_refuses_zero_memory(args: tuple[str, ...]) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1
    assert "0: a GPU or host with no memory runs nothing" in errors[0]


def test_library_refuses_zero_memory() -> None:
    with pytest.raises(InvalidSettingError, match="--vram 0"):
        hardware_for(vram_bytes=0)
    with pytest.raises(InvalidSettingError, match="--ram 0"):
        hardware_for(vram_bytes=1 << 30, host_ram_bytes=0)
    assert hardware_for(vram_bytes=1 << 30).devices[0].capacity_bytes == 1 << 30

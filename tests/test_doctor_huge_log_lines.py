"""A log over the doctor's 32 MiB cap: every line number it reports is the line in the file.

The reader keeps the head and tail of a huge log (oomkit.cli.log_cap.read_head_tail); the
skipped middle's newlines are counted, so ``doctor --json``'s ``"line"`` is the OOM's line in
the file (it was the line in what was kept: 315592 for an OOM on line 509019 of a 50 MB log).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.cli import main

_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 23.65 GiB of which 1.02 GiB is free. Including non-PyTorch memory, "
    "this process has 22.61 GiB memory in use.\n"
)
_NOISE = "2024-01-01 12:00:00 INFO step 123 loss 1.2345 lr 0.0001 tokens/s 4567.8\n"


def _write(path: Path, before: int, after: int, encoding: str = "utf-8") -> int:
    """A log of ``before`` noise lines, the OOM, ``after`` noise lines; the OOM's 1-based line."""
    path.write_bytes((_NOISE * before + _OOM + _NOISE * after).encode(encoding))
    return before + 1


def _lines(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[list[int], str]:
    code = main(["doctor", "--json", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [e["line"] for e in json.loads(out)["events"]], err


def test_line_in_a_50_mb_log_is_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "huge.log"
    line = _write(log, 690_000, 2_000)  # ~50 MB: the middle ~18 MB is skipped
    assert log.stat().st_size > 40 << 20
    lines, err = _lines(capsys, log)
    assert "skipped" in err
    assert lines == [line] == [690_001]


def test_line_in_a_utf16_log_over_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oomkit.cli import doctor

    monkeypatch.setattr(doctor, "MAX_LOG_BYTES", 1 << 20)
    monkeypatch.setattr(doctor, "_HEAD_BYTES", 64 << 10)
    monkeypatch.setattr(doctor, "_CHUNK", 16 << 10)
    log = tmp_path / "ps.log"  # PowerShell 5.1's `>`: UTF-16LE with a byte-order mark
    line = _write(log, 40_000, 100, "utf-16")
    lines, err = _lines(capsys, log)
    assert "skipped" in err
    assert lines == [line]


def test_line_in_a_log_under_the_cap_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "small.log"
    line = _write(log, 3_000, 10)
    lines, err = _lines(capsys, log)
    assert "skipped" not in err
    assert lines == [line]

"""``oomkit doctor`` reads what a shell hands it (review11): ``oomkit doctor <(kubectl logs POD)``
passes a pipe (``/dev/fd/N``), which used to be refused as "no such file", and ``/dev/null`` is
an empty log, not a missing file (an empty input is a usage error since revfix19d: exit 2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oomkit.cli import main

LOG = Path(__file__).parent / "fixtures" / "oom_logs" / "oom-torch-llama-82-7b-11gb.txt"


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd on this platform")
def test_process_substitution_pipe_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    r, w = os.pipe()
    os.write(w, LOG.read_bytes())  # a few KiB: fits the pipe buffer before anyone reads
    os.close(w)
    try:
        code = main(["doctor", f"/dev/fd/{r}", "--no-input"])
    finally:
        os.close(r)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("Cause: ")
    assert "no such file" not in err


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null on this platform")
def test_dev_null_is_an_empty_log(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["doctor", "/dev/null"])
    except SystemExit as e:  # a negative answer leaves through click's exit
        code = e.code
    _, err = capsys.readouterr()
    assert code == 2
    assert "/dev/null: the file is empty" in err
    assert "no such file" not in err

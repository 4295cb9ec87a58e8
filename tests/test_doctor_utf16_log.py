"""``oomkit doctor LOG`` on a log that Windows PowerShell 5.1 wrote (``python train.py 2> log``:
UTF-16LE with a byte-order mark). Read as UTF-8 every other byte was a NUL: "No out-of-memory
message was found", exit 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.cli import main

MESSAGE = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    loss.backward()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU 0 has a total "
    "capacity of 31.36 GiB of which 471.69 MiB is free. Including non-PyTorch memory, this "
    "process has 16.63 GiB memory in use. Process 19239 has 14.26 GiB memory in use. Of the "
    "allocated memory 15.03 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch "
    "but unallocated.\r\n"
)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le-bom", "utf-16-be-bom", "utf-8-sig"])
def test_doctor_reads_a_bom_encoded_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str
) -> None:
    if encoding == "utf-16-le-bom":
        data = b"\xff\xfe" + MESSAGE.encode("utf-16-le")
    elif encoding == "utf-16-be-bom":
        data = b"\xfe\xff" + MESSAGE.encode("utf-16-be")
    else:
        data = MESSAGE.encode(encoding)
    log = tmp_path / "train.log"
    log.write_bytes(data)
    code = main(["doctor", str(log), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    (event,) = doc["events"]
    assert abs(event["requested_bytes"] - 1.16 * 2**30) < 2**20  # "1.16 GiB", as printed
    assert event["line"] == 4
    assert doc["cause"] == "other_process_holding_memory"


def test_plain_utf8_is_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(MESSAGE.encode("utf-8"))
    assert main(["doctor", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["events"][0]["line"] == 4

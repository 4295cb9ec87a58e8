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


# --- binary input (review 14): an executable was "diagnosed" (its `obstack_alloc_failed_handler`
# symbol matched the OOM keyword) with exit 0; it is refused as not a text log, exit 2


def _elf_like() -> bytes:
    """A synthetic executable: an ELF header, a zero-padded table of small integers, and a
    symbol-name string table holding an allocation-failure name."""
    header = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x03\x00>\x00\x01\x00\x00\x00" + bytes(40)
    table = b"".join(bytes([i % 7, 0, 0, 0, i % 3, 0x12, 0, 0]) for i in range(600))
    strings = b"\x00".join([b"malloc", b"obstack_alloc_failed_handler", b"out of memory"])
    return header + table + strings + bytes(200)


@pytest.mark.parametrize(
    "data",
    [_elf_like(), bytes(range(256)) * 40, bytes(10000)],
    ids=["executable", "all-byte-values", "zeros"],
)
def test_doctor_refuses_binary_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    path = tmp_path / "junk.bin"
    path.write_bytes(data)
    with pytest.raises(SystemExit) as exit_info:  # an error leaves through sys.exit
        main(["doctor", str(path)])
    code = exit_info.value.code
    captured = capsys.readouterr()
    assert code == 1  # a bad input file (DESIGN.md: 1 error (unreadable file, bad input))
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert f"'{path}' is not a text log" in line


def test_doctor_reads_utf16_without_bom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # NULs at every other byte: UTF-16 text (a tool that writes no byte-order mark), not binary
    for encoding in ("utf-16-le", "utf-16-be"):
        log = tmp_path / "train.log"
        log.write_bytes(MESSAGE.encode(encoding))
        assert main(["doctor", str(log), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["events"][0]["line"] == 4


def test_doctor_reads_a_log_with_a_zero_filled_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a log whose unflushed writes were lost in a hard reboot holds a run of NULs: still text
    log = tmp_path / "train.log"
    log.write_bytes(b"step 1 loss 2.3\n" + bytes(4096) + MESSAGE.encode())
    assert main(["doctor", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cause"] == "other_process_holding_memory"

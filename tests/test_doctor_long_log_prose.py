"""In a long machine log the generic fallback reads a person's wordings (titles, prose, a
report) only at the head and the tail (``PROSE_HEAD`` / ``PROSE_TAIL`` lines): a 100 MB training
log with no OOM stays within the doctor's time budget, and what a person pasted around a log is
still read. The runtimes' own wordings are read on every line."""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings import PROSE_HEAD, PROSE_TAIL

STEP = "2024-05-01 12:00:00 INFO trainer.py:123 epoch 1 step 100 loss 0.1234 lr 1.0e-04\n"
PROSE = "Llama 70B is too big for my 3060, it crashes on load.\n"
RUNTIME = "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes.\n"  # noqa: E501


def _log(middle: str) -> str:
    n = PROSE_HEAD + PROSE_TAIL + 1000
    lines = [STEP] * n
    lines[PROSE_HEAD + 500] = middle
    return "".join(lines)


def test_prose_is_read_at_the_head_and_the_tail_of_a_long_log() -> None:
    assert diagnose_text(PROSE + STEP * (PROSE_HEAD + PROSE_TAIL + 1000)).events
    assert diagnose_text(STEP * (PROSE_HEAD + PROSE_TAIL + 1000) + PROSE).events


def test_prose_in_the_middle_of_a_long_log_is_not_read() -> None:
    assert not diagnose_text(_log(PROSE)).events


def test_a_runtime_message_in_the_middle_is_still_found() -> None:
    events = diagnose_text(_log(RUNTIME)).events
    assert events


def test_a_short_paste_reads_prose_on_every_line() -> None:
    assert diagnose_text(STEP * 50 + PROSE + STEP * 50).events

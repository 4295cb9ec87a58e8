"""The llama.cpp each Ollama release vendored (data for :mod:`oomkit.estimate.ollama`).

Ollama builds its llama runner from a pinned llama.cpp: the ``llm/llama.cpp`` git submodule
(0.1.0-0.1.17: ``llm/llama.cpp/gguf``, next to a ``ggml`` one for old GGML files) until
ollama/ollama PR #7157 (0.4.0, "Remove submodule and shift to Go server"), then vendored
sources whose commit ``llama/vendoring`` (and later ``Makefile.sync`` ``FETCH_HEAD``) records.
Each row below is the first Ollama release of a pin, read from the release tag of
ollama/ollama (``git ls-tree v0.1.32 llm/llama.cpp`` -> 7593639), with the release tag's
commit date and the pinned ggml-org/llama.cpp commit's date (``git log -1 7593639``:
2024-04-15, build b2679). 0.5.13-0.6.5 pin d7cfe1f, vendored by ollama/ollama PR #9356 on
2025-02-26: that day stands for the commit's date (it can only be earlier; every llama.cpp
generation boundary near it is months away). Later releases are left to the generation row's
``llamacpp_date``: their pins (71e90e8, e1e8e09, de4c07f, e54d41b) are not dated here.

Ollama's Linux CUDA build compiled that llama.cpp with ``-DLLAMA_CUDA_FORCE_MMQ=on``
(llm/generate/gen_linux.sh) from ollama commit 681a914 ("Add support for CUDA 5.2 cards",
2024-01-20, first in 0.1.23) until ollama/ollama PR #5588 (2024-07-10, "remove
GGML_CUDA_FORCE_MMQ=on from build", first in 0.2.2): without ``CUDA_USE_TENSOR_CORES``
llama.cpp kept every quantized matmul in MMQ kernels, so those builds had no dequantize pool
(:data:`FORCE_MMQ_LINUX`; gen_windows.ps1 never set it, the Windows build had the pool).

The dates matter because Ollama 0.1.x shipped the llama.cpp of their day: the cuBLAS
dequantize pool (PR #3776 to PR #8075), logits for every prompt token (before PR #6122) and
``-b``-sized prompt steps (before PR #6017), which :mod:`oomkit.estimate.generations` keys on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import date

__all__ = ["FORCE_MMQ_LINUX", "OLLAMA_VENDORED_LLAMACPP", "force_mmq", "vendored_llamacpp_date"]

#: (first Ollama release with the pin, its tag's date, llama.cpp commit, that commit's date)
OLLAMA_VENDORED_LLAMACPP: tuple[tuple[str, str, str, str], ...] = (
    ("0.1.0", "2023-09-25", "bc9d3e3", "2023-09-21"),
    ("0.1.4", "2023-10-23", "9e70cc0", "2023-10-22"),  # b1412
    ("0.1.12", "2023-11-26", "9656026", "2023-11-26"),
    ("0.1.14", "2023-12-10", "23b5e12", "2023-12-04"),  # b1610
    ("0.1.16", "2023-12-14", "948ff13", "2023-12-13"),  # b1634
    ("0.1.17", "2023-12-18", "a7aee47", "2023-12-18"),  # b1661
    ("0.1.18", "2024-01-05", "328b83d", "2023-12-19"),  # b1662
    ("0.1.21", "2024-01-25", "cd4fddb", "2024-01-24"),  # b1964
    ("0.1.23", "2024-02-01", "d2f650c", "2024-01-28"),  # b1999
    ("0.1.24", "2024-02-07", "f57fadc", "2024-02-06"),  # b2081
    ("0.1.25", "2024-02-14", "6c00a06", "2024-02-13"),
    ("0.1.26", "2024-02-21", "c14f72d", "2024-02-21"),
    ("0.1.27", "2024-02-22", "96633ee", "2024-02-22"),  # b2248
    ("0.1.28", "2024-03-01", "c29af7e", "2024-03-01"),  # b2308
    ("0.1.29", "2024-03-14", "ceca1ae", "2024-03-07"),  # b2356
    ("0.1.30", "2024-03-28", "ad3a050", "2024-03-25"),  # b2527
    ("0.1.32", "2024-04-16", "7593639", "2024-04-15"),  # b2679
    ("0.1.33", "2024-05-02", "952d03d", "2024-04-30"),
    ("0.1.39", "2024-05-28", "74f33ad", "2024-05-23"),  # b2986
    ("0.1.40", "2024-05-31", "5921b8f", "2024-05-31"),  # b3051
    ("0.1.45", "2024-06-20", "7c26775", "2024-06-17"),  # b3171
    ("0.2.0", "2024-07-07", "a8db2a9", "2024-07-07"),
    ("0.2.8", "2024-07-22", "d94c6e0", "2024-07-22"),  # b3440
    ("0.3.1", "2024-07-30", "6eeaeba", "2024-07-28"),  # b3485
    ("0.3.4", "2024-08-06", "1e6f655", "2024-08-06"),  # b3535
    ("0.3.10", "2024-09-07", "8962422", "2024-09-03"),  # b3661
    ("0.3.14", "2024-10-17", "3f1ae2e", "2024-10-01"),
    ("0.5.2", "2024-12-13", "40c6d79", "2024-12-04"),  # b4260
    ("0.5.3", "2024-12-16", "ba1cb19", "2024-12-14"),  # b4327
    ("0.5.5", "2025-01-10", "46e3556", "2025-01-06"),  # b4419
    ("0.5.13", "2025-03-03", "d7cfe1f", "2025-02-26"),  # vendored by ollama PR #9356
)
#: the last release the table speaks for (0.6.6 moved to 71e90e8, ollama PR #10192)
LAST_COVERED = ("0.6.5", "2025-04-04")


def _tuple(version: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in version.split("."))
    return parts + (0,) * (4 - len(parts))


def vendored_llamacpp_date(when: date | tuple[int, ...]) -> str | None:
    """The date (ISO) of the llama.cpp that Ollama release ``when`` (a version tuple, or a
    date: the newest release on that day) vendored; None after 0.6.5.

    Before 0.1.0 (Ollama 0.0.x, July-September 2023, whose pins are not in the table) the
    llama.cpp can be no newer than the day, nor than 0.1.0's pin: a date stands for itself up
    to that pin's date, a 0.0.x version for the pin (an upper bound either way; Ollama's GGML
    runner of 2023-08-28 still logs the scratch buffers that llama.cpp PR #2627 removed on
    2023-08-17, ollama/ollama#434).

    >>> from datetime import date
    >>> vendored_llamacpp_date(date(2023, 8, 15)), vendored_llamacpp_date((0, 0, 17))
    ('2023-08-15', '2023-09-21')
    """
    first_pin = OLLAMA_VENDORED_LLAMACPP[0][3]
    if isinstance(when, tuple):
        if when > _tuple(LAST_COVERED[0]):
            return None
        found = [row for row in OLLAMA_VENDORED_LLAMACPP if _tuple(row[0]) <= when]
        return found[-1][3] if found else first_pin
    day = when.isoformat()
    if day > LAST_COVERED[1]:
        return None
    found = [row for row in OLLAMA_VENDORED_LLAMACPP if row[1] <= day]
    return found[-1][3] if found else min(day, first_pin)


#: Ollama releases whose Linux CUDA build set LLAMA_CUDA_FORCE_MMQ: (first release, its tag's
#: date) to (first release without it, its tag's date), the end excluded
FORCE_MMQ_LINUX = (("0.1.23", "2024-02-01"), ("0.2.2", "2024-07-12"))


def force_mmq(when: date | tuple[int, ...]) -> bool:
    """Whether Ollama release ``when`` (a version tuple, or a date: the release of that day)
    built llama.cpp with ``LLAMA_CUDA_FORCE_MMQ`` on Linux."""
    (first, first_day), (end, end_day) = FORCE_MMQ_LINUX
    if isinstance(when, tuple):
        return _tuple(first) <= when < _tuple(end)
    return first_day <= when.isoformat() < end_day

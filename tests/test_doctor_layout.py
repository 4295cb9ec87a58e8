"""A paste whose layout hides its words is still read (oomkit.diagnose.normalize, issue 9).

Column-aligned or justified copies, tabs between words, full-width Latin letters from a CJK input
method, a soft hyphen from a web page, a word hyphenated at a line break, and a message cut in
its last word. Each reading is tried only when the paste as given held no OOM, so a paste that
was recognised never changes; a text without an OOM stays without one.
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.normalize import complete_cut_tail, loosen_layout


@pytest.mark.parametrize(
    "text",
    [
        "CUDA   out   of   memory",
        "RuntimeError:\tCUDA out of\tmemory",
        "GPU memory   is   not   enough",
        "ＣＵＤＡ ｏｕｔ ｏｆ ｍｅｍｏｒｙ",
        "ｔｏｒｃｈ．ＯｕｔＯｆＭｅｍｏｒｙＥｒｒｏｒ",
        "CUDA out of mem\u00adory",
        "CUDA out-of-\nmemory while loading",
        "Allocator ran out of mem-\nory trying to allocate 2.00GiB",
        "cudaErrorMemoryAlloc",
        "ggml_vulkan: Device memory allocation of size 2147483648 fai",
        "ut of memory",
        "utOfMemoryError: CUDA",
        "OfMemoryError",
        "RuntimeError: not enough mem",
        "insufficient memo",
    ],
)
def test_a_layout_that_hides_the_words_is_read(text: str) -> None:
    assert diagnose_text(text).oom_found, text


@pytest.mark.parametrize(
    "text",
    [
        "loss   1.234   lr   0.0001",
        "ｈｅｌｌｏ ｗｏｒｌｄ",
        "re-\nallocate the buffers after resize",
        "the allocation of size 5 fa",
        "memory\tusage\t10 GB",
        "t of memory",
        "amount of memory",
        "put of memory",
    ],
)
def test_the_same_layouts_without_an_oom_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


def test_the_readings_are_offered_only_where_the_layout_shows() -> None:
    assert loosen_layout("CUDA out of memory") == ()
    assert loosen_layout("x" * (200 << 10) + "   y") == ()  # a log file, not a paste
    assert loosen_layout("a   b") == ("a b",)
    assert complete_cut_tail("cudaErrorMemoryAllocation") is None


def _boxed(message: str, width: int) -> str:
    import textwrap

    rows = textwrap.wrap(message, width)
    top = "╭" + "─" * (width + 2) + "╮"
    bottom = "╰" + "─" * (width + 2) + "╯"
    return "\n".join([top, *("│ " + r.ljust(width) + " │" for r in rows), bottom])


def test_a_message_wrapped_in_a_rich_box_keeps_its_numbers() -> None:
    message = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 7.79 GiB of which 3.44 MiB is free. Including non-PyTorch memory, this "
        "process has 7.78 GiB memory in use."
    )
    plain = diagnose_text(message)
    for width in (48, 56, 76):
        d = diagnose_text(_boxed(message, width))
        assert d.primary is not None
        assert plain.primary is not None
        assert d.primary.requested_bytes == plain.primary.requested_bytes == 20 << 20
        assert d.primary.free_bytes == plain.primary.free_bytes
        assert d.cause == plain.cause


def test_an_nvidia_smi_table_is_not_unboxed() -> None:
    # nvidia-smi draws its table with ASCII bars: the box rule never touches it
    from oomkit.diagnose.normalize import normalize_text

    table = (
        "|   0  NVIDIA GeForce RTX 3090      Off |   00000000:01:00.0 Off |               N/A |\n"
        "| 30%   45C    P2           110W / 350W |   23000MiB /  24576MiB |   98%     Default |"
    )
    assert normalize_text(table) == table

"""oomkit.units: SI and IEC kept apart, a unit is required, display is binary."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oomkit.units import (
    GB,
    KB,
    MB,
    TB,
    GiB,
    KiB,
    MiB,
    TiB,
    align_up,
    ceil_div,
    format_bytes,
    parse_count,
    parse_size,
)


def test_constants_are_distinct_powers() -> None:
    assert (KiB, MiB, GiB, TiB) == (1024, 1024**2, 1024**3, 1024**4)
    assert (KB, MB, GB, TB) == (10**3, 10**6, 10**9, 10**12)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("24GiB", 24 * GiB),
        ("80GB", 80 * GB),  # decimal stays decimal: 80 GB != 80 GiB
        ("80 gib", 80 * GiB),
        ("512MiB", 512 * MiB),
        ("1.5TB", 1_500_000_000_000),
        ("0.5GiB", GiB // 2),
        ("100B", 100),
        (".25 KiB", 256),
        ("7kb", 7000),
        ("24G", 24 * GiB),  # single letter = binary, as llama.cpp/Ollama (issue 10)
        ("512M", 512 * MiB),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("24", "has no unit: write 24GiB (binary) or 24GB (decimal)"),  # bare number is ambiguous
        ("24X", "unknown unit 'X'"),
        ("1" * 40 + "GiB", "out of range"),
        ("banana", "cannot read size"),
        ("", "cannot read size"),
        ("-3GiB", "cannot read size"),
    ],
)
def test_parse_size_rejects(text: str, needle: str) -> None:
    with pytest.raises(ValueError, match=re.escape(needle)):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8192", 8192), ("32k", 32768), ("32K", 32768), ("1M", 1 << 20), ("1.5k", 1536)],
)
def test_parse_count(text: str, expected: int) -> None:
    assert parse_count(text) == expected


@pytest.mark.parametrize("text", ["banana", "", "1.5", "-1", "3 GiB"])
def test_parse_count_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="count"):
        parse_count(text)


def test_format_bytes_is_binary_and_labelled() -> None:
    assert format_bytes(13 * GiB + GiB // 2) == "13.50 GiB"
    assert format_bytes(300 * MiB) == "300.00 MiB"
    assert format_bytes(-2 * GiB) == "-2.00 GiB"
    assert "GB" not in format_bytes(80 * GB).replace("GiB", "")


def test_ceil_div_and_align() -> None:
    assert ceil_div(0, 32) == 0
    assert ceil_div(33, 32) == 2
    assert align_up(4096, 256) == 4096
    assert align_up(4097, 256) == 4352
    with pytest.raises(ValueError, match="positive"):
        ceil_div(1, 0)


@given(st.integers(min_value=0, max_value=10**15), st.integers(min_value=1, max_value=10**6))
def test_ceil_div_law(a: int, b: int) -> None:
    q = ceil_div(a, b)
    assert q * b >= a > (q - 1) * b or a == 0 == q


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["KiB", "MiB", "GiB", "GB"]))
def test_parse_size_roundtrip(n: int, unit: str) -> None:
    scale = {"KiB": KiB, "MiB": MiB, "GiB": GiB, "GB": GB}[unit]
    assert parse_size(f"{n}{unit}") == n * scale


@given(st.text(max_size=40))
def test_parse_size_never_raises_other_than_valueerror(text: str) -> None:
    with contextlib.suppress(ValueError):
        parse_size(text)

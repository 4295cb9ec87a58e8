"""How ``--gpu`` text becomes catalog rows: counts, ambiguous names, ``auto``."""

from __future__ import annotations

import pytest

from oomkit.cli.params import parse_gpu_list
from oomkit.errors import UnknownNameError


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("4090x2", ["rtx-4090", "rtx-4090"]),
        ("4090 x 2", ["rtx-4090", "rtx-4090"]),
        ("2x3090", ["rtx-3090", "rtx-3090"]),
        ("2xrtx-3090", ["rtx-3090", "rtx-3090"]),
        ("2×A100-80GB", ["a100-80gb-sxm", "a100-80gb-sxm"]),
        ("rtx-4090*3", ["rtx-4090"] * 3),
        ("7900xtx", ["rx-7900-xtx"]),
        ("mi300x", ["mi300x"]),  # ends in "x", not a count
        ("rx 7900 xtx,p40", ["rx-7900-xtx", "p40"]),
        ("2x p40, titan rtx", ["p40", "p40", "titan-rtx"]),
    ],
)
def test_counts_before_or_after_the_name(text: str, keys: list[str]) -> None:
    assert [g.key for g in parse_gpu_list(text)] == keys


@pytest.mark.parametrize("text", ["0x4090", "4090x0", "2000x4090"])
def test_count_out_of_range(text: str) -> None:
    with pytest.raises(ValueError, match="between 1 and 1024"):
        parse_gpu_list(text)


def test_unknown_name_after_a_count_names_the_card() -> None:
    with pytest.raises(UnknownNameError) as info:
        parse_gpu_list("2xrtx-4900")
    assert info.value.name == "rtx-4900"

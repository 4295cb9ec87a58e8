"""Terminal bars: proportional cells per category, the headroom mark, colour rules."""

from __future__ import annotations

import pytest

from oomkit.cli.bars import device_bar, use_color
from oomkit.estimate.breakdown import Component, DeviceUsage
from oomkit.units import GiB


def _dev(weights: int, kv: int, cap: int) -> DeviceUsage:
    return DeviceUsage(
        device="cuda:0",
        capacity_bytes=cap,
        components=(
            Component(category="weights", label="w", n_bytes=weights, formula="w"),
            Component(category="kv_cache", label="k", n_bytes=kv, formula="k"),
        ),
    )


def test_cells_are_proportional_and_headroom_is_marked() -> None:
    bar = device_bar(_dev(10 * GiB, 5 * GiB, 20 * GiB), headroom_bytes=2 * GiB, width=20)
    cells = bar[1 : bar.index("]")]
    assert cells.count("W") == 10
    assert cells.count("K") == 5
    assert cells.index("|") == 18  # 18 of 20 GiB usable
    assert "15.00 GiB / 20.00 GiB" in bar


def test_over_capacity_says_by_how_much() -> None:
    bar = device_bar(_dev(20 * GiB, 5 * GiB, 20 * GiB), width=20)
    assert "OVER by 5.00 GiB" in bar


def test_no_color_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "")
    assert use_color() is False
    colored = device_bar(_dev(10 * GiB, 0, 20 * GiB), width=10, color=True)
    assert "\x1b[34m" in colored

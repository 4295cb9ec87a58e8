"""``oomkit._gcpause.gc_paused``: the collector is off inside, and its state restored after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from oomkit._gcpause import gc_paused


@pytest.fixture
def gc_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@gc_paused
def _state(fail: bool = False) -> bool:
    if fail:
        raise ValueError("boom")
    return gc.isenabled()


def test_paused_inside_and_restored(gc_enabled: None) -> None:
    assert _state() is False
    assert gc.isenabled()


def test_restored_after_an_error(gc_enabled: None) -> None:
    with pytest.raises(ValueError, match="boom"):
        _state(fail=True)
    assert gc.isenabled()


def test_a_caller_that_disabled_it_keeps_it_disabled(gc_enabled: None) -> None:
    gc.disable()
    assert _state() is False
    assert not gc.isenabled()
    gc.enable()


def test_nested_pauses_restore_the_outer_state(gc_enabled: None) -> None:
    @gc_paused
    def outer() -> tuple[bool, bool]:
        return _state(), gc.isenabled()

    assert outer() == (False, False)
    assert gc.isenabled()

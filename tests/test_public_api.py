"""The public API contract: a sorted, complete __all__ whose names all resolve (httpx style)."""

from __future__ import annotations

import pytest

import oomkit


def test_all_is_sorted() -> None:
    assert oomkit.__all__ == sorted(oomkit.__all__)


def test_all_matches_the_lazy_table() -> None:
    assert set(oomkit.__all__) == {*oomkit._EXPORTS, "__version__"}


def test_every_export_resolves() -> None:
    for name in oomkit.__all__:
        assert getattr(oomkit, name) is not None, name


def test_unknown_attribute_raises() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        oomkit.no_such_thing  # noqa: B018

"""The public API contract: a sorted, complete __all__ whose names all resolve (httpx style)."""

from __future__ import annotations

import oomkit


def test_all_is_sorted() -> None:
    assert oomkit.__all__ == sorted(oomkit.__all__)


def test_all_matches_the_lazy_table() -> None:
    assert set(oomkit.__all__) == {*oomkit._EXPORTS, "__version__"}


def test_every_export_resolves() -> None:
    for name in oomkit.__all__:
        assert getattr(oomkit, name) is not None, name


def test_unknown_attribute_raises() -> None:
    try:
        oomkit.no_such_thing  # noqa: B018
    except AttributeError as e:
        assert "no_such_thing" in str(e)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")

"""oomkit.errors: one root, builtin dual inheritance, messages with suggestions."""

from __future__ import annotations

import pytest

from oomkit import errors


def test_every_error_derives_from_root() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type):
            assert issubclass(obj, errors.OomkitError), name


def test_builtin_dual_inheritance() -> None:
    # `except FileNotFoundError` / `except LookupError` keep working for callers
    assert issubclass(errors.SourceNotFoundError, FileNotFoundError)
    assert issubclass(errors.OfflineError, ConnectionError)
    assert issubclass(errors.UnknownNameError, LookupError)
    assert issubclass(errors.GgufFormatError, ValueError)


def test_unknown_name_message_has_suggestions_and_no_quotes_artifacts() -> None:
    e = errors.UnknownNameError(
        kind="quant format",
        name="Q4KM",
        suggestions=errors.close_matches("Q4KM", ["Q4_K_M", "Q5_K_M", "Q8_0"]),
    )
    assert str(e).startswith("Unknown quant format 'Q4KM'. Did you mean 'Q4_K_M'")
    assert e.suggestions[0] == "Q4_K_M"


def test_format_error_fields() -> None:
    e = errors.GgufFormatError("truncated", path="/x.gguf", offset=24)
    assert (e.path, e.offset, e.key) == ("/x.gguf", 24, None)


def test_close_matches_case_insensitive() -> None:
    assert errors.close_matches("rtx 4900", ["rtx-4090", "rtx-3090", "h100"])[0] == "rtx-4090"
    assert errors.close_matches("zzzz", ["rtx-4090"]) == ()


def test_raise_and_catch_as_builtin() -> None:
    with pytest.raises(LookupError):
        raise errors.UnknownNameError(kind="GPU", name="x")

"""Issue 10 item 2: ``main`` never shows a traceback; OOMKIT_DEBUG=1 re-raises."""

from __future__ import annotations

import pytest

import oomkit.cli as cli_mod
from oomkit.cli import main


def _boom(**_: object) -> None:
    raise ZeroDivisionError("division by zero in a bug")


def test_unexpected_exception_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OOMKIT_DEBUG", raising=False)
    monkeypatch.setattr(cli_mod.cli, "main", _boom)
    code = main(["estimate", "llama-3.1-8b"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("Error: internal error: ZeroDivisionError: division by zero")
    assert "OOMKIT_DEBUG=1" in lines[0]
    assert "please report it" in lines[0]


def test_debug_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OOMKIT_DEBUG", "1")
    monkeypatch.setattr(cli_mod.cli, "main", _boom)
    with pytest.raises(ZeroDivisionError):
        main(["estimate", "llama-3.1-8b"])


def test_long_message_is_truncated(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oomkit.errors import SourceNotFoundError

    def many(**_: object) -> None:
        raise SourceNotFoundError(
            "missing shards: " + ", ".join(["x.safetensors"] * 100_000), source="x"
        )

    monkeypatch.delenv("OOMKIT_DEBUG", raising=False)
    monkeypatch.setattr(cli_mod.cli, "main", many)
    assert main(["estimate", "x"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()[0]) <= 2100
    assert "more chars" in err

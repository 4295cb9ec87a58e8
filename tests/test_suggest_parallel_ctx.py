"""``estimate --ctx C --parallel N`` that does not fit: the suggestions keep the user's context
per slot. estimate's --ctx is llama.cpp's -c, shared by the -np slots (C/N each), while the
planner counts context per sequence: -c 131072 -np 4 got "context 69888 (asked 131072) per
sequence x 4 slots (-c 279552)", a run twice the size of the one that did not fit."""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main
from oomkit.planner.commands import parse_command


def _suggestions(capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict[str, object]]:
    capsys.readouterr()
    argv = ["estimate", "gemma-3-27b", "--gpu", "rtx-4090", "--ctx", "131072", "--parallel", "4"]
    argv += ["-ngl", "99"]  # every layer (without -ngl llama.cpp's --fit would offload some)
    assert main([*argv, *extra, "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    out = doc["suggestions"]
    assert isinstance(out, list)
    assert out
    return out


def test_split_slots_keep_the_asked_cells(capsys: pytest.CaptureFixture[str]) -> None:
    for s in _suggestions(capsys):
        flags = parse_command("llama.cpp", str(s["command"]))
        assert int(flags["-c"][0]) <= 131072, s["command"]
        assert flags["-np"] == ["4"]
        assert "-kvu" not in flags


def test_unified_slots_keep_the_asked_context(capsys: pytest.CaptureFixture[str]) -> None:
    for s in _suggestions(capsys, "--kv-unified"):
        flags = parse_command("llama.cpp", str(s["command"]))
        assert int(flags["-c"][0]) <= 131072, s["command"]
        assert "-kvu" in flags  # the slots share the cells, as the suggestion was sized

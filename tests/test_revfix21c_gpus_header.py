"""review21 finding 18: ``gpus --for`` names the context and runtime its rows were sized at
and says how they are ordered (text header on stderr, JSON fields)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def test_header_names_context_runtime_and_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "gpus", "--for", "llama-3.1-8b")
    assert code == 0, err
    header = err.splitlines()[0]
    assert header.startswith("llama-3.1-8b on llama.cpp, ctx 4096 (the default")
    assert "Order: least total GPU memory first" in header
    assert out.splitlines()[0].split()[1] == "x"  # stdout stays the table
    code, _, err = run_cli(capsys, "gpus", "--for", "llama-3.1-8b", "-r", "vllm", "--ctx", "8k")
    assert err.splitlines()[0].startswith("llama-3.1-8b on vllm, ctx 8192, every layer")


def test_json_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "gpus", "--for", "llama-3.1-8b", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["runtime"], doc["ctx"]) == ("llama.cpp", 4096)
    assert doc["order"].startswith("least total GPU memory first")
    assert doc["gpus"]

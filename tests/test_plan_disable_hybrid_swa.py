"""``plan`` pins SGLang's ``--disable-hybrid-swa-memory`` as ``estimate`` reads it.

A pasted SGLang command line with the flag once failed with click's "No such option"; the
flag now pins the setting (every candidate is priced with one uniform token pool) and the
printed ``sglang.launch_server`` line keeps it (SGLang server_args.py: a store_true flag).
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

_ARGS = ("plan", "gemma-3-27b", "--gpu", "h100-sxm", "--ctx", "32k", "--offline")


def test_flag_is_kept_in_the_sglang_command_and_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(
        capsys, *_ARGS, "-r", "sglang", "--disable-hybrid-swa-memory", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    top = doc["plans"][0]
    assert top["command_settings"]["disable_hybrid_swa_memory"] is True
    assert "--disable-hybrid-swa-memory" in top["command"]


def test_without_the_flag_the_command_has_none(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *_ARGS, "-r", "sglang", "--json")
    assert code == 0, err
    top = json.loads(out)["plans"][0]
    assert "--disable-hybrid-swa-memory" not in top["command"]
    assert not top["command_settings"].get("disable_hybrid_swa_memory")


def test_another_runtime_refuses_it_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_cli(capsys, *_ARGS, "-r", "vllm", "--disable-hybrid-swa-memory")
    assert code == 2
    assert "--disable-hybrid-swa-memory is not a vllm setting" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1

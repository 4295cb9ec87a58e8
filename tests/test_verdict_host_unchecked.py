"""Review 21 finding 6: ``estimate llama-3.1-8b --ctx 10M --gpu h100`` (no --ram) answered plain
"Fits." with 1.26 TiB of host KV cache that nothing checked. The exit code stays the GPUs'
(0: the documented contract), but the verdict line and its JSON now name the unchecked need."""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main

ARGS = ["estimate", "llama-3.1-8b", "--ctx", "10M", "--gpu", "h100-sxm"]


def test_unchecked_host_need_is_said_next_to_fits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ARGS) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("Fits"))
    assert line.startswith("Fits on the GPU; host RAM not checked: this run needs 1294.69 GiB")
    assert main([*ARGS, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "fits"
    assert doc["verdict_details"]["host_ram_unchecked_bytes"] > 1 << 40


def test_a_checked_host_says_plain_fits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--ram", "2TiB", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict_details"]["host_ram_unchecked_bytes"] is None


def test_a_small_host_need_is_not_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    # a whole-GPU run keeps only the token-embedding table (~0.5 GiB) on the host: no note
    assert main(["estimate", "llama-3.1-8b", "--gpu", "rtx-4090"]) == 0
    out = capsys.readouterr().out
    assert "host RAM not checked" not in out

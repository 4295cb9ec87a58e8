"""review22 finding 6 (brief: 5): ``gpus --for`` tries the serving levers ``plan`` uses for its
first plan (vLLM ``--gpu-memory-utilization`` raised, ``--max-num-seqs`` lowered), names them in
its header and on the rows that need them: 2 x H100 SXM runs Llama-3.1-70B at 32k on vLLM (plan:
util 0.96, --max-num-seqs 59), so the buyer's list must not leave it out while it lists PCIe."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

MODEL = "llama-3.1-70b"


def test_row_and_header_name_the_levers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "gpus", "--for", MODEL, "-r", "vllm", "--ctx", "32k")
    assert code == 0, err
    assert "Levers tried:" in err
    assert "--max-num-seqs" in err
    row = next(ln for ln in out.splitlines() if ln.startswith("2 x h100-sxm "))
    assert "with --gpu-memory-utilization" in row
    assert "--max-num-seqs" in row
    code, out, err = run_cli(capsys, "gpus", "--for", MODEL, "-r", "vllm", "--ctx", "32k", "--json")
    assert code == 0, err
    rows = {r["gpu"]: r for r in json.loads(out)["gpus"]}
    assert rows["h100-sxm"]["count"] == 2
    assert rows["h100-pcie"]["count"] == 2
    assert any(lv.startswith("--max-num-seqs") for lv in rows["h100-sxm"]["levers"])


def test_llamacpp_rows_have_no_levers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "gpus", "--for", "llama-3.1-8b")
    assert code == 0, err
    assert "Levers tried" not in err
    assert " with --" not in out

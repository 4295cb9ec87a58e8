"""A count option out of range is named as the user typed it: `--max-model-len 0` (vLLM's
spelling, pasted from a `vllm serve` line) was reported as "--ctx must be ..."."""

from __future__ import annotations

import pytest

from oomkit.cli import main


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        # estimate's click-free path
        (["estimate", "llama-3.1-8b", "--runtime", "vllm", "--max-model-len", "0"],
         "--max-model-len"),
        # (llama.cpp's -c 0 is the trained context: tests/test_revfix21c_paste.py)
        (["estimate", "llama-3.1-8b", "-r", "vllm", "-c", "0"], "-c"),
        (["estimate", "llama-3.1-8b", "--runtime", "vllm", "--tensor-parallel-size", "0"],
         "--tensor-parallel-size"),
        # click's path (an `--opt=value` argv is not the fast path's)
        (["estimate", "llama-3.1-8b", "-r", "sglang", "--ctx-size=0"], "--ctx-size"),
        (["plan", "llama-3.1-8b", "--gpu", "h100", "--runtime", "vllm", "--tp", "0"], "--tp"),
        # the canonical name still when that is what was typed
        (["estimate", "llama-3.1-8b", "-r", "vllm", "--ctx", "0"], "--ctx"),
    ],
)  # fmt: skip
def test_count_error_names_the_flag_as_typed(
    capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"Error: {flag} must be an integer in ["), err

"""SGLang's text output: the GPU is claimed by design, the free figure is stated once."""

from __future__ import annotations

import re

import pytest

from oomkit.cli import main


def test_review_sglang_block_does_not_say_zero_free(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 14: 'fits (0.00 MiB free)' above 'Fits. 68.10 GiB free on cuda:0'."""
    capsys.readouterr()
    argv = ["estimate", "qwen3-235b-a22b", "-r", "sglang", "--gpu", "8xh200", "--tp", "8"]
    assert main([*argv, "--ctx", "32k"]) == 0
    out = capsys.readouterr().out
    assert "0.00 MiB free" not in out
    assert "claimed by design: mem_fraction_static 0.897" in out
    assert len(re.findall(r"\bfree\b", out)) == 1, out  # the verdict's pool margin only
    assert "Fits. " in out


def test_vllm_block_keeps_its_free_figure(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["estimate", "llama-3.1-8b", "-r", "vllm", "--gpu", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    assert "fits (6.33 GiB free)" in out
    assert "claimed by design" not in out

"""review22 finding 9 (brief: 8): with several GPUs and no ``--tp``, oomkit shards across all of
them; when vLLM/SGLang refuse that size the message names the GPUs given, not a ``--tp 3`` the
user never typed. The refusal itself stays (tests/test_revfix18f_*.py pins it)."""

from __future__ import annotations

import pytest

from conftest import run_cli


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_implied_tp_is_named_by_the_gpus(capsys: pytest.CaptureFixture[str], runtime: str) -> None:
    argv = ["estimate", "llama-3.1-70b", "-r", runtime, "--gpu", "3xh100-sxm", "--offline"]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    line = err.strip()
    assert len(line.splitlines()) == 1
    assert "--tp 3" not in line
    assert line.startswith(
        f"Error: 3 GPUs given: tensor parallel 3 across them (no --tp given), "
        f"which {runtime} refuses (the attention heads (64)"
    )
    assert line.endswith("valid sizes on the 3 GPUs given: 1, 2")


def test_typed_tp_keeps_its_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "llama-3.1-70b", "-r", "vllm", "--gpu", "4xh100-sxm", "--tp", "3"]
    code, _, err = run_cli(capsys, *argv, "--offline")
    assert code == 2
    assert err.startswith("Error: --tp 3: vllm refuses it (the attention heads")

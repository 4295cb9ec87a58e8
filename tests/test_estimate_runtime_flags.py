"""``oomkit estimate`` takes the runtimes' own spellings of its options (DESIGN: "Options use the
runtimes' own vocabulary"), so a serve command's flags estimate that command: ``vllm serve
--max-model-len 8192`` failed with "No such option '--max-model-len'. Did you mean
'--draft-model'?"."""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main


def _settings(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    cap = capsys.readouterr()
    assert code in (0, 3, 4), cap.err
    settings = json.loads(cap.out)["settings"]
    assert isinstance(settings, dict)
    return settings


@pytest.mark.parametrize(
    ("runtime", "native", "ours"),
    [
        (
            "vllm",
            ["--max-model-len", "8192", "--tensor-parallel-size", "2", "--kv-cache-dtype", "fp8",
             "--quantization", "awq", "--max-num-seqs", "64"],
            ["--ctx", "8192", "--tp", "2", "--kv-dtype", "fp8", "--quant", "awq",
             "--max-num-seqs", "64"],
        ),
        (
            "sglang",
            ["--context-length", "8192", "--tp-size", "2", "--max-running-requests", "8"],
            ["--ctx", "8192", "--tp", "2", "--max-num-seqs", "8"],
        ),
        (
            "llama.cpp",
            ["--ctx-size", "8192", "--gpu-layers", "20", "--ubatch-size", "256"],
            ["--ctx", "8192", "-ngl", "20", "--ubatch", "256"],
        ),
    ],
)  # fmt: skip
def test_native_spellings_estimate_the_same_run(
    capsys: pytest.CaptureFixture[str], runtime: str, native: list[str], ours: list[str]
) -> None:
    base = ["estimate", "llama-3.1-8b", "-r", runtime, "--gpu", "2xl4"]
    assert _settings(capsys, [*base, *native]) == _settings(capsys, [*base, *ours])


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_parallel_on_a_server_names_max_num_seqs(
    capsys: pytest.CaptureFixture[str], runtime: str
) -> None:
    capsys.readouterr()
    main(["estimate", "llama-3.1-8b", "-r", runtime, "--gpu", "h100", "--batch", "64"])
    err = capsys.readouterr().err
    assert "does not use --parallel: ignored; concurrent sequences are --max-num-seqs" in err

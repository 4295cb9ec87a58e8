"""A GGUF file type asked of vLLM/SGLang/transformers is a usage error naming it (review 14)."""

from __future__ import annotations

import pytest

from oomkit.cli import main


@pytest.mark.parametrize("command", ["estimate", "plan"])
@pytest.mark.parametrize("runtime", ["vllm", "sglang", "transformers"])
def test_gguf_quant_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], command: str, runtime: str
) -> None:
    capsys.readouterr()
    argv = [command, "llama-3.1-8b", "-r", runtime, "--quant", "Q4_K_M", "--gpu", "h100-sxm"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--quant Q4_K_M" in err
    assert "llama.cpp, Ollama and LM Studio" in err
    assert "Unknown HF weight format" not in err


def test_hf_formats_and_unknown_names_keep_their_paths(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert (
        main(["estimate", "llama-3.1-8b", "-r", "vllm", "--quant", "fp8", "--gpu", "h100-sxm"]) == 0
    )
    assert main(["estimate", "llama-3.1-8b", "-r", "vllm", "--quant", "nonsense"]) == 1
    assert "Unknown HF weight format 'nonsense'" in capsys.readouterr().err
    assert main(["estimate", "llama-3.1-8b", "--quant", "Q4_K_M", "--gpu", "h100-sxm"]) == 0

"""A llama.cpp build older than a model's architecture cannot load its GGUF ("unknown model
architecture: 'qwen3moe'", llama.cpp#13200): ``plan qwen3-30b-a3b --runtime-version b5000``
planned a Q5_K_M run anyway. Qwen3-MoE arrived with PR #12828 in release b5092; the table is
:data:`oomkit.estimate.llamacpp_support.LLAMACPP_FIRST_BUILD`."""

from __future__ import annotations

import pytest

from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.errors import InvalidSettingError
from oomkit.estimate.llamacpp_support import LLAMACPP_FIRST_BUILD, check_llamacpp_support


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, err
    assert "Traceback" not in err
    return errors[0]


@pytest.mark.parametrize("verb", ["estimate", "plan"])
@pytest.mark.parametrize("version", ["b5000", "b5091", "5091", "2025-03", "2025-04-08"])
def test_older_build_refused(verb: str, version: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([verb, "qwen3-30b-a3b", "--gpu", "rtx-4090", "--runtime-version", version])
    line = _one_error(capsys)
    assert rc == 2, line
    assert "'qwen3moe' first in build b5092" in line
    assert "needs a llama.cpp build from b5092 on" in line


@pytest.mark.parametrize("verb", ["estimate", "plan"])
def test_boundary_build_accepted(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([verb, "qwen3-30b-a3b", "--gpu", "rtx-4090", "--runtime-version", "b5092"])
    assert rc == 0, capsys.readouterr().err


def test_ollama_vendored_build_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "qwen3-next-80b-a3b", "-r", "ollama", "--gpu", "h100-sxm"]
    rc = main([*argv, "--runtime-version", "b7000"])
    assert rc == 2
    assert "Ollama's vendored llama.cpp b7000 cannot load" in _one_error(capsys)


@pytest.mark.parametrize("verb", ["estimate", "plan"])
def test_llama_cpp_python_reads_its_vendored_build(
    verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # llama-cpp-python 0.3.8 vendors a March 2025 llama.cpp: "unknown model architecture:
    # 'qwen3moe'" (llama-cpp-python#2008: "It does NOT work with llama-cpp-python==0.3.8")
    argv = [verb, "qwen3-30b-a3b", "-r", "llama-cpp-python", "--gpu", "rtx-4090"]
    assert main([*argv, "--runtime-version", "0.3.8"]) == 2
    assert "cannot load qwen3-30b-a3b" in _one_error(capsys)
    llama = [verb, "llama-3.1-8b", "-r", "llama-cpp-python", "--gpu", "rtx-4090"]
    assert main([*llama, "--runtime-version", "0.3.8"]) == 0, capsys.readouterr().err


def test_rows() -> None:
    spec = find_model("gemma-3-1b").spec()  # gemma3_text -> GGUF gemma3
    with pytest.raises(InvalidSettingError, match="b4875"):
        check_llamacpp_support(spec, "llama.cpp", "b4874")
    check_llamacpp_support(spec, "llama.cpp", "b4875")
    check_llamacpp_support(spec, "llama.cpp", None)  # newest build
    check_llamacpp_support(spec, "llama.cpp", "2025-03")  # the month of the merge
    with pytest.raises(InvalidSettingError):
        check_llamacpp_support(spec, "llama.cpp", "2025-03-11")
    check_llamacpp_support(spec, "vllm", "0.5.0")  # not llama.cpp: vllm_support's table
    check_llamacpp_support(spec, "ollama", "0.5.0")  # an Ollama release: not mapped
    llama = find_model("llama-3.1-8b").spec()  # no row: any build
    check_llamacpp_support(llama, "llama.cpp", "b3000")
    assert {"qwen3", "qwen3moe", "gemma3", "llama4", "gpt-oss", "glm4moe", "qwen3next"} <= set(
        LLAMACPP_FIRST_BUILD
    )

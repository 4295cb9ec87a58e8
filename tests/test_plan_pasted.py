"""``plan`` reads a pasted server line as ``estimate`` does (revfix21d item 3): llama.cpp's ``-c
0`` (the trained context, llama.cpp PR #3301; kept by --fit from PR #19070), vLLM/SGLang
``--dtype`` (the weights' dtype, ``_get_and_verify_dtype``) and the flags that change no memory
(``--port``, ``--jinja``, ``-t 8``), each named in a note; an unknown flag is still refused."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run_cli(capsys, "plan", *argv, "--offline", "--json")
    assert code in (0, 3), err
    return json.loads(out)


def test_c0_and_neutral_flags(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan(
        capsys, "llama-3.1-8b", "-c", "0", "--gpu", "a100-80gb", "--port", "8080", "--jinja"
    )
    assert doc["request"]["ctx"] == 131072
    assert any("-c 0: the model's trained context, 131072 tokens" in n for n in doc["notes"])
    assert doc["ignored_flags"] == ["--port 8080", "--jinja"]
    assert any(n.startswith("ignored (the server's flags") for n in doc["notes"])


def test_c0_of_a_fit_build_before_pr_19070_is_the_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _plan(
        capsys, "llama-3.1-8b", "-c", "0", "--gpu", "rtx-3060", "--runtime-version", "b7500"
    )
    assert doc["request"]["ctx"] is None
    assert any("the same as leaving -c out" in n for n in doc["notes"])


def test_dtype_is_the_starting_quant(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan(capsys, "qwen2.5-7b", "-r", "vllm", "--gpu", "rtx-4090", "--dtype", "half")
    assert doc["request"]["quant"] == "fp16"
    assert "--dtype half: weights loaded as fp16 (--quant fp16)" in doc["notes"]
    assert "ignored_flags" not in doc


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-r", "llama.cpp", "--dtype", "half"], "--dtype half is a vLLM/SGLang flag"),
        (["--no-such-flag"], "No such option"),
        (["--train", "lora", "--port", "80"], "--port 80 is a server flag"),
    ],
)
def test_refused(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run_cli(capsys, "plan", "qwen2.5-7b", "--gpu", "rtx-4090", *argv, "--offline")
    assert code == 2, out
    assert message in err


def test_a_vllm_context_flag_never_reads_zero_as_the_trained_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """llama.cpp's ``-c 0`` is its trained context; vLLM's ``--max-model-len`` and SGLang's
    ``--context-length`` have no 0, so a 0 typed with them is refused even in a llama.cpp run."""
    from oomkit.cli import main

    for cmd in ("estimate", "plan"):
        for flag in ("--max-model-len", "--context-length"):
            assert main([cmd, "llama-3.1-8b", "--gpu", "rtx-4090", flag, "0"]) == 2
            assert f"{flag} must be an integer" in capsys.readouterr().err
    assert main(["estimate", "llama-3.1-8b", "--gpu", "rtx-4090", "--ctx-size", "0"]) in (0, 3)
    assert "trained context, 131072 tokens" in capsys.readouterr().out

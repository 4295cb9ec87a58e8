"""review21 finding 11: a pasted server line's ``-c 0``, vLLM ``--dtype`` and the flags that
change no memory (``--jinja``, ``-t 8``, ``--host``, ``--port``, ``--trust-remote-code``) are
read, not refused; an unknown flag still is."""

from __future__ import annotations

import json

import click
import pytest

from conftest import run_cli
from oomkit.cli.pasted_flags import IGNORED_SWITCHES, IGNORED_VALUED, MULTI_VALUED


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run_cli(capsys, "estimate", *argv, "--offline", "--json")
    assert code in (0, 3, 4), err
    return json.loads(out)


def test_c0_is_the_trained_context_kept_by_fit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "estimate", "-m", "llama-3.1-8b", "-c", "0", "-ngl", "99", "--gpu", "rtx-3060"
    )
    assert code == 3, err  # 131072 tokens of f16 KV do not fit 12 GB
    assert "ctx=131072" in out
    assert "-c 0: the model's trained context, 131072 tokens" in out
    # without -ngl the fit moves layers, never the explicit context (PR #19070)
    doc = _json(capsys, "llama-3.1-8b", "-c", "0", "--gpu", "rtx-3060")
    assert doc["settings"]["ctx"] == 131072
    # the click path (--ctx-size=0) reads it the same way
    slow = _json(capsys, "llama-3.1-8b", "--ctx-size=0", "--gpu", "rtx-3060")
    assert slow["settings"]["ctx"] == 131072


def test_c0_by_build(capsys: pytest.CaptureFixture[str]) -> None:
    # a --fit build before PR #19070 lowered -c 0 like an unset context
    auto = _json(capsys, "llama-3.1-8b", "--gpu", "rtx-3060", "--runtime-version", "b7500")
    zero = _json(
        capsys, "llama-3.1-8b", "-c", "0", "--gpu", "rtx-3060", "--runtime-version", "b7500"
    )
    assert zero["settings"]["ctx"] == auto["settings"]["ctx"] < 131072
    # before the fit (b6000): the trained context, no fit
    old = _json(capsys, "llama-3.1-8b", "-c", "0", "--gpu", "h100", "--runtime-version", "b6000")
    assert old["settings"]["ctx"] == 131072
    # before PR #3301 a context of 0 was no request for the trained one
    code, _, err = run_cli(
        capsys, "estimate", "llama-3.1-8b", "-c", "0", "--runtime-version", "b1000", "--offline"
    )
    assert code == 2
    assert err.startswith("Error: -c 0: llama.cpp b1000 predates PR #3301"), err
    # other runtimes: 0 is still refused
    code, _, err = run_cli(capsys, "estimate", "llama-3.1-8b", "-r", "vllm", "-c", "0")
    assert code == 2
    assert "-c must be an integer" in err


def test_memory_neutral_flags_are_named_once(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("-m", "llama-3.1-8b", "--gpu", "rtx-3060", "-c", "8k")
    plain = _json(capsys, *argv)
    noisy = ("--jinja", "-t", "8", "--host", "0.0.0.0", "--port=8080", "-v")
    doc = _json(capsys, *argv, *noisy)
    assert doc["ignored_flags"] == ["--jinja", "-t 8", "--host 0.0.0.0", "--port=8080", "-v"]
    assert doc["devices"] == plain["devices"]
    assert "ignored_flags" not in plain
    code, out, err = run_cli(capsys, "estimate", *argv, *noisy, "--offline")
    assert code == 0, err
    lines = [ln for ln in out.splitlines() if "ignored (" in ln]
    assert len(lines) == 1
    assert lines[0].endswith("--jinja -t 8 --host 0.0.0.0 --port=8080 -v")


def test_vllm_line(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("llama-3.1-8b", "-r", "vllm", "--gpu", "h100-sxm", "--max-model-len", "8k")
    pasted = (
        "--trust-remote-code",
        "--served-model-name",
        "a",
        "b",
        "--api-key",
        "k",
        "--disable-log-requests",
    )
    doc = _json(capsys, *base, *pasted)
    assert doc["ignored_flags"][0] == "--trust-remote-code"
    assert "--served-model-name a b" in doc["ignored_flags"]
    assert doc["devices"] == _json(capsys, *base)["devices"]


@pytest.mark.parametrize(("dtype", "quant"), [("bfloat16", "bf16"), ("half", "fp16")])
def test_vllm_dtype_is_the_weight_dtype(
    capsys: pytest.CaptureFixture[str], dtype: str, quant: str
) -> None:
    base = ("llama-3.1-8b", "-r", "vllm", "--gpu", "h100-sxm", "--max-model-len", "8k")
    doc = _json(capsys, *base, "--dtype", dtype)
    assert doc["settings"]["quant"] == quant
    assert doc["devices"] == _json(capsys, *base, "--quant", quant)["devices"]


def test_vllm_dtype_float32_doubles_weights_and_model_dtype(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("llama-3.1-8b", "-r", "vllm", "--gpu", "h100-sxm", "--max-model-len", "8k")
    half = _json(capsys, *base, "--dtype", "auto")["devices"][0]
    full = _json(capsys, *base, "--dtype", "float32")["devices"][0]
    assert full["weights_bytes"] > 1.9 * half["weights_bytes"]

    def rope(dev: dict) -> int:
        return next(c["bytes"] for c in dev["components"] if c["label"].startswith("rotary"))

    assert rope(full) == 2 * rope(half)  # the model dtype (and the KV's, auto) is float32


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("--dtype", "int3"), "--dtype int3: vLLM/SGLang accept"),
        (("--dtype", "bfloat16", "-r", "llama.cpp"), "is a vLLM/SGLang flag"),
        (("--frobnicate",), "No such option '--frobnicate'"),
        (("-r", "vllm", "--dtype", "float32", "--quant", "awq"), "not modelled"),
    ],
)
def test_refused(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], words: str) -> None:
    code, _, err = run_cli(capsys, "estimate", "llama-3.1-8b", *argv, "--offline")
    assert code == 2, err
    assert words in err
    assert len(err.strip().splitlines()) <= 2


def test_ignored_flags_never_shadow_oomkit_options() -> None:
    from oomkit.cli import cli

    ctx = click.Context(cli)
    cmd = cli.get_command(ctx, "estimate")
    assert cmd is not None
    own = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    assert not own & (IGNORED_SWITCHES | IGNORED_VALUED | MULTI_VALUED)


def test_server_flags_with_train_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for extra in (("--jinja",), ("--dtype", "bfloat16")):
        code, _, err = run_cli(
            capsys, "estimate", "llama-3.1-8b", "--train", "lora", *extra, "--offline"
        )
        assert code == 2, err
        assert "cannot be used with --train" in err


def test_ignored_flags_do_not_outlive_their_command(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli.pasted_flags import last_ignored

    run_cli(capsys, "estimate", "llama-3.1-8b", "--jinja", "--offline", "--json")
    assert last_ignored() == ()  # the web API's later run_estimate sees no stale list

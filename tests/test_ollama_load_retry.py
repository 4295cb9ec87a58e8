"""Ollama 0.30+ retries an out-of-memory load once a context tier lower when num_ctx was its own
(ollama/ollama server/sched.go ``reduceAutoNumCtxForLoadOOM`` / ``nextLowerAutoNumCtx``, PR
#16031, first in v0.30.0; ``usesAutomaticNumCtx`` in server/routes.go): the estimate says the
run would survive at the lower context, while the verdict and exit code stay the first load's."""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main
from oomkit.estimate.ollama_load_retry import load_retry_applies, next_lower_auto_num_ctx

# qwen2.5-32b Q4_K_M, every layer on a 24 GB card: the 32768 tier's 8 GiB of KV is over, 4096's 1
# GiB is not
_ARGS = ["estimate", "qwen2.5-32b", "-r", "ollama", "--gpu", "rtx-4090", "-ngl", "65"]


def test_next_lower_tier() -> None:
    assert next_lower_auto_num_ctx(131072) == 32768
    assert next_lower_auto_num_ctx(32768) == 4096
    assert next_lower_auto_num_ctx(8192) == 4096
    assert next_lower_auto_num_ctx(4096) is None


def test_release_and_automatic_context_gate() -> None:
    assert load_retry_applies(None, ctx_given=False)
    assert load_retry_applies("0.30.0", ctx_given=False)
    assert not load_retry_applies("0.20.0", ctx_given=False)
    assert not load_retry_applies("0.30.0", ctx_given=True)  # a set num_ctx is never lowered


def test_default_context_over_but_retry_fits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_ARGS, "--json"]) == 3  # the first load's verdict keeps its exit code
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "does_not_fit"
    retry = doc["ollama_load_retry"]
    assert (retry["first_num_ctx"], retry["num_ctx"], retry["verdict"]) == (32768, 4096, "fits")
    assert main(_ARGS) == 3
    out = capsys.readouterr().out
    assert "retries an out-of-memory load once at num_ctx 4096" in out
    assert "with a 4096-token context, not the 32768 of its default" in out


@pytest.mark.parametrize("extra", [["--runtime-version", "0.20.0"], ["-c", "32768"]])
def test_no_retry_before_0_30_or_with_a_set_context(
    capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    assert main([*_ARGS, *extra, "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "does_not_fit"
    assert "ollama_load_retry" not in doc

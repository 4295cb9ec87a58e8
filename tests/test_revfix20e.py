"""Review fixes (revfix20e): plan checks a pinned ``--pp``/``--tp`` against the GPUs given as the
estimate does (``oomkit.estimate.checks.check_ranks``), the ``--pp`` refusal names ``--pp``,
``-m`` given twice, the pooling note only with ``--pooling``; and the rest of the review's
list, end to end through the CLI."""

from __future__ import annotations

import json
import re

import pytest

from conftest import run_cli

_run = run_cli  # the shared helper (tests/conftest.py)


@pytest.mark.parametrize(
    ("argv", "needs", "lever"),
    [
        (("-r", "vllm", "-g", "rtx-4090", "--pp-size", "2"), "needs 2 GPUs", "lower --pp"),
        (("-r", "sglang", "-g", "rtx-4090", "--pp", "2"), "needs 2 GPUs", "lower --pp"),
        (
            ("-r", "vllm", "-g", "2xrtx-4090", "--tp", "2", "--pp", "2"),
            "needs 4 GPUs but the target has 2",
            "lower --tp x --pp",
        ),
    ],
)
def test_plan_refuses_pp_past_the_gpus_as_estimate(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], needs: str, lever: str
) -> None:
    for command in ("plan", "estimate"):
        code, out, err = _run(capsys, command, "qwen3-8b", *argv, "--offline")
        assert code == 2, (command, out)
        assert needs in err
        assert f"<name>) or {lever}\n" in err, err
        assert "cuda:1" not in out


def test_plan_pp_on_the_gpus_named_still_plans(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "plan", "qwen3-8b", "-r", "vllm", "-g", "2xrtx-4090", "--pp", "2", "--offline"
    )
    assert code == 0
    assert "--pipeline-parallel-size 2" in out
    assert "cuda:2" not in out


def test_tp_refusal_still_names_tp(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(
        capsys, "estimate", "qwen3-8b", "-r", "vllm", "-g", "rtx-4090", "--tp", "2", "--offline"
    )
    assert code == 2
    assert "or lower --tp" in err
    assert "--pp" not in err


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_two_models_by_m_refused(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, _, err = _run(capsys, command, "-m", "llama-3.1-8b", "-m", "qwen3-8b", "--offline")
    assert code == 2
    assert "two models given" in err
    assert "'llama-3.1-8b'" in err
    assert "'qwen3-8b'" in err


def test_same_model_by_m_twice_is_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "estimate", "-m", "qwen3-8b", "-m", "qwen3-8b", "--offline")
    assert code in (0, 3)
    assert out.startswith("qwen3-8b")


def test_enforce_eager_alone_has_no_pooling_note(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("plan", "qwen3-8b", "-r", "vllm", "-g", "rtx-4090", "--offline")
    _, out, _ = _run(capsys, *base, "--enforce-eager")
    assert "--enforce-eager" in out
    assert "--pooling:" not in out
    _, out, _ = _run(capsys, *base, "--pooling")
    assert "--pooling: planned with --enforce-eager" in out


MIXTRAL = ("plan", "mixtral-8x7b", "-g", "rtx-4090", "--ram", "64GiB", "-c", "16k", "--offline")


@pytest.mark.parametrize(
    ("version", "spelled"),
    [("b6088", False), ("b6089", True), ("6089", True), ("2025-08-03", False), ("b6000", False)],
)
def test_n_cpu_moe_first_build_compared_as_a_build(
    capsys: pytest.CaptureFixture[str], version: str, spelled: bool
) -> None:
    # flag_eras: --n-cpu-moe first in b6089 (PR #15077); build_date(6088) is after its merge
    # date, so a date comparison printed it for b6088
    code, out, _ = _run(capsys, *MIXTRAL, "--runtime-version", version)
    assert code == 0
    run = next(line for line in out.splitlines() if line.strip().startswith("llama-server"))
    # (the count is the plan's, not this test's: session 21's offload takes a q8_0 cache where it
    # keeps more experts on the GPU, --n-cpu-moe 7 where f16 needed 10)
    assert (re.search(r"--n-cpu-moe \d+", run) is not None) is spelled
    assert ("-ot 'blk" in run) is not spelled


def test_old_build_json_and_summary_describe_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, *MIXTRAL, "--runtime-version", "b6000", "--json")
    assert code == 0
    top = json.loads(out)["plans"][0]
    cs = top["command_settings"]
    assert "n_cpu_moe" not in cs
    assert "runtime_version" not in cs
    assert f"-ot '{cs['override_tensor'][0]}'" in top["command"]
    _, text, _ = _run(capsys, *MIXTRAL, "--runtime-version", "b6000")
    assert "(--n-cpu-moe" not in text
    assert "layers on CPU (-ot rules)" in text


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_training_tp_the_heads_cannot_split_refused(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # Llama-3.1-8B: 32 heads, 8 KV heads; Megatron-Core divide(num_attention_heads, tp)
    code, _, err = _run(
        capsys, command, "llama-3.1-8b", "--train", "full", "--tp", "3", "--gpus", "3",
        "-g", "3xa100-80gb", "--offline",
    )  # fmt: skip
    assert code == 2
    assert "attention heads (32) must be divisible" in err
    assert "valid sizes on the 3 GPUs: 1" in err


def test_training_tp_not_dividing_the_gpus_suggests_no_bad_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run(
        capsys, "estimate", "llama-3.1-8b", "--train", "full", "--tp", "3", "--gpus", "4",
        "-g", "4xa100-80gb", "--offline",
    )  # fmt: skip
    assert code == 2
    assert "--gpus 3" not in err
    assert "(1, 2, 4;" in err


def test_training_tp_the_heads_split_still_estimates(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "estimate", "llama-3.1-8b", "--train", "full", "--tp", "2", "--gpus", "4",
        "-g", "4xa100-80gb", "--offline",
    )  # fmt: skip
    assert code in (0, 3)
    assert "tp=2" in out


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_training_seq_past_the_trained_maximum_noted(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # Llama-3.1-8B: max_position_embeddings 131072 (rope llama3: already the scaled length)
    argv = ("llama-3.1-8b", "--train", "lora", "-g", "h200", "--grad-checkpointing", "--offline")
    _, out, _ = _run(capsys, command, *argv, "--seq", "262144")
    assert "--seq 262144 is 2.0x the model's trained maximum (131072" in out
    _, out, _ = _run(capsys, command, *argv, "--seq", "131072")
    assert "trained maximum" not in out


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_training_seq_max_refused_with_what_to_give(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, _, err = _run(
        capsys, command, "llama-3.1-8b", "--train", "lora", "--seq", "max", "-g", "h200"
    )
    assert code == 2
    assert "training takes a length: give one (--seq 8192" in err

"""A server's own flags pasted into ``estimate`` / ``plan`` (``oomkit.cli.runtime_flags``,
``oomkit.cli.plan_pinned``): llama.cpp ``-m``, vLLM ``--pipeline-parallel-size``/``-pp``,
SGLang ``--pp-size``/``--max-running-requests``/``--mem-fraction-static``; vLLM/SGLang data and
expert parallelism refused in one line; a context that ``--parallel`` multiplied past the
ceiling named by ``--parallel``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from conftest import run_cli

GGUF = Path(__file__).parent / "fixtures" / "gguf" / "tiny-llama-mixed.gguf"


_run = run_cli  # the shared helper (tests/conftest.py)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = _run(capsys, *argv, "--json")
    assert code in (0, 3, 4), err
    return json.loads(out)


@pytest.mark.parametrize("spelling", ["-m", "--model", "--model-path"])
def test_model_option_is_the_model(capsys: pytest.CaptureFixture[str], spelling: str) -> None:
    plain = _json(capsys, "estimate", str(GGUF), "-c", "2048", "--offline")
    flagged = _json(capsys, "estimate", spelling, str(GGUF), "-c", "2048", "--offline")
    assert flagged == plain
    # the click path (an option the fast path leaves to click) reads it the same way
    slow = _json(
        capsys, "estimate", "-c", "2048", "--offline", "--os", "linux", spelling, str(GGUF)
    )
    assert slow["devices"] == plain["devices"]


def test_plans_own_llama_server_line_pastes_into_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(capsys, "plan", str(GGUF), "-g", "rtx-4090", "--offline")
    command = shlex.split(doc["plans"][0]["command"])
    assert command[:2] == ["llama-server", "-m"]
    command[2] = str(GGUF)  # the plan names the file as it would be downloaded
    code, _, err = _run(capsys, "estimate", *command[1:], "-g", "rtx-4090", "--offline")
    assert code == 0, err
    assert "No such option" not in err


def test_two_different_models_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "estimate", "llama-3.1-8b", "-m", "llama-3.1-70b", "--offline")
    assert code == 2
    assert "two models given" in err
    code, _, err = _run(capsys, "estimate", "--offline")
    assert code == 2
    assert "Missing argument 'MODEL'" in err


@pytest.mark.parametrize("spelling", ["--pipeline-parallel-size", "-pp", "--pp-size"])
def test_pipeline_parallel_spellings(capsys: pytest.CaptureFixture[str], spelling: str) -> None:
    base = ("estimate", "llama-3.1-8b", "-r", "vllm", "-g", "2xrtx-4090", "-c", "8k", "--offline")
    want = _json(capsys, *base, "--pp", "2")
    assert want["settings"]["pp"] == 2
    assert _json(capsys, *base, spelling, "2") == want


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (("--data-parallel-size", "2"), "--data-parallel-size 2"),
        (("-dp", "2"), "-dp 2"),
        (("--dp-size", "4"), "--dp-size 4"),
        (("--enable-expert-parallel",), "--enable-expert-parallel"),
        (("-ep",), "-ep"),
        (("--ep-size", "2"), "--ep-size 2"),
    ],
)
@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_data_and_expert_parallel_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], command: str, flags: tuple[str, ...], named: str
) -> None:
    code, _, err = _run(capsys, command, "llama-3.1-8b", "-r", "vllm", *flags, "--offline")
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"Error: {named}: ")
    assert "not modelled" in line


def test_neutral_data_parallel_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("estimate", "llama-3.1-8b", "-r", "sglang", "-c", "8k", "--offline")
    assert _json(capsys, *base, "--dp-size", "1") == _json(capsys, *base)


def test_parallel_times_context_names_parallel(capsys: pytest.CaptureFixture[str]) -> None:
    # llama-server's -c is shared by the -np slots: no --ctx asks for the model's 131072 per slot
    code, _, err = _run(capsys, "estimate", "llama-3.1-8b", "--parallel", "100000", "--offline")
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("Error: --parallel 100000 x the context (131072) per sequence")
    assert "--ctx must be" not in line
    code, _, err = _run(
        capsys, "plan", "llama-3.1-8b", "-g", "rtx-4090", "--parallel", "100000", "--offline"
    )
    assert code == 2
    assert "Error: --parallel 100000 x the context" in err


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    doc = _json(capsys, "plan", "llama-3.1-8b", *argv, "--offline")
    assert doc["plans"], doc
    return doc["plans"][0]


def test_plan_pins_sglang_flags_estimate_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    p = _plan(
        capsys,
        *("-r", "sglang", "-g", "rtx-4090", "--max-running-requests", "8"),
        *("--mem-fraction-static", "0.8"),
    )
    assert "--max-running-requests 8" in p["command"]
    assert "--mem-fraction-static 0.8" in p["command"]
    assert p["settings"]["mem_fraction_static"] == 0.8
    p = _plan(capsys, "-r", "sglang", "-g", "2xrtx-4090", "--pp-size", "2", "--enforce-eager")
    assert "--pp-size 2" in p["command"]
    assert "--disable-cuda-graph" in p["command"]
    assert p["settings"]["pp"] == 2


def test_plan_pins_vllm_flags(capsys: pytest.CaptureFixture[str]) -> None:
    p = _plan(
        capsys,
        *("-r", "vllm", "-g", "2xrtx-4090", "--pipeline-parallel-size", "2", "--enforce-eager"),
        *("--max-num-batched-tokens", "4096"),
    )
    for part in ("--pipeline-parallel-size 2", "--enforce-eager", "--max-num-batched-tokens 4096"):
        assert part in p["command"]
    s = p["settings"]
    assert (s["pp"], s["tp"], s["enforce_eager"], s["max_num_batched_tokens"]) == (2, 1, True, 4096)


def test_plan_pins_llamacpp_split(capsys: pytest.CaptureFixture[str]) -> None:
    p = _plan(capsys, "-g", "2xrtx-4090", "-ts", "3,1", "-sm", "row")
    assert "-sm row -ts 3,1" in p["command"]
    assert (p["settings"]["split_mode"], p["settings"]["tensor_split"]) == ("row", "3,1")


def test_plan_refuses_a_pinned_setting_the_runtime_lacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run(
        capsys, "plan", "llama-3.1-8b", "-r", "vllm", "--mem-fraction-static", "0.8", "--offline"
    )
    assert code == 2
    assert "--mem-fraction-static is not a vllm setting" in err
    code, _, err = _run(capsys, "plan", "llama-3.1-8b", "-r", "any", "-pp", "2", "--offline")
    assert code == 2
    assert "-pp pins one runtime's setting" in err


def test_plan_json_carries_what_the_command_sets(capsys: pytest.CaptureFixture[str]) -> None:
    p = _plan(capsys, "-g", "rtx-4090")
    assert " -ngl 99 " in p["command"]
    assert p["command_settings"]["n_gpu_layers"] == 99  # as written ("every layer")
    assert p["settings"]["n_gpu_layers"] == 33  # the estimate's: 32 layers + output
    p = _plan(capsys, "-g", "rtx-4090", "-ngl", "20")
    assert " -ngl 20 " in p["command"]
    assert p["command_settings"]["n_gpu_layers"] == p["settings"]["n_gpu_layers"] == 20
    p = _plan(capsys, "-r", "sglang", "-g", "2xrtx-4090", "--pp-size", "2", "--enforce-eager")
    assert (p["command_settings"]["pp"], p["command_settings"]["enforce_eager"]) == (2, True)

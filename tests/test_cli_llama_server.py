"""``--llama-server/--no-llama-server`` for ``estimate`` and ``plan`` (llama.cpp PR #23861:
llama-server and llama-cli reserve output rows for their ``-np`` sequences, llama-bench and the
C API one row per micro-batch token; :mod:`oomkit.estimate.llamacpp_outputs`).

The planner prints ``llama-server`` commands, so its memory is llama-server's, and a printed
command given back to ``estimate`` (whose default is llama-server too) gives the same numbers.
Settings of llmfit PR #778 (Qwen2.5-14B-Instruct Q4_K_M on an RTX 2080 8 GB, context 4096), and
a real GGUF file written with gguf-py (``tests/fixtures/gguf/tiny-llama-mixed.gguf``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oomkit.cli import main
from oomkit.cli.estimate_fast import parse_estimate_args
from oomkit.planner.commands import parse_command

GGUF = str(Path(__file__).parent / "fixtures" / "gguf" / "tiny-llama-mixed.gguf")


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _totals(doc: dict[str, Any]) -> list[tuple[str, int]]:
    return [(d["device"], d["total_bytes"]) for d in doc["devices"]]


def _estimate_argv(model: str, quant: str | None, command: str) -> list[str]:
    """``oomkit estimate`` arguments for a printed ``llama-server`` command (its own flags)."""
    flags = parse_command("llama.cpp", command)
    argv = ["estimate", model, *(["--quant", quant] if quant else [])]
    for flag, values in flags.items():
        if flag == "-m":
            continue
        argv += ["--kv-unified"] if flag == "-kvu" else [flag, *values]
    return argv


@pytest.mark.parametrize("extra", [(), ("--parallel", "2")])
def test_a_planned_command_estimates_to_the_plan(
    capsys: pytest.CaptureFixture[str], extra: tuple[str, ...]
) -> None:
    gpu = ("--gpu", "rtx-2080")
    code, plan = _json(capsys, "plan", "qwen2.5-14b", *gpu, "--ctx", "4096", *extra)
    assert code == 0
    assert plan["plans"]
    for p in plan["plans"]:
        assert p["command"].startswith("llama-server ")
        assert p["settings"]["llama_server"] is True
        argv = _estimate_argv("qwen2.5-14b", p["settings"]["quant"], p["command"])
        _, est = _json(capsys, *argv, *gpu)
        assert _totals(est) == [(d["device"], d["total_bytes"]) for d in p["devices"]], argv


def test_a_planned_command_for_a_gguf_file_estimates_to_the_plan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, plan = _json(capsys, "plan", GGUF, "--gpu", "rtx-3060")
    assert code == 0
    for p in plan["plans"]:
        _, est = _json(capsys, *_estimate_argv(GGUF, None, p["command"]), "--gpu", "rtx-3060")
        assert _totals(est) == [(d["device"], d["total_bytes"]) for d in p["devices"]]


def test_no_llama_server_plans_the_bench_reserve(capsys: pytest.CaptureFixture[str]) -> None:
    gpu = ("--gpu", "rtx-2080")
    _, plan = _json(capsys, "plan", "qwen2.5-14b", *gpu, "--ctx", "4096", "--no-llama-server")
    assert any(n.startswith("--no-llama-server:") for n in plan["notes"])
    p = plan["plans"][0]
    assert "llama_server" not in p["settings"]
    argv = _estimate_argv("qwen2.5-14b", p["settings"]["quant"], p["command"])
    _, bench = _json(capsys, *argv, *gpu, "--no-llama-server")
    _, server = _json(capsys, *argv, *gpu)
    assert _totals(bench) == [(d["device"], d["total_bytes"]) for d in p["devices"]]
    assert server["devices"][0]["total_bytes"] < bench["devices"][0]["total_bytes"]


def test_estimate_defaults_to_llama_server_and_says_what_bench_adds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("estimate", "qwen2.5-14b", "--gpu", "rtx-2080", "-q", "Q4_K_M", "-c", "4096")
    ngl = ("-ngl", "42", "-np", "1")
    _, default = _json(capsys, *argv, *ngl)
    _, server = _json(capsys, *argv, *ngl, "--llama-server")
    _, bench = _json(capsys, *argv, *ngl, "--no-llama-server")
    assert _totals(default) == _totals(server)
    extra = bench["devices"][0]["total_bytes"] - server["devices"][0]["total_bytes"]
    # 511 more rows of 152064 f32 logits, and output.weight (Q6_K, on the CPU at -ngl 42)
    # staged for the 512-row matmul: more than the logits alone
    assert extra > 511 * 152064 * 4
    notes = [a for a in server["assumptions"] if a.startswith("estimated for llama-server")]
    assert len(notes) == 1
    from oomkit.units import format_bytes

    assert f"+{format_bytes(extra)} on cuda:0" in notes[0]
    assert not any(a.startswith("estimated for llama-server") for a in bench["assumptions"])
    assert default["settings"]["llama_server"] is True


def test_before_pr_23861_the_switch_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("estimate", "qwen2.5-14b", "--gpu", "rtx-2080", "-q", "Q4_K_M", "-c", "4096")
    old = ("-ngl", "42", "--runtime-version", "2026-05-20")
    _, server = _json(capsys, *argv, *old)
    _, bench = _json(capsys, *argv, *old, "--no-llama-server")
    assert _totals(server) == _totals(bench)
    assert not any(a.startswith("estimated for llama-server") for a in server["assumptions"])


def test_the_fast_path_reads_the_flag() -> None:
    on = parse_estimate_args(["estimate", "qwen2.5-14b", "--llama-server"])
    off = parse_estimate_args(["estimate", "qwen2.5-14b", "--no-llama-server"])
    unset = parse_estimate_args(["estimate", "qwen2.5-14b"])
    assert on is not None
    assert off is not None
    assert unset is not None
    assert (on["llama_server"], off["llama_server"], unset["llama_server"]) == (True, False, None)


def _oomkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("estimate", "qwen2.5-14b", "--llama-server=yes"), "does not take a value"),
        (("plan", "qwen2.5-14b", "--gpu", "rtx-2080", "--no-llama-server=1"), "does not take"),
        (
            ("plan", "qwen2.5-14b", "--gpu", "rtx-2080", "-r", "vllm", "--llama-server"),
            "--llama-server is a llama.cpp option",
        ),
    ],
)
def test_bad_uses_are_one_line_usage_errors(args: tuple[str, ...], message: str) -> None:
    res = _oomkit(*args)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1, res.stderr
    assert message in errors[0], res.stderr


def test_other_runtimes_warn_that_they_ignore_it() -> None:
    res = _oomkit("estimate", "qwen2.5-14b", "--gpu", "rtx-4090", "-r", "vllm", "--llama-server")
    assert "vllm does not use --llama-server/--no-llama-server: ignored" in res.stderr


@pytest.mark.parametrize(("build", "server_rows"), [("b9409", False), ("b9509", True)])
def test_builds_around_pr_23861(
    capsys: pytest.CaptureFixture[str], build: str, server_rows: bool
) -> None:
    """b9409 was pinned by Ollama on 2026-05-29 (before the PR, merged 2026-06-01); b9509
    follows build 9495 of 2026-06-03 (llama.cpp issue #24085): the anchor of generation_builds."""
    argv = ("estimate", "qwen2.5-14b", "--gpu", "rtx-2080", "-q", "Q4_K_M", "-c", "4096")
    old = ("-ngl", "42", "--runtime-version", build)
    _, server = _json(capsys, *argv, *old)
    _, bench = _json(capsys, *argv, *old, "--no-llama-server")
    assert (_totals(server) != _totals(bench)) is server_rows


@pytest.mark.parametrize("app", ["lmstudio", "koboldcpp"])
def test_llamacpp_apps_on_the_c_api_are_not_sized_as_llama_server(
    capsys: pytest.CaptureFixture[str], app: str
) -> None:
    # LM Studio's llama.cpp engine and koboldcpp's server call the C API, which leaves
    # n_outputs_max at 0 (one row per micro-batch token): review 15 saw -r lmstudio sized with
    # llama-server's 4 rows and told to pass --no-llama-server for "C-API programs"
    args = ["estimate", "gemma-3-12b", "-q", "Q4_K_M", "--gpu", "rtx-4080", "--ctx", "16k"]
    _, app_doc = _json(capsys, *args, "-r", app)
    _, c_api = _json(capsys, *args, "-r", app, "--no-llama-server")
    # asked for, it applies: with -np 1 only the output rows differ (without -np llama-server
    # runs 4 slots on a unified cache, PR #16736: Gemma-3's sliding-window cache holds 4 x
    # n_swa cells, more than the C API's one sequence)
    _, forced = _json(capsys, *args, "-r", app, "--llama-server", "-np", "1")
    assert _totals(app_doc) == _totals(c_api)
    assert _totals(forced)[0][1] < _totals(c_api)[0][1]
    assert not any("PR #23861" in a for a in app_doc["assumptions"])


def test_the_quant_is_echoed_as_llama_quantize_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    # review 15: `-q q4_k_m` was echoed as quant=q4_k_m
    _, doc = _json(capsys, "estimate", "llama-3.1-8b", "-q", "q4_k_m", "--gpu", "rtx-4080")
    assert doc["settings"]["quant"] == "Q4_K_M"

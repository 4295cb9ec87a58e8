"""``estimate_fast``: the click-free ``oomkit estimate`` path parses as click does, or declines.

The table is checked against the click command itself, the parse against click's own parse on
a few thousand argument vectors (including values that look like options, repeats, bad values
and forms the fast path leaves to click), and whole runs of ``python -m oomkit`` through the
fast path against the same argv through click: same stdout, stderr and exit code.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from oomkit.cli import estimate_fast
from oomkit.cli.estimate import estimate_command
from oomkit.cli.estimate_fast import DEFAULTS, FLAGS, VALUE_OPTIONS, parse_estimate_args
from oomkit.cli.params import CONTEXT, COUNT, SIZE
from oomkit.cli.runtime_flags import UNMODELLED
from oomkit.cli.speculative_options import SPECULATIVE_PARAMS
from oomkit.cli.values import parse_context, parse_count, parse_size

SRC = str(Path(__file__).parents[1] / "src")

_CONVERTERS: dict[str, Any] = {
    "StringParamType": str,
    "IntParamType": int,
    "FloatParamType": float,
}


def _click_options() -> list[click.Option]:
    return [
        p
        for p in estimate_command.params
        if isinstance(p, click.Option) and not (p.name or "").startswith("train_")
    ]


def test_table_matches_the_click_command() -> None:
    seen: set[str] = set()
    for p in _click_options():
        for opt in (*p.opts, *p.secondary_opts):
            if opt in VALUE_OPTIONS:
                name, convert = VALUE_OPTIONS[opt]
                assert name == p.name, opt
                assert not p.is_flag, opt
                # -m/--model collects every value so two different models are refused; the
                # fast path takes one and hands a second, different one to click
                assert not p.multiple or p.name == "model_flag", opt
                assert p.nargs == 1, opt
                if p.type is SIZE:
                    assert convert is parse_size, opt
                elif p.type is CONTEXT:
                    assert convert is parse_context, opt
                elif p.type is COUNT:
                    assert convert is parse_count, opt
                else:
                    assert convert is _CONVERTERS[type(p.type).__name__], opt
            elif opt in FLAGS:
                name, value = FLAGS[opt]
                assert name == p.name, opt
                assert p.is_flag, opt
                assert value is (opt in p.opts), opt
            else:  # left to click: choices, repeatable options, --emit
                assert p.name in (
                    "os_name",
                    "split_mode",
                    "backend",
                    "vulkan_driver",
                    "device_map",
                    "override_tensor",
                    "emit",
                    "lora_dtype",
                    # refused in one line by click (runtime_flags.UNMODELLED)
                    "data_parallel_size",
                    "expert_parallel_size",
                    "enable_expert_parallel",
                    # vLLM/SGLang speculative decoding: read by cli.speculative_options
                    *SPECULATIVE_PARAMS,
                ), opt
                continue
            seen.add(opt)
    assert seen == set(VALUE_OPTIONS) | set(FLAGS)


def _click_parse(argv: list[str]) -> dict[str, Any] | None:
    """What click hands the command for ``oomkit estimate ARGV`` (``None``: click refuses)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # --help prints, then exits
            ctx = estimate_command.make_context("estimate", list(argv))
    except (click.UsageError, click.exceptions.Exit):
        return None
    params = {k: v for k, v in ctx.params.items() if not k.startswith("train_")}
    for name in UNMODELLED:  # refused in the command's body when given (never by the fast path)
        params.pop(name)
    flags = set(params.pop("model_flag") or ())  # -m MODEL: the command resolves it
    if len(flags) > 1:  # two different -m models: resolve_model refuses them
        return None
    flagged = next(iter(flags), None)
    if flagged is not None and params["model"] not in (None, flagged):
        return None
    params["model"] = params["model"] if params["model"] is not None else flagged
    return None if params["model"] is None else params


def test_defaults_are_clicks() -> None:
    parsed = parse_estimate_args(["estimate", "m"])
    assert parsed == _click_parse(["m"])
    assert parsed is not None
    assert set(parsed) == {*DEFAULTS, "model"}


_TOKENS = [
    *VALUE_OPTIONS,
    *FLAGS,
    "--os",
    "linux",
    "-sm",
    "row",
    "-ot",
    "exps=CPU",
    "--emit",
    "--train",
    "lora",
    "--help",
    "-h",
    "--",
    "-",
    "--ctx=4096",
    "-cmax",
    "-q4",
    "--nope",
    "m",
    "llama-3.1-8b",
    "8192",
    "32k",
    "max",
    " 7 ",
    "-1",
    "-5",
    "0",
    "1.5",
    "nan",
    "inf",
    "1e3",
    "abc",
    "24GB",
    "24G",
    "24GiB",
    "-24GB",
    "Q4_K_M",
    "",
]


def _nan_equal(parsed: dict[str, Any]) -> dict[str, Any]:
    """``parsed`` with float NaN as a marker (NaN != NaN would fail two equal parses)."""
    return {k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in parsed.items()}


def test_parse_agrees_with_click_on_random_argv() -> None:
    rng = random.Random(10)
    accepted = 0
    for _ in range(4000):
        argv = [rng.choice(_TOKENS) for _ in range(rng.randint(0, 7))]
        if rng.random() < 0.7:
            argv.insert(rng.randint(0, len(argv)), "llama-3.1-8b")
        fast = parse_estimate_args(["estimate", *argv])
        if fast is None:
            continue
        accepted += 1
        assert _nan_equal(fast) == _nan_equal(_click_parse(argv)), argv
    assert accepted > 300  # the shortcut takes the common forms, not only the trivial one


@pytest.mark.parametrize(
    "argv",
    [
        ["llama-3.1-8b", "--quant", "Q4_K_M", "--ctx", "8192", "--json"],
        ["-q", "Q8_0", "-c", "32k", "qwen2.5-7b", "-fa", "--no-mmap", "-ngl", "-1", "--json"],
        ["llama-3.1-8b", "--quant", "--json"],  # a value option takes the next argument
        ["llama-3.1-8b", "--tp", "2", "--tp", "1", "--vram", "24GB", "--ram", "64G"],
        ["llama-3.1-8b", "--ctx", "max", "--gpu", "rtx-4090", "--display", "--headless"],
    ],
)
def test_common_forms_take_the_fast_path(argv: list[str]) -> None:
    fast = parse_estimate_args(["estimate", *argv])
    assert fast is not None
    assert fast == _click_parse(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "--help"],
        ["estimate", "m", "--ctx=8192"],
        ["estimate", "m", "-cmax"],
        ["estimate", "m", "--os", "linux"],
        ["estimate", "m", "-ot", "exps=CPU"],
        ["estimate", "m", "--emit"],
        ["estimate", "m", "--train", "lora"],
        ["estimate", "m", "n"],
        ["estimate", "--", "m"],
        ["estimate", "m", "-ngl", "all"],
        ["estimate", "m", "--vram", "lots"],
        ["estimate", "m", "--quant"],
        ["estimate"],
        ["plan", "m"],
        ["--version"],
    ],
)
def test_everything_else_goes_to_click(argv: list[str]) -> None:
    assert parse_estimate_args(argv) is None


def test_a_shell_asking_for_completions_goes_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_OOMKIT_COMPLETE", "bash_complete")
    assert parse_estimate_args(["estimate", "m"]) is None


def _run(argv: list[str], *, force_click: bool) -> tuple[int, str, str]:
    code = (
        "import sys\nimport oomkit.cli as c\n"
        + ("c.cli  # the group exists: main leaves everything to click\n" if force_click else "")
        + f"sys.exit(c.main({argv!r}))"
    )
    env = {**os.environ, "PYTHONPATH": SRC, "OOMKIT_OFFLINE": "1", "NO_COLOR": "1"}
    env.pop("OOMKIT_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "llama-3.1-8b", "--quant", "Q4_K_M", "--ctx", "8192", "--json"],
        ["estimate", "llama-3.1-8b", "-q", "Q4_K_M", "-c", "8192", "--gpu", "rtx-4090"],
        ["estimate", "llama-3.1-8b", "--explain", "--vram", "24GB"],
        ["estimate", "llama-3.1-8b", "--vram", "4GiB", "--json"],  # does not fit: exit 3
        ["estimate", "llama-3.1-8b", "--tp", "2"],  # llama.cpp ignores --tp: a warning
        ["estimate", "no-such-model-xyz", "--json"],  # unknown name: exit 1, one line
        ["estimate", "llama-3.1-8b", "-ngl", "-7"],  # out of range: exit 2
        ["estimate", "llama-3.1-8b", "--ctx", "max", "--gpu", "rtx-3060", "--json"],
    ],
)
def test_fast_path_prints_what_click_prints(argv: list[str]) -> None:
    assert parse_estimate_args(argv) is not None
    assert _run(argv, force_click=False) == _run(argv, force_click=True)


def test_fast_path_does_not_import_click() -> None:
    code = (
        "import sys\nfrom oomkit.cli import main\n"
        "sys.stdout = open('/dev/null', 'w')\n"
        "main(['estimate', 'llama-3.1-8b', '--quant', 'Q4_K_M', '--ctx', '8192', '--json'])\n"
        "sys.stdout = sys.__stdout__\n"
        "print('click' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        check=True,
    ).stdout
    assert out.strip() == "False"


def test_module_names_its_test() -> None:
    assert "test_cli_fast.py" in (estimate_fast.__doc__ or "")


def _run_module(argv: list[str], **env_extra: str) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": SRC, "OOMKIT_OFFLINE": "1", "NO_COLOR": "1", **env_extra}
    env.pop("OOMKIT_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "oomkit", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "llama-3.1-8b", "--quant", "Q4_K_M", "--ctx", "8192", "--json"],
        ["estimate", "llama-3.1-8b", "--vram", "4GiB"],  # exit 3, text, suggestions
        ["estimate", "no-such-model-xyz"],  # exit 1, the error on stderr
    ],
)
def test_python_m_oomkit_exits_as_click_does(argv: list[str]) -> None:
    # `python -m oomkit` ends a fast-path run with os._exit (no interpreter teardown)
    assert _run_module(argv) == _run(argv, force_click=True)


def test_fast_exit_still_runs_atexit_handlers(tmp_path: Path) -> None:
    # the dataclass code cache is written by an atexit handler: it must still be written
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONPYCACHEPREFIX": str(tmp_path)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", "llama-3.1-8b", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("{")
    assert list(tmp_path.rglob("*.dcfn"))


def test_fast_exit_handles_a_closed_pipe() -> None:
    # stdout closed early (`oomkit estimate ... | head -c 1`): quiet exit 1, as click does
    env = {**os.environ, "PYTHONPATH": SRC, "OOMKIT_OFFLINE": "1"}
    proc = subprocess.run(
        f"{sys.executable} -m oomkit estimate llama-3.1-8b --explain | head -c 1 >/dev/null; "
        "echo ${PIPESTATUS[0]}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.stdout.strip() in ("0", "1")  # 0 when it all fitted in the pipe's buffer
    assert "Traceback" not in proc.stderr


def test_gc_is_paused_only_while_main_runs_the_fast_path() -> None:
    code = (
        "import gc, io, sys\nfrom oomkit.cli import main\n"
        "seen = []\n"
        "import oomkit.cli.estimate_run as r\n"
        "real = r.run_estimate\n"
        "def spy(*a, **k):\n    seen.append(gc.isenabled())\n    return real(*a, **k)\n"
        "r.run_estimate = spy\n"
        "sys.argv = ['oomkit', 'estimate', 'llama-3.1-8b', '--json']\n"
        "sys.stdout = io.StringIO()\n"
        "rc = main()\n"
        "sys.stdout = sys.__stdout__\n"
        "print(rc, seen, gc.isenabled())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        check=True,
    ).stdout
    assert out.split() == ["0", "[False]", "True"]

"""Session 16 review fixes (revfix16d), end to end through the CLI:

1. ``plan`` and ``models --fits`` take the runtimes' context/TP spellings (``--max-model-len``,
   ``--context-length``, ``--ctx-size``, ``--tensor-parallel-size``, ``-tp``, ``--tp-size``) as
   ``estimate`` does, from one definition (``cli.values.CTX_FLAGS``/``TP_FLAGS``); the web
   plan body takes them too.
2. A plan whose ``-ot`` rules keep only some expert tensors on the CPU prints those rules
   (llama-server ``-ot``, koboldcpp ``--overridetensors``), not ``--n-cpu-moe N``/nothing.
3. The koboldcpp command follows koboldcpp 1.102's parser (koboldcpp.py at 000115dd):
   ``--usemmap``, ``--quantkv`` without flash attention quantizing K only, batch 16/4096.
"""

from __future__ import annotations

import json
from typing import Any

import click
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from oomkit.cli import cli, main
from oomkit.cli.estimate_fast import VALUE_OPTIONS
from oomkit.cli.values import CTX_FLAGS, TP_FLAGS
from oomkit.planner.commands import parse_command
from oomkit.web.app import create_app


def _invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, [*args])
    return res.exit_code, res.output


def _json(*args: str) -> Any:
    offline = ("--offline",) * (args[0] != "models")  # models reads only the catalog
    code, out = _invoke(*args, *offline, "--json")
    assert code in (0, 3), out
    return json.loads(out)


# -- 1. one set of spellings ----------------------------------------------------------------


def _param(command: str, name: str) -> click.Option:
    cmd = cli.get_command(click.Context(cli), command)  # the group loads commands lazily
    assert cmd is not None
    param = next(p for p in cmd.params if p.name == name)
    assert isinstance(param, click.Option)
    return param


@pytest.mark.parametrize(
    ("command", "name", "flags"),
    [
        ("estimate", "ctx", CTX_FLAGS),
        ("plan", "ctx", CTX_FLAGS),
        ("models", "ctx", CTX_FLAGS),
        ("estimate", "tp", TP_FLAGS),
        ("plan", "tp", TP_FLAGS),
    ],
)
def test_every_command_spells_ctx_and_tp_alike(
    command: str, name: str, flags: tuple[str, ...]
) -> None:
    assert tuple(_param(command, name).opts) == flags
    # the click-free estimate path reads the same table
    assert {o for o, (n, _) in VALUE_OPTIONS.items() if n == name} == set(flags)


PLAN = ("plan", "llama-3.1-8b", "-r", "vllm", "--gpu", "2xrtx-4090")


@pytest.mark.parametrize("alias", ["--max-model-len", "--context-length", "--ctx-size"])
def test_plan_reads_the_runtimes_context_flag_as_ctx(alias: str) -> None:
    assert _json(*PLAN, alias, "8192") == _json(*PLAN, "--ctx", "8192")


@pytest.mark.parametrize("alias", ["--tensor-parallel-size", "-tp", "--tp-size"])
def test_plan_reads_the_runtimes_tp_flag_as_tp(alias: str) -> None:
    doc = _json(*PLAN, "--ctx", "8192", alias, "1")
    assert doc == _json(*PLAN, "--ctx", "8192", "--tp", "1")
    assert all(p["settings"]["tp"] == 1 for p in doc["plans"])
    assert all("--tensor-parallel-size" not in p["command"] for p in doc["plans"])


def test_plan_errors_name_the_flag_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["plan", "llama-3.1-8b", "--gpu", "rtx-4090"]
    assert main([*base, "--max-model-len", "0"]) != 0
    assert "--max-model-len must be an integer" in capsys.readouterr().err
    assert main([*base, "--tensor-parallel-size", "2"]) != 0
    assert "--tensor-parallel-size is a vLLM and SGLang option" in capsys.readouterr().err


def test_models_fits_reads_the_context_aliases() -> None:
    base = ("models", "--fits", "rtx-4090")
    by_ctx = _json(*base, "--ctx", "32k")
    assert _json(*base, "--context-length", "32k") == by_ctx
    assert _json(*base, "--max-model-len", "32768") == by_ctx


def test_web_plan_body_takes_the_aliases() -> None:
    client = TestClient(create_app())
    base = {"model": "llama-3.1-8b", "runtime": "vllm", "gpu": "2xrtx-4090"}
    by_ctx = client.post("/api/plan", json={**base, "ctx": 8192, "tp": 1})
    assert by_ctx.status_code == 200, by_ctx.text
    for body in ({"max_model_len": 8192, "tensor_parallel_size": 1},
                 {"context_length": 8192, "tp_size": 1}):  # fmt: skip
        r = client.post("/api/plan", json={**base, **body})
        assert r.status_code == 200, r.text
        assert r.json() == by_ctx.json()


# -- 2. rules that move some expert tensors ---------------------------------------------------

UP_DOWN = "ffn_(up|down)_exps=CPU"
MOE = ("estimate", "qwen3-30b-a3b", "--gpu", "rtx-4090", "--offline")


def _run_line(out: str, program: str) -> str:
    return next(x.strip() for x in out.splitlines() if x.strip().startswith(program))


def test_emitted_llama_server_keeps_partial_rules() -> None:
    # the estimate places up/down experts of all 48 layers on the CPU, gate experts on the GPU
    code, out = _invoke(*MOE, "-ot", UP_DOWN, "--n-cpu-moe", "48", "--emit", "llama.cpp")
    assert code == 0, out
    flags = parse_command("llama.cpp", _run_line(out, "llama-server "))
    assert flags["-ot"] == [UP_DOWN]
    assert "--n-cpu-moe" not in flags  # it would move the gate experts too
    # the same rules, without --n-cpu-moe: they were dropped from the command before
    _, out = _invoke(*MOE, "-ot", UP_DOWN, "--emit", "llama.cpp")
    assert parse_command("llama.cpp", _run_line(out, "llama-server "))["-ot"] == [UP_DOWN]


def test_whole_layer_rules_stay_n_cpu_moe() -> None:
    _, out = _invoke(*MOE, "-ot", "exps=CPU", "--emit", "llama.cpp")
    flags = parse_command("llama.cpp", _run_line(out, "llama-server "))
    assert flags["--n-cpu-moe"] == ["48"]
    assert "-ot" not in flags


def test_suggested_plans_carry_the_partial_rules() -> None:
    """Plans the estimate suggests when its run does not fit keep the user's rules (the
    planner sized them so); every printed llama-server line carries them."""
    args = ("estimate", "qwen3-30b-a3b", "--gpu", "rtx-3050", "-q", "Q8_0", "--ctx", "128k")
    doc = _json(*args, "-ot", UP_DOWN)
    assert doc["suggestions"]
    for s in doc["suggestions"]:
        assert parse_command("llama.cpp", s["command"])["-ot"] == [UP_DOWN], s["command"]


def test_koboldcpp_gets_the_same_rules() -> None:
    _, out = _invoke(*MOE, "-ot", UP_DOWN, "--emit", "koboldcpp")
    flags = parse_command("koboldcpp", out[out.index("run:") + 4 :].strip())
    assert flags["--overridetensors"] == [UP_DOWN]
    assert "--moecpu" not in flags
    _, out = _invoke(*MOE, "-ot", "exps=CPU", "--emit", "koboldcpp")
    assert parse_command("koboldcpp", out[out.index("run:") + 4 :].strip())["--moecpu"] == ["48"]


# -- 3. koboldcpp 1.102 ------------------------------------------------------------------------

KOBOLD = ("estimate", "qwen3-8b", "--gpu", "rtx-4090", "-r", "koboldcpp", "--offline", "--emit")


def _kobold(*extra: str) -> tuple[dict[str, list[str]], list[str]]:
    code, out = _invoke(*KOBOLD, *extra)
    assert code == 0, out
    command = out[out.index("run:") + 4 :].strip()
    return parse_command("koboldcpp", command), [
        x for x in command.splitlines() if x.startswith("#")
    ]


def test_koboldcpp_command_names_its_release_and_maps() -> None:
    flags, comments = _kobold()
    assert comments[0].startswith("# koboldcpp 1.102's flags")
    assert "--usemmap" in flags  # 1.102: mmap off unless --usemmap; the estimate had it on
    assert "--nommap" not in flags
    flags, comments = _kobold("--no-mmap")
    assert "--usemmap" not in flags  # off is 1.102's default
    assert "--nommap" not in flags
    assert "--usemmap" not in comments[0]


def test_koboldcpp_quantkv_without_flash_quantizes_k_only() -> None:
    flags, comments = _kobold("-ctk", "q8_0", "-ctv", "f16", "--no-flash-attn")
    assert flags["--quantkv"] == ["1"]
    assert "--flashattention" not in flags
    assert any("quantizes K only" in c for c in comments)
    # K and V alike: --quantkv with --flashattention (without it V would stay f16)
    flags, _ = _kobold("-ctk", "q4_0", "-ctv", "q4_0", "--flash-attn")
    assert flags["--quantkv"] == ["2"]
    assert "--flashattention" in flags


@pytest.mark.parametrize("batch", ["16", "4096"])
def test_koboldcpp_batch_sizes_of_1102(batch: str) -> None:
    flags, comments = _kobold("-b", batch, "-ub", batch)
    assert flags["--blasbatchsize"] == [batch]
    assert not any("--blasbatchsize takes only" in c for c in comments)

"""``-r lmstudio``: llama.cpp's memory, LM Studio's ``lms load`` command (not llama-server)."""

from __future__ import annotations

import json

import pytest

import oomkit
from oomkit.cli import main
from oomkit.planner.commands import emit_command, parse_command
from oomkit.planner.lmstudio import command_target, gpu_ratio


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code = main(["plan", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def test_plan_lmstudio_prints_lms_load(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan(capsys, "qwen3-8b", "--gpu", "rtx-3060", "-r", "lmstudio", "--ctx", "8192")
    plans = doc["plans"]
    assert isinstance(plans, list)
    first = plans[0]
    assert first["runtime"] == "llama.cpp"  # the JSON contract: sized (and named) as llama.cpp
    command = first["command"]
    assert "llama-server" not in command
    load = command.splitlines()[-1]
    assert load.startswith("lms load qwen3-8b-"), command
    flags = parse_command("lmstudio", command)
    assert flags["--context-length"] == [str(first["settings"]["ctx"])]
    assert flags["--gpu"] == ["max"]  # every layer on the GPU
    assert set(flags) == {"--context-length", "--gpu"}  # no made-up flags


def test_plan_lmstudio_sizes_as_the_c_api(capsys: pytest.CaptureFixture[str]) -> None:
    # LM Studio's engine is a C-API program (estimate.llamacpp_outputs.C_API_APPS): the plan is
    # llama.cpp's under --no-llama-server (one output row per micro-batch token), not the
    # server's n_parallel rows, and only the command text differs
    args = ("qwen3-8b", "--gpu", "rtx-3060", "--ctx", "8192")
    lms = _plan(capsys, *args, "-r", "lmstudio")["plans"]
    ref = _plan(capsys, *args, "-r", "llama.cpp", "--no-llama-server")["plans"]
    server = _plan(capsys, *args, "-r", "llama.cpp")["plans"]
    assert isinstance(lms, list)
    assert isinstance(ref, list)
    assert isinstance(server, list)
    assert [p.pop("command").splitlines()[-1].split()[:2] for p in lms] == [["lms", "load"]] * len(
        lms
    )
    assert {p.pop("launcher") for p in lms} == {"lmstudio"}  # the header names LM Studio
    for p in lms:
        p.pop("command_settings")  # what the command writes (llama-server's -ngl 99)
    for p in (*ref, *server):
        p.pop("command")
        p.pop("command_settings")
        assert p.pop("launcher") == "llama.cpp"
    assert lms == ref
    assert lms != server


def test_quantized_cache_is_named_as_a_load_setting(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan(capsys, "qwen3-8b", "--gpu", "rtx-3060", "-r", "lmstudio", "--ctx", "32768")
    plans = doc["plans"]
    assert isinstance(plans, list)
    quantized = [p for p in plans if p["settings"].get("cache_type_k") == "q8_0"]
    assert quantized, [p["changes"] for p in plans]
    command = quantized[0]["command"]
    assert "K Cache Quantization Type q8_0 (llm.load.llama.kCacheQuantizationType)" in command
    assert "Flash Attention on" in command
    assert "-ctk" not in command
    assert "--cache-type" not in command
    assert "--flash" not in command
    parse_command("lmstudio", command)


def test_partial_offload_prints_the_layer_share() -> None:
    assert gpu_ratio(35, 81) == "0.43"  # rounded down: never more layers than planned
    assert gpu_ratio(80, 81) == "0.98"
    assert gpu_ratio(None, 81) == "max"
    assert gpu_ratio(0, 81) == "off"
    spec = oomkit.load_model("llama-3.3-70b")
    settings = oomkit.InferenceSettings(
        runtime="llama.cpp", quant="Q4_K_M", ctx=16384, n_gpu_layers=39
    )
    command = emit_command("lmstudio", settings, spec, "llama-3.3-70b")
    assert parse_command("lmstudio", command)["--gpu"] == ["0.48"]
    assert "# --gpu 0.48: 39/81 layers" in command


def test_windows_gets_the_same_lms_line(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("qwen3-8b", "--gpu", "rtx-3060", "-r", "lmstudio", "--ctx", "8192")
    linux = _plan(capsys, *args)["plans"]
    windows = _plan(capsys, *args, "--os", "windows")["plans"]
    assert isinstance(linux, list)
    assert isinstance(windows, list)
    assert linux[0]["command"] == windows[0]["command"]


def test_estimate_emit_lmstudio(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["estimate", "qwen3-8b", "--gpu", "rtx-3060", "-r", "lmstudio", "--emit"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "lms load qwen3-8b-Q4_K_M --context-length" in out
    assert "llama-server -m" not in out
    code = main(["estimate", "qwen3-8b", "--gpu", "rtx-3060", "-r", "llama.cpp", "--emit"])
    out, _ = capsys.readouterr()
    assert "llama-server -m" in out


def test_command_target_keeps_other_runtimes() -> None:
    assert command_target("lmstudio", "llama.cpp") == "lmstudio"
    assert command_target("LMStudio", "llama.cpp") == "lmstudio"
    assert command_target("koboldcpp", "llama.cpp") == "koboldcpp"  # its own emitter (planleft16)
    assert command_target("any", "ollama") == "ollama"
    assert command_target("lmstudio", "vllm") == "vllm"

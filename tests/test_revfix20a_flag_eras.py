"""``--runtime-version`` of an old llama.cpp build / Ollama release: ``estimate`` refuses a flag
that release did not have, ``plan`` searches only its levers and prints its spelling
(:mod:`oomkit.estimate.flag_eras`)."""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main
from oomkit.estimate.flag_eras import (
    LLAMACPP_FLAG_ERAS,
    OLLAMA_FLAG_ERAS,
    era_kvs,
    flag_available,
    llamacpp_server_binary,
)
from oomkit.planner.commands_llamacpp import llamacpp_command
from oomkit.planner.commands_ollama import ollama_serve_line


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code = main(["plan", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def _commands(doc: dict[str, object]) -> list[str]:
    plans = doc["plans"]
    assert isinstance(plans, list)
    assert plans
    return [str(p["command"]) for p in plans]


def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["estimate", *args])
    out, err = capsys.readouterr()
    assert code == 2, out
    lines = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_every_row_cites_its_source() -> None:
    for row in (*LLAMACPP_FLAG_ERAS, *OLLAMA_FLAG_ERAS):
        assert row.source
        assert row.what
        assert row.flag
        assert row.source.startswith(("PR #", "ollama "))
    assert [r.release for r in OLLAMA_FLAG_ERAS] == [(0, 1, 39), (0, 5, 0), (0, 1, 33)]


def test_llamacpp_b1500_plan_has_no_fa_nor_quantized_kv(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # b1500 (Nov 2023): before -ctk/-ctv (PR #4312), -fa (PR #5021) and llama-server (#7809)
    args = ("llama-2-13b", "--gpu", "rtx-3060", "--ctx", "4k")
    for command in _commands(_plan(capsys, *args, "--runtime-version", "b1500")):
        assert command.startswith("server -m "), command
        for flag in (" -fa", " -ctk", " -ctv", "llama-server"):
            assert flag not in command, command
    # the newest build keeps today's line
    newest = _commands(_plan(capsys, *args))[0]
    assert newest.startswith("llama-server -m ")
    assert "-fa on" in newest


def test_llamacpp_build_spelling_by_era(capsys: pytest.CaptureFixture[str]) -> None:
    # b3000 (2024-05): -fa is a bare switch and the binary is still `server`
    args = ("llama-2-13b", "--gpu", "rtx-3060", "--ctx", "4k", "--runtime-version", "b3000")
    first = _commands(_plan(capsys, *args))[0]
    assert first.startswith("server -m "), first
    assert "-fa -ctk q8_0" in first
    assert "-fa on" not in first
    assert llamacpp_server_binary("b3200") == "llama-server"


def test_llamacpp_moe_before_override_tensor_uses_whole_layers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Mixtral (GGUF arch llama): b4500 loads it, while Qwen3-MoE needs b5092 (llamacpp_support)
    args = ("mixtral-8x7b", "--gpu", "rtx-3060", "--ctx", "8k")
    old = _commands(_plan(capsys, *args, "--runtime-version", "b4500"))
    assert all("-ot" not in c and "--n-cpu-moe" not in c for c in old), old
    assert "-ngl 99" not in old[0]  # layers, not experts, leave the GPU
    mid = _commands(_plan(capsys, *args, "--runtime-version", "b5500"))[0]
    assert "-ot 'blk" in mid
    assert "--n-cpu-moe" not in mid
    assert "--n-cpu-moe" in _commands(_plan(capsys, *args))[0]


def test_llamacpp_estimate_refuses_what_the_build_lacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("llama-2-13b", "--gpu", "rtx-3060", "--ctx", "4k", "--runtime-version", "b1500")
    line = _refused(capsys, *base, "-fa", "-ctk", "q8_0", "-ctv", "q8_0")
    assert "-ctk" in line
    assert "PR #4312" in line
    assert "b1500" in line
    line = _refused(capsys, *base, "-fa")
    assert "-fa" in line
    assert "PR #5021" in line
    # b2300 (Feb-Mar 2024): the server reads -ctk (PR #5684) but a quantized V needs -fa
    b2300 = (*base[:-1], "b2300")
    line = _refused(capsys, *b2300, "-fa", "-ctk", "q8_0", "-ctv", "q8_0")
    assert "PR #5021" in line
    assert main(["estimate", *b2300, "-ctk", "q8_0"]) != 2
    capsys.readouterr()
    assert main(["estimate", *base[:-1], "b3000", "-fa", "-ctk", "q8_0", "-ctv", "q8_0"]) == 0
    capsys.readouterr()


def test_ollama_plan_by_release(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("llama-3.1-8b", "-r", "ollama", "--gpu", "rtx-3060", "--ctx", "32k")
    old = _commands(_plan(capsys, *args, "--runtime-version", "0.1.30"))
    assert all("OLLAMA_FLASH_ATTENTION" not in c for c in old)
    assert all("OLLAMA_KV_CACHE" not in c for c in old)
    for version in ("0.3.0", "0.4.7"):
        for command in _commands(_plan(capsys, *args, "--runtime-version", version)):
            assert "OLLAMA_KV_CACHE_TYPE" not in command, (version, command)
    doc = _plan(capsys, *args, "--runtime-version", "0.5.0")
    assert "OLLAMA_KV_CACHE_TYPE=q8_0" in _commands(doc)[0]


def test_ollama_estimate_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("llama-3.1-8b", "-r", "ollama", "--gpu", "rtx-3060", "--ctx", "32k")
    line = _refused(
        capsys, *base, "--kv-dtype", "q8_0", "--flash-attn", "--runtime-version", "0.3.0"
    )
    assert "OLLAMA_KV_CACHE_TYPE" in line
    assert "v0.5.0" in line
    assert "#6279" in line
    line = _refused(capsys, *base, "--flash-attn", "--runtime-version", "0.1.30")
    assert "OLLAMA_FLASH_ATTENTION" in line
    assert "v0.1.39" in line
    code = main(
        ["estimate", *base, "--kv-dtype", "q8_0", "--flash-attn", "--runtime-version", "0.5.0"]
    )
    capsys.readouterr()
    assert code != 2  # a verdict, not a refusal


def test_helpers() -> None:
    assert not flag_available("ollama", "flash_attn", "0.1.38")
    assert flag_available("ollama", "flash_attn", "0.1.39")
    assert flag_available("ollama", "cache_type", "2024-12-10")
    assert era_kvs("llama.cpp", ("f16", "f16+fa", "q8_0"), "b2300") == ("f16",)
    assert era_kvs("llama.cpp", ("f16", "f16+fa", "q8_0"), "b3000") == ("f16", "f16+fa", "q8_0")
    assert era_kvs("vllm", ("auto", "fp8"), "0.4.0") == ("auto", "fp8")
    assert ollama_serve_line([], "windows") == "ollama serve"
    assert ollama_serve_line(["A=1"], "windows") == '$env:A="1"; ollama serve'


def test_llamacpp_command_binary() -> None:
    from oomkit.loaders.source import resolve_model
    from oomkit.spec.settings import InferenceSettings

    spec = resolve_model("llama-2-13b")
    old = InferenceSettings(ctx=4096, quant="Q4_K_M", runtime_version="b2000")
    assert llamacpp_command(old, spec, "llama-2-13b").startswith("server -m ")
    new = InferenceSettings(ctx=4096, quant="Q4_K_M")
    assert llamacpp_command(new, spec, "llama-2-13b").startswith("llama-server -m ")


def test_ollama_parallel_before_0_1_33(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("llama-3.1-8b", "-r", "ollama", "--gpu", "rtx-3060", "--ctx", "8k", "--parallel", "4")
    for command in ("estimate", "plan"):
        assert main([command, *base, "--runtime-version", "0.1.30"]) == 2
        err = capsys.readouterr().err
        assert "OLLAMA_NUM_PARALLEL" in err
        assert "v0.1.33" in err
    doc = _plan(capsys, *base, "--runtime-version", "0.1.33")
    first = _commands(doc)[0]
    assert "OLLAMA_NUM_PARALLEL=4 ollama serve" in first
    assert "OLLAMA_FLASH_ATTENTION" not in first  # v0.1.39


def test_plan_refuses_a_pinned_kv_the_build_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("llama-2-13b", "--gpu", "rtx-3060", "--ctx", "4k", "--kv-dtype", "q8_0")
    assert main(["plan", *args, "--runtime-version", "b1500"]) == 2
    err = capsys.readouterr().err
    assert "PR #4312" in err

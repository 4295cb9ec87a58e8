"""Session 16 review fixes: koboldcpp keeps a MoE plan's experts on the CPU (``--moecpu``,
koboldcpp 1.97+, koboldcpp.py 1.102 at 000115dd); the plan header names the asked runtime;
vLLM up to 0.12 loads the whole bf16 model before quantizing it to FP8 (vLLM docs fp8.md,
``BaseModelLoader.load_model``: load_weights, then process_weights_after_loading)."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from oomkit.api import estimate
from oomkit.cli import cli
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.vllm_online_fp8 import loads_bf16_first, streams_online_fp8
from oomkit.hardware.targets import hardware_for
from oomkit.planner.commands import parse_command
from oomkit.planner.koboldcpp import koboldcpp_command, koboldcpp_cpu_moe_flags
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

MOE = ("plan", "qwen3-30b-a3b", "--gpu", "rtx-4060-laptop", "--ram", "16GiB", "--os", "windows",
       "--ctx", "16k")  # fmt: skip


def _run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code in (0, 1), res.output
    return res.output


def test_koboldcpp_moe_plan_keeps_the_experts_on_the_cpu() -> None:
    out = _run(*MOE, "-r", "koboldcpp")
    head = next(x for x in out.splitlines() if x.startswith("Plan "))
    assert head.startswith("Plan [koboldcpp]:")
    assert "(--moecpu " in head
    n = int(head.split("(--moecpu ")[1].split(")")[0])
    run = next(x.strip() for x in out.splitlines() if x.strip().startswith("koboldcpp.exe "))
    assert parse_command("koboldcpp", run)["--moecpu"] == [str(n)]
    assert "koboldcpp 1.97 or newer" in out
    assert "no flag in koboldcpp" not in out


def test_lmstudio_header_names_lmstudio() -> None:
    out = _run(*MOE, "-r", "lmstudio")
    assert "Plan [lmstudio]:" in out
    assert "[llama.cpp]" not in out


def test_koboldcpp_moe_flags_unit() -> None:
    assert koboldcpp_cpu_moe_flags(32, None) == ["--moecpu", "32"]
    assert koboldcpp_cpu_moe_flags(300, None) == ["--moecpu", "200"]  # load_model clamps at 200
    # only some expert tensors: --moecpu would move all three; the rules go as they are
    assert koboldcpp_cpu_moe_flags(4, ("ffn_(up|down)_exps=CPU",))[0] == "--overridetensors"
    s = InferenceSettings(runtime="llama.cpp", ctx=4096, n_cpu_moe=7)
    cmd = koboldcpp_command(s, "m.gguf", 49, True)
    assert cmd.splitlines()[-1].endswith("--moecpu 7")
    no = koboldcpp_command(dataclasses.replace(s, n_cpu_moe=None), "m.gguf", 49, True)
    assert "--moecpu" not in no


def test_vllm_release_windows() -> None:
    assert loads_bf16_first("0.6.3")
    assert loads_bf16_first("0.12.0")
    assert not loads_bf16_first("0.13.0")
    assert streams_online_fp8("0.13.0")
    assert not loads_bf16_first("0.15.0")
    assert not loads_bf16_first(None)


@pytest.mark.parametrize("version", ["0.12.0", "0.13.0"])
def test_vllm_qwen3_235b_fp8_on_8xa100_40gb_names_the_load_peak(version: str) -> None:
    gpu = ("--gpu", "8xa100-40gb-sxm", "--tp", "8", "--quant", "fp8", "--max-model-len", "32768")
    out = _run("estimate", "qwen3-235b-a22b", "-r", "vllm", *gpu, "--runtime-version", version)
    # 0.12: the whole bf16 model per rank (58.8 GB) first; was "Tight: 3.44 GiB free"
    assert "GiB over on cuda:0 (vLLM online FP8 load peak" in out
    assert "vLLM 0.12 (which" not in out  # never the release that loads the bf16 model whole
    assert "0.15 or newer" in out


def test_vllm_0_6_3_llama70b_fp8_one_h100_is_not_planned() -> None:
    hw = hardware_for(parse_gpu_list("h100-sxm"))
    s = InferenceSettings(runtime="vllm", quant="fp8", ctx=32768, runtime_version="0.6.3")
    peak = estimate("llama-3.3-70b", s, hw).runtime_details["online_fp8_load_peak_bytes"]
    assert isinstance(peak, dict)
    assert 128 * GiB < peak["cuda:0"] < 134 * GiB  # the bf16 weights, ~131 GiB, load first
    out = _run("plan", "llama-3.3-70b", "--gpu", "h100-sxm", "-r", "vllm", "--quant", "fp8",
               "--ctx", "32768", "--runtime-version", "0.6.3")  # fmt: skip
    run = [x for x in out.splitlines() if x.strip().startswith("vllm serve")]
    assert not any("--quantization fp8" in x for x in run)

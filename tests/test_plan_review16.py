"""The planner defects a new-user review left open (session 16): koboldcpp's command, the KV
cache's cost on the quality line, ``-ngl`` as a constraint, Gemma 3's projector under Ollama."""

from __future__ import annotations

import dataclasses
import json

import pytest

import oomkit
from conftest import run_cli
from oomkit.errors import InvalidSettingError
from oomkit.estimate.ollama_vision_graph import gemma3_vision, worst_case_graph_bytes
from oomkit.planner.commands import emit_command, parse_command
from oomkit.planner.koboldcpp import KOBOLDCPP_QUANTKV
from oomkit.planner.quality import KV_KLD_INCREASE, kv_quality_text
from oomkit.spec.settings import InferenceSettings


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = run_cli(capsys, "plan", *args, "--json")
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


# -- 2. the quality line names the KV cache and its published cost ----------------------------


def test_kv_cost_is_pr7412s_q8_0_row() -> None:
    # f16/q8_0/q8_0 0.000980 minus f16/f16/f16 0.000189 (llama.cpp PR #7412)
    assert KV_KLD_INCREASE["q8_0"] == pytest.approx(0.000791)
    assert kv_quality_text("q8_0") == "KV q8_0 +0.0008 KLD (llama.cpp PR #7412, LLaMA-3-8B)"
    assert kv_quality_text(None) is None
    assert kv_quality_text("f16") is None
    q4 = kv_quality_text("q4_0")
    assert q4 is not None
    assert q4.startswith("KV q4_0")
    assert "KLD" not in q4  # no made-up figure


def test_plan_quality_line_names_a_q8_0_cache(capsys: pytest.CaptureFixture[str]) -> None:
    # qwen3-14b at 32k on a 16 GB card: the plan picks a q8_0 cache (planfix15)
    code, out, err = run_cli(capsys, "plan", "qwen3-14b", "--gpu", "rtx-4080", "--ctx", "32768")
    assert code == 0, err
    assert "-ctk q8_0" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("quality:"))
    assert line.endswith("; KV q8_0 +0.0008 KLD (llama.cpp PR #7412, LLaMA-3-8B)"), line


def test_plan_quality_line_is_silent_on_an_f16_cache(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "plan", "qwen3-8b", "--gpu", "rtx-4090", "--ctx", "8192")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.strip().startswith("quality:"))
    assert "KV " not in line


# -- 1. koboldcpp's own command ----------------------------------------------------------------


def _first_command(doc: dict[str, object]) -> str:
    plans = doc["plans"]
    assert isinstance(plans, list)
    command = plans[0]["command"]
    assert isinstance(command, str)
    return command


def test_plan_koboldcpp_prints_koboldcpp_py(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("qwen3-14b", "--gpu", "rtx-4080", "--ctx", "32768", "-r", "koboldcpp")
    command = _first_command(_plan(capsys, *args))
    assert "llama-server" not in command
    run = command.splitlines()[-1]
    assert run.startswith("python koboldcpp.py --model qwen3-14b-"), command
    flags = parse_command("koboldcpp", command)
    assert flags["--contextsize"] == ["32768"]
    assert flags["--gpulayers"] == ["41"]  # 40 blocks + output: every layer
    assert "--usecublas" in flags  # an NVIDIA card
    # the plan chose a q8_0 cache (planfix15): --quantkv 1, which needs --flashattention
    assert flags["--quantkv"] == ["1"]
    assert "--flashattention" in flags


def test_plan_koboldcpp_on_windows_and_amd(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("qwen3-8b", "--ctx", "8192", "-r", "koboldcpp")
    win = _first_command(_plan(capsys, *base, "--gpu", "rtx-3060", "--os", "windows"))
    assert win.splitlines()[-1].startswith("koboldcpp.exe --model ")
    assert "--usecublas" in parse_command("koboldcpp", win)
    amd = _first_command(_plan(capsys, *base, "--gpu", "rx-7900-xtx"))
    # after the release line: --usecublas runs the hipBLAS library
    assert "koboldcpp_hipblas" in amd.splitlines()[1]
    vk = _first_command(_plan(capsys, *base, "--gpu", "rx-7900-xtx", "--backend", "vulkan"))
    assert "--usevulkan" in parse_command("koboldcpp", vk)


def test_plan_llamacpp_still_prints_llama_server(capsys: pytest.CaptureFixture[str]) -> None:
    command = _first_command(_plan(capsys, "qwen3-8b", "--gpu", "rtx-3060", "--ctx", "8192"))
    assert command.startswith("llama-server ")


def test_koboldcpp_command_flags_and_limits() -> None:
    spec = oomkit.load_model("qwen3-30b-a3b")
    s = InferenceSettings(
        runtime="llama.cpp",
        quant="Q4_K_M",
        ctx=16384,
        n_gpu_layers=30,
        tensor_split=(3.0, 1.0),
        batch_size=1024,
        ubatch=1024,
        cache_type_k="q4_0",
        cache_type_v="q4_0",
        n_cpu_moe=4,
        parallel=2,
        flash_attn=False,
    )
    cmd = emit_command("koboldcpp", s, spec, "qwen3-30b-a3b")
    flags = parse_command("koboldcpp", cmd)
    assert flags["--gpulayers"] == ["30"]
    assert flags["--tensor_split"] == ["3", "1"]
    assert flags["--blasbatchsize"] == ["1024"]
    assert flags["--quantkv"] == ["2"]
    assert "--flashattention" in flags  # koboldcpp exits without it when --quantkv > 0
    comments = [x for x in cmd.splitlines() if x.startswith("#")]
    assert flags["--moecpu"] == ["4"]  # koboldcpp 1.97+ (planner/koboldcpp.py)
    assert any("koboldcpp 1.97 or newer" in c for c in comments)
    assert any("2 parallel sequences" in c for c in comments)
    # a K/V type --quantkv cannot say, and a batch its choices lack: a comment, no flag
    odd = dataclasses.replace(
        s, cache_type_k="q5_1", cache_type_v="q5_1", batch_size=768, ubatch=768
    )
    cmd = emit_command("koboldcpp", odd, spec, "qwen3-30b-a3b")
    flags = parse_command("koboldcpp", cmd)
    assert "--quantkv" not in flags
    assert "--blasbatchsize" not in flags
    assert "--flashattention" not in flags
    assert "q5_1" in cmd
    assert KOBOLDCPP_QUANTKV == {"f16": 0, "q8_0": 1, "q4_0": 2}
    with pytest.raises(ValueError, match=r"not a python koboldcpp\.py flag"):
        parse_command("koboldcpp", "python koboldcpp.py --model x.gguf -ngl 3")


def test_estimate_emit_koboldcpp_keeps_its_flash_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # estimate -r koboldcpp models flash attention off (opt-in there): the command must not
    # turn it on behind the estimate's back
    base = ("estimate", "qwen3-8b", "--gpu", "rtx-3060", "--ctx", "8192", "-r", "koboldcpp")
    code, out, err = run_cli(capsys, *base, "--emit")
    assert code == 0, err
    run = out.rstrip().splitlines()[-1]
    assert run.startswith("python koboldcpp.py ")
    assert "--flashattention" not in run
    code, out, err = run_cli(capsys, *base, "-fa", "on", "--emit")
    assert code == 0, err
    assert "--flashattention" in out.rstrip().splitlines()[-1]


# -- 3. -ngl N as a constraint on the search ---------------------------------------------------

QWEN_4080 = ("qwen3-14b", "--gpu", "rtx-4080", "--ctx", "32768")


def test_plan_ngl_fixes_the_split(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan(capsys, *QWEN_4080, "-ngl", "30")
    plans = doc["plans"]
    assert isinstance(plans, list)
    assert plans
    for p in plans:  # every plan, alternatives included, has exactly 30 layers on the GPU
        assert p["settings"]["n_gpu_layers"] == 30
        assert parse_command("llama.cpp", p["command"])["-ngl"] == ["30"]
    assert plans[0]["settings"]["ctx"] == 32768
    assert doc["request"]["n_gpu_layers"] == 30
    # the long spelling, and Ollama's num_gpu, and koboldcpp's --gpulayers
    ollama = _plan(capsys, *QWEN_4080, "--n-gpu-layers", "20", "-r", "ollama")["plans"]
    assert isinstance(ollama, list)
    assert "PARAMETER num_gpu 20" in ollama[0]["command"]
    kobold = _first_command(_plan(capsys, *QWEN_4080, "-ngl", "20", "-r", "koboldcpp"))
    assert parse_command("koboldcpp", kobold)["--gpulayers"] == ["20"]


def test_plan_ngl_above_the_layers_means_all(capsys: pytest.CaptureFixture[str]) -> None:
    free = _plan(capsys, *QWEN_4080)
    fixed = _plan(capsys, *QWEN_4080, "-ngl", "999")
    free_plans, fixed_plans = free["plans"], fixed["plans"]
    assert isinstance(free_plans, list)
    assert isinstance(fixed_plans, list)
    assert fixed_plans[0]["settings"] == free_plans[0]["settings"]  # all 41 on the GPU
    notes = fixed["notes"]
    assert isinstance(notes, list)
    assert any("-ngl 999 is above the model's 40 layers + output" in n for n in notes)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["-ngl", "-1"], "0 or more"),
        (["-ngl", "lots"], "0 or more"),
        (["-ngl", "30", "-r", "vllm"], "vllm has no GPU layer count"),
        (["-ngl", "30", "-r", "transformers"], "transformers has no GPU layer count"),
        (["-ngl", "20", "--no-offload"], "--no-offload forbids it"),
    ],
)
def test_plan_ngl_refusals_are_one_line(
    capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    code, _, err = run_cli(capsys, "plan", *QWEN_4080, *extra)
    assert code == 2
    lines = [x for x in err.splitlines() if x.startswith("Error:")]
    assert len(lines) == 1
    assert says in lines[0]


def test_plan_ngl_with_runtime_any_keeps_the_layer_split_runtimes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _plan(capsys, *QWEN_4080, "-ngl", "20", "-r", "any")
    plans = doc["plans"]
    assert isinstance(plans, list)
    assert {p["runtime"] for p in plans} <= {"llama.cpp", "ollama"}
    notes = doc["notes"]
    assert isinstance(notes, list)
    assert any(n.startswith("vllm, sglang, transformers left out: -ngl") for n in notes)


def test_plan_request_checks_ngl() -> None:
    with pytest.raises(InvalidSettingError, match="n_gpu_layers"):
        oomkit.PlanRequest(n_gpu_layers=-1)
    with pytest.raises(InvalidSettingError, match="n_gpu_layers"):
        oomkit.PlanRequest(n_gpu_layers=True)


def test_models_fits_still_refuses_ngl(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "models", "--fits", "rtx-4080", "-ngl", "30")
    assert code == 2
    assert "oomkit plan MODEL -ngl 30" in err


# -- 4. Gemma 3's vision tower under Ollama ----------------------------------------------------


def _vision_bytes(devices: list[dict[str, object]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in devices:
        comps = d["components"]
        assert isinstance(comps, list)
        for c in comps:
            if str(c["label"]).startswith("vision "):
                out[str(c["label"])] = int(c["bytes"])
    return out


def test_gemma3_tower_and_worst_case_graph() -> None:
    spec = oomkit.load_model("gemma-3-12b")
    tower = gemma3_vision(spec)
    assert tower is not None
    assert (tower.hidden_size, tower.num_heads, tower.image_size, tower.patch_size) == (
        1152,
        16,
        896,
        14,
    )
    assert tower.params == spec.multimodal_params > 400_000_000
    # 4096 patches: F32 scores 4 x 4096^2 x 16, the image 4 x 3 x 896^2, 4 hidden states
    unfused = worst_case_graph_bytes(tower, fused_attention=False)
    assert unfused == 4 * 4096**2 * 16 + 4 * 3 * 896**2 + 16 * 4096 * 1152
    # Ollama's own VisionGraphSize (fs/ggml/ggml.go, case "gemma3"): 4 x (896^2 x 3 +
    # 1152 x 14 + 4096^2 x 16) = 1,083,440,640; the modelled buffer is within 7% of it
    assert 1.0 < unfused / 1_083_440_640 < 1.07
    assert worst_case_graph_bytes(tower, fused_attention=True) < unfused // 10
    assert gemma3_vision(oomkit.load_model("gemma-3-1b")) is None  # text only
    assert gemma3_vision(oomkit.load_model("qwen3-8b")) is None


def test_estimate_ollama_counts_gemma3_vision_on_the_output_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("estimate", "gemma-3-12b", "--gpu", "rtx-4090", "--ctx", "8192", "-r", "ollama")
    code, out, err = run_cli(capsys, *base, "-ngl", "49", "--runtime-version", "0.12.0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    vision = _vision_bytes(doc["devices"])
    assert vision["vision encoder + projector (v.*, mm.*, F16)"] == 2 * 421_290_864
    assert vision["vision worst-case graph (2048x2048 image)"] == 1_158_873_088  # unfused
    assert any("Gemma 3 vision encoder" in a for a in doc["assumptions"])
    # the output layer on the CPU: the tower goes with it, and the note says so
    code, out, err = run_cli(capsys, *base, "-ngl", "30", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert _vision_bytes(doc["devices"]) == {}
    assert any("loads it with the output layer" in a for a in doc["assumptions"])


def test_plan_ollama_counts_gemma3_vision(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("gemma-3-12b", "--gpu", "rtx-3060", "--ctx", "16384", "-r", "ollama")
    plans = _plan(capsys, *args)["plans"]
    assert isinstance(plans, list)
    first = plans[0]
    assert first["level"] == 0  # every layer on the GPU: the tower is there too
    devices = first["devices"]
    assert "vision encoder + projector (v.*, mm.*, F16)" in _vision_bytes(devices)

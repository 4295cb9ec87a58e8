"""The planner: scenario fixtures, brute-force optimality, requests, commands, CLI."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

import oomkit
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidSettingError
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.planner.commands import FLAG_TABLES, emit_command, parse_command
from oomkit.planner.core import PlanResult, max_context, plan
from oomkit.planner.knobs import (
    LEVEL_EXPERTS_CPU,
    LEVEL_GPU,
    LEVEL_LAYERS_CPU,
    Candidate,
    quant_ladder,
)
from oomkit.planner.request import PlanRequest
from oomkit.planner.search import Evaluation, Searcher
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

SCENARIOS = json.loads((Path(__file__).parent / "fixtures" / "plan" / "scenarios.json").read_text())
_GGUF = ("llama.cpp", "ollama")


def _hardware(sc: dict[str, Any]) -> Hardware:
    rows = [g for name in sc["gpus"] for g in parse_gpu_list(name)]
    vram = None if sc["vram"] is None else sc["vram"] * GiB
    ram = None if sc["ram"] is None else sc["ram"] * GiB
    return hardware_for(rows, vram_bytes=vram, host_ram_bytes=ram)


def _check_plan_fits(p: Any, hw: Hardware, req: PlanRequest, model: str) -> None:
    """Re-estimate the plan's own settings independently and hold it to the headroom."""
    est = oomkit.estimate_model(model, p.settings, hw)
    if p.runtime in _GGUF:
        for d in est.devices:
            assert d.capacity_bytes is not None
            assert d.total_bytes + req.headroom_bytes <= d.capacity_bytes, (d.device, p.summary)
        if hw.host_ram_bytes is not None:
            assert est.host.total_bytes <= hw.host_ram_bytes
    else:
        assert est.fits is True, est.blockers
    # the plan's estimate is the same estimate
    assert [d.total_bytes for d in est.devices] == [d.total_bytes for d in p.estimate.devices]


def _check_command(p: Any) -> None:
    s = p.settings
    if p.runtime == "llama.cpp":
        flags = parse_command("llama.cpp", p.command)
        assert int(flags["-c"][0]) == s.ctx
        assert int(flags["-ngl"][0]) == (99 if s.n_gpu_layers is None else s.n_gpu_layers)
        assert flags.get("-ctk", [s.cache_type_k])[0] == s.cache_type_k
        assert int(flags.get("--n-cpu-moe", [0])[0]) == (s.n_cpu_moe or 0)
        assert flags["-m"][0].endswith(f"{s.quant}.gguf")
    elif p.runtime in ("vllm", "sglang"):
        flags = parse_command(p.runtime, p.command.splitlines()[0])
        key = "--max-model-len" if p.runtime == "vllm" else "--context-length"
        assert int(flags[key][0]) == s.ctx
    elif p.runtime == "ollama":
        lines = p.command.splitlines()
        assert lines[0].endswith("ollama serve")
        for word in lines[0].split()[:-2]:
            assert word.split("=", 1)[0] in (
                "OLLAMA_FLASH_ATTENTION",
                "OLLAMA_KV_CACHE_TYPE",
                "OLLAMA_NUM_PARALLEL",
            )
        assert f"PARAMETER num_ctx {s.ctx}" in lines[1]
        if s.n_gpu_layers is not None:
            assert f"PARAMETER num_gpu {s.n_gpu_layers}" in lines[1]
    else:
        compile(p.command, "<snippet>", "exec")


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_scenario(sc: dict[str, Any]) -> None:
    hw = _hardware(sc)
    req = PlanRequest(runtime=sc["runtime"], **sc["request"])
    result = plan(sc["model"], hw, req)
    expect = sc["expect"]
    if "fits" in expect:
        assert result.fits is expect["fits"], [r.reason for r in result.rejected]
    if not result.fits:
        assert result.impossible
        assert "\n" not in result.impossible
        assert result.impossible.startswith("Nothing fits")
        return
    top = result.plans[0]
    if "level" in expect:
        assert top.level == expect["level"], top.summary
    if "quant" in expect:
        assert top.settings.quant == expect["quant"]
    for p in result.plans:
        _check_plan_fits(p, hw, req, sc["model"])
        _check_command(p)
        if req.no_offload:
            assert p.level == LEVEL_GPU
        if req.min_ctx is not None:
            assert (p.settings.ctx or 0) >= req.min_ctx
        if req.min_quant is not None and p.runtime in _GGUF:
            ladder, _ = quant_ladder(p.runtime, oomkit.load_model(sc["model"]), None, None)
            assert ladder.index(p.settings.quant) <= ladder.index(req.min_quant)


# -- brute force: no better-ranked fitting configuration is skipped ----------------------------


def _brute_force(s: Searcher) -> list[Evaluation]:
    fitting: list[Evaluation] = []
    for qi, q in enumerate(s.ladder):
        upgrade = qi < s.default_index
        for kv in s.kvs[:1] if upgrade else s.kvs:
            for ctx in (s.target_ctx,) if upgrade else s._ctx_grid():
                cands = [Candidate(q, kv, ctx)]
                if not upgrade and s.offload_ok:
                    if s.is_moe:
                        cands += [
                            Candidate(q, kv, ctx, LEVEL_EXPERTS_CPU, n_cpu_moe=m)
                            for m in range(1, s.n_layer + 1)
                        ]
                    cands += [
                        Candidate(q, kv, ctx, LEVEL_LAYERS_CPU, n_gpu_layers=s.n_layer + 1 - a)
                        for a in range(1, s.n_layer + 1)
                    ]
                fitting += [ev for c in cands if (ev := s.evaluate(c)).fits]
    return fitting


BRUTE = [
    # dense: partial layer offload (the capacities include the verdict's variance band, which
    # a plan must clear: about 0.8 GiB for a GPU that may drive a display; and, with the output
    # layer on the CPU, the staged output head of op_offload: ~0.45 GiB for this 152K vocab)
    ("qwen2.5-0.5b", 1700 * MiB, "Q4_K_M", "IQ4_XS"),
    # MoE: experts on the CPU compete with whole layers on the CPU
    ("qwen1.5-moe-a2.7b", 3600 * MiB, "Q4_K_M", "IQ4_XS"),
    # no quant named: Q8_0..Q5_K_S are upgrades, proposed only entirely on the GPU
    ("qwen2.5-0.5b", 2000 * MiB, None, "Q4_K_S"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "vram", "quant", "floor"), BRUTE)
def test_brute_force_finds_no_better_plan(
    model: str, vram: int, quant: str | None, floor: str
) -> None:
    spec = oomkit.load_model(model)
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=vram),))
    base = PlanRequest(
        ctx=8192, min_ctx=4096, ctx_step=4096, quant=quant, min_quant=floor, headroom_bytes=0
    )
    fitting = _brute_force(Searcher(spec, "llama.cpp", hw, base))
    assert fitting, "the scenario must have fitting configurations"
    for prefer in ("quality", "speed", "context"):
        req = dataclasses.replace(base, prefer=prefer)
        s = Searcher(spec, "llama.cpp", hw, req)
        found = s.search()
        assert found, prefer
        best = min(s.key(ev) for ev in fitting)
        assert s.key(found[0]) == best, (prefer, found[0].cand)
        # the search is much cheaper than the enumeration
        assert s.n_estimates < len(fitting)


def test_largest_matches_a_linear_scan() -> None:
    """The regula-falsi search returns the same boundary as trying every value."""
    spec = oomkit.load_model("qwen2.5-0.5b")
    # 12 of 24 layers: the output head is staged on the GPU (op_offload), so the boundary
    # context of this capacity lies inside 1K..32K
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=1900 * MiB),))
    s = Searcher(spec, "llama.cpp", hw, PlanRequest(ctx=32768, headroom_bytes=0))

    def make(k: int) -> Candidate:
        return Candidate("Q4_K_M", "f16", 1024 * k, LEVEL_LAYERS_CPU, n_gpu_layers=12)

    found = s._largest(1, 32, make)
    linear = [k for k in range(1, 33) if s._gpu_fits(s.evaluate(make(k)))]
    assert found is not None
    assert linear
    assert found[0] == max(linear)


# -- requests and errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ctx": 0},
        {"ctx": -5},
        {"ctx": 2.5},
        {"ctx": True},
        {"min_ctx": 9000, "ctx": 8192},
        {"prefer": "cheap"},
        {"headroom_bytes": -1},
        {"headroom_bytes": "1GiB"},
        {"parallel": 0},
        {"ctx_step": 0},
    ],
)
def test_bad_requests_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidSettingError):
        PlanRequest(**kwargs)


def test_planner_needs_a_capacity() -> None:
    with pytest.raises(InvalidSettingError, match="memory"):
        plan("llama-3.1-8b", Hardware(devices=(DeviceTarget(name="GPU"),)))
    with pytest.raises(InvalidSettingError, match="GPU"):
        plan("llama-3.1-8b", Hardware(devices=()))


def test_commands_are_checked_against_the_flag_table() -> None:
    with pytest.raises(ValueError, match="not a llama-server flag"):
        parse_command("llama.cpp", "llama-server -m x.gguf --ctx-size-typo 5")
    with pytest.raises(ValueError, match="takes 1"):
        parse_command("llama.cpp", "llama-server -m")
    spec = oomkit.load_model("llama-3.1-8b")
    s = InferenceSettings(runtime="vllm", quant="fp8", ctx=8192, tp=2, parallel=4)
    cmd = emit_command("vllm", s, spec, "llama-3.1-8b")
    flags = parse_command("vllm", cmd)
    assert shlex.split(cmd)[2] == "meta-llama/Llama-3.1-8B-Instruct"
    assert flags["--tensor-parallel-size"] == ["2"]
    assert flags["--quantization"] == ["fp8"]
    assert set(FLAG_TABLES) >= {"llama.cpp", "vllm", "sglang", "ollama"}


def test_every_level_explains_itself() -> None:
    hw = _hardware({"gpus": ["rtx-4060-ti-8gb"], "vram": None, "ram": 64})
    r = plan("qwen3-30b-a3b", hw, PlanRequest(ctx=32768))
    kinds = {p.level for p in r.plans}
    assert LEVEL_EXPERTS_CPU in kinds
    moe = next(p for p in r.plans if p.level == LEVEL_EXPERTS_CPU)
    assert any("--n-cpu-moe" in c for c in moe.changes)
    assert r.rejected
    assert all("needs" in x.reason for x in r.rejected)


def test_more_memory_never_gives_a_worse_plan() -> None:
    """Monotone: a bigger GPU's top plan ranks at least as well under the same request."""
    req = PlanRequest(ctx=32768, quant="Q4_K_M")
    spec = oomkit.load_model("llama-3.1-8b")
    keys = []
    for gib in (6, 8, 10, 12, 16):
        hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=gib * GiB),))
        s = Searcher(spec, "llama.cpp", hw, req)
        keys.append(s.key(s.search()[0]))
    assert keys == sorted(keys, reverse=True)


def test_max_context_is_the_boundary() -> None:
    spec = oomkit.load_model("llama-3.1-8b")
    hw = Hardware(devices=(oomkit.find_gpu("rtx-4060").to_device_target(),))
    s = InferenceSettings(quant="Q4_K_M")
    found = max_context(spec, s, hw)
    assert found is not None
    n, est = found
    assert verdict(est).level == "fits"
    assert n % 256 == 0
    over = oomkit.estimate_model(spec, dataclasses.replace(s, ctx=n + 256), hw)
    assert verdict(over).level != "fits"


def test_ollama_models_its_automatic_offload() -> None:
    hw = Hardware(devices=(oomkit.find_gpu("rtx-4090").to_device_target(),))
    est = oomkit.estimate_model("llama-3.1-70b", InferenceSettings(runtime="ollama", ctx=8192), hw)
    info = est.runtime_details["ollama"]
    assert isinstance(info, dict)
    assert info["auto_offload"] is True
    ngl = info["num_gpu"]
    assert est.fits is True
    assert 0 < ngl < 81
    reserve = sum(info["reserve_bytes"].values())
    over = oomkit.estimate_model(
        "llama-3.1-70b", InferenceSettings(runtime="ollama", ctx=8192, n_gpu_layers=ngl + 1), hw
    )
    assert over.devices[0].total_bytes + reserve > over.devices[0].capacity_bytes


def test_transformers_cpu_offload_is_only_a_labelled_slow_plan() -> None:
    """An unset device_map never accepts CPU offload in ``estimate``; the planner's snippet
    passes device_map="auto", so it models that and labels the offload level as slow."""
    hw = Hardware(devices=(oomkit.find_gpu("rtx-4090").to_device_target(),))
    req = PlanRequest(runtime="transformers", ctx=4096)
    (best, *_) = plan("llama-3.1-70b", hw, req, offline=True).plans
    assert best.level == LEVEL_LAYERS_CPU
    assert any("(device_map='auto', slow)" in c for c in best.changes)
    assert best.estimate.settings["device_map"] == "auto"
    assert best.estimate.blockers == ()
    assert 'device_map="auto"' in best.command
    no_offload = dataclasses.replace(req, no_offload=True)
    assert plan("llama-3.1-70b", hw, no_offload, offline=True).plans == ()


# -- CLI ----------------------------------------------------------------------------------------


def test_cli_plan_text_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["plan", "llama-3.1-70b", "--gpu", "rtx-4090", "--ram", "64GiB", "-c", "32k"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.count("Plan [llama.cpp]") == 1
    assert "llama-server -m" in out
    rc = main(["plan", "llama-3.1-405b", "--gpu", "rtx-4060", "--no-offload"])
    out = capsys.readouterr().out
    assert rc == 3
    assert "Nothing fits" in out


def test_cli_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["plan", "llama-3.1-8b", "--gpu", "2x3090", "-r", "vllm", "-c", "8k", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert doc["schema_version"] == 1
    assert doc["fits"] is True
    top = doc["plans"][0]
    assert top["settings"]["tp"] == 2
    assert len(top["devices"]) == 2
    assert top["command"].startswith("vllm serve")


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "llama-3.1-8b"],
        ["plan", "llama-3.1-8b", "--gpu", "rtx-4090", "--prefer", "cheap"],
        # llama.cpp reads -c 0 as the trained context (cli/ctx_zero.py): vLLM has no such value
        ["plan", "llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "0", "-r", "vllm"],
        ["plan", "llama-3.1-8b", "--gpu", "rtx-4090", "--headroom", "lots"],
    ],
)
def test_cli_plan_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: ")
    assert len(err.strip().splitlines()) <= 2


def test_cli_estimate_suggests_changes(capsys: pytest.CaptureFixture[str]) -> None:
    # -ngl 99: all layers asked for (without it llama.cpp's --fit offloads layers until it fits)
    argv = ["estimate", "llama-3.1-70b", "-q", "Q4_K_M", "-c", "32k", "--gpu", "rtx-4090"]
    argv += ["-ngl", "99"]
    assert main(argv) == 3
    out = capsys.readouterr().out
    assert "To make it fit" in out
    assert out.count("llama-server -m") >= 2
    assert main([*argv, "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is False
    assert doc["suggestions"]
    first = doc["suggestions"][0]
    assert first["saving_bytes"] > 0
    assert first["command"].startswith("llama-server")


def test_cli_ctx_max(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "llama-3.1-8b", "--gpu", "rtx-4060", "--ctx", "max", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is True
    assert doc["settings"]["ctx"] > 4096
    assert "--ctx max" in doc["assumptions"][0]


def test_cli_reverse_search(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--fits", "rtx-3060", "qwen2.5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    keys = [m["model"] for m in doc["models"]]
    assert "qwen2.5-7b" in keys
    assert "qwen2.5-72b" not in keys
    for m in doc["models"]:
        assert m["gpu_bytes"] + GiB <= oomkit.find_gpu("rtx-3060").memory_bytes
        assert m["max_ctx"] >= m["ctx"]
    assert main(["gpus", "--for", "llama-3.1-70b", "-c", "8k", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["gpus"]
    assert rows
    assert all(r["quant"] == "Q4_K_M" for r in rows)
    single = {r["gpu"] for r in rows if r["count"] == 1}
    assert "h100-sxm" in single
    assert "rtx-4090" not in single


def test_plan_result_round_trips_to_json() -> None:
    hw = Hardware(devices=(oomkit.find_gpu("rtx-4090").to_device_target(),))
    r = plan("llama-3.1-8b", hw, PlanRequest(ctx=8192))
    assert isinstance(r, PlanResult)
    doc = json.loads(json.dumps(r.to_dict()))
    assert doc["plans"][0]["settings"]["quant"] == r.plans[0].settings.quant


def test_precision_follows_the_hardware() -> None:
    """No bf16 before Ampere (fp16 instead), fp8 only where the GPU computes it natively."""
    t4 = Hardware(devices=(oomkit.find_gpu("t4").to_device_target(),))
    r = plan("qwen2.5-1.5b", t4, PlanRequest(runtime="vllm", ctx=8192))
    assert r.plans[0].settings.quant == "fp16"
    assert all(p.settings.quant != "fp8" for p in r.plans)
    assert any("fp8" in n for n in r.notes)
    h100 = Hardware(devices=(oomkit.find_gpu("h100").to_device_target(),))
    r = plan("llama-3.1-70b", h100, PlanRequest(runtime="vllm", ctx=8192))
    assert r.plans[0].settings.quant == "fp8"


def test_apple_unified_memory_is_explained() -> None:
    mac = Hardware(devices=(oomkit.find_gpu("m3-max-128gb").to_device_target(),))
    r = plan("llama-3.1-70b", mac, PlanRequest(ctx=8192))
    assert r.fits
    assert any("recommendedMaxWorkingSetSize" in n for n in r.notes)
    cap = mac.devices[0].capacity_bytes
    assert cap is not None
    assert all(d.total_bytes + GiB <= cap for d in r.plans[0].estimate.devices)


def test_cli_estimate_emit(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "llama-3.1-8b", "-q", "Q4_K_M", "-c", "16k", "--gpu", "rtx-4090"]
    assert main([*argv, "--emit", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    flags = parse_command("llama.cpp", doc["command"])
    assert flags["-c"] == ["16384"]
    assert main([*argv, "-r", "vllm", "-q", "bf16", "--emit", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    flags = parse_command("vllm", doc["command"])
    assert float(flags["--gpu-memory-utilization"][0]) == doc["settings"]["gpu_memory_utilization"]


def test_plan_models_the_runtime_generation() -> None:
    """llama.cpp before the MLA latent cache stored DeepSeek's full K/V: a shorter context fits."""
    hw = Hardware(devices=(oomkit.find_gpu("rtx-3060").to_device_target(),))
    req = PlanRequest(ctx=32768, quant="Q4_K_M", no_offload=True)
    now = plan("deepseek-v2-lite", hw, req)
    old = plan("deepseek-v2-lite", hw, req, base=InferenceSettings(runtime_version="b3000"))
    assert now.plans[0].settings.ctx == 32768
    assert (old.plans[0].settings.ctx or 0) < now.plans[0].settings.ctx
    # quantized KV needs flash attention: the plan turns it on rather than failing
    assert all(p.settings.flash_attn for p in old.plans if p.settings.cache_type_k)
    assert any("runtime version b3000" in n for n in old.notes)


def test_review_regressions() -> None:
    """Behaviours a new-user review asked for, each checked against the estimator."""
    # Apple: the GPU's working set and the CPU's part share one memory
    mac = Hardware(
        devices=(oomkit.find_gpu("m3-max-36gb").to_device_target(),), host_ram_bytes=36 * 10**9
    )
    r = plan("llama-3.1-70b", mac, PlanRequest())
    for p in r.plans:
        used = sum(d.total_bytes for d in p.estimate.devices) + p.estimate.host.total_bytes
        assert used + 2 * GiB <= 36 * 10**9
    # --quant below --min-quant is refused, not silently planned
    hw = Hardware(devices=(oomkit.find_gpu("rtx-4090").to_device_target(),))
    with pytest.raises(InvalidSettingError, match="min-quant"):
        plan("llama-3.1-8b", hw, PlanRequest(quant="Q2_K", min_quant="Q8_0"))
    # llama-server's -c is shared by the -np slots: the planner's context is per sequence
    r = plan("llama-3.1-8b", hw, PlanRequest(ctx=8192, parallel=4))
    top = r.plans[0]
    assert top.settings.ctx == 4 * 8192
    assert parse_command("llama.cpp", top.command)["-c"] == [str(4 * 8192)]
    # no context asked: vLLM may shorten its default (the model maximum) to any useful length
    # (38400 at --max-num-seqs 1: vLLM captures graphs of sizes 1 and 2 only, min(2 x
    # max_num_seqs, 512), oomkit.estimate.vllm_cudagraph; under 32768 with the fixed 512 MiB)
    two = Hardware(devices=(oomkit.find_gpu("rtx-3090").to_device_target(),) * 2)
    r = plan("llama-3.1-70b", two, PlanRequest(runtime="vllm"))
    assert r.fits
    top = r.plans[0]
    assert (
        8192 <= (top.settings.ctx or 0) < oomkit.load_model("llama-3.1-70b").max_position_embeddings
    )
    # --runtime any: one target context for every runtime
    r = plan("llama-3.1-8b", hw, PlanRequest(runtime="any"))
    assert {p.settings.ctx for p in r.plans if p.runtime != "llama.cpp"} <= {r.target_ctx}
    assert r.target_ctx == 8192
    # an asked context above the model's maximum is capped at it
    r = plan("yi-1.5-9b", hw, PlanRequest(ctx=32768))
    assert r.target_ctx == oomkit.load_model("yi-1.5-9b").max_position_embeddings


def test_ollama_plan_for_gpt_oss_names_its_library_tag() -> None:
    """The planner names gpt-oss's file type MXFP4_MOE, the catalog's Ollama tag says MXFP4
    (an alias of it): the emitted Modelfile read 'FROM gpt-oss:<tag with MXFP4_MOE>'."""
    result = plan(
        "gpt-oss-20b", hardware_for(parse_gpu_list("rtx-3060")), PlanRequest(runtime="ollama")
    )
    assert result.plans
    command = result.plans[0].command
    assert "FROM gpt-oss:20b" in command or "FROM gpt-oss:latest" in command, command
    assert "<tag with" not in command


@pytest.mark.parametrize(
    "args",
    [
        ["llama-3.1-70b", "--gpu", "2xrtx-4090", "--tensor-split", "1,1", "--quant", "Q8_0"],
        # -ngl 99: every layer, or llama.cpp's --fit (PR #16653) offloads until it fits
        ["llama-3.1-70b", "--gpu", "2xrtx-4090", "--quant", "Q8_0", "--device", "1,0",
         "-ngl", "99"],
        ["gpt-oss-120b", "-r", "ollama", "--runtime-version", "0.11.3", "--gpu", "2xrtx-4090",
         "--n-gpu-layers", "30"],
    ],
    ids=["tensor-split", "device", "ollama-gptoss-split"],
)  # fmt: skip
def test_a_split_that_does_not_fit_gets_its_changes_not_a_usage_error(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The speed of each proposed change rebuilt the settings from the estimate's JSON view,
    where -ts and --device are "1,1" strings: 'tensor_split must be ... proportions, got
    '1,1'' (exit 2) for every such run that did not fit."""
    code = main(["estimate", *args])
    out, err = capsys.readouterr()
    assert code == 3, err
    assert "must be" not in err
    assert "To make it fit" in out

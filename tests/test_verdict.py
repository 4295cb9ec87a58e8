"""The three-level verdict: band from measured variance, platform reservations, CLI exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.api import estimate
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate, ModelInfo
from oomkit.estimate.verdict import PLATFORM_TERMS, Platform, band_fractions, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

ROOT = Path(__file__).parents[1]


def _est(weights: int, kv: int, compute: int, cap: int, runtime: str = "llama.cpp") -> Estimate:
    comps = (
        Component(category="weights", label="w", n_bytes=weights, formula="-"),
        Component(category="kv_cache", label="kv", n_bytes=kv, formula="-"),
        Component(category="activations", label="c", n_bytes=compute, formula="-"),
    )
    return Estimate(
        model=ModelInfo(name="m", architecture="a", params=1, source="test"),
        runtime=runtime,
        settings={"ctx": 8192},
        devices=(DeviceUsage(device="cuda:0", components=comps, capacity_bytes=cap),),
        host=DeviceUsage(device="cpu"),
    )


def test_band_comes_from_the_committed_derivation() -> None:
    doc = json.loads((ROOT / "src/oomkit/data/verdict_band.json").read_text())
    assert "benchmarks/verdict_band.py" in doc["_source"]
    fr = band_fractions("llama.cpp")
    assert (
        fr["activations"] == doc["runtimes"]["llama.cpp"]["categories"]["activations"]["fraction"]
    )
    assert fr["activations"] > fr["weights"] >= fr["kv_cache"]


def test_levels_follow_the_margin() -> None:
    headless = Platform(display=False)
    big = verdict(_est(10 * GiB, 2 * GiB, 1 * GiB, 24 * GiB), headless)
    assert big.level == "fits"
    m = big.margins[0]
    ctx_spread = PLATFORM_TERMS["cuda_context_spread"][0]
    fr = band_fractions("llama.cpp")
    expected = int(10 * GiB * fr["weights"]) + int(2 * GiB * fr["kv_cache"])
    expected += int(GiB * fr["activations"]) + ctx_spread
    assert m.band_bytes == expected
    tight = verdict(_est(20 * GiB, 3 * GiB, GiB - 200 * MiB, 24 * GiB), headless)
    assert tight.level == "tight"
    assert tight.safe_change is not None
    assert "--ctx" in tight.safe_change
    assert "Tight: " in tight.summary()
    over = verdict(_est(20 * GiB, 4 * GiB, GiB, 24 * GiB), headless)
    assert over.level == "does_not_fit"


def test_display_and_windows() -> None:
    e = _est(20 * GiB, 2 * GiB, GiB, 24 * GiB)  # 1 GiB free
    # unknown display on a consumer card: in the band (tight); a datacenter part: fits
    assert verdict(e, Platform(segments=("consumer",))).level == "tight"
    assert verdict(e, Platform(segments=("datacenter",))).level == "fits"
    # a display known attached, or Windows, reserves 512 MiB: 512 MiB left, inside the band
    for plat in (Platform(display=True), Platform(display=False, os="windows")):
        v = verdict(e, plat)
        assert v.level == "tight"
        assert v.margins[0].free_bytes == 512 * MiB
    e2 = _est(20 * GiB, 2 * GiB, GiB, 23 * GiB + 300 * MiB)
    assert verdict(e2, Platform(display=False)).level == "tight"
    assert verdict(e2, Platform(display=True)).level == "does_not_fit"
    assert any("spill" in n for n in verdict(e2, Platform(os="windows")).notes)


def test_wsl_runs_on_the_wddm_driver() -> None:
    """WSL 2's CUDA is the Windows host's WDDM driver, paravirtualized (NVIDIA, CUDA on WSL
    User Guide): the WDDM reservation applies as on Windows; Linux has none."""
    e = _est(20 * GiB, 2 * GiB, GiB, 24 * GiB)  # 1 GiB free before reservations
    wsl = verdict(e, Platform(display=False, os="wsl"))
    assert wsl.margins[0].free_bytes == 512 * MiB
    assert [label for label, _ in wsl.margins[0].reservations] == [
        label
        for label, _ in verdict(e, Platform(display=False, os="windows")).margins[0].reservations
    ]
    assert verdict(e, Platform(display=False, os="linux")).margins[0].free_bytes == GiB


def test_unknown_capacity() -> None:
    e = _est(GiB, GiB, GiB, 0)
    unknown = Estimate(
        model=e.model,
        runtime=e.runtime,
        settings=e.settings,
        devices=(DeviceUsage(device="cuda:0", components=e.devices[0].components),),
        host=e.host,
    )
    assert verdict(unknown).level == "unknown"


def test_vllm_pool_margin_is_checked() -> None:
    hw = hardware_for(parse_gpu_list("rtx-4090"))
    roomy = estimate("llama-3.1-8b", InferenceSettings(runtime="vllm", ctx=8192), hw)
    assert verdict(roomy, Platform(display=False)).level == "fits"
    fits_len = roomy.runtime_details["max_model_len_that_fits"]
    assert isinstance(fits_len, int)
    edge = estimate("llama-3.1-8b", InferenceSettings(runtime="vllm", ctx=fits_len - 100), hw)
    v = verdict(edge, Platform(display=False))
    assert v.level == "tight"
    assert v.tightest is not None
    assert "KV pool" in v.tightest.what
    assert v.safe_change is not None
    assert "--max-model-len" in v.safe_change


@pytest.mark.parametrize(
    ("args", "code", "level"),
    [
        (["llama-3.1-8b", "-q", "Q4_K_M", "-c", "8192", "-g", "rtx-4090"], 0, "fits"),
        (
            ["qwen2.5-32b", "-q", "Q4_K_M", "-c", "16384", "-g", "rtx-4090", "--os", "windows"],
            4,
            "tight",
        ),
        # -ngl 99: every layer (without it llama.cpp's --fit moves layers off until it fits)
        (
            ["qwen2.5-32b", "-q", "Q4_K_M", "-c", "24000", "-g", "rtx-4090", "-ngl", "99"],
            3,
            "does_not_fit",
        ),
    ],
)
def test_cli_exit_codes_and_json(
    args: list[str], code: int, level: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", *args, "--offline", "--json"]) == code
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == level
    assert list(doc)[list(doc).index("fits") + 1] == "verdict"
    assert doc["verdict_details"]["level"] == level
    assert doc["fits"] is (level != "does_not_fit")
    assert main(["estimate", *args, "--offline"]) == code
    text = capsys.readouterr().out
    if level == "tight":
        assert "Tight: " in text
        assert "\nFits." not in text


def _vllm(model: str, gpu: str, **kw: object) -> Estimate:
    s = InferenceSettings(runtime="vllm", **kw)  # type: ignore[arg-type]
    gpus = parse_gpu_list(gpu)
    return estimate(model, s, hardware_for(gpus, n_devices=s.tp or 1), offline=True)


def _terms(v: object) -> list[str]:
    from oomkit.estimate.verdict import Verdict

    assert isinstance(v, Verdict)
    return [label for m in v.margins for label, _ in m.terms]


def test_vllm_graphs_captured_after_the_kv_cache_widen_the_device_band() -> None:
    """Before PR #30515 graphs are captured in the 1 - util headroom, "1~3 GiB per GPU" in
    vLLM's own words: a 24 GB card at util 0.9 is tight with graphs and fits eager (vllm#17469:
    Qwen3-30B-A3B on 4x A10 died in capture_model and ran with --enforce-eager)."""
    kw: dict[str, object] = {"ctx": 1024, "tp": 4, "max_num_seqs": 1, "runtime_version": "0.8.5"}
    graphs = verdict(_vllm("qwen3-30b-a3b", "4xa10", **kw), Platform(display=False))
    eager = verdict(
        _vllm("qwen3-30b-a3b", "4xa10", enforce_eager=True, **kw), Platform(display=False)
    )
    assert graphs.level == "tight"
    assert any("CUDA graphs captured after the KV cache" in t for t in _terms(graphs))
    assert graphs.safe_change is not None
    assert "--enforce-eager" in graphs.safe_change
    assert eager.level == "fits"
    assert not any("CUDA graphs" in t for t in _terms(eager))
    # 0.11-0.19 still capture in the headroom (the estimate was opt-in until 0.20.0)
    mid = verdict(_vllm("qwen3-30b-a3b", "4xa10", **{**kw, "runtime_version": "0.14.1"}))
    assert any("CUDA graphs captured after" in t for t in _terms(mid))
    # vLLM 0.20+ charges its graph estimate to the budget: no such term
    now = verdict(_vllm("qwen3-30b-a3b", "4xa10", **{**kw, "runtime_version": "0.21.0"}))
    assert not any("CUDA graphs captured after" in t for t in _terms(now))


def test_vllm_v1_before_0_9_1_charges_other_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """vllm#17431: Qwen3-8B at util 0.4 on an 80 GB GPU shared with another server died on
    0.8.5 V1 ('No available memory for the cache blocks') and started with VLLM_USE_V1=0."""
    kw: dict[str, object] = {"ctx": 40960, "gpu_memory_utilization": 0.4}
    monkeypatch.delenv("VLLM_USE_V1", raising=False)
    v1 = verdict(_vllm("qwen3-8b", "a100-80gb-pcie", runtime_version="0.8.5", **kw))
    monkeypatch.setenv("VLLM_USE_V1", "0")  # the same 0.8.5 build on its V0 engine
    v0 = verdict(_vllm("qwen3-8b", "a100-80gb-pcie", runtime_version="0.8.5", **kw))
    monkeypatch.delenv("VLLM_USE_V1")
    fixed = verdict(_vllm("qwen3-8b", "a100-80gb-pcie", runtime_version="0.9.2", **kw))
    assert v1.level == "tight"
    assert any("other processes" in t for t in _terms(v1))
    assert v1.safe_change is not None
    assert "0.9.1" in v1.safe_change
    assert v0.level == "fits"
    assert fixed.level == "fits"
    # at the default util nothing says the GPU is shared
    alone = verdict(_vllm("qwen3-8b", "a100-80gb-pcie", runtime_version="0.8.5", ctx=40960))
    assert not any("other processes" in t for t in _terms(alone))


@pytest.mark.parametrize(
    ("model", "quant", "ctx"),
    [("gemma-3-27b", "Q6_K", 11264), ("qwen2.5-32b", "Q4_K_M", 18432)],
)
def test_safe_margin_is_safe(model: str, quant: str, ctx: int) -> None:
    """The context a tight verdict proposes is not itself tight: only the full-attention KV
    shrinks with the context (Gemma 3's sliding-window cache keeps its size)."""
    import re

    hw = hardware_for(parse_gpu_list("rtx-4090"))
    v = verdict(estimate(model, InferenceSettings(quant=quant, ctx=ctx), hw))
    assert v.level == "tight"
    assert v.safe_change is not None
    m = re.match(r"--ctx (\d+)", v.safe_change)
    assert m is not None, v.safe_change
    after = verdict(estimate(model, InferenceSettings(quant=quant, ctx=int(m.group(1))), hw))
    assert after.level == "fits", (v.safe_change, after.level)


def test_transformers_band_is_derived_from_its_own_gpu_runs() -> None:
    """transformers no longer borrows vLLM's rows: its band is what the committed script
    computes from the real-GPU generate() runs (the H100's max_memory_allocated for the
    activations; the smallest card each of twenty-one runs survived on for the caching
    allocator's term), and the committed table equals a fresh derivation."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("vb", ROOT / "benchmarks" / "verdict_band.py")
    assert spec is not None
    assert spec.loader is not None
    vb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vb)
    rows = json.loads((ROOT / "benchmarks" / "accuracy_results.json").read_text())["rows"]
    fresh = vb.derive(rows + vb.gpu_transformers_rows())
    fresh["transformers"]["allocator"] = vb.derive_allocator(vb.gpu_boundary_rows())
    doc = json.loads((ROOT / "src/oomkit/data/verdict_band.json").read_text())
    assert fresh == doc["runtimes"]
    tf = doc["runtimes"]["transformers"]
    assert tf["family"] == "transformers"
    assert tf["categories"]["activations"]["n"] == 8
    assert tf["allocator"]["n"] == 9 + 12 + 12 + 12 + 12 + 7
    assert 0.1 < band_fractions("transformers")["activations"] < 0.5
    # OLMo 2 b4 p4000 needed more beyond its total than 9x its largest request: the decode's
    # K/V regrowth bound covers it, so it does not set the request ratio for every model
    olmo = [r for r in vb.gpu_boundary_rows() if "olmo-2-7b-b4-p4000" in r["record"]]
    assert len(olmo) == 1
    assert olmo[0]["extra_bytes"] <= olmo[0]["regrow_bytes"]
    assert olmo[0]["extra_bytes"] > 9 * olmo[0]["request_bytes"]
    assert "olmo" not in tf["allocator"]["request_ratio_from"]

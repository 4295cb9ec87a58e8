"""vLLM 0.22-0.28: Model Runner V2's CUDA-graph estimate of 0 (oomkit.estimate.vllm_mrv2).

Read in the PyPI sdists: ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` and
``_is_default_v2_model_runner_model`` in vllm/config/vllm.py (0.21.0: none; 0.22.0: Qwen3;
0.23.0: + Llama, Mistral; 0.24.0: + DeepseekV2, Qwen2Moe, GraniteMoe, no MoE/quant test;
0.25.0-0.28.0: listed or not MoE), and V2's ``profile_cudagraph_memory`` in
vllm/v1/worker/gpu/model_runner.py (``return 0`` through 0.28.0, measured from 0.29.0).

The real runs: djl-serving PR #3055 (heldout44), Llama-3-8B-Instruct TP=4 on four L4s held to
22.04 GiB, util 0.92, 256 sequences: 0.22.0 passed; 0.23.0 and LMI v27 (0.23.1) reserved
'~0.78 GiB more KV cache than 0.22 (15.41 -> 16.19 GiB)' and died capturing the 35 FULL graphs
after it; 128 sequences (19 graphs, 0.44 GiB) passed on 0.23.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.vllm_mrv2 import runs_model_runner_v2
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

ROOT = Path(__file__).parents[1]
L4X4 = hardware_for(parse_gpu_list("4xl4"), vram_bytes=int(22.04 * GiB))
S = InferenceSettings(runtime="vllm")


@pytest.mark.parametrize(
    ("version", "key"),
    [
        ("0.21.0", "v1-0.21"),
        ("0.22.1", "v1-0.22"),
        ("0.23.0", "v1-0.23"),
        ("0.23.1", "v1-0.23"),
        ("0.24.0", "v1-0.24"),
        ("2026-07-21", "v1-0.25"),
        ("0.28.0", "v1-0.25"),
        ("0.29.0", "current"),
    ],
)
def test_release_rows(version: str, key: str) -> None:
    assert resolve_generation("vllm", version).key == key
    assert resolve_generation("vllm").label == "vLLM V1 (0.29+)"


@pytest.mark.parametrize(
    ("model", "quant", "rule", "v2"),
    [
        ("qwen3-8b", "bf16", "qwen3", True),  # PR #39337
        ("llama-3-8b", "bf16", "qwen3", False),
        ("llama-3-8b", "bf16", "llama", True),  # 0.23.0 vllm/config/vllm.py lines 69-75
        ("mistral-7b", "bf16", "llama", True),
        ("llama-3-8b", "fp8", "llama", False),  # not model_config.is_quantized
        ("llama-3-8b", "fp8", "listed", True),  # 0.24.0: no quantization test
        ("qwen3-30b-a3b", "bf16", "llama", False),  # MoE
        ("qwen3-30b-a3b", "bf16", "dense", False),  # MoE, not listed
        ("gemma-2-9b", "bf16", "listed", False),
        ("gemma-2-9b", "bf16", "dense", True),  # PR #44443: every dense model
        ("mamba-1.4b", "bf16", "dense", False),  # attention-free (hybrid alike)
    ],
)
def test_which_models_run_v2(model: str, quant: str, rule: str, v2: bool) -> None:
    s = InferenceSettings(runtime="vllm", quant=quant)
    assert runs_model_runner_v2(find_model(model).spec(), s, rule) is v2


def test_no_rule_no_v2_and_the_env_override(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = find_model("llama-3-8b").spec()
    assert runs_model_runner_v2(spec, S, None) is False
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    assert runs_model_runner_v2(spec, S, "llama") is False
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "1")
    assert runs_model_runner_v2(spec, S, "qwen3") is True


def _est(version: str, seqs: int = 256) -> Estimate:
    s = InferenceSettings(
        runtime="vllm",
        quant="bf16",
        ctx=8192,
        tp=4,
        gpu_memory_utilization=0.92,
        max_num_seqs=seqs,
        runtime_version=version,
    )
    return estimate("llama-3-8b", s, L4X4, offline=True)


def test_0_23_gives_the_graph_estimate_to_the_kv_cache() -> None:
    """The KV pool grows by the graph bytes from 0.22 to 0.23 (#3055: 15.41 -> 16.19 GiB) and
    the graphs move out of the budget into the headroom; 0.29 reserves them again."""
    old, new, fixed = _est("0.22.0"), _est("0.23.0"), _est("0.29.0")
    ro, rn, rf = old.runtime_details, new.runtime_details, fixed.runtime_details
    assert (ro["cudagraph_charged"], rn["cudagraph_charged"], rf["cudagraph_charged"]) == (
        True,
        False,
        True,
    )
    graphs = rn["cudagraph_bytes"]
    assert isinstance(graphs, int)
    assert graphs > 0
    kv_old, kv_new = ro["available_kv_cache_bytes"], rn["available_kv_cache_bytes"]
    assert isinstance(kv_old, int)
    assert isinstance(kv_new, int)
    assert kv_new - kv_old == graphs
    assert rn.get("model_runner_v2") is True
    assert "model_runner_v2" not in ro
    assert any("Model Runner V2" in a for a in new.assumptions)


@pytest.mark.parametrize(
    ("rid", "level"),
    [
        ("vllm-djl3055-4xl4-llama3-8b-tp4-v0220-b256-ok", "fits"),
        ("vllm-djl3055-4xl4-llama3-8b-tp4-v0230-b256-oom", "tight"),
        ("vllm-djl3055-4xl4-llama3-8b-tp4-lmi27-v0231-b256-oom", "tight"),
        ("vllm-djl3055-4xl4-llama3-8b-tp4-lmi27-v0231-b128-ok", "tight"),
    ],
)
def test_the_djl_serving_records(rid: str, level: str, verdict_scorer: ModuleType) -> None:
    va = verdict_scorer
    (rec,) = [r for r in va.load("heldout44") if r["id"] == rid]
    assert va.judge(rec)[0] == level


def test_cli_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "llama-3-8b", "--runtime", "vllm", "--runtime-version", "0.23.0"]
    argv += ["-q", "bf16", "--ctx", "8192", "--gpu", "4xl4", "--vram", "22.04GiB", "--tp", "4"]
    argv += ["--gpu-memory-utilization", "0.92", "--max-num-seqs", "256", "--json", "--offline"]
    assert main(argv) == 4
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "tight"
    assert "VLLM_USE_V2_MODEL_RUNNER=0" in json.dumps(out)
    argv[argv.index("0.23.0")] = "0.22.0"
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "fits"


def _gemma_embed(version: str, *, pooling: bool) -> Estimate:
    s = InferenceSettings(
        runtime="vllm",
        quant="bf16",
        ctx=2048,
        runtime_version=version,
        llm_class=True,
        pooling=pooling,
    )
    return estimate("gemma-2-9b", s, hardware_for(parse_gpu_list("l4")), offline=True)


def test_a_pooling_model_keeps_the_v1_runner_and_runs_no_sampler() -> None:
    """``_is_default_v2_model_runner_model`` is for ``runner_type == "generate"``; the V1
    runner's ``profile_run`` calls ``_dummy_pooler_run`` for a pooling model, not
    ``_dummy_sampler_run`` (0.25.1 vllm/v1/worker/gpu_model_runner.py)."""
    gen, pool = _gemma_embed("2026-07-21", pooling=False), _gemma_embed("2026-07-21", pooling=True)
    assert gen.runtime_details.get("model_runner_v2") is True
    assert "model_runner_v2" not in pool.runtime_details
    assert pool.runtime_details["cudagraph_charged"] is True
    assert "sampler_request_bytes" not in pool.runtime_details
    # the profile peak is the forward's (no [rows, vocab] logits): smaller than the sampler's
    act_gen = gen.runtime_details["activation_peak_bytes"]
    act_pool = pool.runtime_details["activation_peak_bytes"]
    assert isinstance(act_gen, int)
    assert isinstance(act_pool, int)
    assert act_pool < act_gen
    spec = find_model("gemma-2-9b").spec()
    s = InferenceSettings(runtime="vllm", pooling=True)
    assert runs_model_runner_v2(spec, s, "dense") is False


@pytest.mark.parametrize(
    ("rid", "level"),
    [
        ("vllm-pr20144-l4-gemma2-9b-embed-8192-oom", "does_not_fit"),
        ("vllm-pr20144-l4-gemma2-9b-embed-2048-ok", "tight"),
        # PR #49351: vLLM had 0.64 GiB of KV, oomkit 1.57: a compiled pooling model on 0.25+
        # is at best tight (oomkit.estimate.vllm_compiled_pooling)
        ("vllm-pr49351-l4-gemma2-9b-embed-2048-oom", "tight"),
        ("vllm-pr49351-l4-gemma2-9b-embed-512-ok", "tight"),
    ],
)
def test_the_embedding_records(rid: str, level: str, verdict_scorer: ModuleType) -> None:
    va = verdict_scorer
    (rec,) = [r for r in va.load("heldout45") if r["id"] == rid]
    assert rec["settings"]["pooling"] is True
    assert va.judge(rec)[0] == level


def test_cli_pooling_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "gemma-2-9b", "-r", "vllm", "--runtime-version", "0.25.1", "-q", "bf16"]
    argv += ["--ctx", "2048", "--gpu", "l4", "--llm-class", "--pooling", "--json", "--offline"]
    main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["pooling"] is True
    assert out["runtime_details"]["cudagraph_charged"] is True


def test_pooling_is_validated_and_ignored_where_it_means_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The public dataclass refuses a non-bool ``pooling`` in one line; runtimes without a
    pooling runner say they ignore ``--pooling`` (as for other runtime-specific options)."""
    from oomkit.cli import main
    from oomkit.errors import InvalidSettingError

    with pytest.raises(InvalidSettingError, match="pooling must be true or false"):
        InferenceSettings(runtime="vllm", pooling="yes")  # type: ignore[arg-type]
    argv = ["estimate", "gemma-2-9b", "-r", "llamacpp", "--pooling", "--gpu", "l4", "--offline"]
    assert main(argv) == 0
    assert "llama.cpp does not use --pooling: ignored" in capsys.readouterr().err

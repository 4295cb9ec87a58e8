"""vLLM 0.25+: a pooling model under torch.compile (oomkit.estimate.vllm_compiled_pooling).

The real runs: vLLM issue #49672 (heldout46: BAAI/bge-multilingual-gemma2 at 2048 tokens on an
L4 under VLLM_COMPILE, no CUDA graphs: "Model loading took 17.22 GiB memory / Available KV cache
memory: -0.45 GiB") and its fix PR #49749 ("After the PyTorch 2.13 upgrade ... -0.45 GiB ...
versus 1.21 GiB in the earlier nightly"; the test moved to --gpu-memory-utilization 0.98);
PR #49351 (heldout45: the same model through the LLM class, 0.64 GiB of KV at 2048 tokens).
"""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from oomkit.api import estimate
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.verdict import verdict
from oomkit.estimate.vllm_compiled_pooling import DETAIL, compiled_pooling
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

L4 = hardware_for(parse_gpu_list("l4"))


def _embed(version: str | None, **kw: object) -> Estimate:
    s = InferenceSettings(
        runtime="vllm", quant="bf16", ctx=2048, runtime_version=version, pooling=True, **kw
    )
    return estimate("gemma-2-9b", s, L4, offline=True)


@pytest.mark.parametrize(
    ("version", "flag"),
    [
        ("0.24.0", False),  # no evidence before 0.25 (PR #20144's 2025 log matched the model)
        ("0.25.0", True),  # the v1-0.25 row: 0.25.x-0.28.x
        ("2026-07-24", True),  # vLLM #49672's main
        ("0.29.0", True),  # the test still needs util 0.98 in the 0.29.0-0.33.0 sdists
        ("2025-06-26", False),  # PR #20144: oomkit's rows matched the 8192-token log
    ],
)
def test_the_generation_rows_say_which_releases(version: str, flag: bool) -> None:
    gen = resolve_generation("vllm", version)
    assert bool(gen.effects.get("compiled_pooling_unmodelled", False)) is flag
    assert (DETAIL in _embed(version).runtime_details) is flag


def test_only_a_compiled_pooling_model() -> None:
    """``--enforce-eager`` sets CompilationMode.NONE (vllm/config/vllm.py l. 1162, 0.26.0):
    #49672's uncompiled launch of the same server came before the failing VLLM_COMPILE one."""
    on = InferenceSettings(runtime="vllm", pooling=True)
    assert compiled_pooling(on, unmodelled=True) is True
    assert compiled_pooling(on, unmodelled=False) is False
    eager = InferenceSettings(runtime="vllm", pooling=True, enforce_eager=True)
    assert compiled_pooling(eager, unmodelled=True) is False
    assert compiled_pooling(InferenceSettings(runtime="vllm"), unmodelled=True) is False
    assert DETAIL not in _embed("0.26.0", enforce_eager=True).runtime_details
    gen = estimate(
        "gemma-2-9b",
        InferenceSettings(runtime="vllm", quant="bf16", ctx=2048, runtime_version="0.26.0"),
        L4,
        offline=True,
    )
    assert DETAIL not in gen.runtime_details
    assert not any("PR #49749" in r for r in verdict(gen).risks)


def test_the_log_arithmetic_of_49672() -> None:
    """util x total - weights - available KV is what the profile charged: 3.50 GiB in the log,
    0.36 GiB in oomkit's rows (the 2048-token forward and the non-torch memory)."""
    est = _embed("2026-07-24")
    rd = est.runtime_details
    cap = est.devices[0].capacity_bytes
    assert cap is not None
    assert rd["default_util"] == 0.92  # vllm/config/cache.py l. 68
    weights, kv = rd["weights_bytes_per_rank"], rd["available_kv_cache_bytes"]
    assert isinstance(weights, int)
    assert isinstance(kv, int)
    assert abs(weights - 17.22 * GiB) < 0.01 * GiB  # "Model loading took 17.22 GiB memory"
    # cudagraph_mode=none in #49672: no graph estimate there, so oomkit's charge without it
    graphs = rd["cudagraph_bytes"] if rd["cudagraph_charged"] else 0
    assert isinstance(graphs, int)
    modelled = 0.92 * cap - weights - kv - graphs
    logged = 0.92 * cap - 17.22 * GiB + 0.45 * GiB
    assert abs(modelled - 0.36 * GiB) < 0.02 * GiB
    assert abs(logged - 3.50 * GiB) < 0.02 * GiB
    # PR #49749's earlier nightly: 1.21 GiB of KV, a 1.84 GiB charge: above the model too
    assert 0.92 * cap - 17.22 * GiB - 1.21 * GiB > modelled + 1.4 * GiB


def test_the_verdict_is_tight_with_the_fact_named() -> None:
    v = verdict(_embed("2026-07-24"))
    assert v.level == "tight"
    assert "PR #49749" in v.risks[0]
    assert "torch.compile" in v.risks[0]
    assert v.safe_change is not None
    assert "--enforce-eager" in v.safe_change
    assert verdict(_embed("2026-07-24", enforce_eager=True)).level == "fits"


@pytest.mark.parametrize(
    ("part", "rid", "level"),
    [
        ("heldout46", "vllm-49672-l4-bge-gemma2-9b-embed-2048-compile-oom", "tight"),
        ("heldout45", "vllm-pr49351-l4-gemma2-9b-embed-2048-oom", "tight"),
        ("heldout45", "vllm-pr49351-l4-gemma2-9b-embed-512-ok", "tight"),
        ("heldout45", "vllm-pr20144-l4-gemma2-9b-embed-2048-ok", "tight"),
        ("heldout45", "vllm-pr20144-l4-gemma2-9b-embed-8192-oom", "does_not_fit"),
    ],
)
def test_the_records(part: str, rid: str, level: str, verdict_scorer: ModuleType) -> None:
    (rec,) = [r for r in verdict_scorer.load(part) if r["id"] == rid]
    assert rec["settings"]["pooling"] is True
    assert verdict_scorer.judge(rec)[0] == level


def test_cli_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "gemma-2-9b", "-r", "vllm", "--runtime-version", "2026-07-24"]
    argv += ["-q", "bf16", "--ctx", "2048", "--gpu", "l4", "--pooling", "--json", "--offline"]
    main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "tight"
    assert out["runtime_details"][DETAIL] is True
    assert "--enforce-eager" in out["verdict_details"]["safe_change"]
    main([*argv, "--enforce-eager"])
    assert json.loads(capsys.readouterr().out)["verdict"] == "fits"


def test_plan_pooling_runs_eager_only_where_the_rule_covers_the_release(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``plan --pooling`` plans eager on releases whose compiled pooling profile is unmodelled
    (0.25+, and the newest when no version is given); on 0.24 the compiled profile is modelled
    and the plan keeps vLLM's default."""
    from oomkit.estimate.vllm_compiled_pooling import PLAN_NOTE

    base = ["plan", "qwen3-8b", "-r", "vllm", "--gpu", "l4", "--pooling", "--offline", "--json"]
    for version, eager in ((None, True), ("0.29.0", True), ("0.24.0", False)):
        argv = base if version is None else [*base, "--runtime-version", version]
        capsys.readouterr()
        main(argv)
        doc = json.loads(capsys.readouterr().out)
        assert ("--enforce-eager" in doc["plans"][0]["command"]) is eager, version
        assert (PLAN_NOTE in doc.get("notes", [])) is eager, version

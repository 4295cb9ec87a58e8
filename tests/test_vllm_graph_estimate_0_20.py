"""vLLM 0.20: the CUDA-graph estimate charged to the KV budget, the Triton sampler kept.

Read in the sdists on PyPI:

* 0.18.0, 0.19.0, 0.19.1 (vllm/v1/worker/gpu_worker.py ``determine_available_memory``): PR
  #30515's ``profile_cudagraph_memory`` runs inside ``memory_profiling`` before the KV cache is
  sized, but vllm/envs.py reads ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` with default
  ``"0"``, so ``cudagraph_memory_estimate_applied`` is 0 and the torch peak charged is read
  before the dummy capture (``profile_torch_peak``); ``CacheConfig.gpu_memory_utilization``
  defaults to 0.9. 0.17.0 has no graph profiling at all.
* 0.20.0 (uploaded 2026-04-27), 0.20.1, 0.20.2: the same code with default ``"1"`` and
  ``Field(default=0.92, ...)`` (PR #38284), although the comments and the startup line say
  "default since v0.21.0"; ``VLLM_USE_FLASHINFER_SAMPLER`` still reads ``... else None``
  (opt-in), so the dummy sampler goes through ``apply_top_k_top_p_triton`` from 8 rows on.
* 0.21.0: ``VLLM_USE_FLASHINFER_SAMPLER`` ``... else True`` (PR #40376).

The real run: heldout31's ``log-151b-vllm0191-qwen3-4b-bf16-lora-a30-u08-oom``
(Panteaforoutan/151B_SP26_Competition_ at b30c3a2, vllm_error.log, 0.19.1): "Estimated CUDA
graph memory: 4.79 GiB total", then "In v0.19, CUDA graph memory profiling will be enabled by
default ... To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1": the estimate was
logged, not subtracted, and the engine died capturing the graphs after the KV cache.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.verdict import Platform, Verdict, verdict
from oomkit.estimate.vllm_engines import vllm_engine
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

H100 = hardware_for(parse_gpu_list("h100-sxm"))
A30 = hardware_for(parse_gpu_list("a30"))


def _est(version: str, **kw: Any) -> Estimate:
    s = InferenceSettings(runtime="vllm", quant="bf16", ctx=8192, runtime_version=version, **kw)
    return estimate("llama-3.1-8b", s, H100, offline=True)


@pytest.mark.parametrize(
    ("version", "engine", "util", "charged", "triton", "flashinfer"),
    [
        ("0.17.1", "v1-0.17", 0.9, False, True, False),
        ("0.18.0", "v1-0.17", 0.9, False, True, False),
        ("0.19.1", "v1-0.17", 0.9, False, True, False),
        ("0.20.0", "v1-0.20", 0.92, True, True, False),
        ("0.20.2", "v1-0.20", 0.92, True, True, False),
        ("0.21.0", "current", 0.92, True, False, True),
    ],
)
def test_release_rows(
    version: str,
    engine: str,
    util: float,
    charged: bool,
    triton: bool,
    flashinfer: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", raising=False)
    assert resolve_generation("vllm", version).effects["vllm_engine"] == engine
    eng = vllm_engine(engine)
    assert (eng.default_util, eng.charges_cudagraphs) == (util, charged)
    assert (eng.triton_sampler, eng.flashinfer_sampler) == (triton, flashinfer)
    rd = _est(version).runtime_details
    assert (rd["engine"], rd["cudagraph_charged"]) == (engine, charged)


def test_0_20_takes_the_graphs_out_of_a_0_92_budget_with_0_19s_sampler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """0.19.1 -> 0.20.0: the budget grows from ceil(total x 0.9) to ceil(total x 0.92) and loses
    the graph estimate; the profile peak is the same Triton sampler's. 0.20 -> 0.21: the same
    budget and graphs, only the sampler's working set differs (FlashInfer)."""
    a, b, c = _est("0.19.1"), _est("0.20.0"), _est("0.21.0")
    ra, rb, rc = a.runtime_details, b.runtime_details, c.runtime_details
    assert ra["activation_peak_bytes"] == rb["activation_peak_bytes"]
    cap = H100.devices[0].capacity_bytes
    assert cap is not None
    graphs = rb["cudagraph_bytes"]
    assert isinstance(graphs, int)
    assert graphs > 0
    budget = math.ceil(cap * 0.92) - math.ceil(cap * 0.9)
    grown = int(rb["available_kv_cache_bytes"]) - int(ra["available_kv_cache_bytes"])  # type: ignore[call-overload]
    assert grown == budget - graphs
    sampler = int(rb["activation_peak_bytes"]) - int(rc["activation_peak_bytes"])  # type: ignore[call-overload]
    assert sampler > 0  # 256 rows: Triton 16 B per entry, FlashInfer 12
    kv_c = int(rc["available_kv_cache_bytes"])  # type: ignore[call-overload]
    assert kv_c - int(rb["available_kv_cache_bytes"]) == sampler  # type: ignore[call-overload]


def _lora_151b(version: str) -> Estimate:
    s = InferenceSettings(
        runtime="vllm",
        quant="bf16",
        ctx=4096,
        runtime_version=version,
        gpu_memory_utilization=0.8,
        llm_class=True,
        enable_lora=True,
    )
    return estimate("qwen3-4b", s, A30, offline=True)


def _terms(v: Verdict) -> list[str]:
    return [label for m in v.margins for label, _ in m.terms]


def test_151b_lora_run_on_0_19_1_only_logged_its_graph_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 151B run (0.19.1) captured its LoRA-specialised graphs (PIECEWISE=102, FULL=70)
    after the KV cache, in the 1 - util headroom: the verdict names that term. On 0.20.0 the
    same settings charge the graph estimate to the budget and the term goes. The safe change
    is the one the 0.19.1 log itself prints: set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1."""
    monkeypatch.delenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", raising=False)
    old, new = _lora_151b("0.19.1"), _lora_151b("0.20.0")
    ro, rn = old.runtime_details, new.runtime_details
    assert (ro["engine"], rn["engine"]) == ("v1-0.17", "v1-0.20")
    assert (ro["cudagraph_charged"], rn["cudagraph_charged"]) == (False, True)
    assert ro["cudagraph_sets"] == rn["cudagraph_sets"] == 2
    v_old, v_new = verdict(old, Platform()), verdict(new, Platform())
    assert v_old.level != "fits"
    assert any("CUDA graphs captured after the KV cache" in t for t in _terms(v_old))
    assert not any("CUDA graphs captured after the KV cache" in t for t in _terms(v_new))
    assert v_old.safe_change is not None
    assert v_old.safe_change.startswith("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1")
    assert "--enforce-eager" in v_old.safe_change


@pytest.mark.parametrize(
    ("version", "env", "charged"),
    [
        ("0.17.1", "1", False),  # no profile_cudagraph_memory in 0.17.0's gpu_worker.py
        ("0.18.0", "1", True),
        ("0.19.1", "1", True),
        ("0.19.1", "yes", False),  # vLLM would raise on int("yes"); not an integer: the default
        ("0.20.0", "0", False),
        ("0.21.0", "0", False),
        ("0.21.0", "1", True),
    ],
)
def test_the_variable_switches_the_estimate_where_the_release_profiles_graphs(
    version: str, env: str, charged: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.18.0-0.19.1 subtract ``cudagraph_memory_estimate`` only with the variable set to 1,
    0.20+ unless it is 0 (vllm/envs.py ``bool(int(os.getenv(...)))``, gpu_worker.py
    ``cudagraph_memory_estimate_applied``): the KV pool gives up exactly the graph pool."""
    monkeypatch.delenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", raising=False)
    default = _est(version).runtime_details
    monkeypatch.setenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", env)
    rd = _est(version).runtime_details
    assert rd["cudagraph_charged"] is charged
    graphs = int(rd["cudagraph_bytes"])  # type: ignore[call-overload]
    moved = int(default["available_kv_cache_bytes"]) - int(rd["available_kv_cache_bytes"])  # type: ignore[call-overload]
    assert moved == (int(charged) - int(bool(default["cudagraph_charged"]))) * graphs
    assert ("graph_estimate_env" in rd) is (not charged and version >= "0.18")

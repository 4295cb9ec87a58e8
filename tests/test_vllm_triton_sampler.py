"""vLLM 0.17-0.20: the profile run's dummy sampler goes through the Triton top-k/top-p kernel.

PR #33538 ("Triton-based Top-k and Top-p sampler kernels") is in the 0.17.0 and 0.17.1 sdists
(vllm/v1/sample/ops/topk_topp_sampler.py: ``if HAS_TRITON and logits.shape[0] >= 8: return
apply_top_k_top_p_triton(logits, k, p)``) and not in 0.16.0's, which still sorts the
``[max_num_seqs, vocab]`` fp32 logits. The figures below are TheBuccaneer/vllm-offload-profiles
at 547be90 (data/provenance/gpu_memory_configuration/*.log): vLLM 0.17.1 on one RTX 3090 whose
CUDA total is 23.54 GiB ("GPU 0 has a total capacity of 23.54 GiB" in the util-0.90 log),
``--max-model-len 8192``, bf16, 256 sequences by default.
"""

from __future__ import annotations

from typing import Any

import pytest

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.hf_activations import (
    SORT_SAMPLER_BYTES_PER_ENTRY,
    TRITON_SAMPLER_BYTES_PER_ENTRY,
    sampler_peak_bytes,
)
from oomkit.estimate.verdict import Platform, verdict
from oomkit.estimate.vllm_engines import vllm_engine
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

GiB = 2**30
HW = hardware_for(parse_gpu_list("rtx-3090"))
#: the card's CUDA total in these logs (the util-0.90 OOM message)
LOG_TOTAL_GIB = 23.54

#: (model, gpu_memory_utilization, "Available KV cache memory" in GiB), one per server log
LOGS = [
    ("qwen2.5-7b", 0.65, 0.49),  # kv_vram_qwen_gmem065_offload0.log (started)
    ("qwen2.5-7b", 0.65, 0.41),  # kv_vram_qwen_gmem065_offload0_failed.log (refused)
    ("qwen2.5-7b", 0.60, -0.7),  # kv_vram_qwen_gmem060_offload0_failed.log
    ("qwen2.5-7b", 0.86, 5.35),  # fixd_qwen_gmem086_offload0.log
    ("llama-3.1-8b", 0.90, 5.61),  # fixd_llama_gmem090_offload0_failed.log
    ("llama-3.1-8b", 0.86, 4.73),  # fixd_llama_gmem086_offload0.log
    ("llama-3.1-8b", 0.75, 2.13),  # kv_vram_llama_gmem075_offload0.log
    ("llama-3.1-8b", 0.70, 0.95),  # kv_vram_llama_gmem070_offload0_failed.log
]


def _est(model: str, util: float, version: str = "0.17.1") -> Any:
    s = InferenceSettings(
        runtime="vllm",
        quant="bf16",
        ctx=8192,
        runtime_version=version,
        gpu_memory_utilization=util,
    )
    return estimate(model, s, HW, offline=True)


def _non_kv_bytes(est: Any) -> int:
    r = est.runtime_details
    return int(r["weights_bytes_per_rank"] + r["activation_peak_bytes"] + r["non_torch_bytes"])


@pytest.mark.parametrize(
    ("version", "key"),
    [
        ("0.16.0", "v1-0.11.1"),
        ("0.17.0", "v1-0.17"),
        ("0.17.1", "v1-0.17"),
        ("0.19.1", "v1-0.18"),
        ("0.20.2", "v1-0.20"),  # the Triton sampler still, with the graph estimate charged
    ],
)
def test_triton_sampler_generation_starts_at_0_17_0(version: str, key: str) -> None:
    gen = resolve_generation("vllm", version)
    assert gen.key == key
    assert vllm_engine(str(gen.effects["vllm_engine"])).triton_sampler == (version != "0.16.0")


def test_triton_working_set_per_entry_and_the_sort_below_8_rows() -> None:
    """fp32 copy + softmax probs + exponential noise + at most one buffer row per sampled row,
    on top of the model-dtype logits; under 8 rows 0.17 still sorts."""
    spec = find_model("llama-3.1-8b").spec()
    assert TRITON_SAMPLER_BYTES_PER_ENTRY == 4 * 4
    assert sampler_peak_bytes(spec, n_seqs=256, triton=True) == 256 * 128256 * (2 + 16)
    assert sampler_peak_bytes(spec, n_seqs=4, triton=True) == 4 * 128256 * (
        2 + SORT_SAMPLER_BYTES_PER_ENTRY
    )


@pytest.mark.parametrize(("model", "util", "avail_gib"), LOGS)
def test_non_kv_matches_the_0_17_1_logs_of_a_3090(
    model: str, util: float, avail_gib: float
) -> None:
    """vLLM's own non-KV charge (``total x util - available KV``) is 14.81-14.89 GiB for Qwen2.5-7B
    and 15.51-15.58 GiB for Llama-3.1-8B in these logs. 0.17.1's estimate is at or above it by
    at most 0.25 GiB; the sort sampler of 0.16 would put it 0.74-0.93 GiB above (the false
    'No available memory for the cache blocks' at util 0.65 that heldout19 scored)."""
    logged = (LOG_TOTAL_GIB * util - avail_gib) * GiB
    new = _non_kv_bytes(_est(model, util))
    old = _non_kv_bytes(_est(model, util, "0.16.0"))
    assert 0 <= new - logged < 0.25 * GiB
    assert old - logged > 0.7 * GiB


def test_qwen_util_0_65_is_at_the_edge_on_0_17_1() -> None:
    """util 0.65 started once (0.49 GiB of KV) and was refused four minutes later (0.41 GiB
    against 0.44 needed): an edge. At the card's CUDA total (23.54 GiB, the catalog's figure
    since the capacity is CUDA's) the non-KV over-estimate above (0.13-0.21 GiB for these two
    logs) puts oomkit's pool short of one request by less than that over-estimate, where the
    sort sampler of 0.16 misses by 0.7 GiB or more; util 0.60 (-0.7 GiB) is refused in every
    generation."""
    v = verdict(_est("qwen2.5-7b", 0.65), Platform())
    (pool,) = [m for m in v.margins if m.what != "device memory"]
    assert -0.25 * GiB < pool.free_bytes < 0.25 * GiB
    assert verdict(_est("qwen2.5-7b", 0.65, "0.16.0"), Platform()).level == "does_not_fit"
    assert verdict(_est("qwen2.5-7b", 0.60), Platform()).level == "does_not_fit"

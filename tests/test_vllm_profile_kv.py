"""vLLM 0.18+: the KV cache that CUDA-graph profiling allocates before the KV budget exists.

``GPUModelRunner.profile_cudagraph_memory`` (vllm/v1/worker/gpu_model_runner.py, PR #30515,
0.18.0 on) first runs ``_init_minimal_kv_cache_for_profiling``: a real KV cache of
``min_blocks`` blocks, freed after the capture (:mod:`oomkit.estimate.vllm_profile_kv`).
``min_blocks`` is ``max_cudagraph_capture_size`` in the 0.18.0-0.25.0 sdists and
``min(max_num_reqs, max_cudagraph_capture_size)`` from the 0.26.0 sdist (0.27.0 too); the
capture size defaults to ``min(2 x max_num_seqs, 512)`` capped at ``max_num_batched_tokens``.

Qwen3.8-27B's block (as tests/test_vllm_mamba_blocks.py derives it): a 3,211,264-byte page in
each of 16 shared tensors. With an fp8 KV cache the attention block doubles to 1,568 tokens of
2,048 bytes: the same 3,211,264-byte page. On an RTX 5090 (default 256 sequences, 2,048
batched tokens) 0.26.1rc1.dev608 allocates min(256, 512) = 256 blocks: 16 tensors of
256 x 3,211,264 B = 822,083,584 B = 784.00 MiB, the "Tried to allocate 784.00 MiB" of
vllm-project/recipes PR #810 (at util 0.80 and 0.93 alike), 12.25 GiB in all. vLLM 0.19.1 would
allocate the capture size, 512 blocks: 24.50 GiB.
"""

from __future__ import annotations

from typing import Any

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import MiB

_PAGE = 3_211_264
_GROUP = 16
_CAPTURE = "CUDA-graph memory profiling allocates"


def _est(gpu: str, **kw: Any) -> Estimate:
    s = InferenceSettings(runtime="vllm", **kw)
    hw = hardware_for(parse_gpu_list(gpu), n_devices=1)
    return estimate("qwen3.8-27b", s, hw, offline=True)


def _recipe810(**kw: Any) -> Estimate:
    return _est(
        "rtx-5090",
        quant="nvfp4",
        ctx=32768,
        cache_type_k="fp8",
        cache_type_v="fp8",
        runtime_version="0.26.1rc1.dev608",
        **kw,
    )


def test_recipe810_profile_cache_is_16_tensors_of_784_mib() -> None:
    for util in (0.80, 0.93):
        rd = _recipe810(gpu_memory_utilization=util).runtime_details
        assert rd["max_num_seqs"] == 256
        assert rd["profile_kv_cache_bytes"] == 256 * _PAGE * _GROUP
        assert 784 * MiB == 256 * _PAGE  # one tensor: the allocation the recipe's OOM names


def test_eager_allocates_no_profile_cache() -> None:
    rd = _recipe810(enforce_eager=True).runtime_details
    assert "profile_kv_cache_bytes" not in rd


def test_0_19_allocates_the_capture_size_and_dies_at_any_util() -> None:
    # L40S (44.42 GiB), FP8 weights 27.54 GiB: 512 blocks (24.50 GiB) cannot sit next to them;
    # 0.19.1 has no Mamba-blocks refusal, so before this check the run read "fits"
    for util in (0.5, 0.9):
        est = _est(
            "l40s", quant="fp8", ctx=32768, runtime_version="0.19.1", gpu_memory_utilization=util
        )
        assert est.runtime_details["profile_kv_cache_bytes"] == 512 * _PAGE * _GROUP
        assert any(_CAPTURE in b for b in est.blockers)
        assert verdict(est).level == "does_not_fit"


def test_fewer_sequences_shrink_the_profile_cache() -> None:
    # 128 sequences: a 256-size capture under 0.19.1 (12.25 GiB), 128 blocks under 0.26.0
    old = _est("l40s", quant="fp8", ctx=32768, runtime_version="0.19.1", max_num_seqs=128)
    assert old.runtime_details["profile_kv_cache_bytes"] == 256 * _PAGE * _GROUP
    assert not any(_CAPTURE in b for b in old.blockers)
    new = _est("l40s", quant="fp8", ctx=32768, runtime_version="0.26.0", max_num_seqs=128)
    assert new.runtime_details["profile_kv_cache_bytes"] == 128 * _PAGE * _GROUP
    assert not any(_CAPTURE in b for b in new.blockers)

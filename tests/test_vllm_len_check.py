"""vLLM before 0.2.7 starts with a KV cache shorter than max_model_len (PR #2163).

vllm#1437: CodeLlama-7B-Instruct (bf16, config length 16384) on one A10G with vLLM
0.2.1.post1 and default settings started ("I'm able to start it when tensor-parallel-size=1").
PR #2163 ("Raise error when max_model_len is larger than KV cache size", 2023-12-18: "Currently,
vLLM hangs when the length of a single sequence is larger than the system's KV cache size") is
first in 0.2.7; from then ``LLMEngine._init_cache`` refuses to start.
"""

from __future__ import annotations

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _codellama(version: str) -> Estimate:
    s = InferenceSettings(runtime="vllm", quant="bf16", ctx=16384, tp=1, runtime_version=version)
    return estimate("codellama-7b", s, hardware_for(parse_gpu_list("a10g"), n_devices=1))


def test_no_start_up_length_check_before_0_2_7() -> None:
    old, new = _codellama("0.2.1.post1"), _codellama("0.2.7")
    for est in (old, new):  # the same pool both times: ~12K tokens of the 16384 asked for
        fits = est.runtime_details["max_model_len_that_fits"]
        assert isinstance(fits, int)
        assert 0 < fits < 16384
    assert not old.blockers
    assert old.runtime_details["kv_len_check"] is False
    v = verdict(old)
    assert v.level == "tight"  # it starts; a request longer than the pool hangs
    assert any("hangs" in r for r in v.risks)
    assert any("PR #2163" in n for n in old.assumptions)
    assert "kv_len_check" not in new.runtime_details
    assert any("max_model_len 16384" in b for b in new.blockers)
    assert verdict(new).level == "does_not_fit"


def test_the_check_starts_with_the_0_2_7_row() -> None:
    assert resolve_generation("vllm", "0.2.6").effects.get("kv_len_check") is False
    assert resolve_generation("vllm", "0.2.7").effects.get("kv_len_check", True) is True
    assert resolve_generation("vllm", "0.2.0").effects.get("kv_len_check") is False


def test_v0_sliding_window_layers_count_at_full_length_in_the_longest_that_fits() -> None:
    # V0 allocates every layer alike (no hybrid manager): Mistral-7B-v0.1's 4096-token window
    # does not shorten a request's blocks, so the longest max_model_len is the pool over the
    # full per-token bytes (it had read 4194304, "the pool holds more", for a pool 1.5 GiB
    # short of one 32768-token request)
    s = InferenceSettings(runtime="vllm", quant="bf16", ctx=32768, runtime_version="0.3.0")
    est = estimate("mistral-7b-v0.1", s, hardware_for(parse_gpu_list("a10"), n_devices=1))
    per_token = 32 * 2 * 8 * 128 * 2  # layers x (K, V) x KV heads x head_dim x bf16
    assert est.runtime_details["kv_bytes_per_token_per_rank"] == per_token
    pool = est.runtime_details["available_kv_cache_bytes"]
    assert isinstance(pool, int)
    fits = est.runtime_details["max_model_len_that_fits"]
    assert fits == pool // (per_token * 16) * 16  # whole 16-token blocks
    assert fits == est.runtime_details["kv_cache_tokens"]
    assert fits < 32768
    assert any("max_model_len 32768" in b for b in est.blockers)

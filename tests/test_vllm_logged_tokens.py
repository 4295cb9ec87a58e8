"""vLLM 0.21.0: "GPU KV cache size" is ``int(max_concurrency x max_model_len)``.

The 0.21.0 sdist's vllm/v1/core/kv_cache_utils.py ``_report_kv_cache_config`` logs
``num_tokens = int(max_concurrency * max_model_len)`` with ``max_concurrency = num_blocks /
cdiv(sum of the groups' max_memory_usage_bytes, page_size)``
(``get_max_concurrency_for_kv_cache_config``); the 0.20.0 sdist logs ``num_blocks //
len(kv_cache_groups) * min_block_size``. The pool itself (``num_blocks``) is sized the same way in
both. vllm-project/vllm#43308: Gemma 4 31B AWQ on an A100 80GB at util 0.9 logs ~55k tokens on
0.20.0 and ~525k on 0.21.0 with the same ~50 GB of KV memory.

gemma-4-31b: 60 layers, 50 sliding (window 1024, 16 KV heads x 256) and 10 full (4 KV heads x
512, half the page), so the hybrid manager makes 5 sliding groups + 1 full group of 10 layers
and the full layers hold 32 tokens a block (``unify_kv_cache_spec_page_size``). One request of
32768 tokens at max_num_batched_tokens 2048 needs: full group cdiv(32768, 32) = 1024 blocks;
each sliding group cdiv(min(1023 + 2048, 32768), 16) + 1 = 192 + 1 = 193 blocks; 1024 + 5 x 193
= 1989 blocks.
"""

from __future__ import annotations

from typing import Any

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _est(version: str, ctx: int, **kw: Any) -> Estimate:
    s = InferenceSettings(
        runtime="vllm",
        quant="awq",
        ctx=ctx,
        gpu_memory_utilization=0.9,
        runtime_version=version,
        **kw,
    )
    hw = hardware_for(parse_gpu_list("a100-80gb-sxm4"), n_devices=1)
    return estimate("gemma-4-31b", s, hw, offline=True)


def _int(est: Estimate, key: str) -> int:
    v = est.runtime_details[key]
    assert isinstance(v, int)
    return v


def test_43308_gemma4_logged_tokens_by_release() -> None:
    old, new = _est("0.20.0", 32768), _est("0.21.0", 32768)
    assert _int(old, "kv_cache_groups") == _int(new, "kv_cache_groups") == 6
    # 0.20: num_blocks // 6 x 16 (the issue's ~55k)
    blocks_old = _int(old, "num_gpu_blocks")
    assert _int(old, "kv_cache_tokens") == blocks_old // 6 * 16
    assert 45_000 < _int(old, "kv_cache_tokens") < 65_000
    # 0.21: num_blocks / 1989 x 32768
    blocks_new = _int(new, "num_gpu_blocks")
    assert _int(new, "kv_cache_tokens") == int(blocks_new / 1989 * 32768)
    # at 131072 tokens: full cdiv(131072, 32) = 4096 + 5 x 193 = 5061 blocks a request; the
    # issue's ~525k (its max_model_len is not given; 0.21 grows with it)
    big = _est("0.21.0", 131072)
    assert _int(big, "kv_cache_tokens") == int(_int(big, "num_gpu_blocks") / 5061 * 131072)
    assert 450_000 < _int(big, "kv_cache_tokens") < 650_000
    # a reporting change: the pool and the verdict do not move
    assert abs(blocks_new - blocks_old) < blocks_old // 100
    assert (
        verdict(old, Platform(display=False)).level == verdict(new, Platform(display=False)).level
    )


def test_one_group_model_logs_concurrency_tokens() -> None:
    """A model of one layer type: cdiv(max_model_len, 16) blocks a request, so an odd
    max_model_len logs a little under num_blocks x 16 on 0.21 (exactly that on 0.20)."""
    s = InferenceSettings(runtime="vllm", quant="bf16", ctx=2001, runtime_version="0.21.0")
    est = estimate("opt-125m", s, hardware_for(parse_gpu_list("l4"), n_devices=1), offline=True)
    blocks = _int(est, "num_gpu_blocks")
    assert _int(est, "kv_cache_groups") == 1
    assert _int(est, "kv_cache_tokens") == int(blocks / 126 * 2001)  # cdiv(2001, 16) = 126
    s20 = InferenceSettings(runtime="vllm", quant="bf16", ctx=2001, runtime_version="0.20.0")
    e20 = estimate("opt-125m", s20, hardware_for(parse_gpu_list("l4"), n_devices=1), offline=True)
    assert _int(e20, "kv_cache_tokens") == _int(e20, "num_gpu_blocks") * 16

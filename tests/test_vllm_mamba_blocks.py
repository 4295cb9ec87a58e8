"""vLLM 0.20.0 on: a hybrid model refuses to start when max_num_seqs exceeds its Mamba blocks.

``CompilationConfig.resolve_cudagraph_mode_and_sizes`` (vllm/config/compilation.py, the 0.20.0
sdist on; not 0.19.0's): "max_num_seqs (1024) exceeds available Mamba cache blocks (556)"
(vllm-project/recipes PR #831: Qwen3.8-27B BF16 at util 0.95 on a 96 GB RTX PRO 6000, the
default 1024 sequences). oomkit (:mod:`oomkit.estimate.vllm_mamba_blocks`):

* Qwen3.8-27B: 16 full-attention layers (4 KV heads x 256, K and V, bf16: 4,096 bytes a token)
  and 48 Gated DeltaNet layers: conv state 30,720 bf16 elements (61,440 B) + temporal state
  786,432 float32 elements (mamba_ssm_dtype float32: 3,145,728 B) = a 3,207,168-byte Mamba page;
* attention block = 16 x cdiv(3,207,168, 16 x 4,096) = 16 x 49 = 784 tokens, page 784 x 4,096
  = 3,211,264 bytes (the Mamba page padded to it);
* group_size = 16 (48 >= 1.5 x 16: the smaller count), so num_blocks = pool // 3,211,264 // 16.
"""

from __future__ import annotations

from typing import Any

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

_PAGE = 784 * 4096
_GROUP = 16


def _est(**kw: Any) -> Estimate:
    s = InferenceSettings(
        runtime="vllm", quant="bf16", ctx=262144, gpu_memory_utilization=0.95, **kw
    )
    hw = hardware_for(parse_gpu_list("rtx-pro-6000-blackwell"), n_devices=1)
    return estimate("qwen3.8-27b", s, hw, offline=True)


def test_recipes831_bf16_1024_seqs_is_refused() -> None:
    est = _est()
    rd = est.runtime_details
    pool = rd["available_kv_cache_bytes"]
    assert isinstance(pool, int)
    blocks = pool // _PAGE // _GROUP
    assert rd["mamba_cache_blocks"] == blocks
    assert rd["max_num_seqs"] == 1024 > blocks  # vLLM logged 556 blocks
    assert any("exceeds available Mamba cache blocks" in b for b in est.blockers)
    assert verdict(est).level == "does_not_fit"


def test_fewer_seqs_or_eager_start() -> None:
    blocks = _est().runtime_details["mamba_cache_blocks"]
    assert isinstance(blocks, int)
    fewer = _est(max_num_seqs=blocks)
    assert not any("Mamba cache blocks" in b for b in fewer.blockers)
    eager = _est(enforce_eager=True)
    assert not any("Mamba cache blocks" in b for b in eager.blockers)
    assert "mamba_cache_blocks" not in eager.runtime_details


def test_before_0_20_no_check() -> None:
    old = _est(runtime_version="0.19.0")
    assert not any("Mamba cache blocks" in b for b in old.blockers)
    assert "mamba_cache_blocks" not in old.runtime_details

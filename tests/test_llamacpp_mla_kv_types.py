"""K and V cache types of MLA models (DeepSeek-V2/V3/R1) across llama.cpp generations.

What each build does with ``-ctk X`` and the default ``-ctv f16`` on an MLA model:

* before PR #12801 (April 2025): no MLA cache; K is ``n_head x (qk_nope + qk_rope)`` of type K
  and V ``n_head x v_head_dim`` of type V, two tensors of their own types: the pair starts.
* PR #12801 .. PR #19067 (January 2026): K is the latent + rope key (576) of type K and V the
  latent again (512) of type V: the pair starts.
* PR #19067 .. PR #25871 (July 2026): V-less cache, V is a view of K; ``-ctv`` sets nothing
  (llama.cpp#26382: "-ctv was a placebo for MLA models in previous versions"): the pair starts.
* PR #25871 on: ``llama_init_from_model`` refuses it ('model does not support different K (...)
  and V (...) cache types', llama.cpp#26382 at build 10216).

The two runs below are the heldout18 collector's, dropped there because oomkit refused them.
"""

from __future__ import annotations

from typing import Any

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.verdict import Platform, device_unified_bytes, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.quant.ggml_types import ggml_tensor_bytes
from oomkit.spec.settings import InferenceSettings

#: llama.cpp#13978: DeepSeek-V3-0324 UD-Q2_K_XL on an RTX 5090 + RTX 5080, b5572 (June 2025),
#: ``-ngl 10 -ts 0.6667,0.3333 -ctk q8_0 -c 8192``: died, 'cudaMalloc failed: out of memory ...
#: failed to allocate buffer for kv cache'
RUN_13978: dict[str, Any] = {
    "model": "deepseek-v3",
    "gpu": "rtx-5090,rtx-5080",
    "quant": "UD-Q2_K_XL",
    "ctx": 8192,
    "n_gpu_layers": 10,
    "tensor_split": (0.6667, 0.3333),
    "cache_type_k": "q8_0",
    "runtime_version": "b5572",
}
#: llama.cpp#11474 (January 2025): DeepSeek-R1 UD-IQ1_S (IQ1_S stands in for Unsloth's mix) on
#: 2x A100 80GB, ``--n-gpu-layers 61 --cache-type-k q4_0 --ctx-size 8192``: served
RUN_11474: dict[str, Any] = {
    "model": "deepseek-r1",
    "gpu": "2xa100-80gb-sxm",
    "quant": "IQ1_S",
    "ctx": 8192,
    "n_gpu_layers": 61,
    "cache_type_k": "q4_0",
    "runtime_version": "2025-01-31",
}


def _run(run: dict[str, Any], **over: Any) -> tuple[Estimate, str]:
    kw = {**run, **over}
    model, gpu = kw.pop("model"), kw.pop("gpu")
    gpus = parse_gpu_list(gpu)
    hw = hardware_for(gpus)
    est = estimate(model, InferenceSettings(runtime="llama.cpp", **kw), hw, offline=True)
    plat = Platform(
        segments=tuple(g.segment for g in gpus),
        unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices),
    )
    return est, verdict(est, plat).level


def _kv(est: Estimate) -> list[int]:
    return [d.kv_cache_bytes for d in est.devices]


def test_generations_of_the_check() -> None:
    for version, refuses in (
        ("2025-01-31", False),
        ("b5572", False),
        ("2026-03-01", False),
        ("2026-07-17", False),
        ("2026-07-18", True),
        (None, True),
    ):
        gen = resolve_generation("llama.cpp", version)
        assert bool(gen.effects.get("mla_kv_types_equal", True)) is refuses, version


def test_13978_b5572_keeps_a_q8_0_latent_and_an_f16_v_and_dies() -> None:
    est, level = _run(RUN_13978)
    # 61 layers, the last 10 offloaded and split 7 / 3 by -ts; per layer and cell the K latent
    # (512 + 64) in q8_0 and the V latent (512) in f16
    per_layer = 8192 * (ggml_tensor_bytes("Q8_0", 576) + ggml_tensor_bytes("F16", 512))
    assert _kv(est) == [7 * per_layer, 3 * per_layer]
    # the run died at the KV buffer's allocation, before any compute buffer is reserved: the
    # weights filled the 5090 (Unsloth's UD-Q2_K_XL upcasts tensors that the Q2_K stand-in does
    # not). A whole staged CPU layer in the compute buffer made this "does not fit" until the
    # one-weight-copy split model (PR #6083, llamacpp_offload_splits); it must not read "fits"
    assert level != "fits"
    # the same run with one type (what the old refusal asked for) has a larger f16 K
    f16, _ = _run(RUN_13978, cache_type_k="f16")
    assert sum(_kv(f16)) > sum(_kv(est))


def test_11474_pre_mla_build_keeps_full_heads_q4_0_k_and_f16_v_and_serves() -> None:
    est, level = _run(RUN_11474)
    # before PR #12801: 128 heads x (128 + 64) K in q4_0, 128 heads x 128 V in f16; 31 + 30
    per_layer = 8192 * (ggml_tensor_bytes("Q4_0", 128 * 192) + ggml_tensor_bytes("F16", 128 * 128))
    assert _kv(est) == [31 * per_layer, 30 * per_layer]
    assert level == "fits"  # the run served


def test_v_less_builds_ignore_the_v_type() -> None:
    est, _ = _run(RUN_13978, runtime_version="2026-03-01")
    per_layer = 8192 * ggml_tensor_bytes("Q8_0", 576)
    assert _kv(est) == [7 * per_layer, 3 * per_layer]
    same, _ = _run(RUN_13978, runtime_version="2026-03-01", cache_type_v="q8_0", flash_attn=True)
    assert _kv(same) == _kv(est)


@pytest.mark.parametrize("version", ["2026-08-01", None])
def test_builds_since_pr_25871_refuse_the_pair(version: str | None) -> None:
    with pytest.raises(InvalidSettingError, match="PR #25871"):
        _run(RUN_13978, runtime_version=version)
    with pytest.raises(InvalidSettingError, match="different K and V"):
        _run(RUN_11474, runtime_version=version)
    # one type for both still starts (quantized V under flash attention)
    est, _ = _run(RUN_13978, runtime_version=version, cache_type_v="q8_0", flash_attn=True)
    assert sum(_kv(est)) == 10 * 8192 * ggml_tensor_bytes("Q8_0", 576)


def test_quantized_v_still_needs_flash_attention_before_pr_25871() -> None:
    with pytest.raises(InvalidSettingError, match="needs flash attention"):
        _run(RUN_13978, cache_type_k="q8_0", cache_type_v="q8_0", flash_attn=False)

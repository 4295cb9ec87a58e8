"""Ollama's runner choice per release (oomkit.estimate.ollama_runner) on real runs' settings."""

from __future__ import annotations

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import parse_size

MiB = 2**20
# San2k/aifood d5216cd GPU_OPTIMIZATION_RESULTS.md (2026-03-02, Ollama, release not stated):
# qwen2.5:14b-instruct (Q4_K_M) on an A40-8Q vGPU (8 GiB), num_ctx 8192, num_gpu 30:
# 'CUDA0 model buffer: 4693 MiB, CUDA0 KV buffer: 960 MiB, CUDA0 compute buffer: 956 MiB';
# num_gpu 35 / 36 / 38 ... 'Out of memory'
A40_8Q = hardware_for(parse_gpu_list("a40"), vram_bytes=parse_size("8GiB"))
PLAT = Platform(os="linux", segments=tuple(g.segment for g in parse_gpu_list("a40")))


def _aifood(ngl: int, version: str = "2026-03-02", **kw: object) -> Estimate:
    s = InferenceSettings(
        runtime="ollama",
        quant="Q4_K_M",
        ctx=8192,
        n_gpu_layers=ngl,
        runtime_version=version,
        **kw,  # type: ignore[arg-type]
    )
    return estimate("qwen2.5-14b", s, A40_8Q, offline=True)


def _buffer(est: Estimate, kind: str) -> float:
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    return float(b[kind]["CUDA0"]) / MiB


def test_aifood_a40_8q_llama_runner_buffers() -> None:
    """qwen2 is not in OllamaEngineRequired: the llama runner reserves n_ubatch logit rows, and
    with the output layer on the CPU the GPU stages output.weight (609 MiB Q6_K) plus 512 x
    152064 f32 logits for the op-offloaded matmul: 916 MiB modelled vs 956 MiB logged (the
    Ollama-engine reading, one output row, gave 285 MiB)."""
    est = _aifood(30)
    ollama = est.runtime_details["ollama"]
    assert isinstance(ollama, dict)
    assert ollama["engine"] == "llama runner"
    assert ollama["flash_attention"] is True  # 0.13.4+: llama.cpp's auto, resolved on
    assert round(_buffer(est, "model")) == 4693
    assert _buffer(est, "kv") == 960
    assert abs(_buffer(est, "compute") - 956) / 956 < 0.05
    assert verdict(est, PLAT).level == "fits"  # num_gpu 30 served
    for ngl in (35, 36, 38, 42, 99):  # each 'Out of memory'
        assert verdict(_aifood(ngl), PLAT).level != "fits", ngl


def test_llama_runner_before_0_13_4_has_flash_attention_off() -> None:
    """Before PR #13052 the llama runner took OLLAMA_FLASH_ATTENTION with a default list
    (GGML.FlashAttention) that names no llama-runner architecture."""
    before = _aifood(30, "0.13.3").runtime_details["ollama"]
    after = _aifood(30, "0.13.4").runtime_details["ollama"]
    assert isinstance(before, dict)
    assert isinstance(after, dict)
    assert before["flash_attention"] is False
    assert after["flash_attention"] is True


def test_fa_auto_from_0_13_4_drops_a_quantized_kv_type() -> None:
    """OLLAMA_KV_CACHE_TYPE=q8_0 without OLLAMA_FLASH_ATTENTION: f16 on the llama runner (0.13.4:
    'must be enabled'; before: 'quantized kv cache requested but flash attention disabled');
    with OLLAMA_FLASH_ATTENTION=1 the q8_0 cache stays."""
    for version in ("0.13.3", "0.13.4"):
        est = _aifood(30, version, cache_type_k="q8_0", cache_type_v="q8_0")
        assert _buffer(est, "kv") == 960, version
    fa = _aifood(30, "0.13.4", cache_type_k="q8_0", cache_type_v="q8_0", flash_attn=True)
    assert _buffer(fa, "kv") == 510  # q8_0: 34 bytes per 32 values


def test_llama_runner_keeps_llamacpp_kv_streams() -> None:
    """The same notes' fix: num_ctx 4096 with four parallel sequences at num_gpu 30 ran
    ('480 MiB x 4'). The llama runner never sets kv_unified, so each sequence's KQ spans its own
    4096 cells; the Ollama engine (qwen3 here) keeps one stream."""
    s = InferenceSettings(
        runtime="ollama",
        quant="Q4_K_M",
        ctx=4096,
        parallel=4,
        n_gpu_layers=30,
        runtime_version="2026-03-02",
    )
    runner = estimate("qwen2.5-14b", s, A40_8Q, offline=True)
    kv = next(c for c in runner.devices[0].components if c.category == "kv_cache")
    assert kv.inputs["n_stream"] == 4
    assert kv.n_bytes == 1920 * MiB
    assert verdict(runner, PLAT).level != "does_not_fit"
    engine = estimate("qwen3-14b", s, A40_8Q, offline=True)
    kv3 = next(c for c in engine.devices[0].components if c.category == "kv_cache")
    assert kv3.inputs["n_stream"] == 1

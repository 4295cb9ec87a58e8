"""Ollama caps num_ctx at the model's trained context (the GGUF's context_length): llm/server.go
NewLlamaServer, "requested context size too large for model", from v0.9.3 (PR #11175) and in
0.1.32 alone before it (PR #3988 of 0.1.33 lifted that first cap). num_ctx 1000000 on
Llama-3.1-8B was estimated with a 1M-token KV cache (110 GiB) where Ollama allocates 131072."""

from __future__ import annotations

import pytest

from oomkit.api import load_model
from oomkit.estimate.ollama import estimate_ollama
from oomkit.hardware.catalog import find_gpu
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings

SPEC = load_model("llama-3.1-8b")
HW = Hardware(devices=(find_gpu("h100-sxm").to_device_target(),))


def _kv(ctx: int, version: str | None = None, parallel: int | None = None) -> int:
    s = InferenceSettings(runtime="ollama", ctx=ctx, runtime_version=version, parallel=parallel)
    est = estimate_ollama(SPEC, s, HW)
    return est.devices[0].kv_cache_bytes + est.host.kv_cache_bytes


@pytest.mark.parametrize("version", [None, "0.9.3", "0.12.0", "0.1.32", "2025-09-01"])
def test_num_ctx_above_the_trained_context_is_capped(version: str | None) -> None:
    assert SPEC.max_position_embeddings == 131072
    assert _kv(1_000_000, version) == _kv(131072, version)


@pytest.mark.parametrize("version", ["0.9.2", "0.1.33", "0.6.0", "2025-03-01"])
def test_releases_without_the_cap_allocate_what_was_asked(version: str) -> None:
    # OLLAMA_NUM_PARALLEL=1: unset, 0.2.0-0.9.x would pick 2 or 4 where every layer still fits
    # (oomkit.estimate.ollama_parallel), which doubles 131072 but not 262144 on an H100
    assert _kv(262144, version, parallel=1) > _kv(131072, version, parallel=1)


def test_the_cap_is_per_sequence() -> None:
    """num_ctx is per sequence; the runner's KV is num_ctx x num_parallel (0.9.3 capped
    NumCtx / numParallel, current main NumCtx before it is multiplied)."""
    assert _kv(1_000_000, parallel=2) == _kv(131072, parallel=2)
    assert _kv(131072, parallel=2) > _kv(131072)


def test_the_note_says_so() -> None:
    s = InferenceSettings(runtime="ollama", ctx=1_000_000)
    est = estimate_ollama(SPEC, s, HW)
    assert any("requested context size too large for model" in a for a in est.assumptions)

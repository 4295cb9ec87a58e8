"""llama.cpp past the model's trained context: the estimate allocates every cell, as llama.cpp
does, and says that llama-server will not use the ones above n_ctx_train (a -c 200000 run of
Llama-3.1-8B, trained on 131072, was estimated without a word about it)."""

from __future__ import annotations

from oomkit.api import load_model
from oomkit.estimate.llamacpp import estimate_llamacpp
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings

SPEC = load_model("llama-3.1-8b")
HW = Hardware()


def _est(ctx: int, parallel: int | None = None) -> tuple[int, tuple[str, ...]]:
    s = InferenceSettings(runtime="llama.cpp", ctx=ctx, parallel=parallel)
    est = estimate_llamacpp(SPEC, s, HW)
    kv = sum(d.kv_cache_bytes for d in est.devices) + est.host.kv_cache_bytes
    return kv, est.assumptions


def test_past_the_trained_context_is_allocated_and_said() -> None:
    kv_over, notes = _est(200000)
    kv_train, notes_train = _est(131072)
    assert kv_over > kv_train  # llama.cpp allocates what -c asks
    assert any("possible training context overflow" in n for n in notes)
    assert not any("trained context" in n for n in notes_train)


def test_per_slot_context_decides() -> None:
    """-c 200000 over 2 split slots is 100000 per slot: within the trained context."""
    _, notes = _est(200000, parallel=2)
    assert not any("trained context" in n for n in notes)

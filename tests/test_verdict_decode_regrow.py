"""The transformers allocator term's decode bound: the prefill's K/V blocks that a
DynamicCache's first decode step re-requests one token larger (issue #13: OLMo 2 b4 p4000 on
an H100 reserved 4.04 GiB above its allocated peak and was a false "fits")."""

from __future__ import annotations

import json
from typing import Any

from gpu_results import RESULTS, load_script
from oomkit.inprocess.probe_allocator import replay, smallest_limit

MiB = 1 << 20


def test_a_freed_prefill_block_cannot_serve_the_one_token_larger_copy() -> None:
    """The allocator's rules (c10/cuda/CUDACachingAllocator.cpp): K0 and K1, each 125 MiB,
    share a 250 MiB segment split for an earlier activation. The decode's copy of K0 one
    token larger (125 MiB + 32 KiB) fits no free block and takes a new 126 MiB segment
    (kRoundLarge); freeing K0 leaves a 125 MiB hole beside the live K1 (no merge), which the
    copy of K1 cannot use either, and which the OOM retry cannot release (its segment holds
    K1): the run needs the stranded block on top of what it allocates, at most the prefill's
    K/V."""
    kv, kv1 = 125 * MiB, 125 * MiB + 32 * 1024
    trace = [
        (0, 2 * kv), (0, -1),  # an activation: one 250 MiB segment, freed
        (1, kv), (2, kv),  # the prefill's K0, K1 carved from it (exact fit)
        (3, kv1), (1, -1),  # decode: K0' then the old K0 freed (a hole beside K1)
        (4, kv1), (2, -1),  # K1' then the old K1 freed
    ]  # fmt: skip
    r = replay(trace)
    assert r.reserved_peak_bytes == 250 * MiB + 2 * 126 * MiB
    need = smallest_limit(trace)
    assert need == r.reserved_peak_bytes  # no retry can free the hole while K1 is live
    stranded = need - r.allocated_peak_bytes
    assert 0 < stranded <= 2 * kv  # what decode_regrow_bytes bounds


def _olmo() -> dict[str, Any]:
    doc = json.loads((RESULTS / "verdict_boundary_holdout4_h100.json").read_text())
    return next(r for r in doc["results"] if r["model"] == "olmo-2-7b")


def test_olmo2_regrow_is_every_layers_k_and_v_at_the_prompt() -> None:
    """32 layers x K and V of [4, 32, 4000, 128] bf16 = 125 MiB each: 8000 MiB."""
    import oomkit
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    mod = load_script("verdict_boundary")
    r = _olmo()
    est = oomkit.estimate_model(
        mod.spec_for(r["model"], r["overrides"]),
        mod.settings_for(r["batch"], r["prompt"], r["new"], r["attn_implementation"]),
        hardware_for((find_gpu("h100-sxm"),)),
    )
    assert est.runtime_details["decode_regrow_bytes"] == 32 * 2 * 125 * MiB


def test_no_regrow_without_a_decode_step_or_with_a_static_cache() -> None:
    import oomkit
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    mod = load_script("verdict_boundary")
    spec = mod.spec_for("olmo-2-7b", {})
    hw = hardware_for((find_gpu("h100-sxm"),))
    one = oomkit.estimate_model(spec, mod.settings_for(4, 4000, 1, "sdpa"), hw)
    assert one.runtime_details["decode_regrow_bytes"] == 0
    static = oomkit.InferenceSettings(
        runtime="transformers", quant="bf16", ctx=4000, max_new_tokens=16, parallel=4,
        cache_implementation="static",
    )  # fmt: skip
    assert oomkit.estimate_model(spec, static, hw).runtime_details["decode_regrow_bytes"] == 0


def test_olmo2_is_never_fits_on_a_card_it_died_on() -> None:
    """Before: "fits" from 25.93 GiB, died at 27.50 GiB (the replay of a fake-tensor trace of
    its generate(), benchmarks/generate_replay.py, needs 27.03 GiB + the context)."""
    mod = load_script("verdict_boundary")
    r = _olmo()
    side = mod.oomkit_side(r, gpu_name="h100-sxm")
    assert side["smallest_fits_bytes"] > r["largest_died_bytes"]
    assert side["smallest_not_dnf_bytes"] <= r["smallest_survived_bytes"]

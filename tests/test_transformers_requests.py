"""The transformers estimate's allocator inputs: the prefill's largest request, Phi-3's
re-prefill at the RoPE switch, and the shared expert's place in transformers 5's MoE peak.

Each is checked against what was measured on an H100 in
``tests/test_gpu_verdict_boundary.py``; here on the mechanisms' own arithmetic."""

from __future__ import annotations

import dataclasses
from typing import Any

from oomkit import InferenceSettings
from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.hf_kv import kv_bytes, kv_layers
from oomkit.estimate.transformers_requests import largest_request_bytes
from oomkit.estimate.verdict import band_allocator, verdict
from oomkit.hardware.targets import hardware_for

H100 = hardware_for(parse_gpu_list("h100-sxm"))


def _est(model: str, **kw: Any) -> Any:
    base: dict[str, Any] = {"runtime": "transformers", "quant": "bf16"}
    return estimate(model, InferenceSettings(**{**base, **kw}), H100)


def test_largest_request_is_the_widest_linear_output_of_the_prefill() -> None:
    phi = find_model("phi-3-mini-4k").spec()  # fused gate_up_proj: 2 x 8192 wide
    llama = find_model("llama-3.1-8b").spec()  # gate and up apart: 14336 wide
    assert largest_request_bytes(phi, batch=8, seq=2048, elem=2, attn_impl="sdpa") == (
        8 * 2048 * 16384 * 2
    )
    assert largest_request_bytes(llama, batch=1, seq=8192, elem=2, attn_impl="sdpa") == (
        8192 * 14336 * 2
    )
    # eager attention's fp32 softmax of the scores wins at a long prompt
    eager = largest_request_bytes(llama, batch=1, seq=8192, elem=2, attn_impl="eager")
    assert eager == 32 * 8192 * 8192 * 4
    # full-sequence logits (before 4.45) in fp32
    full = largest_request_bytes(
        llama, batch=1, seq=8192, elem=2, attn_impl="sdpa", full_logits=True
    )
    assert full == 8192 * 128256 * 4


def test_phi3_re_prefills_beside_its_old_cache_when_crossing_the_rope_switch() -> None:
    spec = find_model("phi-3.5-mini").spec()
    layers = kv_layers(spec, kv_elem_bytes=2, state_elem_bytes=2)
    crossing = _est("phi-3.5-mini", ctx=4096, parallel=4, max_new_tokens=16)
    inside = _est("phi-3.5-mini", ctx=4000, parallel=4, max_new_tokens=16)
    past = _est("phi-3.5-mini", ctx=4200, parallel=4, max_new_tokens=16)
    before = _est("phi-3.5-mini", ctx=4096, parallel=4, max_new_tokens=16, runtime_version="4.44")
    d = crossing.devices[0]
    assert d.kv_cache_bytes == kv_bytes(layers, seq_len=4112, n_seqs=4) + kv_bytes(
        layers, seq_len=4096, n_seqs=4
    )
    assert crossing.runtime_details["prefills"] == 2
    assert any("re-prefills 4097 tokens" in n for n in crossing.assumptions)
    for e in (inside, past, before):
        assert e.runtime_details["prefills"] == 1
        assert not any("re-prefills" in n for n in e.assumptions)
    # the allocator term counts both prefills' split segments (here the larger bound is the
    # prefill's K/V the decode re-requests, oomkit.estimate.hf_kv.decode_regrow_bytes)
    m = verdict(crossing).tightest
    assert m is not None
    alloc = [b for label, b in m.terms if label.startswith("PyTorch's caching allocator")]
    band = band_allocator("transformers")
    assert band is not None
    req = int(crossing.runtime_details["largest_request_bytes"])
    share = int(float(band["share"]) * (d.activations_bytes + d.kv_cache_bytes))
    assert alloc
    assert alloc[0] >= min(int(float(band["request_ratio"]) * req) * 2, share)


def test_a_shared_expert_is_not_alive_beside_the_routed_experts_buffers() -> None:
    """Qwen1.5-MoE-A2.7B (8 layers) b2 p4096 on an H100: 0.71 GiB of activations measured;
    the shared expert's 3 x 5632 intermediates and the routed experts' grouped-GEMM buffers
    summed gave 0.92 GiB (a false "does not fit" by 0.01 GiB)."""
    e = _est("qwen1.5-moe-a2.7b", ctx=4096, parallel=2, max_new_tokens=16)
    spec = find_model("qwen1.5-moe-a2.7b").spec()
    tokens, h = 2 * 4096, spec.hidden_size
    assert spec.moe is not None
    routed = tokens * 4 * max(4 * h, h + 4 * 1408, 2 * h + 1408) * 2 + tokens * 60 * 4
    act = e.devices[0].activations_bytes
    assert act < 4 * tokens * h * 2 + routed + tokens * 3 * 5632 * 2  # not the sum
    # the prefill's own activations (the component takes off the 16 new tokens' KV, which is
    # not beside the prefill, and adds the cache's torch.cat copy: estimate_transformers)
    prefill = e.runtime_details["prefill_activation_bytes"]
    assert isinstance(prefill, int)
    assert prefill < 4 * tokens * h * 2 + routed + tokens * 3 * 5632 * 2
    assert prefill >= 4 * tokens * h * 2 + routed + tokens * h * 2


def test_a_tight_verdict_on_split_segments_proposes_a_priced_change() -> None:
    # expandable segments would remove the allocator's term, but no band of generate() runs
    # with it is measured (the estimate could not check "clear of the band", --expandable-
    # segments is a training flag, --emit does not set it) and PyTorch ignores it on Windows:
    # the safe change is one the estimator prices, a shorter prompt
    hw = hardware_for(parse_gpu_list("rtx-4090"))
    st = InferenceSettings(runtime="transformers", quant="bf16", ctx=2048, parallel=14)
    v = verdict(estimate("phi-3-mini-4k", st, hw))
    assert v.level == "tight"
    m = v.tightest
    assert m is not None
    assert m.terms[0][0].startswith("PyTorch's caching allocator beyond allocated")
    assert v.safe_change is not None
    assert "expandable_segments" not in v.safe_change
    # where removing the allocator's term would not clear the band (0.65 GiB free against a
    # 5.0 GiB term and 1.3 GiB of other terms), a shorter prompt is proposed instead
    st2 = InferenceSettings(runtime="transformers", quant="bf16", ctx=2048, parallel=17)
    v2 = verdict(estimate("phi-3-mini-4k", st2, hw))
    assert v2.level == "tight"
    assert v2.safe_change is not None
    assert "expandable_segments" not in v2.safe_change


def test_a_tight_prompt_is_cut_by_what_the_prefill_frees_not_the_kv_alone() -> None:
    # Llama-3.1-8B bf16 with a 32k prompt on a 24 GB card: 0.45 GiB free against a 5.7 GiB
    # band whose largest term (the allocator's, 4.1 GiB) alone would not clear it, and 4.0 GiB
    # of KV cache: the KV alone cannot free the 5.3 GiB needed, so the old rule proposed
    # nothing. The prefill's activations (3.7 GiB) and the allocator's term shrink with the
    # prompt too; the prompt proposed must itself be "fits" when estimated again.
    hw = hardware_for(parse_gpu_list("rtx-4090"))
    st = InferenceSettings(runtime="transformers", quant="bf16", ctx=32768)
    est = estimate("llama-3.1-8b", st, hw)
    v = verdict(est)
    assert v.level == "tight"
    m = v.tightest
    assert m is not None
    assert m.band_bytes - m.free_bytes > m.terms[0][1]  # expandable segments alone: not enough
    assert m.band_bytes - m.free_bytes > est.devices[0].kv_cache_bytes  # the KV alone: neither
    assert v.safe_change is not None
    assert v.safe_change.startswith("a prompt of at most ")
    new_ctx = int(v.safe_change.split()[5])
    assert 16384 <= new_ctx < 32768
    again = verdict(estimate("llama-3.1-8b", dataclasses.replace(st, ctx=new_ctx), hw))
    assert again.level == "fits"
    # a quarter more prompt than proposed is not "fits": the cut is not wildly conservative
    more = verdict(estimate("llama-3.1-8b", dataclasses.replace(st, ctx=new_ctx * 5 // 4), hw))
    assert more.level != "fits"


def test_the_allocator_terms_label_names_what_its_bound_multiplies_and_its_size() -> None:
    # "measured: 4.68 x the largest request, 896.00 MiB" did not say which request, and the
    # share bound gave a percentage of bytes it never printed: each label now carries its base
    from oomkit.estimate.verdict import band_allocator
    from oomkit.units import format_bytes

    alloc = band_allocator("transformers")
    assert alloc is not None
    ratio, share = float(alloc["request_ratio"]), float(alloc["share"])
    hw = hardware_for(parse_gpu_list("rtx-4090"))
    # one new token: no decode step re-requests the K/V (decode_regrow_bytes is 0), so the
    # request bound is the larger one
    one = InferenceSettings(runtime="transformers", ctx=32768, max_new_tokens=1)
    est = estimate("llama-3.1-8b", one, hw)
    assert est.runtime_details["decode_regrow_bytes"] == 0
    m = verdict(est).tightest
    assert m is not None
    label, b = m.terms[0]
    req = est.runtime_details["largest_request_bytes"]
    assert f"{ratio:.2f} x the prefill's largest single allocation, {format_bytes(req)}" in label
    assert "as seen on real generate() runs" in label
    assert b == int(ratio * req)
    # with the default new tokens the first decode step re-requests the prompt's 4 GiB of K/V
    many = verdict(
        estimate("llama-3.1-8b", InferenceSettings(runtime="transformers", ctx=32768), hw)
    )
    assert many.tightest is not None
    assert "of K/V, re-requested one token larger" in many.tightest.terms[0][0]
    # eager attention at 8k: the fp32 scores are the request, so the share bound is smaller
    eager = InferenceSettings(runtime="transformers", ctx=8192, attn_implementation="eager")
    gemma = estimate("gemma-2-2b", eager, hw)
    g = verdict(gemma).tightest
    assert g is not None
    d = gemma.devices[0]
    during = d.activations_bytes + d.kv_cache_bytes
    assert f"{share:.0%} of the {format_bytes(during)} of activations + KV cache" in g.terms[0][0]


def test_a_shorter_prompt_is_never_one_whose_generation_crosses_the_phi3_rope_switch() -> None:
    # Phi-4-mini b2 with a 9000-token prompt on a 12 GB card is "tight"; cutting the prompt
    # in proportion lands near 4000 tokens, where prompt + 256 new tokens crosses the 4096
    # RoPE switch: transformers re-prefills beside the old cache, two prefills, not "fits".
    # The prompt proposed ends its generation before the switch.
    hw = hardware_for(parse_gpu_list("rtx-3060"))

    def run(ctx: int) -> Any:
        st = InferenceSettings(runtime="transformers", quant="bf16", ctx=ctx, parallel=2)
        return estimate("phi-4-mini", st, hw)

    est = run(9000)
    switch = est.runtime_details["rope_switch_tokens"]
    assert switch == 4096
    v = verdict(est)
    assert v.level == "tight"
    assert v.safe_change is not None
    assert v.safe_change.startswith("a prompt of at most ")
    new_ctx = int(v.safe_change.split()[5])
    assert not new_ctx <= switch < new_ctx + 256  # no re-prefill at the switch
    assert verdict(run(new_ctx)).level == "fits"
    crossing = run(4000)  # the region the proportional cut fell into
    assert crossing.runtime_details["prefills"] == 2
    assert verdict(crossing).level != "fits"

"""transformers before 4.36 has no SDPA path: the release's attention is eager.

The B x a x S x S scores of a prompt (and their fp32 softmax) are a band term of the verdict,
not part of the device total. Settings are the real ones of h2oGPT's benchmark
(tests/fixtures/verdict_runs/heldout20.jsonl ``tf-h2ogpt-perf-llama2-70b-4bit-2x3090-oom``:
transformers 4.30.2, bitsandbytes 4-bit Llama-2-70B, device_map="auto", 2x RTX 3090, a
summarisation prompt filling the 4096-token context).
"""

from __future__ import annotations

from typing import Any

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.transformers import prefill_activation_bytes
from oomkit.estimate.verdict import EAGER_SCORES, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

_H2OGPT: dict[str, Any] = {
    "runtime": "transformers",
    "quant": "nf4",
    "ctx": 4096,
    "device_map": "auto",
}


def _est(version: str, gpus: str = "2xrtx-3090", model: str = "llama-2-70b", **kw: Any) -> Estimate:
    settings = InferenceSettings(**{**_H2OGPT, **kw, "runtime_version": version})
    return estimate(model, settings, hardware_for(parse_gpu_list(gpus)), offline=True)


def test_the_generation_changes_at_4_36() -> None:
    assert resolve_generation("transformers", "4.30.2").key == "eager-attention"
    assert resolve_generation("transformers", "2023-08-18").key == "eager-attention"
    assert resolve_generation("transformers", "4.36.0").key == "full-logits"


def test_pre_4_36_scores_are_a_band_term_not_in_the_total() -> None:
    old, new = _est("4.30.2"), _est("4.36.0")
    assert old.settings["attn_implementation"] == "eager"
    assert new.settings["attn_implementation"] == "sdpa"
    # the device totals are the same (full-sequence logits in both); only the band differs
    assert [d.total_bytes for d in old.devices] == [d.total_bytes for d in new.devices]
    scores = old.runtime_details["eager_scores_bytes"]
    assert isinstance(scores, dict)
    assert "eager_scores_bytes" not in new.runtime_details
    spec = find_model("llama-2-70b").spec()
    kw: dict[str, Any] = {"batch": 1, "seq": 4096, "elem": 2, "full_logits": True}
    eager, _ = prefill_activation_bytes(spec, attn_impl="eager", half_to_float=True, **kw)
    sdpa, _ = prefill_activation_bytes(spec, attn_impl="sdpa", half_to_float=True, **kw)
    # 64 heads x 4096^2 scores: fp16 scores + fp32 softmax + fp16 cast (2 + 4 + 2 bytes)
    assert eager >= 64 * 4096 * 4096 * 8 > sdpa
    assert set(scores.values()) == {eager - sdpa}


def test_h2ogpt_70b_4bit_on_two_3090s_is_no_longer_fits() -> None:
    """Died in h2oGPT's benchmark (perf.json line 48); the same model on one A6000 ran."""
    died = verdict(_est("4.30.2"))
    assert died.level == "tight"
    m = died.tightest
    assert m is not None
    assert m.terms[0][0] == EAGER_SCORES
    # 4.36+ (SDPA): no scores term, and a smaller band for the same placement (what is left
    # is the measured allocator term: tight, not "fits", since session 10's H100 runs)
    new = verdict(_est("4.36.0"))
    assert new.level != "does_not_fit"
    assert new.tightest is not None
    assert all(label != EAGER_SCORES for label, _ in new.tightest.terms)
    assert new.tightest.band_bytes < m.band_bytes
    ran = verdict(_est("4.31.0", gpus="rtx-a6000", device_map=None))
    assert ran.level == "fits"


def test_bitsandbytes_on_a_float16_checkpoint_softmaxes_fp16() -> None:
    """bnb loads run fp16 hidden states (the torch_dtype=None override): the fp16 softmax
    upcasts inside the kernel, so 4-bit and fp16 loads carry the same scores."""
    nf4 = _est("4.30.2", gpus="rtx-a6000", device_map=None)
    fp16 = _est("4.30.2", gpus="rtx-a6000", device_map=None, quant="fp16")
    a = nf4.runtime_details["eager_scores_bytes"]
    b = fp16.runtime_details["eager_scores_bytes"]
    assert isinstance(a, dict)
    assert isinstance(b, dict)
    assert list(a.values()) == list(b.values())


def test_an_asked_for_implementation_is_kept() -> None:
    est = _est("4.30.2", attn_implementation="sdpa")
    assert est.settings["attn_implementation"] == "sdpa"
    assert "eager_scores_bytes" not in est.runtime_details

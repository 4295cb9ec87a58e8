"""vLLM V1: penalties and log-probs a served request can ask for, which the profile's dummy
sampler (``no_penalties=True``, ``max_num_logprobs=None``) never allocates.

vllm#26833 (gpt-oss-120b, TP 2 on H100 80GB, ``--max-num-seqs 2048``, mid-October 2025 = 0.11.0):
util 0.9 dies, util 0.8 serves with 78737 of 81559 MiB in use per GPU, far beyond its budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.hf_activations import (
    FLASHINFER_SAMPLER_BYTES_PER_ENTRY,
    SORT_SAMPLER_BYTES_PER_ENTRY,
    TRITON_SAMPLER_BYTES_PER_ENTRY,
)
from oomkit.estimate.verdict import verdict
from oomkit.estimate.verdict_runtime import SAMPLER_REQUESTS
from oomkit.estimate.vllm import plan_vllm
from oomkit.estimate.vllm_penalties import (
    FP32_LOGITS,
    LOGPROBS_BYTES_PER_ENTRY,
    PENALTIES_BYTES_PER_ENTRY,
    request_sampler_per_entry,
)
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

FIXTURES = Path(__file__).parent / "fixtures" / "verdict_runs"
_ENV = "VLLM_USE_FLASHINFER_SAMPLER"


def test_bytes_per_entry_follow_the_source_dtypes() -> None:
    # apply_penalties: prompt mask (bool) + output bin counts (torch.long) + output mask (bool)
    # + frequency_penalties.unsqueeze(1) * output_bin_counts (float32 x int64 -> float32)
    assert PENALTIES_BYTES_PER_ENTRY == 1 + 8 + 1 + 4
    assert FP32_LOGITS == LOGPROBS_BYTES_PER_ENTRY == 4  # torch.float32
    # FlashInfer profile (12 B): the penalties' 18 B peak + the held log-softmax
    assert request_sampler_per_entry(FLASHINFER_SAMPLER_BYTES_PER_ENTRY) == 18 + 4 - 12
    # the sort's 36 B already covers the penalties: only the log-softmax held across it
    assert request_sampler_per_entry(SORT_SAMPLER_BYTES_PER_ENTRY) == 4
    assert request_sampler_per_entry(TRITON_SAMPLER_BYTES_PER_ENTRY) == 18 + 4 - 16


def _gptoss_plan(engine: str, *, seqs: int = 2048, pp_rank: int = 0, pp: int = 1) -> Any:
    spec = load_model("gpt-oss-120b")
    s = InferenceSettings(runtime="vllm", quant="mxfp4", ctx=131072, tp=2, pp=pp, max_num_seqs=seqs)
    dev = hardware_for(parse_gpu_list("h100-sxm"), n_devices=1).devices[0]
    return spec, plan_vllm(spec, s, dev, engine=engine, pp_rank=pp_rank)


def test_rows_x_vocab_x_bytes_on_the_sampling_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_ENV, raising=False)
    spec, p = _gptoss_plan("v1-0.11")  # FlashInfer profile (the image's)
    rows = min(p.max_num_seqs, p.max_num_batched_tokens)
    assert rows == 2048
    asked = rows * spec.vocab_size * request_sampler_per_entry(12)
    assert p.sampler_request_extra_bytes == max(0, p.sampler_bytes + asked - p.activation_bytes)
    assert p.sampler_request_extra_bytes > 0
    _, half = _gptoss_plan("v1-0.11", seqs=1024)
    assert half.sampler_request_extra_bytes < p.sampler_request_extra_bytes
    monkeypatch.setenv(_ENV, "0")  # the sort path profiled: only the log-softmax is left
    _, sort = _gptoss_plan("v1-0.11")
    assert sort.sampler_request_extra_bytes == max(
        0, sort.sampler_bytes + rows * spec.vocab_size * 4 - sort.activation_bytes
    )
    assert sort.sampler_request_extra_bytes < p.sampler_request_extra_bytes


def test_v0_and_non_last_pipeline_stages_carry_none() -> None:
    _, v0 = _gptoss_plan("v0-2025")
    assert v0.sampler_request_extra_bytes == 0
    _, first = _gptoss_plan("v1-0.11", pp=2, pp_rank=0)
    _, last = _gptoss_plan("v1-0.11", pp=2, pp_rank=1)
    assert first.sampler_request_extra_bytes == 0
    assert last.sampler_request_extra_bytes > 0


def _record(rid: str) -> dict[str, Any]:
    for ln in (FIXTURES / "heldout25.jsonl").read_text().splitlines():
        if ln.strip() and json.loads(ln)["id"] == rid:
            rec: dict[str, Any] = json.loads(ln)
            return rec
    raise AssertionError(rid)


def _estimate(rec: dict[str, Any]) -> Estimate:
    s = InferenceSettings(
        runtime="vllm",
        quant=rec["quant"],
        ctx=rec["ctx"],
        runtime_version=rec["date"],
        **rec["settings"],
    )
    hw = hardware_for(parse_gpu_list(rec["gpu"]), n_devices=s.tp or 1)
    return estimate(rec["model"], s, hw, offline=True)


def test_vllm_26833_death_is_tight_and_its_twin_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_ENV, raising=False)
    died = _estimate(_record("vllm-26833-gptoss120b-2xh100-tp2-u090-seqs2048-oom"))
    per_dev = died.runtime_details["sampler_request_bytes"]
    assert isinstance(per_dev, dict)
    assert set(per_dev) == {d.device for d in died.devices}  # every TP rank samples
    v = verdict(died)
    assert v.level == "tight"  # was "fits" before the term
    for m in v.margins:
        if m.what == "device memory":
            assert (SAMPLER_REQUESTS, per_dev[m.device]) in m.terms
    ok = _estimate(_record("vllm-26833-gptoss120b-2xh100-tp2-u080-seqs2048-ok"))
    assert verdict(ok).level == "fits"

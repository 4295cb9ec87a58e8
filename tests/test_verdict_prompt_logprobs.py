"""vLLM prompt log-probs: the sampler's vocabulary-wide rows outside the profiled budget.

The real run: lm-evaluation-harness#2779, Qwen2.5-72B-Instruct bf16 with ``tensor_parallel_size=8,
gpu_memory_utilization=0.8`` on 8x A100 80GB (March 2025, V0 sampler), ``--tasks leaderboard``:
dies in ``sampler.py get_logprobs`` ("Tried to allocate 7.04 GiB") at every util tried.
"""

from __future__ import annotations

import json

import pytest

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.checks import ignored_settings
from oomkit.estimate.verdict import Platform, verdict
from oomkit.estimate.verdict_advice import PROMPT_LOGPROBS
from oomkit.estimate.vllm_logprobs import prompt_logprobs_rows, row_bytes
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

LMEVAL: dict[str, object] = {
    "tp": 8,
    "gpu_memory_utilization": 0.8,
    "ctx": 32768,
    "runtime_version": "2025-03-09",
}


def _vllm(model: str, gpu: str, **kw: object) -> Estimate:
    s = InferenceSettings(runtime="vllm", **kw)  # type: ignore[arg-type]
    return estimate(model, s, hardware_for(parse_gpu_list(gpu), n_devices=s.tp or 1), offline=True)


def test_lm_eval_2779_is_not_called_fits() -> None:
    plain = _vllm("qwen2.5-72b", "8xa100-80gb-sxm", **LMEVAL)
    assert verdict(plain, Platform(display=False)).level == "fits"  # generation only
    est = _vllm("qwen2.5-72b", "8xa100-80gb-sxm", prompt_logprobs=True, **LMEVAL)
    v = verdict(est, Platform(display=False))
    assert v.level == "tight"
    vocab = find_model("qwen2.5-72b").spec().vocab_size
    # V0 (March 2025): no chunked prefill at 32768, so one step batches 32768 prompt tokens;
    # bf16 logits + fp32 copy + probs + logprobs + the indexed copy + the bool rank mask
    per_dev = est.runtime_details["prompt_logprobs_bytes"]
    assert per_dev == {"cuda:0": 32768 * vocab * (2 + 4 * 4 + 1)}  # gathered to the driver only
    assert v.tightest is not None
    assert v.tightest.device == "cuda:0"
    assert v.tightest.terms[0][0] == PROMPT_LOGPROBS
    # the OOM's own allocation (one fp32 [rows, vocab] copy of 7.04 GiB) is a step of ~12.4K
    # rows: far below the modelled step, so the term covers it
    assert 7.04 * GiB / (4 * vocab) < est.runtime_details["prompt_logprobs_rows"]  # type: ignore[operator]
    assert v.safe_change is not None
    assert v.safe_change.startswith("--max-model-len ")
    # the device totals (and so "fits" for a generation-only run) are unchanged
    assert [d.total_bytes for d in est.devices] == [d.total_bytes for d in plain.devices]
    assert est.settings["prompt_logprobs"] is True
    assert "prompt_logprobs" not in plain.settings


def test_v1_holds_them_on_every_tp_rank_one_request_at_a_time() -> None:
    est = _vllm(
        "qwen2.5-7b", "2xh100", tp=2, ctx=4096, runtime_version="0.11.0", prompt_logprobs=True
    )
    rows = prompt_logprobs_rows(v0=False, max_num_batched_tokens=8192, max_model_len=4096)
    assert est.runtime_details["max_num_batched_tokens"] == 8192
    assert rows == 4096
    vocab = find_model("qwen2.5-7b").spec().vocab_size
    n = rows * vocab * row_bytes(v0=False, logits_elem_bytes=2)
    assert est.runtime_details["prompt_logprobs_bytes"] == {"cuda:0": n, "cuda:1": n}
    assert n == 4096 * vocab * 7


@pytest.mark.parametrize("runtime", ["llama.cpp", "sglang", "transformers"])
def test_other_runtimes_ignore_it(runtime: str) -> None:
    s = InferenceSettings(runtime=runtime, prompt_logprobs=True)
    assert "prompt_logprobs" in ignored_settings(s, runtime)
    assert "prompt_logprobs" not in ignored_settings(
        InferenceSettings(runtime="vllm", prompt_logprobs=True), "vllm"
    )


def test_cli_flag(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["estimate", "qwen2.5-72b", "--runtime", "vllm", "--gpu", "8xa100-80gb-sxm"]
    args += ["--tp", "8", "--gpu-memory-utilization", "0.8", "--runtime-version", "2025-03-09"]
    args += ["--offline", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "fits"
    assert main([*args, "--prompt-logprobs"]) == 4  # tight
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "tight"
    assert doc["settings"]["prompt_logprobs"] is True
    assert "prompt_logprobs_bytes" in doc["runtime_details"]


def test_setting_is_validated() -> None:
    from oomkit.errors import InvalidSettingError

    with pytest.raises(InvalidSettingError, match="prompt_logprobs"):
        InferenceSettings(runtime="vllm", prompt_logprobs=1)  # type: ignore[arg-type]

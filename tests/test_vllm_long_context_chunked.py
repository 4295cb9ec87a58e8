"""vLLM V0 before 0.5.3 profiles the whole max_model_len; from 0.5.3 (PR #6666) chunked prefill
is on by default above 32K and the profile batch is 2048 tokens.

The 0.5.2 sdist's ``EngineArgs.create_engine_config`` has no long-context default, so
``SchedulerConfig`` sets ``max_num_batched_tokens = max(max_model_len, 2048)``; the 0.5.3 sdist
adds ``use_long_context = max_model_len > 32768`` -> ``enable_chunked_prefill = True`` ("This is
to avoid OOM errors in the initial memory profiling phase"). The real run: TheBloke's
Nous-Capybara-34B-AWQ (a Yi-34B-200K fine-tune) served through FastChat's vLLM worker on two
RTX 4090s in November 2023 died; the answer: "You should limit the context length to 8192,
otherwise it will try to load 200K context length" (heldout33's pair, 8192 ran).
"""

from __future__ import annotations

import os

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _llama(version: str, **kw: object) -> Estimate:
    s = InferenceSettings(
        runtime="vllm", quant="bf16", ctx=65536, tp=1, runtime_version=version, **kw
    )
    hw = hardware_for(parse_gpu_list("a100-80gb-sxm"), n_devices=1)
    return estimate("mistral-nemo-12b", s, hw)


def _activations(est: Estimate) -> int:
    return sum(c.n_bytes for c in est.devices[0].components if c.category == "activations")


def test_0_5_2_profiles_the_whole_length_and_0_5_3_a_chunk() -> None:
    old, new = _llama("0.5.2"), _llama("0.5.3")
    assert old.settings["max_num_batched_tokens"] == 65536
    assert new.settings["max_num_batched_tokens"] == 2048  # the engine's own chunk
    assert _activations(old) > 4 * _activations(new)
    # the same run with the chunk written out is the 0.5.3 figure at 65536 tokens
    spelled = _llama("0.5.3", max_num_batched_tokens=65536)
    assert _activations(spelled) == _activations(old)


def test_a_batch_the_user_set_is_kept_on_old_releases() -> None:
    est = _llama("0.5.2", max_num_batched_tokens=4096)
    assert est.settings["max_num_batched_tokens"] == 4096


def test_short_lengths_are_unchanged() -> None:
    def at(version: str) -> int:
        s = InferenceSettings(runtime="vllm", quant="bf16", ctx=8192, tp=1, runtime_version=version)
        hw = hardware_for(parse_gpu_list("a100-80gb-sxm"), n_devices=1)
        return _activations(estimate("mistral-nemo-12b", s, hw))

    assert at("0.5.2") == at("0.5.3")


@pytest.fixture
def _long_len(monkeypatch: pytest.MonkeyPatch) -> None:
    # the catalog's Yi-34B stands in for the 200K fine-tune (same architecture, 4K config)
    monkeypatch.setitem(os.environ, "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")


@pytest.mark.usefixtures("_long_len")
def test_capybara_200k_on_2x4090_dies_in_2023_and_8192_starts() -> None:
    hw = hardware_for(parse_gpu_list("2xrtx-4090"), n_devices=2)

    def run(ctx: int) -> Estimate:
        s = InferenceSettings(
            runtime="vllm", quant="awq", ctx=ctx, tp=2, runtime_version="2023-11-20"
        )
        return estimate("yi-34b", s, hw)

    assert verdict(run(200000)).level == "does_not_fit"
    assert verdict(run(8192)).level != "does_not_fit"

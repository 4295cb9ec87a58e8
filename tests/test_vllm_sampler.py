"""vLLM 0.9.1-0.11.0: the profile's sampler is FlashInfer's where installed, else the sort.

gpt-oss-120b (MXFP4, vocabulary 201088) on one H100 at 1024 sequences is where the two paths
part most: the sort path's peak is ~4.6 GiB above FlashInfer's. Logged with the sort path (pip
installs): vllm#23278 (0.10.1, defaults: "Available KV cache memory: -2.14 GiB") and vllm#27508
(util 0.95, 1024 batched tokens: "Available KV cache memory: 1.71 GiB"). Served at the same
defaults with 32768 tokens from GPUStack's image (0.10.2), and the vLLM recipe's util 0.95 /
1024 batched tokens at 0.10.1+gptoss.
"""

from __future__ import annotations

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import SORT_SAMPLER, verdict
from oomkit.estimate.vllm_engines import vllm_engine
from oomkit.estimate.vllm_sampler import sampler_path
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

_ENV = "VLLM_USE_FLASHINFER_SAMPLER"


def _gptoss(
    version: str, ctx: int, util: float | None = None, batched: int | None = None
) -> Estimate:
    s = InferenceSettings(
        runtime="vllm",
        quant="mxfp4",
        ctx=ctx,
        runtime_version=version,
        tp=1,
        gpu_memory_utilization=util,
        max_num_batched_tokens=batched,
    )
    hw = hardware_for(parse_gpu_list("h100-sxm"), n_devices=1)
    return estimate("gpt-oss-120b", s, hw, offline=True)


def _avail_gib(est: Estimate) -> float:
    v = est.runtime_details["available_kv_cache_bytes"]
    assert isinstance(v, int)
    return v / GiB


@pytest.mark.parametrize(
    ("engine", "install_decides"),
    [
        ("v1-2025-global", False),
        ("v1-2025", True),
        ("v1-0.11", True),
        ("v1-0.11.1", False),
        ("v1-0.17", False),
        ("current", False),
    ],
)
def test_only_0_9_1_to_0_11_0_depend_on_the_install(
    engine: str, install_decides: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(_ENV, raising=False)
    assert sampler_path(vllm_engine(engine)).sort_possible is install_decides
    monkeypatch.setenv(_ENV, "0")
    p = sampler_path(vllm_engine(engine))
    assert not p.sort_possible
    if install_decides:
        assert p.flashinfer is False


def test_pip_install_matches_the_sort_path_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_ENV, "0")
    defaults = _gptoss("0.10.1", 131072)
    assert abs(_avail_gib(defaults) - -2.14) < 0.25  # vllm#23278
    assert verdict(defaults).level == "does_not_fit"
    low = _gptoss("0.10.1", 131072, util=0.95, batched=1024)
    assert abs(_avail_gib(low) - 1.71) < 0.25  # vllm#27508
    assert verdict(low).level == "does_not_fit"


def test_image_install_leaves_room_and_the_verdict_counts_the_sort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(_ENV, raising=False)
    served = _gptoss("0.10.2", 32768)  # GPUStack performance lab: 1000 ShareGPT requests
    sort_extra = served.runtime_details["sampler_sort_extra_bytes"]
    assert isinstance(sort_extra, int)
    assert 4 * GiB < sort_extra < 5 * GiB
    assert _avail_gib(served) > 32768 * 18 * 2048 / GiB  # the 18 full-attention layers' KV
    assert not served.blockers
    v = verdict(served)
    assert v.level == "tight"  # fits with FlashInfer, not without: the install decides
    pool = [m for m in v.margins if m.what.startswith("KV pool")]
    assert pool
    assert (SORT_SAMPLER, sort_extra) in pool[0].terms
    recipe = _gptoss("0.10.1", 131072, util=0.95, batched=1024)
    assert verdict(recipe).level == "tight"
    # the recipe's own warning: tp 1 at the defaults dies either way
    assert verdict(_gptoss("0.10.1", 131072)).level == "does_not_fit"


def test_flashinfer_forced_on_drops_the_band(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_ENV, "1")
    est = _gptoss("0.10.2", 32768)
    assert "sampler_sort_extra_bytes" not in est.runtime_details
    assert verdict(est).level == "fits"

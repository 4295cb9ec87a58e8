"""vLLM 0.5.1-0.6.4 caps Gemma 2's max_model_len to its 4096-token sliding window.

Source: vllm/config.py ``ModelConfig.__init__`` of the 0.6.3.post1 wheel ("has interleaved
attention, which is currently not supported by vLLM. Disabling sliding window and capping the
max length to the sliding window size") and ``_get_and_verify_max_len`` (``min(derived,
sliding_window)``); PR #5908 introduced it with Gemma 2, PR #10584 (0.6.5) lifted it. The
record: sglang#1869, gemma-2-9b bf16 served by vLLM at util 0.95 on a 24 GB A10 (2024-11).
"""

from __future__ import annotations

import pytest

from oomkit.api import estimate, load_model
from oomkit.errors import InvalidSettingError
from oomkit.estimate.vllm_gemma2 import gemma2_max_len_cap
from oomkit.hardware.catalog import find_gpu
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _a10(version: str, vram: int | None = None, **kw: object) -> dict[str, object]:
    s = InferenceSettings(runtime="vllm", runtime_version=version, **kw)  # type: ignore[arg-type]
    hw = hardware_for([find_gpu("a10")], vram_bytes=vram)
    est = estimate("gemma-2-9b", s, hw, offline=True)
    return {"ctx": est.settings["ctx"], "blockers": est.blockers, "notes": est.assumptions}


def test_cap_is_the_sliding_window_of_gemma2_only() -> None:
    assert gemma2_max_len_cap(load_model("gemma-2-9b", offline=True)) == 4096
    # Mistral's uniform window and Gemma 3 (0.7.3+) are not capped by this rule
    assert gemma2_max_len_cap(load_model("mistral-7b-v0.1", offline=True)) is None
    assert gemma2_max_len_cap(load_model("gemma-3-27b", offline=True)) is None


def test_default_length_is_4096_before_0_6_5_and_8192_from_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    for version in ("0.5.4", "0.6.3.post1", "2024-11-01", "0.6.4"):
        old = _a10(version, gpu_memory_utilization=0.95)
        assert old["ctx"] == 4096, version
        assert any("sliding window" in n for n in old["notes"])  # type: ignore[attr-defined]
    assert _a10("0.6.5", gpu_memory_utilization=0.95)["ctx"] == 8192


def test_sglang1869_a10_u095_starts_at_4096_but_not_at_8192(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 17.2 GiB of bf16 weights leave a pool of ~4.3K tokens at util 0.95 on an A10 whose
    CUDA total is 22.20 GiB (an A10 of the record's time: h18-AutoAWQ-382, 2024-03): the capped
    4096 fits (the run served), 0.6.5's full 8192 would not. The record's driver is not
    stated; at the catalog's figure, the newer drivers' 21.99 GiB, 4096 no longer fits (the
    pool holds 3632 tokens)."""
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    then = round(22.20 * 1024) * 2**20
    assert _a10("2024-11-01", then, gpu_memory_utilization=0.95)["blockers"] == ()
    assert _a10("0.6.5", then, gpu_memory_utilization=0.95)["blockers"] != ()
    (now,) = _a10("2024-11-01", gpu_memory_utilization=0.95)["blockers"]  # type: ignore[misc]
    assert "largest that fits: 3632" in str(now)


def test_explicit_length_above_the_window_is_refused_unless_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    with pytest.raises(InvalidSettingError, match="VLLM_ALLOW_LONG_MAX_MODEL_LEN"):
        _a10("0.6.3", ctx=8192)
    assert _a10("0.6.3", ctx=2048)["ctx"] == 2048
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    assert _a10("0.6.3", ctx=8192)["ctx"] == 8192


def test_ctx_max_stops_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--ctx max`` searches up to max_position_embeddings; the contexts vLLM refuses above
    the window count as not fitting, so 0.6.3 answers 4096 and 0.6.5 the full 8192."""
    from oomkit.planner.core import max_context

    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    spec = load_model("gemma-2-9b", offline=True)
    hw = hardware_for([find_gpu("a100-80gb")])
    found = {
        v: max_context(spec, InferenceSettings(runtime="vllm", runtime_version=v), hw)
        for v in ("0.6.3", "0.6.5")
    }
    assert found["0.6.3"] is not None
    assert found["0.6.3"][0] == 4096
    assert found["0.6.5"] is not None
    assert found["0.6.5"][0] == 8192

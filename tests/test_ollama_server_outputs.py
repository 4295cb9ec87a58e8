"""Ollama's llama-server reserves ``min(num_batch, num_parallel)`` output rows for every GGUF
from v0.30.5 (llama.cpp b9509, after PR #23861; :func:`oomkit.estimate.ollama_runner.
server_output_rows`); v0.30.0-0.30.4 (b9452-b9493, not shown to hold the PR) keep the rows of
the ``llama-server-0.30`` generation: one per micro-batch token outside ``OLLAMA_ENGINE_ARCHS``.
"""

from __future__ import annotations

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.ollama_runner import server_output_rows
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

_HW = hardware_for(parse_gpu_list("rtx-4070"), n_devices=1, os="linux")


def _est(model: str, version: str | None, **kw: object) -> Estimate:
    s = InferenceSettings(runtime="ollama", ctx=4096, runtime_version=version, **kw)  # type: ignore[arg-type]
    return estimate(model, s, _HW, offline=True)


def _compute(est: Estimate) -> int:
    return sum(c.n_bytes for c in est.devices[0].components if c.label == "compute buffer")


@pytest.mark.parametrize(
    ("version", "rows"),
    [
        ("0.30.4", False),
        ("0.30.5", True),
        ("0.31.0", True),
        ("0.29.0", False),
        ("2026-06-03", False),
        ("2026-06-04", True),
        (None, True),
    ],
)
def test_releases_with_the_server_rows(version: str | None, rows: bool) -> None:
    assert server_output_rows(version) is rows


def test_deepseek2_outside_the_engine_families_drops_the_logits_from_0_30_5() -> None:
    before, after = (
        _est("deepseek-coder-v2-lite", "0.30.4"),
        _est("deepseek-coder-v2-lite", "0.30.5"),
    )
    # 511 fewer rows of 102400 f32 logits (the graph allocator reuses some of the difference)
    assert 0 < _compute(before) - _compute(after) <= 511 * 102400 * 4
    assert any("PR #23861" in a for a in after.assumptions)
    assert not any("PR #23861" in a for a in before.assumptions)
    assert _est("deepseek-coder-v2-lite", None).devices == after.devices


def test_num_parallel_sets_the_rows() -> None:
    one = _est("deepseek-coder-v2-lite", "0.30.5")
    four = _est("deepseek-coder-v2-lite", "0.30.5", parallel=4)
    assert any("reserves 4 output row(s)" in a for a in four.assumptions)
    assert any("reserves 1 output row(s)" in a for a in one.assumptions)


def test_engine_families_keep_their_rows() -> None:
    assert _est("qwen2.5-7b", "0.30.4").devices == _est("qwen2.5-7b", "0.30.5").devices


def test_ollama_ignores_the_llama_cpp_switch() -> None:
    """Ollama starts its own llama-server: the rows are the release's, whatever the switch."""
    for version in ("0.30.4", "0.30.5"):
        plain = _est("deepseek-coder-v2-lite", version)
        assert _est("deepseek-coder-v2-lite", version, llama_server=True).devices == plain.devices

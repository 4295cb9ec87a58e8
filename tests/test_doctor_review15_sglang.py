"""Session-15 review: SGLang's "Not enough memory. Please try to increase
--mem-fraction-static." with the weights at 86% of the card (constructed-review15-sglang.txt:
Qwen2.5-72B, TP 2, mem_fraction_static 0.8, "Load weight end ... avail mem=10.81 GB, mem
usage=67.77 GB").

SGLang sizes its pool as ``rest = avail_after_load - total x (1 - mem_fraction_static)``,
``max_num_token = rest x 2^30 // cell_size`` (python/sglang/srt/model_executor/model_runner.py
``profile_max_num_token``), ``total`` being the free memory before the weights load
(avail + mem usage). The expected fraction is recomputed here from that arithmetic.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oomkit.api import estimate, load_model
from oomkit.diagnose.doctor import diagnose_text
from oomkit.estimate.sglang_activation_floor import ACTIVATION_FLOOR
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

LOG = Path(__file__).parent / "fixtures" / "oom_logs" / "constructed-review15-sglang.txt"
H100 = DeviceTarget(name="H100", capacity_bytes=84_934_656_000)


def _sglang_tokens(frac: float) -> int:
    """SGLang's own pool at ``frac`` from the log's numbers, per TP-2 rank."""
    avail, used = round(10.81 * GiB), round(67.77 * GiB)
    spec = load_model("qwen2.5-72b")
    est = estimate(spec, InferenceSettings(runtime="sglang", tp=2), Hardware(devices=(H100,) * 2))
    cell = est.runtime_details["cell_size_bytes"]
    assert isinstance(cell, int)
    assert cell == 2 * 80 * 4 * 128 * 2  # K+V x layers x kv heads per rank x head_dim x bf16
    return max(0, avail - int((avail + used) * (1 - frac))) // cell


@pytest.mark.parametrize("with_model", [False, True])
def test_raising_the_fraction_is_sized_from_sglangs_arithmetic(with_model: bool) -> None:
    text = LOG.read_text(encoding="utf-8")
    if with_model:
        d = diagnose_text(
            text,
            model=load_model("qwen2.5-72b"),
            hardware=Hardware(devices=(H100,) * 2),
            runtime="sglang",
        )
    else:
        d = diagnose_text(text)  # the model and TP size come from SGLang's ServerArgs line
    assert d.context.tensor_parallel_size == 2
    assert "cannot fix it" not in d.explanation
    assert "Raising mem_fraction_static above 0.86 fixes it" in d.explanation
    first = d.fixes[0]
    assert first.title.startswith("Raise --mem-fraction-static to ")
    frac = float(first.title.rsplit(" ", 1)[1])
    # the smallest hundredth whose pool holds one full 32768-token request (Qwen2.5-72B's
    # context), leaving at least ACTIVATION_FLOOR outside it
    assert _sglang_tokens(frac) >= 32768 > _sglang_tokens(round(frac - 0.01, 2))
    assert frac == 0.93
    # SGLang's guide keeps 5 GiB outside the fraction (the planner's bound, shared)
    assert (1 - frac) * (10.81 + 67.77) * GiB >= ACTIVATION_FLOOR
    assert f"{_sglang_tokens(frac)} tokens" in first.why


def test_weights_fixes_never_save_more_than_the_card() -> None:
    # the message alone, one H100 given: 135 GiB of bf16 weights at --tp 1; a TP or
    # quantization change frees at most what the device holds
    d = diagnose_text(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n",
        model=load_model("qwen2.5-72b"),
        hardware=Hardware(devices=(H100,)),
        runtime="sglang",
    )
    sized = [f for f in d.fixes if f.expected_saving_bytes is not None]
    assert sized
    assert all((f.expected_saving_bytes or 0) <= 84_934_656_000 for f in sized), [
        (f.title, f.expected_saving_bytes) for f in sized
    ]

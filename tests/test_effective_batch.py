"""The divisor rule: a smaller micro-batch keeps the effective batch (micro-batch x gradient
accumulation x GPUs) whenever a divisor fits: in the pure helpers, the planner's micro-batch
lever and the doctor's micro-batch fix (a QLoRA run at 4 x 1 was offered 3 x 1)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from oomkit.diagnose.fixes import Fix
from oomkit.diagnose.training_fixes import _micro_batch
from oomkit.planner.effective_batch import accumulation_for, next_divisor, smaller_divisors
from oomkit.planner.training import _apply
from oomkit.planner.training import _micro_batch as lever
from oomkit.spec.settings import TrainingSettings


def test_divisors_and_accumulation() -> None:
    assert smaller_divisors(4, 1) == (2, 1)
    assert smaller_divisors(12, 1) == (6, 4, 3, 2, 1)
    assert smaller_divisors(4, 3) == (3, 2, 1)  # 12 sequences: 3 x 4 keeps them
    assert smaller_divisors(1, 8) == ()
    assert accumulation_for(4, 1, 2) == 2
    assert accumulation_for(4, 3, 3) == 4
    assert accumulation_for(4, 1, 3) is None  # 3 x 1 or 3 x 2 is not 4
    assert next_divisor(7, 1) == 1  # a prime: only micro-batch 1 keeps it


@given(st.integers(1, 64), st.integers(1, 16))
def test_every_smaller_divisor_keeps_the_batch(mb: int, accum: int) -> None:
    divs = smaller_divisors(mb, accum)
    assert list(divs) == sorted(divs, reverse=True)
    assert (1 in divs) == (mb > 1)
    for d in divs:
        a = accumulation_for(mb, accum, d)
        assert a is not None
        assert d * a == mb * accum
    for d in range(1, mb):
        assert (accumulation_for(mb, accum, d) is None) == (d not in divs)


@given(st.integers(2, 64), st.integers(1, 16), st.integers(1, 8))
def test_the_planner_lever_keeps_the_effective_batch(mb: int, accum: int, gpus: int) -> None:
    s = TrainingSettings(micro_batch=mb, grad_accum=accum, gpus=gpus)
    seen = [s.micro_batch]
    while (step := lever(s)) is not None:
        name, s = step
        assert s.micro_batch * s.grad_accum == mb * accum, name
        assert f"effective batch {mb * accum * gpus} kept" in name
        seen.append(s.micro_batch)
    # stepping down visits every divisor, so the loop that stops at the first that fits stops
    # at the largest divisor that fits
    assert seen == [mb, *smaller_divisors(mb, accum)]
    assert s.micro_batch == 1


def test_the_planner_lever_no_longer_loses_sequences() -> None:
    """Halving 3 x 2 gave 1 x 4 (4 sequences a step where 6 were asked)."""
    names, s = _apply(TrainingSettings(micro_batch=3, grad_accum=2), [lever])
    assert (s.micro_batch, s.grad_accum) == (2, 3)
    assert names == ("micro-batch 2 x 3 accumulation steps, effective batch 6 kept "
                     "(--micro-batch 2 --grad-accum 3)",)  # fmt: skip


class _FakeSizer:
    """What ``_micro_batch`` uses of ``_Sizer``: a step fits when its micro-batch is at most
    ``limit`` (memory grows with the micro-batch; accumulation costs nothing)."""

    def __init__(self, base: TrainingSettings, limit: int) -> None:
        self.base_settings, self.limit = base, limit
        self.base = base

    def run(self, s: TrainingSettings) -> TrainingSettings:
        return s

    def fits(self, est: Any) -> bool:
        return bool(est.micro_batch <= self.limit)

    def fix(self, change: str, title: str, s: TrainingSettings, est: Any) -> Fix:
        self.settings = s
        return Fix(title=title, why="sized", commands=(), expected_saving_bytes=1)


@settings(max_examples=300)
@given(st.integers(2, 48), st.integers(1, 12), st.integers(1, 4), st.integers(0, 48))
def test_the_doctor_keeps_the_effective_batch_whenever_a_divisor_fits(
    mb: int, accum: int, gpus: int, limit: int
) -> None:
    base = TrainingSettings(micro_batch=mb, grad_accum=accum, gpus=gpus)
    z = _FakeSizer(base, limit)
    (fix,) = _micro_batch(z)  # type: ignore[arg-type]
    assert fix is not None
    new = z.settings
    fitting = [d for d in smaller_divisors(mb, accum) if d <= limit]
    if fitting:
        assert new.micro_batch == max(fitting)
        assert new.micro_batch * new.grad_accum == mb * accum
        assert f"(effective batch {mb * accum * gpus} kept)" in fix.title
        if any(d <= limit for d in range(new.micro_batch + 1, mb)):
            assert "does not divide" in fix.why
    else:  # not even micro-batch 1 fits: the smallest, still keeping the batch
        assert (new.micro_batch, new.grad_accum) == (1, mb * accum)


def test_the_doctor_says_when_the_batch_changes_in_backward() -> None:
    """torchtune's optimizer in backward cannot accumulate: the largest that fits, said as a
    smaller effective batch."""
    base = TrainingSettings(micro_batch=4, optimizer_in_backward=True, master_weights=False)
    z = _FakeSizer(base, 3)
    (fix,) = _micro_batch(z)  # type: ignore[arg-type]
    assert fix is not None
    assert "the effective batch shrinks 4 -> 3" in fix.title  # it said "shrinks 1x"
    assert dataclasses.replace(base, micro_batch=3) == z.settings

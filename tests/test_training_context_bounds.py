"""The training-log reader stays fast on huge logs: only the head and the tail are read."""

from __future__ import annotations

from oomkit.diagnose import training_context
from oomkit.diagnose.training_context import training_setup_from_log

_SETUP = "  Instantaneous batch size per device = 8\n  Gradient Accumulation steps = 4\n"
_TRACE = (
    'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
    "    loss.backward()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
)
_NOISE = "step 1: loss 2.31 lr 1e-05\n"


def test_small_log_is_read_whole() -> None:
    text = _SETUP + _NOISE * 10 + _TRACE
    assert training_context._head_and_tail(text) is text
    setup = training_setup_from_log(text)
    assert (setup.micro_batch, setup.grad_accum, setup.phase) == (8, 4, "backward")


def test_huge_log_keeps_the_setup_at_its_start_and_the_failure_at_its_end() -> None:
    middle = _NOISE * (6 * 2**20 // len(_NOISE))
    # a backward frame only in the middle must not decide the phase of the failure at the end
    text = _SETUP + middle + "    loss.backward()\n" + middle + _TRACE.replace("backward", "step")
    cut = training_context._head_and_tail(text)
    assert len(cut) <= 2 * training_context._HEAD_TAIL + 1
    assert cut.startswith(_SETUP)
    assert cut.endswith(_TRACE.replace("backward", "step"))
    lines = set(text.splitlines())
    assert all(line in lines for line in cut.splitlines())  # whole lines only
    setup = training_setup_from_log(text)
    assert (setup.micro_batch, setup.grad_accum) == (8, 4)
    assert setup.phase != "backward"


def test_phase_evidence_is_the_first_line_with_a_frame() -> None:
    text = "x\n  File 'a.py', in training_step\n    out = model(x)\n" + _TRACE
    setup = training_setup_from_log(text)
    assert setup.phase == "backward"
    assert setup.evidence["phase"] == "loss.backward()"

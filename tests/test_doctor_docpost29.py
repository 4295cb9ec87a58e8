"""The traceback's own PyTorch frames as a phase (docpost29, issue 9).

* A frame of torch.nn's forward computation (torch/nn/functional.py, nn.Module.__call__'s
  ``_wrapped_call_impl`` / ``forward_call(...)``, a layer's ``_conv_forward``) is the forward
  pass: the taxonomy's forward rule (an activation, ``batch_or_activations``) applies.
* nn.Module.to's inner ``convert`` (``t.to(device, dtype if t.is_floating_point() ...)``) is a
  load.
* A traceback whose frames place nothing is named by the deciding question instead of asking
  for a traceback the user already pasted.

Positives are development records or the runtime's source lines; each has a near miss.
"""

from __future__ import annotations

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log

_MSG = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
    "capacity of 23.65 GiB of which 3.06 MiB is free. Of the allocated memory 22.90 GiB is "
    "allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated."
)
_TORCH = "/usr/lib/python3.11/site-packages/torch"


def _phase(text: str) -> str | None:
    return parse_log(text).context.frame_phase


def test_nn_functional_frame_is_the_forward_pass() -> None:
    # heldout32's pytorch-captcha-1: the last frame, F.relu, and a pre-1.10 message
    d = diagnose_text(corpus_text("h32-pytorch-captcha-1"))
    assert d.context.frame_phase == "forward"
    assert d.cause == "batch_or_activations"
    assert d.allocation == "activations_forward"


def test_other_functional_modules_are_not_torch_nn() -> None:
    # bitsandbytes/functional.py (heldout7's chatglmtuning-38) and torch/functional.py (cdist,
    # heldout32's fld-8) are not torch.nn's layer library
    assert _phase(corpus_text("h7-chatglmtuning-38")) != "forward"
    assert _phase(corpus_text("h32-fld-8")) != "forward"


def test_wrapped_call_impl_frame_is_the_forward_pass() -> None:
    text = (
        'Traceback (most recent call last):\n  File "/app/train.py", line 88, in <module>\n'
        "    outputs = model(**batch)\n"
        f'  File "{_TORCH}/nn/modules/module.py", line 1736, in _wrapped_call_impl\n{_MSG}\n'
    )
    d = diagnose_text(text)
    assert d.context.frame_phase == "forward"
    assert d.cause == "batch_or_activations"
    assert "forward pass (outputs = model(**batch))" in d.explanation


def test_forward_call_line_is_the_forward_pass() -> None:
    # torch/nn/modules/module.py `_call_impl`: `return forward_call(*args, **kwargs)`
    assert _phase(f"    return forward_call(*args, **kwargs)\n{_MSG}\n") == "forward"


def test_module_call_inside_a_load_is_a_load() -> None:
    text = (
        f'  File "/app/run.py", line 5, in <module>\n    model = AutoModel.from_pretrained(name)\n'
        f'  File "{_TORCH}/nn/modules/module.py", line 1736, in _wrapped_call_impl\n{_MSG}\n'
    )
    assert _phase(text) == "model_load"


def test_backward_outranks_a_recomputed_forward() -> None:
    # gradient checkpointing recomputes the forward inside backward(): its F.* frames are below
    text = (
        '  File "/app/train.py", line 40, in step\n    loss.backward()\n'
        f'  File "{_TORCH}/nn/functional.py", line 1500, in relu\n{_MSG}\n'
    )
    assert _phase(text) == "backward"


def test_conv_forward_frame_and_not_a_layer_constructor() -> None:
    conv = f'  File "{_TORCH}/nn/modules/conv.py", line 456, in _conv_forward\n{_MSG}\n'
    assert _phase(conv) == "forward"
    # a layer built on the device allocates its weights in __init__ / reset_parameters
    init = f'  File "{_TORCH}/nn/modules/linear.py", line 98, in reset_parameters\n{_MSG}\n'
    assert _phase(init) != "forward"


def test_module_to_convert_is_a_load() -> None:
    # heldout23's Grounded-Segment-Anything-288: nn.Module.to's `convert`, cut at that frame
    d = diagnose_text(corpus_text("h23-Grounded-Segment-Anything-288"))
    assert d.context.frame_phase == "model_load"
    assert d.allocation == "weights_load"
    # a user's own tensor move is not Module.to
    assert _phase(f"    x = t.to(device, non_blocking=True)\n{_MSG}\n") is None


def test_question_names_the_traceback_shown() -> None:
    # heldout12's pytorch-CycleGAN-and-pix2pix-328: a traceback cut after its first frame
    d = diagnose_text(corpus_text("h12-pytorch-cyclegan-and-pix2pix-328"))
    assert d.context.frame_phase is None
    assert 'the traceback shown ends at `File "train.py", line 32, in <module>`' in d.explanation
    assert "the full traceback" not in d.explanation


def test_question_asks_for_the_traceback_when_none_is_shown() -> None:
    d = diagnose_text("RuntimeError: CUDA error: out of memory\n")
    assert d.context.last_frame is None
    assert "the full traceback — from_pretrained" in d.explanation

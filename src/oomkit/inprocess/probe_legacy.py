"""What autograd saved in torch releases older than the one the probe runs on.

Published figures from 2021-2022 were measured on torch 1.x, whose autograd kept tensors that
today's does not. The probe traces with the installed torch, so a record measured on an old
release names the difference (``StepOptions.softmax_saves_input``) and the probe puts it back:

* ``softmax`` saved its **input** as well as its output until torch 1.11. The derivative in
  ``tools/autograd/derivatives.yaml`` was ``self: _softmax_backward_data(grad, result, dim,
  self)``, which makes the generated ``SoftmaxBackward`` node hold ``self`` although the kernel
  reads only ``result`` (pytorch/pytorch#64000, "Softmax/logsoftmax use more memory for backward
  than needed"; fixed by pytorch/pytorch#65242, which passes ``input_dtype`` instead, first
  released in torch 1.11, March 2022). An eager attention layer therefore kept one more
  ``batch x heads x seq x seq`` tensor alive per layer until its backward.
* How ``at::softmax`` reached ``_softmax`` then (aten/src/ATen/native/SoftMax.cpp): a CUDA fp16
  input with ``dtype=float`` (what autocast's ``fp32_set_opt_dtype`` passes) ran
  ``_softmax(input, dim, half_to_float=true)``, so the saved input is the fp16 tensor itself;
  any other requested dtype converted first (``input.toType(dtype)``) and the converted tensor
  is the one saved.

:func:`legacy_softmax` replaces ``torch.nn.functional.softmax`` (what transformers' eager
attention calls) while it is active with an autograd function that saves exactly that pair
(nested and concurrent uses share one installation, removed by the last to exit).
The replacement goes through ``save_for_backward``, so activation checkpointing drops and
recomputes it like any saved tensor.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch

__all__ = ["legacy_softmax"]


class _SoftmaxSavingInput(torch.autograd.Function):
    """``_softmax`` with torch < 1.11's saved set: the input and the output."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
        if half_to_float:
            try:  # CUDA's kernel writes fp32 straight from the fp16 input (fake tensors too)
                y = torch._softmax(x, dim, True)
            except RuntimeError:  # real CPU tensors: "half to float ... not supported on CPU"
                y = torch._softmax(x.float(), dim, False)
        else:
            y = torch._softmax(x, dim, False)
        ctx.save_for_backward(x, y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Any:
        x, y = ctx.saved_tensors
        grad = torch._softmax_backward_data(grads[0], y, ctx.dim, x.dtype)
        return grad, None, None


def _autocast_on(t: torch.Tensor) -> bool:
    return bool(torch.is_autocast_enabled(t.device.type))


_LOCK = threading.Lock()
#: ``F.softmax`` as it was before the first active :func:`legacy_softmax` installed
#: :func:`_softmax`, and how many contexts (all threads) hold the installation
_ORIGINAL: list[Callable[..., torch.Tensor]] = []
_USERS = [0]
#: per thread: how deep this thread is inside :func:`legacy_softmax` (other threads that trace
#: meanwhile keep today's op)
_LOCAL = threading.local()


def _softmax(
    input: torch.Tensor, dim: int | None = None, _stacklevel: int = 3,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:  # fmt: skip
    """``F.softmax`` with torch < 1.11's saved set inside :func:`legacy_softmax` (this thread)."""
    original = _ORIGINAL[0]
    active = getattr(_LOCAL, "depth", 0) > 0
    if not active or dim is None or not torch.is_grad_enabled() or not input.requires_grad:
        return original(input, dim, _stacklevel, dtype)
    if dtype is None and _autocast_on(input) and input.dtype in (torch.float16, torch.bfloat16):
        dtype = torch.float32  # autocast's fp32_set_opt_dtype for softmax
    half_to_float = input.dtype == torch.float16 and dtype == torch.float32
    x = input if half_to_float or dtype is None else input.to(dtype)
    with torch.autocast(input.device.type, enabled=False):
        out: torch.Tensor = _SoftmaxSavingInput.apply(  # type: ignore[no-untyped-call]
            x, dim % input.dim(), half_to_float
        )
    return out


@contextlib.contextmanager
def legacy_softmax() -> Iterator[None]:
    """Trace ``F.softmax`` as torch < 1.11 saved it (see the module docstring).

    Re-entrant and thread-safe: the first context installs the replacement, the last one to
    exit (in any order, from any thread) puts back the very function it found; only threads
    inside a context get the legacy saved set.
    """
    with _LOCK:
        if _USERS[0] == 0:
            _ORIGINAL[:] = [torch.nn.functional.softmax]
            torch.nn.functional.softmax = _softmax
        _USERS[0] += 1
    _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1
    try:
        yield
    finally:
        _LOCAL.depth -= 1
        with _LOCK:
            _USERS[0] -= 1
            # the last user out restores the original unless someone patched over us;
            # _ORIGINAL is kept: a reference taken inside still works (as today's op)
            if _USERS[0] == 0 and torch.nn.functional.softmax is _softmax:
                torch.nn.functional.softmax = _ORIGINAL[0]

"""Compiled decoder layers for the probe: AOTAutograd's real min-cut partition, run on fake tensors.

torchtune ``compile: True`` compiles every decoder layer (``training.compile_model``:
``m.compile()`` per ``TransformerSelfAttentionLayer``). What that changes in memory is the set
of tensors the forward keeps for backward, chosen by
``torch._functorch.partitioners.min_cut_rematerialization_partition`` (see
:mod:`oomkit.estimate.training_compile`). Dynamo does not run under ``FakeTensorMode``, so the
probe calls AOTAutograd directly: :func:`compile_decoder_layers` replaces each HF
``*DecoderLayer``'s ``forward`` with ``aot_function`` over a functional call of the original
forward (parameters as explicit inputs), partitioned by ``min_cut_rematerialization_partition``
with Inductor's decomposition table (``select_decomp_table``), and with pass-through compilers:
the partitioned forward and backward graphs run as ATen ops on the fake tensors, so the tracker
sees exactly the saved set the partitioner chose.

Not traced with activation checkpointing: under the non-reentrant checkpoint's
``saved_tensors_hooks`` this trace kept each compiled layer's whole saved set (the probe falls
back to the eager trace and says so in its notes). Not traced: Inductor's kernel fusion inside
the backward graph (the unfused backward graph materialises pointwise temporaries a fused kernel
would not), so the backward working set is an upper bound. Each layer is traced once, outside
the memory tracker (its modes disabled), and the compiled function is reused for every later
call with the same shapes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

__all__ = ["compile_decoder_layers"]


def _is_decoder_layer(m: nn.Module) -> bool:
    return type(m).__name__.endswith("DecoderLayer")


def compile_decoder_layers(model: nn.Module) -> int:
    """Route every decoder layer's forward through its min-cut-partitioned graphs.

    Returns:
        How many layers were wrapped.
    """
    n = 0
    for m in model.modules():
        if _is_decoder_layer(m):
            _wrap(m)
            n += 1
    return n


@contextlib.contextmanager
def _constants_allowed(tensors: list[torch.Tensor]) -> Iterator[None]:
    """Let the inputs' fake mode take the real scalar constants that tracing lifted into the
    graphs (``tensor(0.)`` / ``tensor(-inf)`` of a mask's ``where``)."""
    from torch._guards import detect_fake_mode

    mode = detect_fake_mode(tensors)
    if mode is None:
        yield
        return
    allow = mode.allow_non_fake_inputs
    mode.allow_non_fake_inputs = True
    try:
        yield
    finally:
        mode.allow_non_fake_inputs = allow


def _wrap(layer: nn.Module) -> None:
    from torch._functorch._aot_autograd.utils import make_boxed_func
    from torch._functorch.aot_autograd import aot_function
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table
    from torch.nn.utils.stateless import _reparametrize_module
    from torch.utils._python_dispatch import _disable_current_modes
    from torch.utils._pytree import tree_flatten, tree_unflatten

    original: Callable[..., Any] = layer.forward
    compiled: dict[Any, tuple[Callable[..., Any], list[Any]]] = {}

    def passthrough(
        gm: torch.fx.GraphModule,
        example_inputs: Sequence[torch.Tensor | int | torch.SymInt | None],
    ) -> Any:
        return make_boxed_func(gm)

    def forward(*args: Any, **kwargs: Any) -> Any:
        names = [name for name, _ in layer.named_parameters()]
        params = [p for _, p in layer.named_parameters()]
        leaves, spec = tree_flatten((args, kwargs))
        is_t = [isinstance(x, torch.Tensor) for x in leaves]
        tensors = [x for x, t in zip(leaves, is_t, strict=True) if t]
        key = (
            str(spec),
            tuple(repr(x) for x, t in zip(leaves, is_t, strict=True) if not t),
            tuple((tuple(x.shape), x.dtype, x.requires_grad) for x in tensors),
            torch.is_grad_enabled(),
        )
        if key not in compiled:
            out_spec: list[Any] = []

            def fn(*flat: torch.Tensor) -> list[torch.Tensor]:
                it = iter(flat[len(names) :])
                new = [next(it) if t else x for x, t in zip(leaves, is_t, strict=True)]
                a, kw = tree_unflatten(new, spec)
                with _reparametrize_module(
                    layer, dict(zip(names, flat[: len(names)], strict=True))
                ):
                    out = original(*a, **kw)
                out_leaves, o_spec = tree_flatten(out)
                is_out_t = [isinstance(o, torch.Tensor) for o in out_leaves]
                rest = [o for o, t in zip(out_leaves, is_out_t, strict=True) if not t]
                out_spec[:] = [o_spec, is_out_t, rest]
                return [o for o in out_leaves if isinstance(o, torch.Tensor)]

            f = aot_function(
                fn, fw_compiler=passthrough, bw_compiler=passthrough,
                partition_fn=min_cut_rematerialization_partition,
                decompositions=select_decomp_table(),
            )  # fmt: skip
            # trace once outside the memory tracker (and any other mode) on detached copies
            with _disable_current_modes(), _constants_allowed(tensors):
                warm = [p.detach().requires_grad_(p.requires_grad) for p in params]
                warm += [t.detach().requires_grad_(t.requires_grad) for t in tensors]
                f(*warm)
            compiled[key] = (f, out_spec)
        f, out_spec = compiled[key]
        with _constants_allowed(tensors):
            result = f(*params, *tensors)
        outs = iter(result)
        o_spec, o_is_t, o_rest = out_spec
        rest = iter(o_rest)
        return tree_unflatten([next(outs) if t else next(rest) for t in o_is_t], o_spec)

    layer.forward = forward

"""CUDA's autocast policy for the probe's CPU fake tensors.

The probe's fake tensors live on the CPU device, so ``torch.autocast("cpu")`` applies the CPU
op lists, which differ from CUDA's where memory is concerned: on CUDA ``layer_norm`` (and
softmax, log_softmax, sum, pow, exp, the losses...) run in fp32, so a LayerNorm model's
normalised activations are fp32 tensors on a GPU but bf16 on the CPU. While the probe runs,
this module registers Python kernels on the ``AutocastCPU`` dispatch key for the ops of
CUDA's ``AT_FORALL_FP32`` and ``AT_FORALL_FP32_SET_OPT_DTYPE`` lists
(``aten/src/ATen/autocast_mode.h``, pytorch/pytorch) that transformers models use:

* fp32 ops: floating-point tensor arguments in a lower precision are cast to fp32 (the
  ``cached_cast(at::kFloat, ...)`` of ``WrapFunction_<CastPolicy::fp32>``), then the op runs;
* fp32-set-opt-dtype ops (``softmax``, ``log_softmax``, ``sum``, ``cumsum``, ``prod``): run
  with ``dtype=torch.float32`` when the caller gave no dtype (``fp32_set_opt_dtype``).

The casts happen above autograd, as on CUDA, so what autograd saves is what a GPU would save.
Leaving the context destroys the ``torch.library.Library`` and with it the registrations.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._pytree import tree_map_only

__all__ = ["FP32_OPS", "FP32_SET_OPT_DTYPE_OPS", "cuda_autocast_policy", "cuda_sdpa_dropout"]

#: CUDA ``AT_FORALL_FP32`` entries (op, overload) that transformers models reach
FP32_OPS: tuple[tuple[str, str], ...] = (
    ("exp", "default"),
    ("log", "default"),
    ("log1p", "default"),
    ("reciprocal", "default"),
    ("rsqrt", "default"),
    ("pow", "Tensor_Scalar"),
    ("pow", "Tensor_Tensor"),
    ("softplus", "default"),
    ("layer_norm", "default"),
    ("native_layer_norm", "default"),
    ("group_norm", "default"),
    ("cosine_similarity", "default"),
    ("nll_loss", "default"),
    ("kl_div", "default"),
    ("l1_loss", "default"),
    ("smooth_l1_loss", "default"),
    ("huber_loss", "default"),
    ("mse_loss", "default"),
    ("binary_cross_entropy_with_logits", "default"),
    ("logsumexp", "default"),
)
#: CUDA ``AT_FORALL_FP32_SET_OPT_DTYPE`` entries (op, overload, position of ``dtype``)
FP32_SET_OPT_DTYPE_OPS: tuple[tuple[str, str], ...] = (
    ("softmax", "int"),
    ("log_softmax", "int"),
    ("sum", "default"),
    ("sum", "dim_IntList"),
    ("cumsum", "default"),
    ("prod", "default"),
)
_LOWER = (torch.float16, torch.bfloat16)


def _exclude_autocast() -> Any:
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
    return torch._C._ExcludeDispatchKeyGuard(keys)


def _to_fp32(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32) if t.is_floating_point() and t.dtype in _LOWER else t


def _fp32_kernel(op: Any) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        with _exclude_autocast():
            return op(*tree_map_only(torch.Tensor, _to_fp32, args), **kwargs)

    return kernel


def _set_opt_dtype_kernel(op: Any) -> Callable[..., Any]:
    names = [a.name for a in op._schema.arguments]
    pos = names.index("dtype")
    kw_only = bool(op._schema.arguments[pos].kwarg_only)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        with _exclude_autocast():
            first = args[0] if args else None
            given = kwargs.get("dtype")
            if not kw_only and len(args) > pos:
                given = args[pos]
            if isinstance(first, torch.Tensor) and first.is_floating_point() and given is None:
                if not kw_only and len(args) > pos:
                    args = (*args[:pos], torch.float32, *args[pos + 1 :])
                else:
                    kwargs = {**kwargs, "dtype": torch.float32}
            return op(*args, **kwargs)

    return kernel


@contextlib.contextmanager
def cuda_autocast_policy() -> Iterator[None]:
    """Make ``torch.autocast("cpu")`` cast like CUDA autocast does (see the module docstring)."""
    lib = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
            for name, overload in FP32_OPS:
                packet = getattr(torch.ops.aten, name, None)
                op = getattr(packet, overload, None) if packet is not None else None
                if op is None:  # pragma: no cover - an op missing from this torch
                    continue
                lib.impl(  # type: ignore[no-untyped-call]
                   f"{name}.{overload}" if overload != "default" else name,
                         _fp32_kernel(op), "AutocastCPU")  # fmt: skip
            for name, overload in FP32_SET_OPT_DTYPE_OPS:
                packet = getattr(torch.ops.aten, name, None)
                op = getattr(packet, overload, None) if packet is not None else None
                if op is None:  # pragma: no cover
                    continue
                lib.impl(  # type: ignore[no-untyped-call]
                   f"{name}.{overload}" if overload != "default" else name,
                         _set_opt_dtype_kernel(op), "AutocastCPU")  # fmt: skip
        yield
    finally:
        lib._destroy()  # type: ignore[no-untyped-call]


class _MemEfficientSDPA(torch.autograd.Function):
    """SDPA whose value head dim differs from the query's (MLA: DeepSeek-V2/V3 q·k 192, v 128),
    as CUDA runs it and the CPU cannot.

    CUDA's FlashAttention needs one head dim for q, k and v, so such a call takes the
    memory-efficient kernel (``check_head_dim_size_mem_efficient`` allows v's to differ,
    aten/src/ATen/native/transformers/sdp_utils_cpp.h), which saves q, k, v, the output and an
    fp32 logsumexp and never allocates the ``S x S`` scores. The CPU's fused flash kernel has
    the same restriction and there is no CPU memory-efficient kernel, so on the CPU the call
    falls back to the math path, which materialises and saves the scores (one ``B x a x S x S``
    matrix per layer): seen as +11.5% on a DeepSeek-V2-Lite LoRA step against a real H100
    (``benchmarks/gpu/results/training_h100.json``). Shapes only: the probe runs on fake tensors.
    """

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = q.new_empty((*q.shape[:-1], v.size(-1)))
        lse = q.new_empty(q.shape[:-1], dtype=torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Any:
        q, k, v, _out, lse = ctx.saved_tensors
        _delta = torch.empty_like(lse)  # the kernel's per-row fp32 delta
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


@contextlib.contextmanager
def cuda_sdpa_dropout() -> Iterator[None]:
    """Trace ``scaled_dot_product_attention`` with dropout as CUDA's fused kernels run it.

    On CUDA, FlashAttention and memory-efficient attention apply attention dropout inside the
    kernel from a Philox seed/offset: nothing of size seq x seq is allocated or saved
    (``_scaled_dot_product_flash_attention`` saves q, k, v, out, logsumexp and the RNG state).
    The CPU flash kernel has no dropout, so with ``dropout_p > 0`` the CPU dispatcher falls
    back to the math path, which materialises the fp32 attention matrix and its dropout
    mask. While the probe runs, ``torch.nn.functional.scaled_dot_product_attention`` is
    called with ``dropout_p=0``, which keeps the fused CPU kernel whose saved tensors are
    those of the CUDA one (the 8-byte RNG state aside).

    Plain dropout likewise: ``at::dropout`` runs the fused ``native_dropout`` for CUDA inputs
    (``is_fused_kernel_acceptable`` in aten/src/ATen/native/Dropout.cpp), which saves a
    1-byte bool mask, while its CPU path multiplies by an fp32 noise tensor; while the probe
    runs, ``torch.nn.functional.dropout`` calls ``native_dropout`` as CUDA would.
    """
    original = torch.nn.functional.scaled_dot_product_attention
    original_dropout = torch.nn.functional.dropout

    def dropout(
        input: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
    ) -> torch.Tensor:
        # at::dropout takes the fused native_dropout (1-byte bool mask saved) for CUDA inputs
        # (is_fused_kernel_acceptable); on the CPU it multiplies by an fp32 noise tensor
        if training and 0.0 < p < 1.0 and input.numel() > 0 and not inplace:
            out: torch.Tensor = torch.native_dropout(input, p, True)[0]
            return out
        return original_dropout(input, p, training, inplace)

    def sdpa(*args: Any, **kwargs: Any) -> Any:
        if len(args) > 4:
            args = (*args[:4], 0.0, *args[5:])
        if "dropout_p" in kwargs:
            kwargs = {**kwargs, "dropout_p": 0.0}
        q, k, v = (list(args) + [kwargs.get(n) for n in ("query", "key", "value")])[:3]
        if (
            isinstance(q, torch.Tensor)
            and isinstance(v, torch.Tensor)
            and isinstance(k, torch.Tensor)
            and q.size(-1) != v.size(-1)
            and q.size(-1) == k.size(-1)
            and q.size(-3) == k.size(-3)
        ):
            return _MemEfficientSDPA.apply(q, k, v)  # type: ignore[no-untyped-call]
        return original(*args, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = sdpa
    torch.nn.functional.dropout = dropout
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = original
        torch.nn.functional.dropout = original_dropout

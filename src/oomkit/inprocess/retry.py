"""Recognise every out-of-memory error form, and retry with a smaller batch.

accelerate's ``should_reduce_batch_size`` (``accelerate/utils/memory.py``) matches a few CUDA
strings on a one-argument ``RuntimeError``; it misses Apple MPS, ROCm/HIP and XPU messages, the
CPU allocator on Windows ("not enough memory"), cuBLAS/cuDNN failures that are OOM in disguise,
and OOMs wrapped by another exception. :func:`is_oom_error` recognises them all, walking
``__cause__``/``__context__`` and exception groups, without importing torch.

Message sources (torch 2.13): ``c10/cuda/CUDACachingAllocator.cpp`` ("CUDA out of memory. Tried
to allocate"), ``aten/src/ATen/mps/MPSAllocator.mm`` ("MPS backend out of memory"),
``c10/core/impl/alloc_cpu.cpp`` ("DefaultCPUAllocator: can't allocate memory" on POSIX,
"DefaultCPUAllocator: not enough memory" on Windows), ``c10/cuda/CUDAException`` ("CUDA error:
out of memory" from the driver), ``aten/src/ATen/cuda/CUDABlas.cpp``
(``CUBLAS_STATUS_ALLOC_FAILED``), cuDNN's ``CUDNN_STATUS_ALLOC_FAILED`` /
``CUDNN_STATUS_NOT_INITIALIZED`` (cuDNN could not allocate its workspace or handle).
"""

from __future__ import annotations

import functools
import gc
import inspect
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, overload

__all__ = ["find_batch_size", "is_oom_error", "oom_retry"]

P = ParamSpec("P")
R = TypeVar("R")

_OOM_TEXT = re.compile(
    r"out of memory"  # CUDA/HIP/XPU/MPS/driver: "CUDA out of memory", "CUDA error: out of memory"
    r"|DefaultCPUAllocator: (?:can't allocate memory|not enough memory)"
    r"|CUBLAS_STATUS_ALLOC_FAILED"
    r"|CUDNN_STATUS_(?:ALLOC_FAILED|NOT_INITIALIZED)"
    r"|HIPBLAS_STATUS_ALLOC_FAILED|MIOPEN_STATUS_ALLOC_FAILED"
    r"|Failed to allocate \d+ bytes"  # XLA/TPU and some custom allocators
    r"|RESOURCE_EXHAUSTED",
    re.IGNORECASE,
)
_OOM_TYPES = frozenset({"OutOfMemoryError", "MemoryError", "ResourceExhaustedError"})


def _one(exc: BaseException) -> bool:
    for cls in type(exc).__mro__:
        if cls.__name__ in _OOM_TYPES:
            return True
    if isinstance(exc, (RuntimeError, OSError, ValueError)) or type(exc).__name__.endswith("Error"):
        return bool(_OOM_TEXT.search(" ".join(str(a) for a in exc.args)))
    return False


def is_oom_error(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it, or an exception in its group) is an OOM.

    >>> is_oom_error(RuntimeError("MPS backend out of memory (MPS allocated: 17.5 GB)"))
    True
    >>> is_oom_error(RuntimeError("DefaultCPUAllocator: not enough memory: you tried to alloc"))
    True
    >>> is_oom_error(RuntimeError("CUDA error: an illegal memory access was encountered"))
    False
    """
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen or len(seen) > 32:
            continue
        seen.add(id(current))
        if _one(current):
            return True
        stack.extend(n for n in (current.__cause__, current.__context__) if n is not None)
        stack.extend(getattr(current, "exceptions", ()) or ())
    return False


def _release(exc: BaseException | None) -> None:
    """Drop what an OOM keeps alive (its frames' tensors), then free the allocator cache."""
    if exc is not None and exc.__traceback__ is not None:
        traceback.clear_frames(exc.__traceback__)
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        mps = getattr(torch, "mps", None)
        if mps is not None and torch.backends.mps.is_available():
            mps.empty_cache()
    except RuntimeError:  # pragma: no cover - a broken context after a driver OOM
        pass


@overload
def oom_retry(fn: Callable[P, R], /) -> Callable[P, R]: ...


@overload
def oom_retry(
    fn: None = None,
    /,
    *,
    batch_arg: str = "batch_size",
    start: int | None = None,
    min_batch_size: int = 1,
    on_retry: Callable[[int, BaseException], None] | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def oom_retry(
    fn: Callable[P, R] | None = None,
    /,
    *,
    batch_arg: str = "batch_size",
    start: int | None = None,
    min_batch_size: int = 1,
    on_retry: Callable[[int, BaseException], None] | None = None,
) -> Any:
    """Decorator: on any OOM (see :func:`is_oom_error`), halve ``batch_size`` and call again.

    The batch size is the argument named ``batch_arg``: the caller's value if given, else
    ``start``, else the parameter's default. Between tries the failed frames are cleared,
    ``gc.collect()`` runs and the allocator cache is emptied (the memory an OOM leaves behind
    would otherwise make the retry fail too). Below ``min_batch_size`` the last OOM is re-raised.

    Args:
        fn: the function (when used as ``@oom_retry`` without parentheses).
        batch_arg: name of the batch-size parameter.
        start: first batch size when the caller passes none.
        min_batch_size: smallest size tried.
        on_retry: called with ``(new_batch_size, error)`` before each retry.

    Example::

        @oomkit.oom_retry
        def train(batch_size=256): ...
    """

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        sig = inspect.signature(func)
        if batch_arg not in sig.parameters:
            raise TypeError(f"oom_retry: {func.__qualname__} has no parameter '{batch_arg}'")
        default = sig.parameters[batch_arg].default

        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = sig.bind_partial(*args, **kwargs)
            size = bound.arguments.get(batch_arg, start if start is not None else default)
            if not isinstance(size, int) or size < 1:
                raise TypeError(f"oom_retry: '{batch_arg}' must be a positive int, got {size!r}")
            while True:
                bound.arguments[batch_arg] = size
                try:
                    return func(*bound.args, **bound.kwargs)
                except BaseException as exc:
                    if not is_oom_error(exc) or size // 2 < min_batch_size:
                        raise
                    size //= 2
                    if on_retry is not None:
                        on_retry(size, exc)
                    _release(exc)

        return wrapper

    return decorate(fn) if fn is not None else decorate


def find_batch_size(
    trial: Callable[[int], object],
    *,
    start: int,
    min_batch_size: int = 1,
    search: str = "halve",
    on_trial: Callable[[int, bool], None] | None = None,
) -> int:
    """Largest batch size for which ``trial(batch_size)`` runs without an OOM.

    ``search="halve"`` tries ``start, start/2, ...`` and returns the first that works (as
    accelerate's ``find_executable_batch_size``). ``search="binary"`` then binary-searches
    between that size and the last failing one, so it can return e.g. 48 rather than 32.

    Args:
        trial: runs one step at the given batch size; an OOM means "too big".
        start: first (largest) size tried.
        min_batch_size: give up below this.
        search: ``"halve"`` or ``"binary"``.
        on_trial: called with ``(batch_size, fitted)`` after each try.

    Returns:
        The batch size found.

    Raises:
        ValueError: bad arguments.
        The last OOM error: even ``min_batch_size`` does not fit. Non-OOM errors propagate.
    """
    if search not in ("halve", "binary"):
        raise ValueError(f"find_batch_size: search must be 'halve' or 'binary', got {search!r}")
    if start < min_batch_size or min_batch_size < 1:
        raise ValueError(
            f"find_batch_size: need 1 <= min_batch_size <= start, got {min_batch_size}, {start}"
        )

    def attempt(size: int) -> BaseException | None:
        error: BaseException | None = None
        try:
            trial(size)
        except BaseException as exc:
            if not is_oom_error(exc):
                raise
            error = exc
        if on_trial is not None:
            on_trial(size, error is None)
        return error

    size = start
    failed: int | None = None
    while (error := attempt(size)) is not None:
        if size // 2 < min_batch_size:
            raise error
        _release(error)
        del error
        failed = size
        size //= 2
    if search == "halve" or failed is None:
        return size
    lo, hi = size, failed  # lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        error = attempt(mid)
        if error is None:
            lo = mid
        else:
            _release(error)
            del error
            hi = mid
    return lo

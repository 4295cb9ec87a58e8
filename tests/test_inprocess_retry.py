"""is_oom_error, oom_retry and find_batch_size against real torch OOMs (CPU allocator).

The CPU OOMs are real: torch.empty(2**62) makes DefaultCPUAllocator fail (it cannot reserve
4 EiB), exactly as a too-large batch does on a real machine, but instantly and safely.
"""

from __future__ import annotations

import sys
import weakref

import pytest

from oomkit.inprocess.retry import find_batch_size, is_oom_error, oom_retry

torch = pytest.importorskip("torch")

ABSURD = 2**62  # bytes: no host can allocate this


def _real_cpu_oom() -> RuntimeError:
    try:
        torch.empty(ABSURD, dtype=torch.uint8)
    except RuntimeError as exc:
        return exc
    raise AssertionError("allocating 4 EiB succeeded")  # pragma: no cover


def _step(limit: int, tried: list[int]):  # type: ignore[no-untyped-def]
    """A training step that really runs out of (CPU) memory above ``limit`` samples."""

    def step(batch_size: int = 64) -> int:
        tried.append(batch_size)
        n = ABSURD if batch_size > limit else batch_size * 1024
        x = torch.empty(n, dtype=torch.uint8)
        return int(x.numel())

    return step


# Message texts: torch's own formats (c10/cuda/CUDACachingAllocator.cpp, aten/src/ATen/mps/
# MPSAllocator.mm, c10/core/impl/alloc_cpu.cpp on Windows, CUDABlas.cpp, cuDNN) as they appear in
# user reports; each is an OOM accelerate's `should_reduce_batch_size` string list does not cover
# except the first.
OOM_TEXTS = [
    "CUDA out of memory. Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; 69.17 MiB "
    "already allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch)",
    "MPS backend out of memory (MPS allocated: 1.02 GB, other allocations: 2.31 GB, max allowed: "
    "3.40 GB). Tried to allocate 256 bytes on shared pool.",
    "HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 63.98 GiB",
    "XPU out of memory. Tried to allocate 1024.00 MiB (GPU 0; 15.11 GiB total capacity)",
    "[enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried "
    "to allocate 9437184 bytes.",
    "CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other "
    "API call, so the stacktrace below might be incorrect.",
    "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
]


@pytest.mark.parametrize("text", OOM_TEXTS)
def test_oom_texts_recognised(text: str) -> None:
    assert is_oom_error(RuntimeError(text))


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("CUDA error: an illegal memory access was encountered"),
        RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)"),
        KeyError("out"),
        ValueError("expected 3 channels"),
    ],
)
def test_non_oom_not_recognised(exc: BaseException) -> None:
    assert not is_oom_error(exc)


def test_real_torch_errors_recognised() -> None:
    # The real Linux CPU allocator failure and a real torch.OutOfMemoryError instance.
    cpu = _real_cpu_oom()
    assert "DefaultCPUAllocator: can't allocate memory" in str(cpu)
    assert is_oom_error(cpu)
    assert is_oom_error(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_oom_error(MemoryError())


def test_wrapped_and_grouped_ooms_recognised() -> None:
    # Frameworks re-raise: the OOM is the __cause__ / __context__ or inside an ExceptionGroup.
    def step() -> None:
        try:
            torch.empty(ABSURD, dtype=torch.uint8)
        except RuntimeError as inner:
            raise ValueError("training step 7 failed") from inner

    with pytest.raises(ValueError, match="step 7") as caught:
        step()
    assert is_oom_error(caught.value)
    if sys.version_info >= (3, 11):
        group = ExceptionGroup("workers", [ValueError("x"), _real_cpu_oom()])  # noqa: F821
        assert is_oom_error(group)


def test_oom_retry_halves_until_it_fits() -> None:
    tried: list[int] = []
    step = oom_retry(_step(limit=8, tried=tried))
    assert step() == 8 * 1024
    assert tried == [64, 32, 16, 8]


def test_oom_retry_uses_caller_value_and_reports() -> None:
    tried: list[int] = []
    retries: list[int] = []
    step = oom_retry(on_retry=lambda size, exc: retries.append(size))(_step(20, tried))
    assert step(100) == 12 * 1024
    assert tried == [100, 50, 25, 12]
    assert retries == [50, 25, 12]


def test_oom_retry_gives_up_with_the_real_error() -> None:
    tried: list[int] = []
    step = oom_retry(min_batch_size=4)(_step(limit=0, tried=tried))
    with pytest.raises(RuntimeError, match="DefaultCPUAllocator"):
        step(batch_size=16)
    assert tried == [16, 8, 4]


def test_oom_retry_does_not_retry_other_errors() -> None:
    calls: list[int] = []

    @oom_retry
    def step(batch_size: int = 8) -> None:
        calls.append(batch_size)
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        step()
    assert calls == [8]


def test_oom_retry_releases_the_failed_attempts_tensors() -> None:
    # The failed attempt's 32 MiB tensor lives in its frame; by the next attempt it must be gone
    # (an OOM traceback keeping activations alive is why naive retries fail again).
    refs: list[weakref.ref[object]] = []
    alive_at_retry: list[bool] = []

    @oom_retry
    def step(batch_size: int = 4) -> int:
        if refs:
            alive_at_retry.append(refs[0]() is not None)
        activations = torch.ones(8 * 1024 * 1024, dtype=torch.float32)
        refs.append(weakref.ref(activations))
        if batch_size > 2:
            torch.empty(ABSURD, dtype=torch.uint8)
        return batch_size

    assert step() == 2
    assert alive_at_retry == [False]


def test_oom_retry_needs_the_parameter() -> None:
    with pytest.raises(TypeError, match="no parameter 'batch_size'"):
        oom_retry(lambda n: n)


def test_find_batch_size_halve_and_binary() -> None:
    tried: list[int] = []
    assert find_batch_size(_step(40, tried), start=256) == 32
    assert tried == [256, 128, 64, 32]
    trials: list[tuple[int, bool]] = []
    found = find_batch_size(
        _step(40, []), start=256, search="binary", on_trial=lambda n, ok: trials.append((n, ok))
    )
    assert found == 40
    assert trials[:4] == [(256, False), (128, False), (64, False), (32, True)]
    assert (40, True) in trials
    assert (41, False) in trials


def test_find_batch_size_raises_when_nothing_fits() -> None:
    with pytest.raises(RuntimeError, match="DefaultCPUAllocator"):
        find_batch_size(_step(0, []), start=8, min_batch_size=2)
    with pytest.raises(ValueError, match="search"):
        find_batch_size(_step(8, []), start=8, search="linear")

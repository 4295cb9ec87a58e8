"""Per-buffer limits, KV-slot exhaustion, Paddle's allocator, schedulers and cut pastes (issue 9).

The wordings are in ``oomkit.diagnose.upstream_wordings_limits`` (each cited to the file that
prints it). Each must be recognised with its size inside the log wrappers users paste it in, and
each must be read for what it is: a per-buffer limit is not a lack of memory (cause ``unknown``),
llama_decode's return 1 and a full paged KV cache are the context, a scheduler's memory limit is
host RAM.
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.normalize import complete_cut_tail
from oomkit.diagnose.upstream_wordings import NEAR_MISSES, NOT_CAPACITY, WORDINGS
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_limits import (
    LIMITS,
    LIMITS_NEAR_MISSES,
    LIMITS_NOT_CAPACITY,
)

_WRAPPERS = (
    'Traceback (most recent call last):\n  File "/app/run.py", line 12, in <module>\n'
    "    main()\n{}",
    "[rank0]: {}",
    "2025-03-01 10:00:00,123 - ERROR - {}",
    "worker-1  | {}",
)


def _id(w: Wording) -> str:
    return f"{w.family}:{w.wording[:40]}"


def test_the_new_tables_are_part_of_the_harvest() -> None:
    assert set(LIMITS) <= set(WORDINGS)
    assert set(LIMITS_NOT_CAPACITY) <= set(NOT_CAPACITY)
    assert set(LIMITS_NEAR_MISSES) <= set(NEAR_MISSES)
    families = {w.family for w in LIMITS + LIMITS_NOT_CAPACITY}
    assert {"llama.cpp", "mlc-llm", "paddle", "htcondor", "lsf", "vulkan", "opencl", "xpu"} <= (
        families
    )


@pytest.mark.parametrize("wrapper", _WRAPPERS)
@pytest.mark.parametrize("w", LIMITS + LIMITS_NOT_CAPACITY, ids=_id)
def test_recognised_with_its_size_inside_a_log(w: Wording, wrapper: str) -> None:
    text = "\n".join(wrapper.format(part) for part in w.example.split("\n"))
    d = diagnose_text(text)
    assert d.oom_found, text
    if w.requested is not None:
        assert d.primary is not None
        assert d.primary.requested_bytes == w.requested, (text, d.primary)


@pytest.mark.parametrize("w", LIMITS_NOT_CAPACITY, ids=_id)
def test_a_per_buffer_limit_names_the_limit_and_not_capacity(w: Wording) -> None:
    d = diagnose_text(w.example)
    assert d.cause == "unknown"
    assert "per-buffer limit" in d.explanation
    if w.requested is not None:
        assert d.primary is not None
        assert d.primary.allowed_bytes is not None
        assert d.primary.requested_bytes is not None
        assert d.primary.requested_bytes > d.primary.allowed_bytes


@pytest.mark.parametrize(
    "text",
    [w.example for w in LIMITS if "decode" in w.example or "KV cache is full" in w.example],
)
def test_no_kv_slot_is_the_context(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "kv_cache_or_context", text
    assert d.allocation == "kv_pool"


@pytest.mark.parametrize("w", [w for w in LIMITS if w.family in {"htcondor", "lsf"}], ids=_id)
def test_scheduler_memory_limits_are_host_ram(w: Wording) -> None:
    assert diagnose_text(w.example).cause == "host_ram"


def test_paddle_first_chunk_reads_the_request_and_the_free_memory() -> None:
    d = diagnose_text(
        "paddle.fluid.core.EnforceNotMet: enforce allocating <= available failed, "
        "10513462067 > 1369702144"
    )
    assert d.primary is not None
    assert (d.primary.requested_bytes, d.primary.free_bytes) == (10513462067, 1369702144)
    # the chunk is the allocator's share of the device, not one request: no base-rate guess
    assert d.cause == "unknown"
    assert "FLAGS_fraction_of_gpu_memory_to_use" in d.explanation


@pytest.mark.parametrize(
    ("cut", "whole"),
    [
        ("Allocator (GPU_0_bfc) ran out of memo", "Allocator (GPU_0_bfc) ran out of memory"),
        ("ray.exceptions.OutOfMe", "ray.exceptions.OutOfMemoryError"),
        ("RuntimeError: CUDA out of mem...", "RuntimeError: CUDA out of memory"),
        ("CUresult CUDA_ERROR_OUT_OF_MEMO", "CUresult CUDA_ERROR_OUT_OF_MEMORY"),
    ],
)
def test_a_paste_cut_inside_the_oom_word_is_completed_and_recognised(cut: str, whole: str) -> None:
    assert complete_cut_tail(cut) == whole
    assert diagnose_text(cut).oom_found
    assert diagnose_text(cut).cause == diagnose_text(whole).cause


@pytest.mark.parametrize(
    "text",
    [
        "ran out of memory",  # whole already: nothing to complete
        "I ran out of memes",
        "we ran out of me",  # too short a prefix to be the word
        "out of memory errors are discussed below",  # not at the end
        "OutOfMemoryError",
    ],
)
def test_only_a_cut_last_word_is_completed(text: str) -> None:
    assert complete_cut_tail(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "GPU RAM exploding on validation",
        "after updating, VRAM blows up",
        "GPU memory explodes",
        # Go's "signal: killed" as a title writes it
        "[BUG] Signal killed caused by Adam Offload",
    ],
)
def test_a_device_memory_that_blew_up_is_an_oom_report(text: str) -> None:
    # the English of the generic fallback's 显存爆了
    assert diagnose_text(text).oom_found


@pytest.mark.parametrize("text", LIMITS_NEAR_MISSES)
def test_limit_near_misses_are_not_an_oom(text: str) -> None:
    assert not diagnose_text(text).oom_found, text

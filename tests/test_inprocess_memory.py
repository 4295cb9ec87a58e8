"""free_memory / allocator_stats with real torch on the CPU; allocator settings and advice."""

from __future__ import annotations

import sys
import weakref

import pytest

from oomkit.inprocess.torch_memory import (
    alloc_conf_advice,
    allocator_stats,
    free_memory,
    parse_alloc_conf,
)
from oomkit.units import GiB, MiB

# --- PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF (no torch needed) ---------------------------


def test_no_conf() -> None:
    conf = parse_alloc_conf({})
    assert conf.source is None
    assert conf.settings == {}
    assert not conf.expandable_segments


def test_new_name_wins_and_disagreement_is_warned() -> None:
    # c10/core/AllocatorConfig.h: PYTORCH_CUDA_ALLOC_CONF is read "with lower priority".
    conf = parse_alloc_conf(
        {
            "PYTORCH_ALLOC_CONF": "max_split_size_mb:128",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        }
    )
    assert conf.source == "PYTORCH_ALLOC_CONF"
    assert conf.settings == {"max_split_size_mb": "128"}
    assert not conf.expandable_segments
    assert len(conf.warnings) == 1
    assert "ignores PYTORCH_CUDA_ALLOC_CONF" in conf.warnings[0]


def test_same_settings_in_both_is_fine() -> None:
    # Whitespace and order of keys do not matter to torch's tokenizer.
    conf = parse_alloc_conf(
        {
            "PYTORCH_ALLOC_CONF": "expandable_segments:True, max_split_size_mb:64",
            "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64,expandable_segments:True",
        }
    )
    assert conf.warnings == ()
    assert conf.expandable_segments


def test_list_values_unknown_keys_and_bad_entries() -> None:
    conf = parse_alloc_conf(
        {
            "PYTORCH_CUDA_ALLOC_CONF": (
                "roundup_power2_divisions:[256:1,512:2,>:8],expandible:True,oops"
            )
        }
    )
    assert conf.settings["roundup_power2_divisions"] == "[256:1,512:2,>:8]"
    assert any("unknown key 'expandible'" in w for w in conf.warnings)
    assert any("'oops' is not key:value" in w for w in conf.warnings)


def test_async_backend_ignores_expandable_segments() -> None:
    conf = parse_alloc_conf(
        {"PYTORCH_ALLOC_CONF": "backend:cudaMallocAsync,expandable_segments:True"}
    )
    assert any("no effect" in w for w in conf.warnings)


def test_advice_on_fragmentation() -> None:
    off = parse_alloc_conf({})
    # Request bigger than the largest free block while enough is reserved-but-unallocated.
    advice = alloc_conf_advice(
        off,
        reserved_unallocated_bytes=3 * GiB,
        requested_bytes=2 * GiB,
        largest_free_block_bytes=512 * MiB,
    )
    assert any("expandable_segments:True" in a for a in advice)
    assert any("smaller than the request" in a for a in advice)
    assert alloc_conf_advice(off, reserved_unallocated_bytes=10 * MiB) == ()
    on = parse_alloc_conf({"PYTORCH_ALLOC_CONF": "expandable_segments:True"})
    advice_on = alloc_conf_advice(on, reserved_unallocated_bytes=3 * GiB)
    assert not any("Start the process with" in a for a in advice_on)
    assert any("empty_cache" in a for a in advice_on)


# --- real torch on the CPU ------------------------------------------------------------------

torch = pytest.importorskip("torch")

HELD: list[object] = []  # a module global that keeps a tensor alive


def test_allocator_stats_cpu() -> None:
    stats = allocator_stats("cpu")
    assert stats.device == "cpu"
    assert stats.allocated_bytes is None
    assert stats.total_bytes is not None
    assert stats.free_bytes is not None
    assert 0 < stats.free_bytes <= stats.total_bytes
    assert "cpu: allocated n/a" in stats.format()


def test_free_memory_names_what_still_holds_a_tensor() -> None:
    big = torch.ones(16 * MiB, dtype=torch.float32)  # 64 MiB
    HELD.append(big)
    try:
        report = free_memory("cpu", top=1000)
        assert report.live_tensor_bytes >= 64 * MiB
        # other tests may leave larger tensors alive in this process: find ours by its shape
        top = next(h for h in report.holders if h.shape == (16 * MiB,))
        assert top.nbytes == 64 * MiB
        assert top.shape == (16 * MiB,)
        assert top.dtype == "float32"
        joined = " | ".join(top.referrers)
        assert "local 'big' in test_free_memory_names_what_still_holds_a_tensor" in joined
        assert "list of" in joined  # the HELD list
        assert "64.00 MiB float32" in report.format()
    finally:
        HELD.clear()
    del big
    after = free_memory("cpu")
    assert all(h.nbytes != 64 * MiB for h in after.holders)


def test_free_memory_clears_the_last_exception() -> None:
    # In a REPL, sys.last_value keeps the failed frame (and its tensors) alive after an OOM.
    def failing() -> None:
        activations = torch.ones(4 * MiB, dtype=torch.float32)
        refs.append(weakref.ref(activations))
        torch.empty(2**62, dtype=torch.uint8)

    refs: list[weakref.ref[object]] = []
    try:
        failing()
    except RuntimeError as exc:
        sys.last_value = exc
        sys.last_traceback = exc.__traceback__
    assert refs[0]() is not None
    report = free_memory("cpu")
    assert refs[0]() is None
    assert any("sys.last_value" in n for n in report.notes)
    assert getattr(sys, "last_value", None) is None


def test_a_fake_tensor_left_alive_is_not_a_holder() -> None:
    """A FakeTensorMode trace (``oomkit probe``'s) can leave FakeTensors alive in the process:
    they report a device but hold no memory and have no data pointer (reading it warns, an
    error under this suite's filterwarnings), so free_memory skips them. Found when another
    test file's trace ran before this one in the same xdist worker."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.ones(4 * MiB, dtype=torch.float32)
    HELD.append(fake)
    try:
        report = free_memory("cpu", top=1000)
        assert all(h.shape != (4 * MiB,) for h in report.holders)
    finally:
        HELD.clear()

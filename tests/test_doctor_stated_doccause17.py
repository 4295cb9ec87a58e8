"""doccause17: facts the text states that the rules ignored (heldout29-30 studied, retired).

Every text here is synthetic, written in the wording users use (not a copy of a corpus record);
each rule is tested with a near miss it must leave alone.
"""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.events import LogContext
from oomkit.diagnose.prior_stated import stated_phase
from oomkit.diagnose.priors import prior_key


def test_growth_request_after_request_is_accumulation() -> None:
    for text in (
        "After every request the server's VRAM usage grows a little, until it dies with CUDA "
        "out of memory.",
        "CUDA out of memory: the RAM consumption increases by about 200 MB per request.",
        "With each call to /v1/embeddings the GPU memory increases until the OOM error.",
    ):
        d = diagnose_text(text)
        assert d.cause == "leak_or_accumulation", text
        assert "memory_allocated()" in d.explanation


def test_a_request_without_growth_is_not_accumulation() -> None:
    for text in (
        # one request failing, no growth stated
        "CUDA out of memory after each request with a 32k prompt.",
        # the size of one request, not growth across requests
        "GPU memory increases with the number of images per request and then OOM.",
    ):
        assert diagnose_text(text).cause != "leak_or_accumulation", text


def test_a_card_counted_in_the_plural_names_the_device() -> None:
    assert stated_phase("Trying to load the model on two 4090s gives OOM") == "load_device"
    assert stated_phase("Cannot load the checkpoint on 8 A100s: out of memory") == "load_device"
    assert stated_phase("Cannot load the checkpoint on 8 H100s: out of memory") == "load_device"
    # no card named: a load whose device the words leave open
    assert stated_phase("It fails to load the model: killed, out of memory") == "load"


# PyTorch >= 2.1's caching allocator (c10/cuda/CUDACachingAllocator.cpp) writes "Tried to
# allocate %s. GPU %d has a total capacity of %s of which %s is free. ..." (2.1: "capacty")
_CUT_HEAD = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 300.00 MiB. "


def test_a_cut_allocator_message_keeps_capacity_and_free() -> None:
    for text in (
        _CUT_HEAD + "GPU 1 has a total capacity of 23.65 GiB of which 41.06 MiB is free",
        _CUT_HEAD + "GPU 1 has a total capacty of 23.65 GiB of which 41.06 MiB is free",
    ):
        d = diagnose_text(text)
        e = d.primary
        assert e is not None, text
        assert e.format == "pytorch_partial"
        assert e.requested_bytes == 300 * 2**20
        assert e.device == 1
        assert e.total_bytes is not None
        assert abs(e.total_bytes - 23.65 * 2**30) < 2**20
        assert e.free_bytes is not None
        assert abs(e.free_bytes - 41.06 * 2**20) < 2**10
        assert prior_key(e, d.context).evidence == "small_request"


def test_a_cut_message_reads_only_what_survived() -> None:
    # cut inside the free figure: the capacity alone
    e = diagnose_text(_CUT_HEAD + "GPU 0 has a total capacity of 8.00 GiB of which 0 by").primary
    assert e is not None
    assert e.total_bytes == 8 * 2**30
    assert e.free_bytes is None
    # a large request against the capacity is the request itself
    big = "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 23.65 GiB"
    e = diagnose_text(big).primary
    assert e is not None
    assert prior_key(e, LogContext()).evidence == "large_request"
    # free above the capacity is not a device's state: dropped
    odd = _CUT_HEAD + "GPU 0 has a total capacity of 8.00 GiB of which 9.00 GiB is free"
    e = diagnose_text(odd).primary
    assert e is not None
    assert e.total_bytes == 8 * 2**30
    assert e.free_bytes is None
    # the head alone: the request only, as before
    e = diagnose_text("CUDA out of memory. Tried to allocate 2.00 GiB").primary
    assert e is not None
    assert e.total_bytes is None
    assert e.requested_bytes == 2 * 2**30


def test_memory_that_continues_to_rise_or_grows_after_an_epoch() -> None:
    for text in (
        "CUDA out of memory. While the job runs the GPU memory continues to grow.",
        "Killed: the RAM usage continued to rise until the OOM killer stepped in.",
        "CUDA OOM in the third epoch: memory usage increases sharply after each epoch.",
        "Out of memory: the VRAM grows after the first epoch and never comes back down.",
    ):
        assert diagnose_text(text).cause == "leak_or_accumulation", text


def test_rising_time_or_memory_after_the_first_step_is_not_growth() -> None:
    for text in (
        # time, not memory (the clause boundary keeps "out of memory:" apart)
        "CUDA out of memory: the training time continues to increase.",
        # the optimizer states arrive with the first optimizer.step(), by design
        "CUDA out of memory: memory increases after the first step.",
    ):
        assert diagnose_text(text).cause != "leak_or_accumulation", text

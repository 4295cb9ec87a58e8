"""Runtimes' memory-pressure warnings pasted alone, and ExLlamaV2's page shortfall (issue 9;
``oomkit.diagnose.parse_wordings_warnings``, ``rules_warnings``)."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text

GIB = 1 << 30


@pytest.mark.parametrize(
    "rid",
    [
        "h24-keras-retinanet-514",  # TF 1.x bfc_allocator.cc:219, no freed_by_count
        "h24-tensorflow-35875",  # tcmalloc report + cpu_allocator_impl.cc 10% warning
        "h24-colabtools-1718",  # tcmalloc report in a Colab kernel log
        "h24-GPT2-Chinese-123",  # three tcmalloc reports: the largest is kept
    ],
)
def test_corpus_warnings_are_pressure_reports(rid: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert [e.kind for e in d.events] == ["memory_report"], rid
    host = d.events[0].format in {"tcmalloc_large_alloc", "tf_cpu_large_alloc"}
    assert d.cause == ("host_ram" if host else "unknown")
    assert d.confidence <= 0.3
    assert d.explanation.startswith("No out-of-memory error is in the text")


def test_bfc_warning_reads_its_size_in_tensorflow_units() -> None:
    text = (
        "2020-06-01 20:07:58.089327: W tensorflow/core/common_runtime/bfc_allocator.cc:239] "
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate 549.62MiB with "
        "freed_by_count=0. The caller indicates that this is not a failure, but may mean that "
        "there could be performance gains if more memory were available."
    )
    (e,) = diagnose_text(text).events
    assert e.format == "tf_bfc_retry_warning"
    assert e.requested_bytes == round(549.62 * (1 << 20))


def test_the_largest_tcmalloc_report_and_one_without_its_pointer() -> None:
    d = diagnose_text(corpus_text("h24-GPT2-Chinese-123"))
    assert d.events[0].requested_bytes == 17860034560
    (e,) = diagnose_text("Getting this error: tcmalloc: large alloc 24180850688 bytes").events
    assert e.format == "tcmalloc_large_alloc"
    assert e.requested_bytes == 24180850688


def test_a_failed_tcmalloc_allocation_stays_a_failure() -> None:
    d = diagnose_text("tcmalloc: large alloc 140113840283648 bytes == (nil) @  0x7f6eccf3b887")
    assert d.events[0].kind != "memory_report"


def test_a_real_tf_failure_beside_the_warning_is_the_failure() -> None:
    text = (
        "W tensorflow/core/common_runtime/bfc_allocator.cc:239] Allocator (GPU_0_bfc) ran out "
        "of memory trying to allocate 2.08GiB with freed_by_count=0. The caller indicates that "
        "this is not a failure, but may mean that there could be performance gains if more "
        "memory were available.\n"
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[64,256,128,128] and type float on /job:localhost/replica:0/task:0/"
        "device:GPU:0 by allocator GPU_0_bfc"
    )
    d = diagnose_text(text)
    assert all(e.kind != "memory_report" for e in d.events)


def test_exllamav2_page_shortfall_is_the_kv_cache() -> None:
    d = diagnose_text(corpus_text("h25-tabbyAPI-119"))
    (e,) = d.events
    assert e.runtime == "exllamav2"
    assert e.kv_capacity_tokens == 8192
    assert d.cause == "kv_cache_or_context"


@pytest.mark.parametrize(
    "text",
    [
        # the same words where nothing ran short
        "BFC allocator: the caller indicates whether a failure is fatal",
        "tcmalloc: large allocations are reported above TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD",
        "Job requires a minimum batch size of 2 and cannot be enqueued",
        "Allocation of 1024 bytes is fine",
    ],
)
def test_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


def test_linear_time_on_near_matching_junk() -> None:
    for junk in (
        "ran out of memory trying to allocate " * 20_000,
        "tcmalloc: large alloc " + "9" * 100_000,
        "Job requires 1 pages (only " * 20_000,
    ):
        diagnose_text(junk)


def test_jan_check_over_the_usable_vram() -> None:
    d = diagnose_text(corpus_text("h18-jan-7881"))
    (e,) = d.events
    assert (e.runtime, e.requested_bytes, e.total_bytes) == ("jan", 4207141728, 1073741824)
    assert d.cause == "model_too_large"


def test_jan_check_that_fits_stays_silent() -> None:
    text = (
        "[INFO] isModelSupported: Total memory requirement: 4207141728 for model.gguf; Got "
        "kvCacheSize: 1207959552 from BE\n"
        "[INFO] Total VRAM reported/calculated (in bytes): 25769803776"
    )
    assert not diagnose_text(text).oom_found


def test_tensorrt_workspace_warning_is_the_builder_limit() -> None:
    d = diagnose_text(corpus_text("h24-tensorrt_inference-56"))
    (e,) = d.events
    assert (e.runtime, e.kind) == ("tensorrt", "memory_report")
    assert d.cause == "unknown"
    assert "workspace limit" in d.explanation


def test_dml_hresult_cut_by_a_space_is_e_outofmemory() -> None:
    assert diagnose_text(corpus_text("h20-diffusers-791")).oom_found
    assert not diagnose_text("Exception(3) 80070057 The parameter is incorrect.").oom_found


def test_forge_plan_with_a_negative_remainder_does_not_fit() -> None:
    d = diagnose_text(corpus_text("h13-sd-webui-forge-classic-565"))
    (e,) = d.events
    assert e.free_bytes == round(7160.79 * (1 << 20))
    assert e.requested_bytes == round(22706.06 * (1 << 20)) + round(1419.20 * (1 << 20))
    assert d.cause == "model_too_large"


def test_forge_plan_with_room_left_stays_silent() -> None:
    text = (
        "[Memory Management] Target: IntegratedAutoencoderKL, Free GPU: 8238.74 MB, Model "
        "Require: 159.87 MB, Previously Loaded: 0.00 MB, Inference Require: 2038.40 MB, "
        "Remaining: 6040.47 MB, Moving model(s) has taken 0.36 seconds"
    )
    assert not diagnose_text(text).oom_found

"""Every OOM wording harvested from the runtimes' own sources is recognised (issue 9).

The table (``oomkit.diagnose.upstream_wordings``) cites the file that prints each wording; a line
built from each format, with numbers filled in, must be read as an OOM, with the requested size the
format states. Near misses with the same words must not be.
"""

from __future__ import annotations

import time

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.text import FULL_SCAN_CHARS
from oomkit.diagnose.upstream_wordings import NEAR_MISSES, NOT_CAPACITY, WORDINGS, Wording


def _id(w: Wording) -> str:
    return f"{w.family}:{w.wording[:40]}"


def test_the_table_cites_a_source_and_covers_the_families() -> None:
    assert len(WORDINGS) >= 100
    families = {w.family for w in WORDINGS}
    for fam in ("pytorch", "cuda", "hip", "nccl", "ggml", "vllm", "tensorflow", "jax", "mlx"):
        assert fam in families, fam
    for fam in ("paddle", "mindspore", "onnxruntime", "openvino", "numpy", "linux", "windows"):
        assert fam in families, fam
    for fam in ("macos", "android", "docker", "ray", "openvino-genai", "mlc-llm", "exllamav2"):
        assert fam in families, fam
    for w in WORDINGS:
        assert w.source, w
        assert w.wording, w
        assert w.example, w


@pytest.mark.parametrize("w", WORDINGS, ids=_id)
def test_upstream_wording_is_recognised_with_its_numbers(w: Wording) -> None:
    d = diagnose_text(w.example)
    assert d.oom_found, w.example
    e = d.primary
    assert e is not None
    if w.requested is not None:
        assert e.requested_bytes is not None, (w.example, e)
        # the message prints a rounded size ("74.5 GiB"): read within its rounding
        assert abs(e.requested_bytes - w.requested) <= w.requested * 0.01, (w.example, e)


_WRAPPERS = (
    # a Python traceback above the message
    'Traceback (most recent call last):\n  File "/app/run.py", line 12, in <module>\n'
    "    main()\n{}",
    # torchrun / accelerate rank prefix on every line
    "[rank0]: {}",
    # a logging timestamp and level before the message
    "2025-03-01 10:00:00,123 - ERROR - {}",
    # a container log line prefix
    "worker-1  | {}",
)


@pytest.mark.parametrize("wrapper", _WRAPPERS)
def test_upstream_wording_is_recognised_inside_a_log(wrapper: str) -> None:
    missed = []
    for w in WORDINGS:
        text = "\n".join(wrapper.format(part) for part in w.example.split("\n"))
        if not diagnose_text(text).oom_found:
            missed.append(text)
    assert missed == []


_HOST_FAMILIES = {
    "linux",
    "macos",
    "rust",
    "notebook",
    "java",
    "node",
    "go",
    "numpy",
    "arrow",
    "android",
    "docker",
    "ray",
    "kubernetes",
    "htcondor",
    "lsf",
    "dask",
}


@pytest.mark.parametrize("w", [w for w in WORDINGS if w.family in _HOST_FAMILIES], ids=_id)
def test_wordings_that_name_host_memory_are_host_ram(w: Wording) -> None:
    # the OOM killer, shells, schedulers, libmalloc and language runtimes report host RAM
    assert diagnose_text(w.example).cause == "host_ram", w.example


def test_windows_system_errors_are_host_ram_unless_a_device_is_named() -> None:
    for w in WORDINGS:
        if w.family != "windows":
            continue
        d = diagnose_text(w.example)
        if "device" in w.example or "Dml" in w.example:
            assert d.cause != "host_ram", w.example
        else:
            assert d.cause == "host_ram", w.example


@pytest.mark.parametrize("w", NOT_CAPACITY, ids=_id)
def test_not_capacity_wordings_are_recognised_but_not_called_capacity(w: Wording) -> None:
    d = diagnose_text(w.example)
    assert d.oom_found
    assert d.cause == "unknown"


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_an_oom(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


_JUNK = {
    "verb": "could not allocate " * 60_000,
    "not-enough": "not enough " + "very " * 200_000 + "memory",
    "malloc": "Malloc " + "device " * 200_000 + "failed",
    "size": "alloc size: " + "1" * 1_000_000,
    "chinese": "显存" * 300_000,
    "identifier": "x_malloc" * 120_000 + " failed",
    "call": "hipMalloc(" * 100_000 + " failed",
}


@pytest.mark.parametrize("name", sorted(_JUNK))
def test_new_generic_alternatives_stay_linear_on_near_matching_junk(name: str) -> None:
    # ~1 MB of text that nearly matches the new alternatives: linear time is about a second
    # on a loaded 2-core box; backtracking would take minutes
    start = time.process_time()
    parse_log(_JUNK[name])
    assert time.process_time() - start < 8.0


def test_a_localized_oom_in_the_middle_of_a_huge_log_is_found() -> None:
    # logs above FULL_SCAN_CHARS are read around anchor keywords only
    noise = "step 10 loss 1.234 lr 0.0001 tokens/s 4321\n" * 150_000
    text = noise + "推理失败：CUDA 显存不足，请减小批量大小\n" + noise
    assert len(text) > FULL_SCAN_CHARS
    assert diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        # the families of parse_wordings.py on forms that are not in the table: an allocating
        # API named in a failure, a status name, a memory phrase, an OS text
        "vkAllocateMemory failed -2",
        "hipMalloc(&ptr, size) failed",
        "rknn_init fail! ret=-6 RKNN_ERR_MALLOC_FAIL",
        "mmap failed with ENOMEM",
        "Error: Backend(NotEnoughMemory(4096))",
        "The requested model does not fit in GPU memory",
        "The model is too large for the available VRAM",
        "job 123 exceeded memory limit (34000000 > 32000000), being killed",
        "Available memory is insufficient.",
    ],
)
def test_harvested_families_cover_forms_beyond_the_table(text: str) -> None:
    assert diagnose_text(text).oom_found, text


def test_a_test_named_after_the_allocator_is_not_an_oom() -> None:
    assert not diagnose_text("test_allocator failed").oom_found

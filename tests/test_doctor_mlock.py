"""llama.cpp's mlock warning is the locked-memory limit, not RAM running out (docpost30;
``oomkit.diagnose.parse_wordings_warnings``, ``rules_warnings``; llama.cpp
``src/llama-mmap.cpp`` ``llama_mlock`` ``raw_lock``)."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize(
    "rid",
    [
        "h4-localai-586",  # with "Try increasing RLIMIT_MLOCK" (2023 wording)
        "h27-llama-api-13",  # run on into the next log line
        "h54-inference-3345",  # RLIMIT_MEMLOCK wording, then a full GPU offload log
        "h55-h2ogpt-812",  # between "total VRAM used" and the KV cache line
    ],
)
def test_corpus_mlock_warnings_are_the_lock_limit(rid: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert d.oom_found, rid
    assert [e.format for e in d.events] == ["llama.cpp_mlock_limit"], rid
    assert d.cause == "unknown"
    assert d.allocation == "host_ram"
    assert "RLIMIT_MEMLOCK" in d.explanation
    assert not d.open_question


def test_mlock_size_is_read() -> None:
    text = (
        "warning: failed to mlock 139264000-byte buffer (after previously locking 0 bytes): "
        "Cannot allocate memory\nTry increasing RLIMIT_MLOCK ('ulimit -l' as root).\n"
    )
    (e,) = diagnose_text(text).events
    assert e.requested_bytes == 139264000
    assert e.runtime == "llama.cpp"


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        # a real failure after the warning is the failure
        (
            "warning: failed to mlock 139264000-byte buffer (after previously locking 0 bytes): "
            "Cannot allocate memory\nllama_model_load: loading tensors\nKilled\n",
            "linux_killed",
        ),
        (
            "warning: failed to mlock 139264000-byte buffer (after previously locking 0 bytes): "
            "Cannot allocate memory\nCUDA error: out of memory\n  current device: 0, in function "
            "ggml_cuda_pool_malloc at ggml-cuda.cu:1234\n",
            "ggml_cuda_error",
        ),
    ],
)
def test_a_real_failure_beside_the_warning_wins(text: str, fmt: str) -> None:
    d = diagnose_text(text)
    assert fmt in [e.format for e in d.events]
    assert "llama.cpp_mlock_limit" not in [e.format for e in d.events]


@pytest.mark.parametrize(
    "text",
    [
        # EAGAIN: the pages could not be faulted in (a real shortage), not the limit
        "warning: failed to mlock 139264000-byte buffer (after previously locking 0 bytes): "
        "Resource temporarily unavailable",
        "warning: failed to munlock buffer: Operation not permitted",
        "Use --mlock to keep the model in RAM; it fails if ulimit -l is too low.",
    ],
)
def test_near_misses_are_not_the_lock_limit(text: str) -> None:
    d = diagnose_text(text)
    assert "llama.cpp_mlock_limit" not in [e.format for e in d.events]

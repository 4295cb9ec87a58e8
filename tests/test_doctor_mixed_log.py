"""A log with a llama.cpp/Ollama failure and, lines below, a PyTorch OOM: each message is one
event at its own line. The PyTorch parser's window ran on past the llama.cpp ``cudaMalloc failed:
out of memory`` line into the PyTorch message and reported it three times (lines 3, 6 and 8)."""

from __future__ import annotations

from oomkit.diagnose.parse import parse_log

MIXED = """\
time=2025-03-01T10:00:00.100Z level=INFO source=memory.go:356 msg="offload to cuda" layers.model=81
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1104.00 MiB on device 0: cudaMalloc failed: out of memory
ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1157627904
llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers
time=2025-03-01T10:00:05.000Z level=ERROR source=sched.go:455 msg="error loading llama server" error="llama runner process has terminated: cudaMalloc failed: out of memory"
Traceback (most recent call last):
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.64 GiB of which 3.12 MiB is free. Process 4411 has 23.10 GiB memory in use. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.
"""  # noqa: E501


def test_each_message_is_one_event_at_its_line() -> None:
    events = parse_log(MIXED).events
    torch = [e for e in events if e.runtime == "pytorch"]
    assert [e.line for e in torch] == [7]
    assert torch[0].requested_bytes == 20 << 20
    assert {(e.runtime, e.line) for e in events} >= {("llama.cpp", 2), ("ollama", 5)}
    assert len(events) == 3


def test_a_wrapped_torch_message_still_joins_its_lines() -> None:
    wrapped = (
        "torch.OutOfMemoryError: CUDA out of memory.\n"
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.12 GiB\n"
        "is free. Of the allocated memory 20.00 GiB is allocated by PyTorch, and 1.00 GiB is\n"
        "reserved by PyTorch but unallocated.\n"
    )
    (e,) = parse_log(wrapped).events
    assert e.line == 1
    assert e.requested_bytes == 2 << 30
    assert e.total_bytes is not None


def test_a_message_without_a_request_size_prints_no_question_mark() -> None:
    from oomkit.diagnose.doctor import diagnose_text

    d = diagnose_text("torch.OutOfMemoryError: CUDA out of memory.")
    assert d.explanation.startswith("PyTorch ran out on the GPU.")
    assert "asked for ?" not in d.explanation

"""A llama.cpp log whose only "OOM" is the pinned-host-memory warning, and that went on to run.

ggml's CUDA backend stages host buffers in pinned (page-locked) memory when it can:
``ggml_backend_cuda_host_buffer_alloc_buffer`` calls ``ggml_cuda_host_malloc``, which on a
failed ``cudaMallocHost`` logs ``"%s: failed to allocate %.2f MiB of pinned memory: %s"`` with
``GGML_LOG_DEBUG``/``WARN`` and returns ``nullptr``, and the caller then falls back to an ordinary
CPU buffer (``ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), size)``;
ggml/src/ggml-cuda/ggml-cuda.cu, ggml-org/llama.cpp). Nothing fails: the cost is slower
host-device copies. When the log then shows the program running (llama-server's
``main: server is listening ... starting the main loop`` / ``all slots are idle``, its
``model loaded``), the paste holds no out-of-memory failure: :func:`drop_pinned_warnings` leaves
such events out and says why (the doctor's "no OOM" answer, exit 3).
"""

from __future__ import annotations

import dataclasses

from oomkit.diagnose.events import ParsedLog
from oomkit.diagnose.fixes import size_text

__all__ = ["drop_pinned_warnings"]

_PINNED = "llama.cpp_pinned_alloc"
#: lines llama-server / llama-cli print once the model is loaded and the program runs
#: (tools/server/server.cpp ``main``: "server is listening on ... - starting the main loop",
#: ``update_slots``: "all slots are idle"; "main: model loaded")
_RUNNING = (
    "starting the main loop",
    "server is listening",
    "all slots are idle",
    "main: model loaded",
)


def _line_of(text: str, needle: str, after: int) -> int | None:
    """1-based number of the first line after line ``after`` that holds ``needle``."""
    for n, line in enumerate(text.splitlines()[after:], start=after + 1):
        if needle in line:
            return n
    return None


def drop_pinned_warnings(text: str, parsed: ParsedLog) -> tuple[ParsedLog, str | None]:
    """``parsed`` without its events, and a note, when every event is llama.cpp's pinned-memory
    warning and a later line shows the program running (module doc); else unchanged."""
    events = parsed.events
    if not events or any(e.format != _PINNED for e in events):
        return parsed, None
    last = max(e.line for e in events)
    found = [n for s in _RUNNING if (n := _line_of(text, s, last)) is not None]
    if not found:
        return parsed, None
    first = events[0]
    note = (
        f"no OOM (warning only): line {first.line} is llama.cpp's pinned-memory warning "
        f"({size_text(first.requested_bytes)} could not be page-locked); llama.cpp falls back "
        f"to ordinary host memory (slower copies, nothing fails), and line {min(found)} shows "
        "it running. GGML_CUDA_NO_PINNED=1 silences the attempt."
    )
    return dataclasses.replace(parsed, events=()), note

"""A WebAssembly heap that could not grow: ONNX Runtime Web's and transformers.js's wasm backend
(issue 9, heldout51).

Emscripten's runtime aborts when ``malloc`` needs a larger linear memory and
``emscripten_resize_heap`` cannot grow it (``emscripten-core/emscripten:src/library.js``,
``abortOnCannotGrowMemory``): release builds print ``Aborted(OOM)`` (``abort('OOM')``), builds
with ``-sASSERTIONS`` print ``Aborted(Cannot enlarge memory arrays to size N bytes (OOM). Either
(1) compile with -sINITIAL_MEMORY=X ...``, older releases ``Cannot enlarge memory arrays.
Either (1) compile with -s TOTAL_MEMORY=X ...``. A wasm32 memory holds at most 4 GiB (65536
pages of 64 KiB, the WebAssembly core spec's 32-bit memory index), whatever the machine has.

For ONNX Runtime Web's wasm execution provider the model's weights live in that heap: the
session copies the model bytes into it and builds its initializers there, so a model of a
couple of GiB (an fp32 export) does not fit while its quantized build does; that is what the
fix is (a quantized model, or the WebGPU provider, whose weights go to GPU buffers). A bare
``Aborted()`` (no ``OOM``) is any abort and is not read.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic, size_text
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.sizes import to_int
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["analyze_wasm_heap", "parse_wasm_heap"]

_PREFILTER = needles_re(("Aborted(OOM)", "Cannot enlarge memory arrays"))
_OOM = re.compile(
    r"\bAborted\(OOM\)|Cannot enlarge memory arrays(?: to size (?P<x>\d{1,12}) bytes)?"
    r"(?: \(OOM\))?\. Either"
)


def _event(lines: Lines, i: int) -> OomEvent | None:
    line = lines.cleaned(i)
    m = _OOM.search(line)
    if m is None:
        return None
    return OomEvent(
        runtime="wasm",
        kind="host_alloc_failed",
        format="emscripten_heap_oom",
        line=lines.number[i],
        text=line[:600],
        requested_bytes=to_int(m["x"]) if m["x"] else None,
    )


def parse_wasm_heap(lines: Lines) -> list[OomEvent]:
    """Events of Emscripten's heap-growth aborts (log order; a repeated line counts once)."""
    return scan_events(lines, _PREFILTER, _event, repeat=lambda a, b: a.format == b.format)


def analyze_wasm_heap(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis of this module's event, or ``None`` for other events."""
    del ctx  # the line is read on its own
    if e.format != "emscripten_heap_oom":
        return None
    asked = f" (it asked to grow to {size_text(e.requested_bytes)})" if e.requested_bytes else ""
    return Analysis(
        cause="model_too_large",
        confidence=0.4,
        explanation="The WebAssembly heap could not grow" + asked + ": Emscripten aborted the "
        "module (Aborted(OOM)). A wasm32 heap holds at most 4 GiB whatever the machine has, and "
        "ONNX Runtime Web's wasm backend keeps the model's weights in it (the model bytes are "
        "copied in when the session is created), so a model of a couple of GiB, an fp32 "
        "export, does not fit. If it fails only on a long input after the model loaded, the "
        "activations of that input filled the heap instead. What would decide: whether it "
        "fails while creating the session or while running it.",
        fixes=(
            generic(
                "Use a quantized model, or the WebGPU backend",
                "a q8/q4 (or fp16) export is 2-4x smaller in the 4 GiB heap; with WebGPU the "
                "weights go to GPU buffers, not the wasm heap.",
                (
                    "transformers.js: { dtype: 'q8' }  (or quantized: true in v2)",
                    "transformers.js: { device: 'webgpu' }",
                    "onnxruntime-web: executionProviders: ['webgpu']",
                ),
            ),
        ),
    )

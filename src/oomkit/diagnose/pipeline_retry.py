"""A llama.cpp load that recovered: pipeline parallelism turned off after a compute-buffer OOM.

llama.cpp reserves the worst-case prompt-processing graph when it creates a context. With
pipeline parallelism on (several GPUs, layer split, all layers offloaded) the scheduler keeps
``n_copies`` copies of the compute buffer; if that reservation fails, llama.cpp logs
``sched_reserve: compute buffer allocation failed, retrying without pipeline parallelism``,
rebuilds the scheduler with one copy and reserves again, and only throws ("failed to allocate
compute pp buffers") when that fails too (src/llama-context.cpp, ``llama_context::sched_reserve``:
``if (!gf) { if (cparams.pipeline_parallel) { LLAMA_LOG_WARN(...); cparams.pipeline_parallel =
false; sched.reset(ggml_backend_sched_new(..., false, ...)); gf = graph_reserve(...); } if (!gf)
throw ...`` at ggml-org/llama.cpp@4c7103b; added by PR #16748, "llama : disable pipeline
parallelism if compute buffer allocation fails"). The failed ``cudaMalloc`` lines before the
retry are therefore not the cause of anything that follows:

- an OOM after the retry line (the retry's own allocation, a later request) is the failure, and
  the pipelined attempt's messages before it are left out (:func:`drop_retried`);
- with no OOM after it, the load went on: :func:`note_recovered` says so (the cost is speed,
  not a crash) and names the compute buffer that could not be allocated.

>>> retry_lines("a\\nsched_reserve: compute buffer allocation failed, retrying without "
...             "pipeline parallelism\\nb")
(2,)
"""

from __future__ import annotations

import dataclasses

from oomkit.diagnose.events import OomEvent, ParsedLog
from oomkit.diagnose.fixes import size_text
from oomkit.diagnose.rules import Diagnosis

__all__ = ["drop_retried", "note_recovered", "retry_lines"]

_RETRY = "retrying without pipeline parallelism"
#: llama-server / llama-cli lines printed once the context exists (tools/server/server.cpp
#: ``load_model: initializing``/``main: model loaded``/``server is listening``)
_STARTED = ("load_model: initializing", "model loaded", "server is listening", "all slots are idle")
_GGML = frozenset({"llama.cpp", "ggml", "ollama"})


def retry_lines(text: str) -> tuple[int, ...]:
    """The 1-based lines of ``text`` holding llama.cpp's retry warning."""
    return tuple(line for line, _ in _retries(text))


def _retries(text: str) -> list[tuple[int, int]]:
    """(1-based line, offset) of each retry warning in ``text``."""
    out: list[tuple[int, int]] = []
    pos, line = 0, 1
    while (i := text.find(_RETRY, pos)) >= 0:
        line += text.count("\n", pos, i)
        out.append((line, i))
        pos = i
        nl = text.find("\n", i)
        if nl < 0:
            break
        line += 1
        pos = nl + 1
    return out


def _retried(e: OomEvent, retries: tuple[int, ...], events: tuple[OomEvent, ...]) -> bool:
    """``e`` is a pipelined attempt's failure that a later retry line and a later OOM follow."""
    if e.runtime not in _GGML:
        return False
    after = [r for r in retries if r > e.line]
    return bool(after) and any(o.line > after[0] for o in events)


def drop_retried(text: str, parsed: ParsedLog) -> ParsedLog:
    """``parsed`` without the pipelined attempt's OOMs when an OOM follows the retry (the
    retry's own failure, or a later one, is what failed)."""
    if _RETRY not in text or len(parsed.events) < 2:
        return parsed
    retries = retry_lines(text)
    kept = tuple(e for e in parsed.events if not _retried(e, retries, parsed.events))
    if not kept or len(kept) == len(parsed.events):
        return parsed
    return dataclasses.replace(parsed, events=kept)


def note_recovered(result: Diagnosis, text: str) -> Diagnosis:
    """``result`` saying the load recovered when every OOM precedes llama.cpp's retry line
    (module doc)."""
    if _RETRY not in text or not result.events or result.primary is None:
        return result
    last = max(e.line for e in result.events)
    after = [(r, i) for r, i in _retries(text) if r > last]
    if not after or result.primary.runtime not in _GGML:
        return result
    e = result.primary
    started = any(text.find(s, after[0][1]) >= 0 for s in _STARTED)
    dev = e.buffer_name or (f"CUDA{e.device}" if e.device is not None else "the GPU")
    head = (
        f"The load recovered: with pipeline parallelism on, llama.cpp could not allocate the "
        f"{size_text(e.requested_bytes)} compute buffer on {dev}; it retried without pipeline "
        f"parallelism (line {after[0][0]}: one copy of the compute buffer instead of n_copies, "
        "GGML_SCHED_MAX_COPIES, 4 by default) and "
        + ("went on to start (the log shows the model initialising after it)" if started
           else "no later error follows in the log")
        + ". Nothing failed: the cost is speed (prompt processing no longer overlaps across "
        "the GPUs). The fixes below make the pipelined compute buffer fit, to get pipeline "
        "parallelism back. What failed first: "
    )  # fmt: skip
    note = f"log shows: llama.cpp retried without pipeline parallelism (line {after[0][0]})"
    return dataclasses.replace(
        result, explanation=head + result.explanation, notes=(*result.notes, note)
    )

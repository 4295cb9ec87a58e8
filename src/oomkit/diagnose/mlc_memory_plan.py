"""MLC-LLM's memory plan: the line its serve engine prints when it sizes the KV cache (docpost26,
issue 9, heldout51).

``mlc_llm.serve`` works out how many KV-cache tokens fit before it allocates anything and logs
the result (``mlc-ai/mlc-llm:python/mlc_llm/serve/engine_base.py``, the KV-cache estimate of
``_estimate_mem_usage_and_max_total_sequence_length_for_kv_cache``; later releases in C++,
``cpp/serve/config.cc`` ``InferrableEngineConfig::InferForKVCache``)::

    Estimated total single GPU memory usage: 14361.14 MB (Parameters: 3615.13 MB. KVCache:
    10689.56 MB. Temporary buffer: 56.44 MB)

In mode ``server`` (the default of ``mlc_llm serve``) the engine "use[s] as much GPU memory as
possible (within the limit of gpu_memory_utilization)": the KV cache takes whatever the
weights and the temporary buffers leave of that fraction, so a KV cache several times the
weights is the plan, not a leak; modes ``local`` and ``interactive`` cap it by the context
window and batch (``engine_base.py``: "Please switch to mode "local" or "interactive" if you
want to use less GPU memory"). Read only where nothing else found an event (a report of the
plan), as a ``memory_plan`` event: no allocation is known to have failed.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic, size_text
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.text import Lines, needles_re
from oomkit.units import MiB

__all__ = ["analyze_mlc_memory_plan", "parse_mlc_memory_plan"]

_PREFILTER = needles_re(("Estimated total single GPU memory usage",))
_PLAN = re.compile(
    r"Estimated total single GPU memory usage: (?P<t>\d{1,9}(?:\.\d{1,4})?) ?MB \(Parameters: "
    r"(?P<p>\d{1,9}(?:\.\d{1,4})?) ?MB\. KVCache: (?P<k>\d{1,9}(?:\.\d{1,4})?) ?MB\. "
    r"Temporary buffer: (?P<b>\d{1,9}(?:\.\d{1,4})?) ?MB\)"
)


def _mb(x: str) -> int:
    # MLC divides bytes by 1024 * 1024 (engine_base.py: "/ 1024 / 1024"; config.cc
    # BytesToMegabytesString): its "MB" is MiB
    return int(float(x) * MiB)


def _event(lines: Lines, i: int) -> OomEvent | None:
    line = lines.cleaned(i)
    m = _PLAN.search(line)
    if m is None:
        return None
    return OomEvent(
        runtime="mlc-llm",
        kind="memory_plan",
        format="mlc_memory_plan",
        line=lines.number[i],
        text=line[:600],
        total_bytes=_mb(m["t"]),
        allocated_bytes=_mb(m["p"]),
        needed_kv_bytes=_mb(m["k"]),
        stage="kv_cache",
    )


def parse_mlc_memory_plan(lines: Lines) -> list[OomEvent]:
    """Events of MLC's memory-plan lines (log order; a repeated line counts once)."""
    return scan_events(lines, _PREFILTER, _event, repeat=lambda a, b: a.format == b.format)


_MODE = generic(
    "Cap the KV cache: mode local, or a smaller max_total_seq_length",
    "in mode server MLC gives the KV cache everything gpu_memory_utilization leaves after the "
    "weights; local/interactive size it by the context window and batch.",
    (
        "mlc_llm serve MODEL --mode local",
        'mlc_llm serve MODEL --overrides "max_total_seq_length=4096"',
        'mlc_llm serve MODEL --overrides "gpu_memory_utilization=0.6"',
    ),
)


def analyze_mlc_memory_plan(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """What the plan's figures say, or ``None`` for other events."""
    del ctx  # the line carries its own figures
    if e.format != "mlc_memory_plan":
        return None
    total, params, kv = e.total_bytes, e.allocated_bytes, e.needed_kv_bytes
    if not total or params is None or kv is None:
        return None
    figures = (
        f"MLC-LLM planned {size_text(total)} on the GPU: {size_text(params)} of weights, "
        f"{size_text(kv)} of KV cache ({kv / total:.0%})"
    )
    if kv >= params and 2 * kv >= total:
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.45,
            explanation=figures + ". The KV cache is the largest share: in mode server the "
            "engine sizes it to fill gpu_memory_utilization after the weights, for as many "
            "tokens as fit (max_total_sequence_length), whatever the context a request needs. "
            "What would decide: the engine mode and the max_total_seq_length it chose (the "
            "lines just above this one).",
            fixes=(_MODE,),
        )
    return Analysis(
        cause="unknown",
        confidence=0.2,
        open_question=False,  # a plan, not a failure: no base rate to guess what failed
        explanation=figures + ". The weights are the largest share; the plan alone shows no "
        "failure. What would decide: whether loading then fails, and what else holds the GPU.",
        fixes=(_MODE,),
    )

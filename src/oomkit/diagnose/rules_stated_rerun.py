"""Back-to-back jobs in one process, said in the text: ``leak_or_accumulation`` (pure; docpost22,
issue #9 item 2).

Mechanism. A job that ran once in a process fit: its weights, caches and peak all had room. When
the same process then runs it again (a notebook cell re-run, "the second time I run it", a second
model loaded after the first, the second call of a function), whatever the first job left
referenced is still resident: the old model object still bound to a name (a notebook keeps every
cell's variables, ``_``/``Out`` keep the last outputs), its CUDA tensors, PyTorch's cache of its
freed blocks. The second job then needs its own memory on top and fails where the first did not.
The deciding question is whether ``torch.cuda.memory_allocated()`` is higher when the second job
starts than when the first did: higher means the first job's tensors are still held (free them
with ``del`` and ``gc.collect()``); equal means the second input is larger instead.

Read where the runtime rule left the cause open, at 0.5 (the growth reading's confidence,
:func:`oomkit.diagnose.rules_stated.stated_growth`, which handles growth *within* a job). A text
that says the second run works, that the first failed too, or that names a second GPU or
machine, is not read.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback

__all__ = ["stated_rerun"]

_AGAIN = r"(?:second|2nd|third|3rd)\s+(?:time|run|call|attempt|execution|inference|generation)"
_FAILS = r"(?:oom\w*|out\s+of\s+memory|fails?|failed|crash\w*|errors?)"
_RERUN = re.compile(
    # "the second time I run it, OOM"; "OOMs on the second call"
    r"(?i)\b" + _AGAIN + r"\b[^.\n]{0,40}?\b" + _FAILS + r"\b"
    r"|\b" + _FAILS + r"\s+(?:\w+\s+){0,2}?(?:on|at|in|during)\s+(?:the\s+)?" + _AGAIN + r"\b"
    # "works the first time", "the first run is fine" (then it fails)
    r"|\bfirst\s+(?:time|run|call|inference|generation)\b[^.\n]{0,20}?"
    r"\b(?:works?|worked|is\s+fine|was\s+fine|runs?\s+fine|ran\s+fine|succeed\w*|goes\s+through)"
    r"|\bworks?\s+(?:fine\s+|well\s+)?(?:the\s+|on\s+the\s+)?first\s+time\b"
    # a notebook cell run again in the same kernel
    r"|\b(?:re-?run(?:ning|s)?|run(?:ning)?\s+(?:it|the\s+cell)\s+again|execut\w*\s+(?:the\s+)?"
    r"cell\s+again)\b[^.\n]{0,40}?\b(?:cell|notebook|jupyter|colab|kernel)\b"
    r"|\b(?:cell|notebook|jupyter|colab)\b[^.\n]{0,40}?\b(?:re-?run(?:ning|s)?|run(?:ning)?\s+"
    r"(?:it\s+)?again|a\s+second\s+time)\b"
    # a second model loaded after the first in the same process
    r"|\b(?:load(?:ing|ed|s)?|creat(?:e|ed|ing))\s+(?:a\s+|the\s+)?(?:second|another)\s+model\b"
    r"|第(?:二|2)次(?:运行|調用|调用|推理|执行|跑|加载)"
    r"|(?:重新|再次)运行[^。\n]{0,6}(?:单元格|cell)"
)
#: the second run said to work, the first said to fail too (separate attempts, both too big:
#: "At the first time, out of memory is reported at the second epoch"; "it fails the first time
#: already", "both times", "every time", "the same error again": revfix20f), or another device or
#: machine: not a job that fit and then failed when run again in one process
_FIRST = r"first\s+(?:time|run|call|attempt|try|execution|go)"
_NOT = re.compile(
    r"(?i)\b" + _AGAIN + r"\b[^.\n]{0,30}?\b(?:works?|worked|is\s+fine|succeed\w*)\b"
    r"|\b" + _FIRST + r"\b[^.\n]{0,30}?\b" + _FAILS + r"\b"
    # "it fails the first time (already)", "OOMs on the very first run", "even the first time",
    # "already on the first run", "from the first run on": the first attempt failed too
    r"|\b" + _FAILS + r"\s+(?:already\s+|even\s+)?(?:(?:on|at|in|during|from)\s+)?(?:the\s+)?"
    r"(?:very\s+)?" + _FIRST + r"\b"
    r"|\b(?:already|even)\s+(?:(?:on|at|in|during|from)\s+)?(?:the\s+)?(?:very\s+)?"
    + _FIRST
    + r"\b"
    # every attempt fails alike: "both times", "every/each time", "the same error (again)"
    r"|\bboth\s+(?:times|runs|attempts)\b|\b(?:every|each)\s+(?:single\s+)?(?:time|run|attempt)\b"
    r"|\bsame\s+(?:oom\s+|cuda\s+)?(?:error|exception|oom|message|problem)\b"
    r"|\bsecond\s+(?:gpu|card|device|machine|node|server)\b"
)


def stated_rerun(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says the job ran before in the same process and fails when run again (module
    doc): ``leak_or_accumulation`` at 0.5 where the runtime rule left the cause open."""
    if result.cause in {"leak_or_accumulation", "kv_cache_or_context", "multi_gpu_imbalance"}:
        return None
    if not fallback(result):
        return None
    m = _RERUN.search(e.text)
    if m is None or _NOT.search(e.text):
        return None
    return Analysis(
        cause="leak_or_accumulation",
        confidence=0.5,
        explanation=result.explanation + f" The text says the job ran before in the same "
        f"process ({m.group(0)!r}): the first run fit, so what fails the second is memory the "
        "first left referenced (the old model or its outputs still bound to a name, a "
        "notebook's variables, the allocator's cache). What would decide: is "
        "torch.cuda.memory_allocated() higher when the second run starts than when the first "
        "did? Higher: the first run's tensors are still held; equal: the second input is "
        "larger.",
        fixes=(
            generic(
                "Free the first job before the second",
                "drop every reference to the old model and outputs, then return the cache.",
                ("del model, outputs; gc.collect(); torch.cuda.empty_cache()",),
            ),
            generic(
                "Check whether the first job is still resident",
                "allocated memory at the start of the second run should equal the first's.",
                ("print(torch.cuda.memory_allocated() / 2**30)",),
            ),
            *result.fixes,
        ),
        open_question=False,
    )

"""Fixes the user can apply: hardware changes labelled and ranked last, no contradicting fixes.

A fix *needs hardware* when it asks for GPUs the log does not show: tensor/pipeline sharding over
more devices, "a bigger GPU", an idle second card. :func:`label_hardware` marks such fixes
(``Fix.hardware``, title prefixed ``Hardware change:``) so :func:`oomkit.diagnose.fixes.rank`
puts them after everything the user can change on the machine at hand.

Two fixes *contradict* when they move the same knob in opposite directions (one says raise
``--gpu-memory-utilization``, another lowers it). :func:`knob_moves` reads the direction of each
fix from its flag values compared with the value the log states, else from its title's verb;
:func:`drop_contradictions` keeps, per knob, the direction of the first-ranked fix.

>>> from oomkit.diagnose.fixes import Fix
>>> f = Fix(title="Shard over 2 GPUs: --tensor-parallel-size 2", why="", commands=(),
...         expected_saving_bytes=1)
>>> label_hardware([f])[0].title
'Hardware change: Shard over 2 GPUs: --tensor-parallel-size 2'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from oomkit.diagnose.events import LogContext
from oomkit.diagnose.fixes import Fix

if TYPE_CHECKING:
    from oomkit.diagnose.rules import Diagnosis

__all__ = [
    "HARDWARE_PREFIX",
    "contradictions",
    "drop_contradictions",
    "hardware_top_fix",
    "knob_moves",
    "label_hardware",
    "needs_hardware",
]

HARDWARE_PREFIX = "Hardware change: "

_HW_TEXT = re.compile(
    r"--tensor-parallel-size|--tp[ =]\d|(?:^|\s)-tp \d|tensor.parallel|\bShard (?:over|the model)"
    r"|more GPUs|more devices|additional GPUs?|extra GPUs?|another GPU|second GPU|bigger GPU"
    r"|larger GPU|GPU with more memory"
    r"|GPU nobody else uses|<idle index>|ZeRO-3|\bFSDP\b",
    re.IGNORECASE,
)
# flag or parameter -> (knob, LogContext attribute holding its current value, or None)
_FLAGS: dict[str, tuple[str, str | None]] = {
    "--gpu-memory-utilization": ("gpu_memory_utilization", "gpu_memory_utilization"),
    "--mem-fraction-static": ("mem_fraction_static", "mem_fraction_static"),
    "--max-model-len": ("context", "max_model_len"),
    "--context-length": ("context", "max_model_len"),
    "-c": ("context", "n_ctx"),
    "--ctx-size": ("context", "n_ctx"),
    "num_ctx": ("context", "n_ctx"),
    "-ngl": ("gpu_layers", "n_gpu_layers"),
    "num_gpu": ("gpu_layers", "n_gpu_layers"),
    "-ub": ("ubatch", "n_ubatch"),
    "--max-num-seqs": ("concurrency", None),
    "--max-running-requests": ("concurrency", None),
    "--max-num-batched-tokens": ("batched_tokens", None),
    "--chunked-prefill-size": ("batched_tokens", None),
}
_FLAG_VALUE = re.compile(
    r"(?:^|\s)(?P<flag>--[a-z-]{2,40}|-c|-ngl|-ub|num_ctx|num_gpu)[ =](?P<v>\d{1,9}(?:\.\d{1,4})?)"
    r"(?=\s|$|[,)'\"])"
)
_UP = ("raise", "increase", "grow", "more ")
_DOWN = ("lower", "reduce", "halve", "cut", "shrink", "fewer", "smaller", "decrease", "serve a")


def needs_hardware(fix: Fix) -> bool:
    """True when the fix asks for GPUs the log does not show (or is already labelled so)."""
    if fix.hardware:
        return True
    return bool(_HW_TEXT.search(fix.title)) or (
        bool(fix.commands) and all(_HW_TEXT.search(c) for c in fix.commands)
    )


def label_hardware(fixes: Sequence[Fix]) -> list[Fix]:
    """Mark hardware-only fixes and say so in their title (idempotent)."""
    out: list[Fix] = []
    for f in fixes:
        if needs_hardware(f):
            title = f.title if f.title.startswith(HARDWARE_PREFIX) else HARDWARE_PREFIX + f.title
            f = replace(f, hardware=True, title=title)
        out.append(f)
    return out


def _current(ctx: LogContext, attr: str | None) -> float | None:
    if attr is None:
        return None
    value = getattr(ctx, attr, None)
    if value is None and attr == "n_gpu_layers":
        value = ctx.layers_offloaded
    return float(value) if isinstance(value, (int, float)) else None


def _verb(title: str) -> int:
    t = title.lower()
    if t.startswith(_UP):
        return 1
    if t.startswith(_DOWN):
        return -1
    return 0


def knob_moves(fix: Fix, ctx: LogContext) -> dict[str, int]:
    """Knob -> direction (+1 up, -1 down) that ``fix`` asks for.

    The direction is the sign of (new value - the value the log states); when the log does not
    state the knob, the title's verb decides (``Raise``/``Lower``...); otherwise the knob is left
    out (no direction can be read).
    """
    moves: dict[str, int] = {}
    verb = _verb(fix.title)
    for text in (fix.title, *fix.commands):
        for m in _FLAG_VALUE.finditer(text):
            spec = _FLAGS.get(m.group("flag"))
            if spec is None:
                continue
            knob, attr = spec
            cur = _current(ctx, attr)
            new = float(m.group("v"))
            if cur is not None and new != cur:
                moves.setdefault(knob, 1 if new > cur else -1)
            elif cur is None and verb and text is fix.title:
                moves.setdefault(knob, verb)
    return moves


def contradictions(d: Diagnosis) -> list[tuple[str, str, str]]:
    """Pairs of fixes of one diagnosis that move a knob in opposite directions:
    ``(knob, title_a, title_b)``."""
    seen: dict[str, tuple[int, str]] = {}
    out: list[tuple[str, str, str]] = []
    for f in d.fixes:
        for knob, direction in knob_moves(f, d.context).items():
            prev = seen.get(knob)
            if prev is None:
                seen[knob] = (direction, f.title)
            elif prev[0] != direction:
                out.append((knob, prev[1], f.title))
    return out


def drop_contradictions(fixes: Sequence[Fix], ctx: LogContext) -> list[Fix]:
    """Fixes in order, without any that moves a knob against an earlier (better-ranked) fix."""
    seen: dict[str, int] = {}
    out: list[Fix] = []
    for f in fixes:
        moves = knob_moves(f, ctx)
        if any(seen.get(k, d) != d for k, d in moves.items()):
            continue
        for k, d in moves.items():
            seen.setdefault(k, d)
        out.append(f)
    return out


def hardware_top_fix(d: Diagnosis) -> bool:
    """True when the first fix needs hardware the log does not show (must never happen)."""
    return bool(d.fixes) and needs_hardware(d.fixes[0])

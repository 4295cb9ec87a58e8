"""Preload refusals: a loader or deployer that compares its own estimate with the memory free now
and refuses before it allocates anything (pure; issue #9, docpost22).

The family's shape: what loading needs, optionally a reserve the loader keeps for the system, and
what is available now, in one sentence::

    model loading needs 20922466304 bytes plus 3865470566 bytes protected for macOS, but only
    21492711424 bytes are currently available; close memory-heavy applications and retry

(splash's memory governor on Apple silicon, incoai/splash PR #13, which made the check count the
mapped weights as they become resident), and the same words with other units or verbs
("requires 18.2 GiB, but only 12.0 GiB is available", "needs 9 GB plus 2 GB reserved for the
system, but only 10 GB are free"). GPUStack's scheduler refusals are read by
:mod:`oomkit.diagnose.parse_engines`, TensorRT's ``requires N bytes of scratch space, but only M
is available`` by the same module, Ollama's ``model requires more system memory (X) than is
available (Y)`` by :mod:`oomkit.diagnose.parse_ollama`: this module runs only where none of them
found an event.

The line must refuse, not describe: the loader's own subject at its start ("model loading
needs") or an error word (error, refused, cannot, unable, failed, retry, abort). The sizes need a
unit each; a sentence without "but only" or without a size after it is not the
family ("needs 16 GB of memory" states a requirement, not a refusal). Every pattern is anchored on
a literal and bounded: linear time on any line.
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.sizes import to_bytes
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["on_system_memory", "parse_preload", "refusal_sizes"]

_SIZE = r"(\d{1,15}(?:\.\d{1,3})?)\s?(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)\b"
_REFUSAL = re.compile(
    r"\b(?:needs?|requires?)\s(?:about\s|approximately\s|~)?" + _SIZE
    + r"(?:\s(?:plus|\+)\s" + _SIZE + r"\s(?:protected|reserved|kept)\sfor\s(?P<who>[\w ]{1,30}?))?"
    + r",?\s(?:but|yet)\sonly\s" + _SIZE
    + r"\s(?:is|are)\s(?:currently\s|still\s|now\s)?(?:available|free)\b",
    re.IGNORECASE,
)  # fmt: skip
#: the system's memory: a unified-memory Mac or host RAM (not a GPU's VRAM)
_SYSTEM = re.compile(r"\b(?:macOS|system|RAM|unified memory|OS)\b", re.IGNORECASE)
#: what makes the sentence a refusal, not a description of one: the loader's own subject at the
#: start ("model loading needs ...") or an error word on the line (docs and advice say "a 7B
#: model needs 4 GB, but only 2 GB is available by default" without either)
_REFUSING = re.compile(
    r"^\W{0,3}(?:model\s)?load(?:ing)?\s|\b(?:error|refus\w{0,3}|cannot|can't|unable|failed|"
    r"retry|abort\w{0,3})\b",
    re.IGNORECASE,
)
_PREFILTER = needles_re(("but only", "But only", "yet only"))


def refusal_sizes(line: str) -> tuple[int, int, int, str | None] | None:
    """What loading needs, the reserve kept beside it (0 if none), what is available, and whom
    the reserve is for; None when ``line`` is not the family."""
    m = _REFUSAL.search(line)
    if m is None or _REFUSING.search(line) is None:
        return None
    need = to_bytes(m.group(1), m.group(2), "generic")
    reserve = to_bytes(m.group(3), m.group(4), "generic") if m.group(3) else 0
    avail = to_bytes(m.group(6), m.group(7), "generic")
    if need is None or avail is None or reserve is None:
        return None
    who = m.group("who")
    return need, reserve, avail, who.strip() if who else None


def on_system_memory(who: str | None) -> bool:
    """Whether the reserve is the system's (a unified-memory Mac, host RAM), not a GPU's."""
    return who is not None and _SYSTEM.search(who) is not None


def _at(lines: Lines, i: int) -> OomEvent | None:
    line = lines.text[i]
    sizes = refusal_sizes(line)
    if sizes is None:
        return None
    need, reserve, avail, who = sizes
    return OomEvent(
        runtime="unknown",
        kind="preload_refusal",
        format="preload_admission",
        line=lines.number[i],
        text=line[:600],
        stage="weights",
        requested_bytes=need + reserve,  # what the check asks to be free
        free_bytes=avail,
        detail=f"a reserve for {who}" if who else None,
    )


def parse_preload(lines: Lines) -> list[OomEvent]:
    """Events of the family in the module docstring (every match, in log order). Never raises."""
    return scan_events(lines, _PREFILTER, _at)

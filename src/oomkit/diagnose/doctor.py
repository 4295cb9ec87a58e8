"""Public entry point of the OOM doctor: text in, :class:`Diagnosis` out.

>>> d = diagnose_text("model requires more system memory (5.0 GiB) than is available (3.9 GiB)")
>>> d.cause, d.events[0].requested_bytes
('host_ram', 5368709120)
>>> diagnose_text("all good").oom_found
False
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.diagnose.events import LogContext, OomEvent, ParsedLog
from oomkit.diagnose.fixes import Fix
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.rules import Diagnosis, Finding, FixProvider, diagnose

__all__ = [
    "Diagnosis",
    "Finding",
    "Fix",
    "FixProvider",
    "LogContext",
    "OomEvent",
    "ParsedLog",
    "diagnose",
    "diagnose_text",
    "parse_log",
]


def diagnose_text(text: str, *, fix_providers: Sequence[FixProvider] = ()) -> Diagnosis:
    """Parse an OOM message or log and diagnose it. Pure; never raises on arbitrary text.

    Args:
        text: the pasted message or the whole log.
        fix_providers: optional extra fix sources (see :mod:`oomkit.diagnose.rules`).
    """
    parsed = parse_log(text)
    return diagnose(parsed.events, parsed.context, fix_providers=fix_providers)

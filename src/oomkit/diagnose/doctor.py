"""Public entry point of the OOM doctor: text in, :class:`Diagnosis` out.

>>> d = diagnose_text("model requires more system memory (5.0 GiB) than is available (3.9 GiB)")
>>> d.cause, d.events[0].requested_bytes
('host_ram', 5368709120)
>>> diagnose_text("all good").oom_found
False
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oomkit.diagnose.events import LogContext, OomEvent, ParsedLog
from oomkit.diagnose.fixes import Fix
from oomkit.diagnose.model_fixes import estimator_fix_provider
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.rules import Diagnosis, Finding, FixProvider, diagnose

if TYPE_CHECKING:
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

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


def diagnose_text(
    text: str,
    *,
    fix_providers: Sequence[FixProvider] = (),
    model: ModelSpec | None = None,
    settings: InferenceSettings | None = None,
    hardware: Hardware | None = None,
    runtime: str | None = None,
) -> Diagnosis:
    """Parse an OOM message or log and diagnose it. Pure; never raises on arbitrary text.

    When the model is known (``model``, or a model name in the log that the catalog resolves),
    the estimators size the fixes (:mod:`oomkit.diagnose.model_fixes`); explicit ``settings``,
    ``hardware`` and ``runtime`` override what the log says.

    Args:
        text: the pasted message or the whole log.
        fix_providers: optional extra fix sources (see :mod:`oomkit.diagnose.rules`).
        model: the model that ran, when the user knows it.
        settings: settings the user states (fields left ``None`` come from the log).
        hardware: the GPUs, when the user states them.
        runtime: the runtime, when the user states it (else the log's).
    """
    parsed = parse_log(text)
    provider = estimator_fix_provider(model, settings, hardware, runtime=runtime)
    return diagnose(parsed.events, parsed.context, fix_providers=(provider, *fix_providers))

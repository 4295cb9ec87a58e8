"""OOM doctor: parse out-of-memory messages and logs, then explain what happened and what to change.

Entry point: :func:`oomkit.diagnose.doctor.diagnose_text`. The parsers (``parse_*``) are pure and
never raise on arbitrary text; :mod:`oomkit.diagnose.rules` turns their events into a
:class:`~oomkit.diagnose.rules.Diagnosis` with ranked, computed fixes.
"""

from __future__ import annotations

__all__: list[str] = []

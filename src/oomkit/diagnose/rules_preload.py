"""The cause of a preload refusal (:mod:`oomkit.diagnose.parse_preload`): a loader's estimate
compared with what is free now, before any allocation (pure; docpost22).

Two cases, decided by the numbers the refusal prints:

* the load alone is above what is available: the model (at these settings) does not fit what
  is free now; on the system's memory (a unified-memory Mac, host RAM) that is the host's RAM,
  which other applications share, else the model's size;
* the load alone fits and only the loader's reserve tips it over (needs N plus R for the
  system, N <= available < N + R): no allocation failed and no measured shortage is shown; the
  check's own margin refused. Whether the model would run is open (splash PR #13 relaxed such a
  check after it refused machines that ran the model comfortably): the cause stays unknown and
  the deciding question is whether it loads once the reserve's worth is freed.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text
from oomkit.diagnose.parse_preload import on_system_memory, refusal_sizes

__all__ = ["analyze_preload"]


def _free_fix(short: int) -> Fix:
    return Fix(
        title="Close memory-heavy applications (or unload other models), then retry",
        why=f"the check counts memory free now: {size_text(short)} more must be free.",
        commands=("ps aux --sort=-rss | head",),
        expected_saving_bytes=None,
    )


def analyze_preload(e: OomEvent) -> Analysis | None:
    """Analysis of a ``preload_admission`` event (module doc), else None."""
    if e.format != "preload_admission":
        return None
    sizes = refusal_sizes(e.text)
    if sizes is None:
        return None
    need, reserve, avail, who = sizes
    short = need + reserve - avail
    smaller = generic(
        "Load a smaller or more quantized model, or a shorter context",
        "the estimate grows with the weights and the context the loader sizes for.",
        ("pick a 4-bit build of the model, or a smaller model",),
    )
    if need <= avail < need + reserve:
        return Analysis(
            cause="unknown",
            confidence=0.35,
            open_question=True,
            explanation=f"The loader refused before allocating anything: loading needs "
            f"{size_text(need)}, which the {size_text(avail)} available now holds, but it also "
            f"keeps {size_text(reserve)} for {who or 'the system'}, and only that margin is "
            "missing. No allocation failed, so nothing shows the model would not run; a check "
            "that counts only memory free at this moment (not reclaimable cache, not weights "
            "that become resident gradually) refuses machines that run the model. What would "
            f"decide: does it load once {size_text(short)} more is free?",
            fixes=(_free_fix(short), smaller),
        )
    system = on_system_memory(who)
    return Analysis(
        cause="host_ram" if system else "model_too_large",
        confidence=0.5,
        explanation=f"The loader refused before allocating anything: loading alone needs "
        f"{size_text(need)} and only {size_text(avail)} is available now"
        + (f" (plus {size_text(reserve)} it keeps for {who})" if reserve else "")
        + (
            ": the system's memory, which other applications share, is short."
            if system
            else ": the model at these settings is larger than what is free."
        ),
        fixes=(smaller, _free_fix(short)) if not system else (_free_fix(short), smaller),
    )

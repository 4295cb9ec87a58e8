"""The words of a verdict: the one line the text output prints (pure).

Split from :mod:`oomkit.estimate.verdict` (which decides the level and the band): this module
only words a :class:`~oomkit.estimate.verdict.Verdict` — "Fits." with the free bytes beyond the
band, "Tight: ..." with what decides it or could push it over and the safe change, "Does not
fit.", or the capacity left unknown — and a margin's free bytes (:func:`free_phrase`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oomkit.units import format_bytes

if TYPE_CHECKING:
    from oomkit.estimate.verdict_types import Verdict

__all__ = ["free_phrase", "host_unchecked_phrase", "summary_line"]


def summary_line(v: Verdict) -> str:
    """One line for the text output (:meth:`oomkit.estimate.verdict_types.Verdict.summary`)."""
    m = v.tightest
    if v.level == "unknown" or m is None:
        return "Capacity unknown: pass --gpu NAME or --vram SIZE to check the fit."
    if v.level == "does_not_fit":
        return "Does not fit."
    band = format_bytes(m.band_bytes)
    said = free_phrase(m.what, m.device, m.free_bytes, m.spare_tokens)
    fits = "Fits."
    if v.host_unchecked_bytes is not None:  # the exit code stays the GPUs' (DESIGN: 0 fits)
        fits = f"Fits on the GPU; {host_unchecked_phrase(v.host_unchecked_bytes)}."
    if v.level == "fits" and m.free_bytes < m.band_bytes:  # llama.cpp's --fit
        return f"{fits} {said}: llama.cpp's --fit sized -c/-ngl to it."
    if v.level == "fits":
        return f"{fits} {said}, beyond the ±{band} band of real runs."
    if m.free_bytes < 0:  # over a limit the runtime/OS does not enforce as a death
        line = f"Tight: the totals above fit, but {said}"
    else:
        line = f"Tight: {said}, within the ±{band} band of real runs"
    if v.risks:
        lead = "; what decides it: " if m.free_bytes < 0 else "; could push it over: "
        line += lead + ", ".join(v.risks)
    if v.safe_change:
        line += f". Safe margin: {v.safe_change}"
    if v.host_unchecked_bytes is not None:
        line += f". Also {host_unchecked_phrase(v.host_unchecked_bytes)}"
    return line + "."


def host_unchecked_phrase(need: int) -> str:
    """The words for a host RAM need that no --ram checked."""
    return f"host RAM not checked: this run needs {format_bytes(need)} of it (give --ram SIZE)"


def free_phrase(what: str, device: str, free_bytes: int, spare_tokens: int | None) -> str:
    """The verdict's words for a margin's free bytes. A KV pool margin (vLLM, SGLang) is not
    free card memory: the engine sizes its pool to fill ``gpu_memory_utilization`` (vLLM) or
    ``mem_fraction_static`` (SGLang), so its spare is what the pool holds beyond one request of
    the full context; one wording for both engines."""
    where = device if what == "device memory" else f"{device} ({what})"
    if free_bytes < 0:  # over a limit the runtime/OS does not enforce as a death
        return f"{format_bytes(-free_bytes)} over on {where}"
    free = format_bytes(free_bytes)
    if what.startswith("KV pool"):
        held = f"{spare_tokens} tokens ({free})" if spare_tokens is not None else free
        return (
            f"{device}'s KV pool holds {held} more than one request of the full context needs"
            " (the pool fills its share of the card by design: not free card memory)"
        )
    return f"{free} free on {where}"

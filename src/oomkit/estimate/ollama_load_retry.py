"""Ollama 0.30+'s one retry of a load that ran out of memory with its automatic num_ctx.

ollama/ollama server/sched.go (PR #16031, commit 9db4bdbad, first in release v0.30.0): when the
llama-server load fails and ``llm.IsOutOfMemory(err)``, ``reduceAutoNumCtxForLoadOOM`` lowers
the context once, but only where num_ctx was Ollama's own (``usesAutomaticNumCtx``,
server/routes.go: no ``num_ctx`` in the request or the Modelfile and ``OLLAMA_CONTEXT_LENGTH``
unset): ``effectiveNumCtx`` is num_ctx capped at the GGUF's trained context and
``nextLowerAutoNumCtx`` takes it a tier down (above 32768 -> 32768, above 4096 -> 4096, else no
retry); the load is then tried again, once (``oomRetryAttempted``).

oomkit's estimate is of the first load. Where that load does not fit and the next tier does,
the user's run survives, with less context than the default they may expect: the estimate
says so (:func:`load_retry`), while the verdict and its exit code stay the first load's.
"""

from __future__ import annotations

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import parse_runtime_version

__all__ = [
    "RETRY_FROM",
    "load_retry_applies",
    "next_lower_auto_num_ctx",
    "retry_line",
    "retry_num_ctx",
]

#: (release, its tag day as ISO text) of v0.30.0, the first with reduceAutoNumCtxForLoadOOM
RETRY_FROM = ((0, 30, 0), "2026-06-01")


def next_lower_auto_num_ctx(num_ctx: int) -> int | None:
    """server/sched.go ``nextLowerAutoNumCtx``: the tier below ``num_ctx``, None when none."""
    if num_ctx > 32768:
        return 32768
    if num_ctx > 4096:
        return 4096
    return None


def load_retry_applies(version: str | None, ctx_given: bool) -> bool:
    """Ollama ``version`` (None: the newest) retries an out-of-memory load at a lower automatic
    num_ctx, and this num_ctx is automatic (``ctx_given`` False)."""
    if ctx_given:
        return False
    if version is None or not version.strip():
        return True
    when = parse_runtime_version("ollama", version)
    if isinstance(when, tuple):
        return when >= RETRY_FROM[0]
    return when.isoformat() >= RETRY_FROM[1]


def retry_num_ctx(est: Estimate) -> tuple[int, int] | None:
    """(the first load's num_ctx as Ollama caps it, the num_ctx of the retry) for an Ollama
    estimate, None when ``nextLowerAutoNumCtx`` has no lower tier for it."""
    details = est.runtime_details.get("ollama")
    if not isinstance(details, dict):
        return None
    first = details.get("num_ctx")
    if not isinstance(first, int) or isinstance(first, bool):
        return None
    lower = next_lower_auto_num_ctx(first)
    return None if lower is None else (first, lower)


def retry_line(first: int, lower: int, level: str) -> str:
    """The sentence for a first load that does not fit and a retry whose verdict is ``level``."""
    if level == "does_not_fit":
        return (
            f"Ollama 0.30+ retries an out-of-memory load once at num_ctx {lower} "
            "(server/sched.go reduceAutoNumCtxForLoadOOM): that does not fit either."
        )
    how = "fits" if level == "fits" else "is tight"
    return (
        f"Ollama 0.30+ retries an out-of-memory load once at num_ctx {lower} (server/sched.go "
        f"reduceAutoNumCtxForLoadOOM), and at {lower} it {how}: the run would likely survive, "
        f"with a {lower}-token context, not the {first} of its default. Set num_ctx to choose it."
    )

"""Two context sizes contrasted, the larger failing and the smaller fitting (docpost19).

Mechanism. The KV cache (and the attention work per step) is linear in the context a model is
served or run with: llama.cpp allocates it for ``n_ctx`` at load, vLLM and SGLang size their
pool and profile batch by ``max_model_len`` / ``--context-length``, ``generate`` grows it with
the prompt. A text that states the same model failing at one context and fitting at a smaller
one ("Mistral 7b with 32k context doesn't fit on a single 24GB GPU. Whereas with 8k context it
does.") has run the deciding experiment: only the context changed, so the context is the cause
(``kv_cache_or_context`` 0.5, as ``rules_stated_budget.context_experiment`` reads "the OOM goes
away when I lower max_model_len"). The smaller size must be the one that fits: "with 8k it
fails, with 32k it works" states no such experiment.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback

__all__ = ["stated_context_contrast"]

_CTX = r"(?P<{g}>\d{{1,4}})\s?[kK]\s+(?:context|ctx|context\s+length|tokens?\s+context)\b"
_CONTRAST = re.compile(
    r"(?i)\b" + _CTX.format(g="big") + r"[^.;\n]{0,60}?\b(?:doesn't|does\s+not|won't|will\s+not|"
    r"can't|cannot|can\s+not|didn't|did\s+not)\s+(?:fit|run|load|work)\b[^\n]{0,80}?\b"
    r"(?:with|at|using)\s+" + _CTX.format(g="small") + r"(?:\s+it)?\s+(?:does|fits|works|runs|"
    r"loads|is\s+fine|did)\b"
)


def stated_context_contrast(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """A larger context stated to fail and a smaller one to fit: ``kv_cache_or_context``."""
    del ctx
    if not fallback(result) or result.cause == "kv_cache_or_context":
        return None
    m = _CONTRAST.search(e.text)
    if m is None or int(m["small"]) >= int(m["big"]):
        return None
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.5,
        explanation=result.explanation + f" The text states the experiment that decides: "
        f"{m['big']}k of context does not fit and {m['small']}k does, with nothing else "
        "changed; the KV cache (and the attention work) is linear in the context.",
        fixes=(
            generic(
                "Serve or run with the context that fits",
                "the KV cache is allocated for the whole context.",
                (
                    "--max-model-len 8192   # vLLM",
                    "--context-length 8192   # SGLang",
                    "-c 8192   # llama.cpp",
                ),
            ),
        ),
    )

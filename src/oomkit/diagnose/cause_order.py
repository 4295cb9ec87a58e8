"""The first unsized fix follows the cause the diagnosis gives (docrt23).

A rule lists its generic advice in one order whatever cause the later steps settle on (the log
facts, the base rate): llama.cpp's compute-stage rule lists "Halve the context" before "Enable
flash attention", so a diagnosis of ``batch_or_activations`` led with a context cut, and one of
``kv_cache_or_context`` could lead with a compute lever. Where every fix is unsized, so no
saving decides the order, the first lever of the cause's kind moves to the front. Sized fixes
keep the order their savings give (:func:`oomkit.diagnose.fixes.rank`).
"""

from __future__ import annotations

from oomkit.diagnose.fixes import Fix

__all__ = ["lever_of_cause_first"]

#: title prefixes of the levers that act on each cause (llama.cpp / Ollama rules' titles)
_LEVERS = {
    "batch_or_activations": (
        "Enable flash attention",
        "Halve the micro-batch",
        "Batch fewer tokens",
        "Serve fewer requests",
    ),
    "kv_cache_or_context": ("Halve the context", "Use a shorter context", "Quantize the KV cache"),
}
#: the other cause's levers: the first fix is moved only when it is one of these
_OTHER = {
    "batch_or_activations": _LEVERS["kv_cache_or_context"],
    "kv_cache_or_context": _LEVERS["batch_or_activations"],
}


def lever_of_cause_first(fixes: tuple[Fix, ...], cause: str) -> tuple[Fix, ...]:
    """``fixes`` with the first lever of ``cause`` in front when all are unsized and the first
    one is the other cause's lever."""
    own = _LEVERS.get(cause)
    if not own or not fixes or any(f.expected_saving_bytes is not None for f in fixes):
        return fixes
    if not fixes[0].title.startswith(_OTHER[cause]):
        return fixes
    i = next((k for k, f in enumerate(fixes) if f.title.startswith(own)), None)
    if i is None:
        return fixes
    return (fixes[i], *fixes[:i], *fixes[i + 1 :])

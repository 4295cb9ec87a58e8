"""The keys of vLLM's ``--speculative-config`` beyond the ones oomkit prices.

oomkit prices ``method``, ``model`` and ``num_speculative_tokens`` (and checks
``draft_tensor_parallel_size`` against ``--tp``). Every other key the user gives is carried,
unchanged, into the ``vllm serve`` line oomkit prints (``InferenceSettings.speculative_extra``),
so a plan never runs a config other than the one asked for (``prompt_lookup_max`` dropped
would make vLLM's n-gram proposer search windows of its default size instead).

Which keys change memory, read in vllm/config/speculative.py ``SpeculativeConfig`` (main,
2026): the n-gram window (``prompt_lookup_max``/``prompt_lookup_min``: the proposer matches
token ids, it allocates nothing sized by them), the draft checkpoint's ``revision`` and
``code_revision`` (as vLLM's own ``--revision``, memory-neutral in
:mod:`oomkit.cli.pasted_flags`) and the synthetic acceptance schedule
(``synthetic_acceptance_rates``/``synthetic_acceptance_length``: numbers the sampler reads)
change none. The others change the draft's memory or may (``quantization`` and
``kv_cache_dtype`` of the draft, ``max_model_len``, ``enforce_eager`` (its CUDA graphs),
``draft_sample_method`` "probabilistic" ("additional GPU memory usage", the field's own
docstring), ``attention_backend``, ``moe_backend``, ``parallel_drafting``, ...): oomkit does
not price them, and says so in a note. A key vLLM does not know is named there too (its
release may be newer than this list; vLLM itself refuses a key it does not have).
"""

from __future__ import annotations

import json

__all__ = ["MEMORY_NEUTRAL_KEYS", "PRICED_KEYS", "unpriced_keys", "unpriced_note"]

#: the keys oomkit reads into ``InferenceSettings`` (cli.speculative_options)
PRICED_KEYS: frozenset[str] = frozenset(
    {"method", "model", "num_speculative_tokens", "draft_tensor_parallel_size"}
)

#: ``SpeculativeConfig`` fields that change no memory (module docstring: where each was read)
MEMORY_NEUTRAL_KEYS: frozenset[str] = frozenset(
    {
        "prompt_lookup_max",
        "prompt_lookup_min",
        "revision",
        "code_revision",
        "synthetic_acceptance_rates",
        "synthetic_acceptance_length",
    }
)


def unpriced_keys(extra: str | None) -> tuple[str, ...]:
    """The keys of ``extra`` (``InferenceSettings.speculative_extra``, a JSON object) that may
    change memory and that oomkit does not price, in the order given.

    >>> unpriced_keys('{"prompt_lookup_max":4,"kv_cache_dtype":"fp8"}')
    ('kv_cache_dtype',)
    >>> unpriced_keys(None)
    ()
    """
    if not extra:
        return ()
    keys = json.loads(extra)
    return tuple(k for k in keys if k not in PRICED_KEYS and k not in MEMORY_NEUTRAL_KEYS)


def unpriced_note(extra: str | None) -> str | None:
    """The note naming :func:`unpriced_keys` (None when every key is priced or memory-neutral)."""
    keys = unpriced_keys(extra)
    if not keys:
        return None
    return (
        f"--speculative-config {', '.join(keys)}: passed to vLLM as given, not priced by oomkit "
        "(the draft's memory is sized without it)"
    )

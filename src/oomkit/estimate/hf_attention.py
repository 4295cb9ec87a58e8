"""Which attention implementation ``transformers`` really runs for a model.

A model class that sets ``_supports_sdpa = False`` cannot run SDPA: asking for the default
``sdpa`` gets eager attention (``eager_attention_forward``: the ``B x a x S x S`` scores, their
softmax and, with soft-capping, the ``tanh`` output all exist and are saved for backward).
Gemma-2 is the common case: ``_supports_sdpa = False  # sdpa does not support softcapping``
(transformers 5.24 ``models/gemma2/modeling_gemma2.py`` line 353); gpt-oss likewise (attention
sinks). Seen on a real H100 (``benchmarks/gpu/results/training_h100.json``): a Gemma-2-2B
full fine-tuning step built with ``attn_implementation="sdpa"`` ran eager and peaked at
56.98 GiB, where an SDPA formula gives 48.7.
"""

from __future__ import annotations

#: ``model_type`` values whose transformers model class sets ``_supports_sdpa = False``
#: (``grep -l "_supports_sdpa = False" transformers/models/*/modeling_*.py``, transformers 5.24),
#: restricted to the decoder families oomkit's specs describe
SDPA_UNSUPPORTED: frozenset[str] = frozenset(
    {"gemma2", "gpt_oss", "vaultgemma", "granite_swa", "granitemoe_swa", "mimo_v2_flash"}
)


def effective_attn_implementation(model_type: str, requested: str | None) -> tuple[str, str | None]:
    """(the implementation transformers runs, a note when it differs from ``requested``).

    ``requested`` None means transformers' default (``sdpa``). FlashAttention-2 and eager are
    kept as asked.
    """
    impl = (requested or "sdpa").lower()
    if impl == "sdpa" and model_type in SDPA_UNSUPPORTED:
        return "eager", (
            f"attention: eager — transformers' {model_type} class sets _supports_sdpa = False, "
            "so sdpa falls back to eager (S x S scores materialised)"
        )
    return impl, None

"""Checks at the boundary: every public dataclass and CLI value goes through these.

Each check raises :class:`~oomkit.errors.InvalidSettingError` with one line naming the field, the
value and the allowed range. The limits below are far above any real model or machine (the
largest published models have ~200 layers, 256 experts, hidden sizes of 20k and vocabularies of
~260k) and exist only so that absurd or hostile input fails fast instead of exhausting memory
or time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from oomkit.errors import InvalidSettingError

__all__ = [
    "CONTEXT_KEYS",
    "MAX_BYTES",
    "MAX_CTX",
    "MAX_DEVICES",
    "MAX_DIM",
    "MAX_EXPERTS",
    "MAX_HEADS",
    "MAX_LAYERS",
    "MAX_OTHER",
    "MAX_TOKENS",
    "MAX_VOCAB",
    "check_bool",
    "check_choice",
    "check_fraction",
    "check_int",
    "check_str",
    "key_limit",
]

#: transformer blocks (real: <= ~200; a 20k-layer synthetic GGUF must still load)
MAX_LAYERS = 100_000
#: hidden / intermediate / head sizes (real: <= ~100k)
MAX_DIM = 1 << 22
#: attention or KV heads (real: <= 128)
MAX_HEADS = 1 << 16
#: experts per MoE layer (real: <= 384)
MAX_EXPERTS = 1 << 16
#: vocabulary rows (real: <= ~262k)
MAX_VOCAB = 1 << 24
#: context length in tokens (real: <= 10M, Llama-4-Scout)
MAX_CTX = 1 << 28
#: batch / sequence / token counts per step
MAX_TOKENS = 1 << 30
#: devices in one target (and TP/PP sizes)
MAX_DEVICES = 1024
#: any byte quantity (1 EiB)
MAX_BYTES = 1 << 60


#: any other integer field of a model file (max_position_embeddings, token ids, ...)
MAX_OTHER = 1 << 40


#: a model's context length: HF config.json keys (GPT-2's ``n_positions``, ChatGLM's
#: ``seq_length``, MPT's ``max_seq_len``) and GGUF's ``{arch}.context_length``. It becomes the
#: default --ctx / max_model_len, so it has --ctx's bound: a file over it is refused by its key,
#: not as a --ctx the user never typed
CONTEXT_KEYS = frozenset(
    (
        "max_position_embeddings",
        "n_positions",
        "max_sequence_length",
        "seq_length",
        "max_seq_len",
        "context_length",
    )
)


def key_limit(key: str) -> int:
    """Largest value accepted for a config.json / GGUF integer key, chosen by its name.

    Bounds every loop and allocation a loader derives from a header value; each limit is far
    above any real model (e.g. ``num_hidden_layers`` <= 100000, ``num_experts`` <= 65536).
    """
    k = key.lower().rsplit(".", 1)[-1] if "." in key else key.lower()
    if k in CONTEXT_KEYS:
        return MAX_CTX  # the default context: the same bound as --ctx (settings.py)
    if any(w in k for w in ("size", "dim", "rank", "window", "chunk", "length", "embd")):
        if "context" in k:
            return MAX_OTHER
        return MAX_VOCAB if "vocab" in k else MAX_DIM
    if any(w in k for w in ("layer", "block", "dense", "replace", "freq", "interval")):
        return MAX_LAYERS
    if "expert" in k or "group" in k or "topk" in k:
        return MAX_EXPERTS
    if "head" in k:
        return MAX_HEADS
    return MAX_OTHER


def _err(field: str, value: object, want: str) -> InvalidSettingError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InvalidSettingError(f"{field} must be {want}, got {shown}", setting=field, value=value)


def check_int(
    field: str,
    value: object,
    *,
    lo: int = 0,
    hi: int = MAX_TOKENS,
    optional: bool = False,
) -> None:
    """``value`` is an ``int`` (not bool, not float) in ``[lo, hi]`` (or None when optional)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise _err(field, value, f"an integer in [{lo}, {hi}]")
    if not lo <= value <= hi:
        raise _err(field, value, f"an integer in [{lo}, {hi}]")


def check_fraction(
    field: str, value: object, *, lo_open: float = 0.0, hi: float = 1.0, optional: bool = True
) -> None:
    """A finite real number in ``(lo_open, hi]``."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _err(field, value, f"a number in ({lo_open:g}, {hi:g}]")
    if not math.isfinite(value) or not lo_open < value <= hi:
        raise _err(field, value, f"a number in ({lo_open:g}, {hi:g}]")


def check_bool(field: str, value: object, *, optional: bool = True) -> None:
    if value is None and optional:
        return
    if not isinstance(value, bool):
        raise _err(field, value, "true or false" + (" (or None)" if optional else ""))


def check_str(field: str, value: object, *, optional: bool = True, max_len: int = 4096) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value.strip() or len(value) > max_len:
        raise _err(field, value, f"a non-empty string of at most {max_len} characters")


def check_choice(
    field: str, value: object, choices: Iterable[str], *, optional: bool = True
) -> None:
    if value is None and optional:
        return
    allowed = tuple(choices)
    if not isinstance(value, str) or value not in allowed:
        raise _err(field, value, "one of " + ", ".join(allowed))

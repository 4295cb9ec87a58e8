"""Validation of groups of :class:`~oomkit.spec.settings.InferenceSettings` fields.

Each check raises :class:`~oomkit.errors.InvalidSettingError` with one line naming the field;
the ones given a list store it back as a tuple (the dataclass is frozen: ``object.__setattr__``).
``InferenceSettings.__post_init__`` calls them; the single-field range checks stay there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oomkit.errors import InvalidSettingError
from oomkit.validate import (
    MAX_BYTES,
    MAX_CTX,
    MAX_DEVICES,
    MAX_LAYERS,
    MAX_TOKENS,
    check_choice,
    check_int,
    check_str,
)

if TYPE_CHECKING:
    from oomkit.spec.settings import InferenceSettings

__all__ = [
    "SPECULATIVE_METHODS",
    "check_block_size",
    "check_device_ordinals",
    "check_draft_settings",
    "check_max_memory",
    "check_override_tensor",
    "check_speculative_settings",
    "check_tensor_split",
]

#: speculative decoding methods in vLLM's spelling (vllm/config/speculative.py
#: ``SpeculativeMethod``) that oomkit prices
SPECULATIVE_METHODS = ("mtp", "eagle", "eagle3", "draft_model", "ngram")

#: vLLM ``CacheConfig.block_size`` (vllm/config/cache.py ``BlockSize`` literal)
_VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)


def check_block_size(s: InferenceSettings) -> None:
    """``block_size``: one of vLLM's block sizes."""
    # vLLM CacheConfig.block_size: BlockSize = Literal[1, 8, 16, 32, 64, 128, 256]
    if s.block_size is not None:
        check_int("block_size", s.block_size, lo=1, hi=256)
        if s.block_size not in _VLLM_BLOCK_SIZES:
            raise InvalidSettingError(
                f"block_size must be one of {', '.join(map(str, _VLLM_BLOCK_SIZES))} "
                f"(vLLM CacheConfig), got {s.block_size}",
                setting="block_size",
                value=s.block_size,
            )


def check_override_tensor(s: InferenceSettings) -> None:
    """``override_tensor``: llama.cpp PATTERN=BUFFER rules (a list becomes a tuple)."""
    if s.override_tensor is not None:
        ot = s.override_tensor
        if isinstance(ot, list):
            ot = tuple(ot)
            object.__setattr__(s, "override_tensor", ot)
        if not isinstance(ot, tuple) or not all(
            isinstance(r, str) and "=" in r and len(r) < 1024 for r in ot
        ):
            raise InvalidSettingError(
                "override_tensor must be PATTERN=BUFFER rules (e.g. 'exps=CPU'), got "
                f"{s.override_tensor!r}"[:200],
                setting="override_tensor",
                value=s.override_tensor,
            )


def check_tensor_split(s: InferenceSettings) -> None:
    """``tensor_split``: one non-negative finite proportion per GPU, not all 0."""
    if s.tensor_split is not None:
        ts = s.tensor_split
        if isinstance(ts, list):
            ts = tuple(ts)
            object.__setattr__(s, "tensor_split", ts)
        ok = isinstance(ts, tuple) and 0 < len(ts) <= MAX_DEVICES
        ok = ok and all(
            not isinstance(x, bool)
            and isinstance(x, int | float)
            and math.isfinite(x)
            and 0 <= x < 1e12
            for x in ts
        )
        if not ok or not any(x > 0 for x in ts):
            raise InvalidSettingError(
                f"tensor_split must be 1 to {MAX_DEVICES} non-negative finite proportions "
                f"(one per GPU, not all 0), got {s.tensor_split!r}"[:200],
                setting="tensor_split",
                value=s.tensor_split,
            )


@dataclass(frozen=True, slots=True)
class _IntTuple:
    """A field of 1 to ``MAX_DEVICES`` whole numbers from 0 to ``top`` (a list becomes a tuple)."""

    top: int  # the largest value allowed
    distinct: bool  # no value twice
    what: str  # what the values are, in the error: "must be 1 to N <what>"
    show_value: bool  # the error carries the value given


_INT_TUPLES = {
    "max_memory_bytes": _IntTuple(
        MAX_BYTES, False, "byte counts (one per GPU, or one for every GPU)", True
    ),
    "device_ordinals": _IntTuple(
        MAX_DEVICES - 1,
        True,
        "distinct backend device indices (--device CUDA2,CUDA1 -> 2,1)",
        False,
    ),
    "draft_devices": _IntTuple(
        MAX_DEVICES - 1, True, "distinct GPU indices (0 = the first GPU)", False
    ),
}


def _check_int_tuple(s: InferenceSettings, name: str) -> None:
    """``name`` by its :data:`_INT_TUPLES` row; a list is stored back as a tuple."""
    value = getattr(s, name)
    if value is None:
        return
    rule = _INT_TUPLES[name]
    if isinstance(value, list):
        value = tuple(value)
        object.__setattr__(s, name, value)
    ok = isinstance(value, tuple) and 0 < len(value) <= MAX_DEVICES
    # the element check comes before set(): a nested list is refused, not raised
    ok = ok and all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= rule.top for i in value
    )
    if not ok or (rule.distinct and len(set(value)) != len(value)):
        raise InvalidSettingError(
            f"{name} must be 1 to {MAX_DEVICES} {rule.what}, got {value!r}"[:200],
            setting=name,
            value=value if rule.show_value else None,
        )


def check_max_memory(s: InferenceSettings) -> None:
    """``max_memory_bytes``: 1 to MAX_DEVICES byte counts, not all 0 (a list becomes a tuple)."""
    _check_int_tuple(s, "max_memory_bytes")
    if s.max_memory_bytes is not None and not any(s.max_memory_bytes):
        raise InvalidSettingError(
            "max_memory_bytes gives no GPU any memory (every cap is 0)",
            setting="max_memory_bytes",
            value=s.max_memory_bytes,
        )


def check_device_ordinals(s: InferenceSettings) -> None:
    """``device_ordinals``: distinct backend device indices (a list becomes a tuple)."""
    _check_int_tuple(s, "device_ordinals")


def check_speculative_settings(s: InferenceSettings) -> None:
    """The vLLM/SGLang speculative-decoding fields: a method first, then its options."""
    check_choice("speculative_method", s.speculative_method, SPECULATIVE_METHODS)
    check_str("speculative_model", s.speculative_model)
    for name in (
        "num_speculative_tokens",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
    ):
        check_int(name, getattr(s, name), lo=1, hi=MAX_TOKENS, optional=True)
    _check_speculative_extra(s.speculative_extra)
    given = [
        name
        for name in (
            "speculative_model",
            "num_speculative_tokens",
            "speculative_eagle_topk",
            "speculative_num_draft_tokens",
            "speculative_extra",
        )
        if getattr(s, name) is not None
    ]
    if s.speculative_method is None and given:
        raise InvalidSettingError(
            f"{given[0]} needs speculative_method (vLLM --speculative-config's method, "
            "SGLang --speculative-algorithm)",
            setting=given[0],
        )


def _check_speculative_extra(extra: object) -> None:
    """``speculative_extra``: the text of a JSON object (vLLM --speculative-config's keys)."""
    check_str("speculative_extra", extra)
    if extra is None:
        return
    import json

    try:
        parsed = json.loads(str(extra))
    except (json.JSONDecodeError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        raise InvalidSettingError(
            "speculative_extra must be the text of a JSON object (vLLM --speculative-config "
            f"keys), got {str(extra)[:60]!r}",
            setting="speculative_extra",
            value=str(extra)[:100],
        )


def check_draft_settings(s: InferenceSettings) -> None:
    """The llama.cpp draft-model fields (-md and its options; a devices list becomes a tuple)."""
    for name in ("draft_model", "draft_quant", "draft_cache_type_k", "draft_cache_type_v"):
        check_str(name, getattr(s, name))
    check_int("draft_n_gpu_layers", s.draft_n_gpu_layers, lo=-1, hi=MAX_LAYERS + 1, optional=True)
    check_int("draft_ctx", s.draft_ctx, lo=1, hi=MAX_CTX, optional=True)
    _check_int_tuple(s, "draft_devices")
    if s.draft_model is None:
        for name in (
            "draft_quant",
            "draft_n_gpu_layers",
            "draft_ctx",
            "draft_cache_type_k",
            "draft_cache_type_v",
            "draft_devices",
        ):
            if getattr(s, name) is not None:
                raise InvalidSettingError(
                    f"{name} is set but draft_model is not: name the draft model "
                    "(llama.cpp -md) or drop the draft options",
                    setting=name,
                    value=None,
                )

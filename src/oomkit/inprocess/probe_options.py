"""The probe's inputs checked before torch runs: ranges of batch, sequence and LoRA options, and
the sequence against the model's positions (a one-line error naming the setting, never a torch
overflow or an answer beyond what the model can read)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oomkit.errors import InvalidSettingError
from oomkit.validate import MAX_CTX, MAX_DIM, MAX_TOKENS

__all__ = ["check_probe_options", "check_seq_positions", "max_positions"]


def _bad(setting: str, value: object, why: str) -> InvalidSettingError:
    """An error whose message starts with ``setting`` (the CLI swaps in the flag's name)."""
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return InvalidSettingError(f"{setting} {why}, got {shown}", setting=setting, value=value)


def check_probe_options(
    *,
    seq: object,
    batch: object,
    lora_rank: object = 16,
    lora_dropout: object = 0.0,
    lora_targets: Sequence[str] | None = None,
) -> None:
    """Range-check the probe's numbers before torch sees them (``torch.randint`` overflows on a
    seq of 10^23; a batch x seq above :data:`~oomkit.validate.MAX_TOKENS` is no real step).

    Raises:
        InvalidSettingError: the message starts with the keyword's name (``seq``, ``batch``,
            ``lora_rank``, ``lora_dropout``, ``lora_targets``).
    """
    import math

    for name, value, hi in (
        ("seq", seq, MAX_CTX),
        ("batch", batch, MAX_TOKENS),
        ("lora_rank", lora_rank, MAX_DIM),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise _bad(name, value, f"must be an integer in [1, {hi}]")
    assert isinstance(seq, int)
    assert isinstance(batch, int)
    if batch * seq > MAX_TOKENS:
        raise InvalidSettingError(
            f"batch {batch} x seq {seq} must be at most {MAX_TOKENS} tokens per step",
            setting="batch",
            value=batch,
        )
    if (
        isinstance(lora_dropout, bool)
        or not isinstance(lora_dropout, int | float)
        or not math.isfinite(lora_dropout)
        or not 0.0 <= lora_dropout < 1.0
    ):
        raise _bad("lora_dropout", lora_dropout, "must be a probability in [0, 1)")
    if lora_targets is not None:
        names = list(lora_targets) if not isinstance(lora_targets, str) else [lora_targets]
        if not names or any(not isinstance(t, str) or not t.strip() for t in names):
            raise _bad(
                "lora_targets",
                ",".join(map(str, names)),
                "must be module names separated by commas (e.g. q_proj,v_proj or all-linear)",
            )


def max_positions(config: Mapping[str, Any]) -> int | None:
    """The longest sequence ``config`` describes: ``max_position_embeddings`` (``n_positions``,
    ``n_ctx`` for GPT-2), times the factor of a yarn/linear/dynamic ``rope_scaling`` applied to
    its ``original_max_position_embeddings`` (how vLLM derives ``max_model_len``,
    ``_get_and_verify_max_len``); None when the config names none."""
    inner = config.get("text_config")
    if isinstance(inner, Mapping) and not any(
        k in config for k in ("max_position_embeddings", "n_positions", "n_ctx")
    ):
        config = inner
    limit: int | None = None
    for key in ("max_position_embeddings", "n_positions", "n_ctx"):
        v = config.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            limit = v
            break
    if limit is None:
        return None
    scaling = config.get("rope_scaling") or config.get("rope_parameters")
    if isinstance(scaling, Mapping):
        kind = scaling.get("rope_type") or scaling.get("type")
        factor = scaling.get("factor")
        if kind in ("yarn", "linear", "dynamic") and isinstance(factor, int | float) and factor > 1:
            base = scaling.get("original_max_position_embeddings") or limit
            if isinstance(base, int) and base > 0:
                limit = max(limit, int(base * factor))
    return limit


def check_seq_positions(config: Mapping[str, Any], seq: int, *, model: str) -> None:
    """Refuse a ``seq`` longer than the model's positions (:func:`max_positions`).

    Raises:
        InvalidSettingError: ``seq`` above the limit (the message starts with ``seq``).
    """
    limit = max_positions(config)
    if limit is not None and seq > limit:
        raise InvalidSettingError(
            f"seq {seq} is longer than {model}'s {limit} positions (max_position_embeddings): "
            "the model cannot attend that far",
            setting="seq",
            value=seq,
        )

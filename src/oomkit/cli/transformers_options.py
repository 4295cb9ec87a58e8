"""The transformers options ``estimate`` and ``plan`` share: one definition, one parser.

``--device-map``, ``--max-memory`` and ``--max-new-tokens`` are ``from_pretrained`` /
``generate()`` arguments; ``--attn-implementation`` is the training option of the same name
(``from_pretrained(attn_implementation=...)``), read for inference when the runtime is
transformers. Both commands check them with :func:`transformers_settings` (the ranges of
:func:`oomkit.cli.estimate_args.check_count_options`, :func:`oomkit.spec.max_memory.
parse_max_memory`), so a bad value gives the same one-line error (exit 2) from either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = [
    "ATTN_PARAM",
    "TRANSFORMERS_FLAGS",
    "inference_attn",
    "transformers_options",
    "transformers_settings",
]

F = TypeVar("F", bound=Callable[..., Any])

#: the click parameter of ``--attn-implementation`` (a training option, see module doc)
ATTN_PARAM = "train_attn_implementation"
#: click parameter name -> flag, for the options only transformers reads
TRANSFORMERS_FLAGS: dict[str, str] = {
    "device_map": "--device-map",
    "max_memory": "--max-memory",
    "max_new_tokens": "--max-new-tokens",
    ATTN_PARAM: "--attn-implementation",
}

_OPTIONS = (
    click.option(
        "--device-map",
        type=click.Choice(["auto", "sequential", "none"]),
        help="transformers: auto (from_pretrained(device_map='auto'), accepting CPU offload of "
        "what does not fit), sequential (fill each GPU to its --max-memory in turn, no "
        "balancing) or none (no device_map, then model.to('cuda'): all weights on the first "
        "GPU); unset: auto placement over the GPUs, but a fit only by CPU offload does not fit",
    ),
    click.option(
        "--max-memory",
        help="transformers: accelerate's max_memory, the weights placed per GPU: 24000MiB "
        "(every GPU) or 0=24000MiB,1=22GiB; activations and the KV cache come on top",
    ),
    click.option(
        "--max-new-tokens",
        type=int,
        help="transformers: generate()'s max_new_tokens, the tokens each sequence adds to the "
        "KV cache after the --ctx prompt (default 256)",
    ),
)


def transformers_options(fn: F) -> F:
    """Add ``--device-map``, ``--max-memory`` and ``--max-new-tokens`` to a click command."""
    out: Any = fn
    for opt in reversed(_OPTIONS):
        out = opt(out)
    return out  # type: ignore[no-any-return]


def inference_attn(ctx: click.Context, runtime: str) -> str | None:
    """``--attn-implementation`` as typed for an inference run of transformers (None when not
    given: the release's own default, which the estimator resolves per model)."""
    from click.core import ParameterSource

    if runtime not in ("transformers", "any"):  # (plan --runtime any compares transformers)
        return None
    if ctx.get_parameter_source(ATTN_PARAM) in (ParameterSource.DEFAULT, None):
        return None
    value = ctx.params.get(ATTN_PARAM)
    return value if isinstance(value, str) else None


def transformers_settings(
    runtime: str,
    *,
    device_map: str | None,
    max_memory: str | None,
    max_new_tokens: int | None,
    attn_implementation: str | None = None,
    refuse_elsewhere: bool = False,
) -> dict[str, Any]:
    """The ``InferenceSettings`` fields of the transformers options (only those given).

    ``refuse_elsewhere``: a runtime other than transformers (or ``any``) with one of them is a
    usage error, as ``plan``'s serving flags are (``estimate`` warns that it ignores them).

    Raises:
        InvalidSettingError: one line naming the flag and what is wrong.
    """
    from oomkit.cli.estimate_args import check_count_options
    from oomkit.errors import InvalidSettingError
    from oomkit.spec.max_memory import parse_max_memory

    check_count_options(max_new_tokens=max_new_tokens)
    caps = parse_max_memory(max_memory)
    given = {
        "device_map": device_map,
        "max_memory_bytes": caps,
        "max_new_tokens": max_new_tokens,
        "attn_implementation": attn_implementation,
    }
    out = {k: v for k, v in given.items() if v is not None}
    if refuse_elsewhere and out and runtime not in ("transformers", "any"):
        names = {"max_memory_bytes": "--max-memory", "attn_implementation": "--attn-implementation"}
        first = next(iter(out))
        flag = names.get(first, "--" + first.replace("_", "-"))
        raise InvalidSettingError(
            f"{flag} is a transformers option; plan with --runtime transformers (or any), "
            f"or drop {flag}",
            setting=flag,
            value=given[first],
        )
    return out

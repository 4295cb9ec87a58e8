"""llama.cpp flags on ``plan`` and ``models --fits``, as ``estimate`` reads them.

People paste the flags of a llama-server command. Without these options click read ``-ctk
q8_0`` as ``-c tk`` ("cannot read count 'tk'") and ``-ngl 99`` as ``-n``. Here:

* ``--kv-dtype`` / ``-ctk`` / ``-ctv`` (llama.cpp ``--cache-type-k/-v``, vLLM
  ``--kv-cache-dtype``) pin the KV cache type the planner may use (one type for K and V: the
  planner's candidates quantize both alike);
* ``-fa on|off`` / ``--flash-attn`` / ``--no-flash-attn``: the run's flash attention (``plan``;
  the plan may still name turning it on as a change, "flash attention on (-fa)");
* ``-ngl`` is refused in one line: the planner chooses the layers on the GPU (``--no-offload``
  keeps all of them there); ``estimate -ngl N`` checks one split.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["kv_options", "ngl_option", "pinned_kv", "refuse_ngl"]

F = TypeVar("F", bound=Callable[..., Any])


def kv_options(f: F) -> F:
    """``--kv-dtype``, ``-ctk``, ``-ctv`` (values checked against the runtime by the planner)."""
    f = click.option("--cache-type-v", "-ctv", help="Pin the KV cache type (as -ctk)")(f)
    f = click.option("--cache-type-k", "-ctk", help="Pin the KV cache type (llama.cpp)")(f)
    return click.option(
        "--kv-dtype",
        "--kv-cache-dtype",
        "kv_dtype",
        help="Pin the KV cache type (f16, q8_0, q4_0; vLLM/SGLang auto, fp8)",
    )(f)


def ngl_option(f: F) -> F:
    """``-ngl`` read only to refuse it clearly (see :func:`refuse_ngl`)."""
    return click.option(
        "--n-gpu-layers",
        "-ngl",
        "--gpu-layers",
        "n_gpu_layers",
        hidden=True,
        help="Refused: the planner chooses the layers on the GPU",
    )(f)


def pinned_kv(kv_dtype: str | None, ctk: str | None, ctv: str | None) -> str | None:
    """The one KV type named by ``--kv-dtype`` / ``-ctk`` / ``-ctv``, or None."""
    named = {v.strip().lower() for v in (kv_dtype, ctk, ctv) if v is not None}
    if len(named) > 1:
        raise click.UsageError(
            f"the planner pins one KV cache type for K and V, got {', '.join(sorted(named))}: "
            "give one (--kv-dtype TYPE), or check a mixed pair with oomkit estimate -ctk/-ctv"
        )
    return next(iter(named), None)


def refuse_ngl(n_gpu_layers: str | None, command: str) -> None:
    if n_gpu_layers is None:
        return
    why = (
        "it lists models that run with every layer on the GPU"
        if command.startswith("models")
        else "the planner chooses the layers on the GPU (--no-offload keeps every layer there)"
    )
    raise click.UsageError(
        f"-ngl is not a {command} option: {why}; check one split with oomkit estimate "
        f"-ngl {n_gpu_layers}"
    )

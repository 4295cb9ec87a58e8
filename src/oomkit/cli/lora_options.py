"""The vLLM LoRA options ``estimate`` and ``plan`` share, in vLLM's own spellings.

``--enable-lora``, ``--max-loras``, ``--max-lora-rank``, ``--max-cpu-loras``,
``--fully-sharded-loras`` and ``--lora-dtype`` are ``vllm serve`` flags (vllm/engine/
arg_utils.py ``EngineArgs``, from ``LoRAConfig``); ``--cudagraph-specialize-lora`` stands for
``--compilation-config '{"cudagraph_specialize_lora": ...}'``. The values are checked by
:class:`~oomkit.spec.settings.InferenceSettings` (:mod:`oomkit.spec.settings_lora`): a bad one
is a one-line error (exit 2) from either command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from oomkit.spec.settings_lora import LORA_DTYPES

__all__ = ["LORA_FLAGS", "LORA_PARAMS", "lora_options", "lora_settings"]

F = TypeVar("F", bound=Callable[..., Any])

#: InferenceSettings field (= click parameter) -> flag
LORA_FLAGS: dict[str, str] = {
    "enable_lora": "--enable-lora",
    "max_loras": "--max-loras",
    "max_lora_rank": "--max-lora-rank",
    "max_cpu_loras": "--max-cpu-loras",
    "fully_sharded_loras": "--fully-sharded-loras",
    "lora_dtype": "--lora-dtype",
    "cudagraph_specialize_lora": "--cudagraph-specialize-lora",
}
LORA_PARAMS: tuple[str, ...] = tuple(LORA_FLAGS)

_OPTIONS = (
    click.option(
        "--enable-lora",
        is_flag=True,
        default=None,
        help="vLLM: serve LoRA adapters; every LoRA layer preallocates --max-loras slots of "
        "--max-lora-rank, and since 0.11.1 CUDA graphs are captured with and without LoRA",
    ),
    click.option("--max-loras", type=int, help="vLLM: adapters in one batch (default 1)"),
    click.option(
        "--max-lora-rank",
        type=int,
        help="vLLM: largest adapter rank, one of 1, 8, 16, 32, 64, 128, 256, 320, 512 (default 16)",
    ),
    click.option(
        "--max-cpu-loras",
        type=int,
        help="vLLM: adapters cached in host memory (>= --max-loras; no GPU memory)",
    ),
    click.option(
        "--fully-sharded-loras",
        is_flag=True,
        default=None,
        help="vLLM: shard the LoRA rank / output across the tensor-parallel ranks",
    ),
    click.option(
        "--lora-dtype",
        type=click.Choice(LORA_DTYPES),
        help="vLLM: dtype of the LoRA slots (auto: the model's)",
    ),
    click.option(
        "--cudagraph-specialize-lora/--no-cudagraph-specialize-lora",
        "cudagraph_specialize_lora",
        default=None,
        help="vLLM compilation_config.cudagraph_specialize_lora: capture graphs with and "
        "without LoRA (default on from 0.11.1)",
    ),
)


def lora_options(fn: F) -> F:
    """Add the vLLM LoRA options to a click command."""
    out: Any = fn
    for opt in reversed(_OPTIONS):
        out = opt(out)
    return out  # type: ignore[no-any-return]


def lora_settings(values: dict[str, Any]) -> dict[str, Any]:
    """The ``InferenceSettings`` fields of the LoRA options given (``values``: the command's
    parameters; absent or None ones are left to vLLM's defaults)."""
    return {k: values[k] for k in LORA_PARAMS if values.get(k) is not None}

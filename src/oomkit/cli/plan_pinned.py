"""``plan``'s fixed settings: what ``estimate`` accepts, ``plan`` accepts too.

A flag pasted from a server command (SGLang ``--mem-fraction-static`` and
``--disable-hybrid-swa-memory``, vLLM ``--pipeline-parallel-size``/``--enforce-eager``/
``--max-num-batched-tokens``, llama.cpp ``-ts``/``-sm``) pins that setting: the planner
keeps it in every candidate (``planner.knobs.Candidate.apply`` replaces only the knobs it
searches on the base settings), the estimate prices it, and the printed command and the
JSON's ``command_settings`` carry it. A pinned setting the runtime does not read is refused
in one line (``estimate`` warns and ignores it; a plan would print a command without it), as
is any of them with ``--runtime any``, whose runtimes read different sets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from oomkit.cli.runtime_flags import PP_FLAGS, model_option, unmodelled_options

__all__ = ["PINNED", "pinned_options", "pinned_settings"]

F = TypeVar("F", bound=Callable[..., Any])

#: click parameter name -> the InferenceSettings field it pins
PINNED: dict[str, str] = {
    "pp": "pp",
    "mem_fraction_static": "mem_fraction_static",
    "enforce_eager": "enforce_eager",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "tensor_split": "tensor_split",
    "split_mode": "split_mode",
    "disable_hybrid_swa_memory": "disable_hybrid_swa_memory",
}


def pinned_options(f: F) -> F:
    """The fixed-setting options of ``plan`` (spelled as ``estimate``'s), ``-m`` and the
    refused data/expert-parallel flags."""
    f = unmodelled_options(f)
    f = click.option(
        "--split-mode",
        "-sm",
        type=click.Choice(["layer", "row", "none"]),
        help="llama.cpp multi-GPU split mode, kept in every plan",
    )(f)
    f = click.option(
        "--tensor-split", "-ts", help="llama.cpp: fraction of layers per GPU (3,1), kept"
    )(f)
    f = click.option(
        "--max-num-batched-tokens", type=int, help="vLLM tokens per forward step, kept"
    )(f)
    f = click.option(
        "--enforce-eager/--no-enforce-eager",
        default=None,
        help="vLLM/SGLang: no CUDA graphs (SGLang --disable-cuda-graph), kept",
    )(f)
    f = click.option(
        "--mem-fraction-static", type=float, help="SGLang fraction of each GPU, (0, 1], kept"
    )(f)
    f = click.option(
        "--disable-hybrid-swa-memory",
        is_flag=True,
        default=None,
        help="SGLang: one uniform token pool for sliding-window models (no full/SWA split), kept",
    )(f)
    f = click.option(
        *PP_FLAGS, "pp", type=int, help="vLLM/SGLang pipeline-parallel size (GPUs = tp x pp)"
    )(f)
    return model_option(f)


def pinned_settings(ctx: click.Context, runtime: str, options: dict[str, Any]) -> dict[str, Any]:
    """Pop the pinned options from ``options``: the InferenceSettings keywords they set, after
    checking that ``runtime`` reads each (flag named as typed)."""
    from oomkit.cli.args_command import typed_flag
    from oomkit.cli.estimate_args import parse_tensor_split
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.checks import RUNTIME_SETTINGS
    from oomkit.estimate.registry import normalize_runtime

    given = {k: options.pop(k) for k in PINNED if options.get(k) is not None}
    rt = runtime.strip().lower()
    for name in given:
        flag = typed_flag(ctx, name)
        if rt == "any":
            raise InvalidSettingError(
                f"{flag} pins one runtime's setting; plan with that --runtime, not any",
                setting=flag,
            )
        canonical = normalize_runtime(runtime)
        if PINNED[name] not in RUNTIME_SETTINGS.get(canonical, frozenset()):
            raise InvalidSettingError(
                f"{flag} is not a {canonical} setting; plan with the runtime that has it, or "
                f"drop {flag}",
                setting=flag,
            )
    if given.get("mem_fraction_static") is not None:
        m = given["mem_fraction_static"]
        if not 0 < m <= 1:
            raise InvalidSettingError(
                f"--mem-fraction-static must be in (0, 1], got {m}",
                setting="--mem-fraction-static",
                value=m,
            )
    if "tensor_split" in given:
        given["tensor_split"] = parse_tensor_split(given["tensor_split"])
    return {PINNED[k]: v for k, v in given.items()}

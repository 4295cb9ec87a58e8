"""llama.cpp flags on ``plan`` and ``models --fits``, as ``estimate`` reads them.

People paste the flags of a llama-server command. Without these options click read ``-ctk
q8_0`` as ``-c tk`` ("cannot read count 'tk'") and ``-ngl 99`` as ``-n``. Here:

* ``--kv-dtype`` / ``-ctk`` / ``-ctv`` (llama.cpp ``--cache-type-k/-v``, vLLM
  ``--kv-cache-dtype``) pin the KV cache type the planner may use (one type for K and V: the
  planner's candidates quantize both alike);
* ``-fa on|off`` / ``--flash-attn`` / ``--no-flash-attn``: the run's flash attention (``plan``;
  the plan may still name turning it on as a change, "flash attention on (-fa)");
* ``-ngl N`` on ``plan`` fixes the layers on the GPU (llama.cpp/Ollama: :mod:`oomkit.planner.ngl`),
  the planner then chooses the rest; ``models --fits`` refuses it in one line (it lists models
  that run with every layer on the GPU).

And the runtime checks of ``plan``'s serving flags (:func:`check_serving_options`,
:func:`check_llama_server`): a flag given with a runtime that has none is refused in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = [
    "check_llama_server",
    "check_serving_options",
    "kv_options",
    "ngl_option",
    "pinned_kv",
    "plan_ngl",
    "plan_ngl_option",
    "refuse_ngl",
]

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
    """``-ngl`` read only to refuse it clearly (``models --fits``: :func:`refuse_ngl`)."""
    return click.option(
        "--n-gpu-layers",
        "-ngl",
        "--gpu-layers",
        "n_gpu_layers",
        hidden=True,
        help="Refused: models --fits lists models with every layer on the GPU",
    )(f)


def plan_ngl_option(f: F) -> F:
    """``plan -ngl N``: a constraint on the planner's search (:func:`plan_ngl`)."""
    return click.option(
        "--n-gpu-layers",
        "-ngl",
        "--gpu-layers",
        "n_gpu_layers",
        metavar="N",
        help="Keep exactly N layers on the GPU (llama.cpp/Ollama; 999: all) and plan the rest",
    )(f)


def plan_ngl(value: str | None) -> int | None:
    """``plan -ngl N``'s layer count: a whole number, 0 or more (one-line error otherwise)."""
    if value is None:
        return None
    try:
        n = int(value.strip())
    except ValueError:
        n = -1
    if n < 0:
        raise click.UsageError(
            f"-ngl {value}: give the number of layers to keep on the GPU, 0 or more (999 or any "
            "number above the model's layers: all of them, as llama.cpp reads it)"
        )
    return n


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
    raise click.UsageError(
        f"-ngl is not a {command} option: it lists models that run with every layer on the GPU; "
        f"plan one model at a split with oomkit plan MODEL -ngl {n_gpu_layers}"
    )


def check_serving_options(
    runtime: str,
    tp: int | None,
    util: float | None,
    max_num_seqs: int | None,
    tp_flag: str = "--tp",
    pooling: bool | None = None,
) -> None:
    """The serving flags ``plan`` shares with ``estimate``: ranges, and the runtimes that
    have them (``--tp``/``--max-num-seqs``: vLLM and SGLang; ``--gpu-memory-utilization``:
    vLLM, whose ``EngineArgs`` takes a fraction in (0, 1]; ``--pooling``: vLLM's pooling
    runner)."""
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.registry import normalize_runtime

    if util is not None and not 0 < util <= 1:  # (NaN fails both comparisons)
        raise InvalidSettingError(
            f"--gpu-memory-utilization must be in (0, 1], got {util}",
            setting="--gpu-memory-utilization",
            value=util,
        )
    rt = runtime.strip().lower()
    rt = rt if rt == "any" else normalize_runtime(runtime)
    for flag, value, runtimes in (
        (tp_flag, tp, ("vllm", "sglang")),  # as typed (--tensor-parallel-size)
        ("--max-num-seqs", max_num_seqs, ("vllm", "sglang")),
        ("--gpu-memory-utilization", util, ("vllm",)),
        ("--pooling", pooling or None, ("vllm",)),
    ):
        if value is not None and rt not in (*runtimes, "any"):
            names = " and ".join("vLLM" if r == "vllm" else "SGLang" for r in runtimes)
            raise InvalidSettingError(
                f"{flag} is a {names} option; plan with --runtime "
                f"{' or '.join(runtimes)} (or any), or drop {flag}",
                setting=flag,
                value=value,
            )


def check_llama_server(runtime: str, llama_server: bool | None) -> None:
    """``--llama-server/--no-llama-server`` is llama.cpp's (Ollama starts its own llama-server
    with its own settings: :mod:`oomkit.estimate.ollama`)."""
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.registry import normalize_runtime

    rt = runtime.strip().lower()
    if llama_server is None or rt == "any" or normalize_runtime(runtime) == "llama.cpp":
        return
    flag = "--llama-server" if llama_server else "--no-llama-server"
    raise InvalidSettingError(
        f"{flag} is a llama.cpp option; plan with --runtime llama.cpp (or any), or drop {flag}",
        setting=flag,
        value=llama_server,
    )

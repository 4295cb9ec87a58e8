"""The runtimes' own spellings of what ``estimate`` and ``plan`` read, in one table.

The README says a server's flags can be pasted into ``oomkit estimate``. Each spelling below
was read in the runtime's own argument parser:

* llama.cpp ``common/arg.cpp``: ``{"-m", "--model"}, "FNAME"`` (``params.model.path``);
* vLLM ``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args``, the ``ParallelConfig`` group:
  ``"--pipeline-parallel-size", "-pp"``, ``"--data-parallel-size", "-dp"``,
  ``"--enable-expert-parallel", "-ep"`` (a switch); ``--model`` (``ModelConfig``);
* SGLang ``python/sglang/srt/server_args.py`` ``ServerArgs.add_cli_args``: ``"--model-path",
  "--model"``, ``"--pipeline-parallel-size", "--pp-size"``, ``"--data-parallel-size",
  "--dp-size"``, ``"--expert-parallel-size", "--ep-size", "--ep"``, ``--max-running-requests``
  and ``--mem-fraction-static``.

What oomkit models (the model, the pipeline stages) maps onto its options. Data and expert
parallelism it does not model (no estimator has a replica or an expert-sharding term:
``InferenceSettings`` has no such field), so a run that uses them is refused in one line that
names the flag as typed; the neutral values (``-dp 1``, ``--ep-size 1``) change nothing and
are accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # click is not imported by the click-free estimate path (estimate_fast)
    import click

__all__ = [
    "MODEL_FLAGS",
    "PP_FLAGS",
    "SEQS_FLAGS",
    "UNMODELLED",
    "model_option",
    "refuse_unmodelled",
    "resolve_model",
    "unmodelled_options",
]

F = TypeVar("F", bound=Callable[..., Any])

#: the model as an option: llama.cpp ``-m/--model``, vLLM ``--model``, SGLang ``--model-path``
MODEL_FLAGS = ("-m", "--model", "--model-path")
#: pipeline-parallel size: oomkit's ``--pp``, vLLM ``--pipeline-parallel-size``/``-pp``,
#: SGLang ``--pp-size`` (and its ``--pipeline-parallel-size``)
PP_FLAGS = ("--pp", "--pipeline-parallel-size", "-pp", "--pp-size")
#: concurrent sequences: vLLM ``--max-num-seqs``, SGLang ``--max-running-requests``
SEQS_FLAGS = ("--max-num-seqs", "--max-running-requests")

#: click parameter name -> (its spellings, what the runtimes do with it, neutral value);
#: a value that is neither None nor the neutral one is refused (:func:`refuse_unmodelled`)
UNMODELLED: dict[str, tuple[tuple[str, ...], str, object]] = {
    "data_parallel_size": (
        ("--data-parallel-size", "-dp", "--dp-size", "--dp"),
        "data parallelism (engine replicas, each on its own --tp x --pp GPUs)",
        1,
    ),
    "expert_parallel_size": (
        ("--expert-parallel-size", "--ep-size", "--ep"),
        "expert parallelism (whole MoE experts spread over the GPUs)",
        1,
    ),
    "enable_expert_parallel": (
        ("--enable-expert-parallel", "-ep"),
        "expert parallelism (whole MoE experts spread over the GPUs)",
        False,
    ),
}


def model_option(f: F) -> F:
    """``-m/--model/--model-path PATH``: the model, as the positional MODEL."""
    import click

    return click.option(
        *MODEL_FLAGS,
        "model_flag",
        metavar="MODEL",
        multiple=True,  # given twice is read, to refuse two different models (resolve_model)
        help="The model, as the MODEL argument (llama.cpp -m, vLLM --model, SGLang "
        "--model-path), so a server's command line can be pasted",
    )(f)


def unmodelled_options(f: F) -> F:
    """The data- and expert-parallel flags, read only to refuse them clearly."""
    import click

    for name, (flags, _, neutral) in reversed(UNMODELLED.items()):
        if isinstance(neutral, bool):
            f = click.option(*flags, name, is_flag=True, default=None, hidden=True)(f)
        else:
            f = click.option(*flags, name, type=int, hidden=True)(f)
    return f


def resolve_model(model: str | None, model_flag: str | tuple[str, ...] | None) -> str:
    """The one model named by the MODEL argument and ``-m`` (given once or more); a usage
    error when none or two different ones are given (``-m a -m b`` too: click would keep
    the last silently)."""
    import click

    flags = (model_flag,) if isinstance(model_flag, str) else tuple(model_flag or ())
    named = ([model] if model is not None else []) + list(flags)
    distinct = list(dict.fromkeys(named))
    if len(distinct) > 1:
        first, second = distinct[:2]
        where = "MODEL" if model is not None else "-m/--model"
        raise click.UsageError(
            f"two models given: {where} {first!r} and -m/--model {second!r}; give one"
        )
    if not distinct:
        raise click.UsageError("Missing argument 'MODEL' (or -m/--model PATH).")
    return distinct[0]


def refuse_unmodelled(ctx: click.Context, options: dict[str, Any]) -> None:
    """Pop the unmodelled parallel flags from ``options``; refuse one given a non-neutral
    value, naming the flag as typed."""
    from oomkit.cli.args_command import typed_flag
    from oomkit.errors import InvalidSettingError

    for name, (_, what, neutral) in UNMODELLED.items():
        value = options.pop(name, None)
        if value is None or value == neutral:
            continue
        flag = typed_flag(ctx, name)
        shown = flag if isinstance(neutral, bool) else f"{flag} {value}"
        raise InvalidSettingError(
            f"{shown}: {what} is not modelled by oomkit; drop {flag} for the estimate "
            "without it (README: Limitations)",
            setting=flag,
            value=value,
        )

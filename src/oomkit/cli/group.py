"""The ``oomkit`` click group (built on first use: ``main`` runs ``estimate`` without it)."""

from __future__ import annotations

import importlib

import click

from oomkit import __version__
from oomkit.cli import _COMMANDS

__all__ = ["cli"]


class _LazyGroup(click.Group):
    """A click group that imports a subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is not None or cmd_name not in _COMMANDS:
            return found
        module, attr = _COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module), attr)
        if not isinstance(command, click.Command):  # pragma: no cover - programming error
            raise TypeError(f"{module}.{attr} is not a click command")
        self.add_command(command, cmd_name)
        return command


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="oomkit")
def cli() -> None:
    """Will it fit? GPU memory per device for LLM inference, and an OOM doctor.

    \b
    Examples:
      oomkit estimate llama-3.1-8b --quant Q4_K_M --ctx 8192 --gpu rtx-4090
      oomkit estimate qwen2.5-32b --runtime vllm --gpu 2xa100-80gb --tp 2
      oomkit doctor train.log          (or: cat train.log | oomkit doctor -)
      oomkit gpus                      (the GPUs here; oomkit gpus --catalog for all)

    \b
    Exit codes: 0 fits / diagnosed, 1 error, 2 usage error,
                3 does not fit / nothing fits / no OOM found in the log,
                4 tight (estimate: fits, but within the variance of real runs).
    """

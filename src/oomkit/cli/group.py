"""The ``oomkit`` click group (built on first use: ``main`` runs ``estimate`` without it)."""

from __future__ import annotations

import importlib

import click

from oomkit import __version__
from oomkit.cli import _COMMANDS

__all__ = ["cli"]

#: The first paragraph of each lazily imported command's help: what ``oomkit --help`` lists, so
#: that listing the commands imports none of them (the doctor's parsers alone take 0.1 s).
#: ``tests/test_cli_group_help.py`` checks each equals the command's own help, so they cannot drift.
SUMMARIES: dict[str, str] = {
    "doctor": "Diagnose an out-of-memory error: LOG is a file, `-` (stdin), or the pasted message.",
    "estimate": "Estimate memory per device for MODEL (catalog name, path, .gguf or repo id).",
    "gpus": "Show every GPU: memory, utilization, MIG slices and the processes holding memory.",
    "models": "List or search the embedded model catalog (works offline). "
    "Exit 3 if nothing matches.",
    "plan": "Find the best configuration of MODEL that fits your GPU(s), "
    "and the command to run it.",
    "probe": "Trace MODEL (catalog name or config.json) on fake tensors: real peak, no GPU.",
    "serve": "Serve the local web page and JSON API (OpenAPI docs at /docs).",
}


class _LazyGroup(click.Group):
    """A click group that imports a subcommand's module on first use (not to list it)."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing, with the summaries of commands not imported yet taken from
        :data:`SUMMARIES` (click would import every command to read its help)."""
        names = [
            n
            for n in self.list_commands(ctx)
            if n in self.commands or n in SUMMARIES or self.get_command(ctx, n) is not None
        ]
        rows: list[tuple[str, str]] = []
        if names:
            limit = formatter.width - 6 - max(len(n) for n in names)
            for name in names:
                loaded = self.commands.get(name)
                if loaded is None and name in SUMMARIES:
                    stand_in = click.Command(
                        name, help=SUMMARIES[name]
                    )  # not imported: its summary
                    rows.append((name, stand_in.get_short_help_str(limit)))
                    continue
                command = loaded or self.get_command(ctx, name)
                if command is None or command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

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
    Exit codes (README "Exit codes"):
      0 success (it fits / a diagnosis was made)
      1 error (bad input file, unknown model or quant, offline)
      2 usage error (a bad option value, an unknown --gpu or --runtime, no input at all:
        no file and nothing piped)
      3 a valid negative answer (does not fit, nothing fits (plan, models --fits, gpus --for),
        nothing matches, no OOM in the log)
      4 estimate only: tight (it fits, but the free memory on some GPU is inside the band
        real runs sit from oomkit's numbers)
    """

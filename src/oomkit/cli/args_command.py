"""A click command that keeps the arguments as typed, so that an error names a flag the way
the user spelled it (``--batch`` for ``--parallel``, ``--max-model-len`` for ``--ctx``)."""

from __future__ import annotations

import click

__all__ = ["ARGS_META", "ArgsCommand", "typed_flag"]

#: ``ctx.meta`` key of the raw arguments (:class:`ArgsCommand`)
ARGS_META = "oomkit.raw_args"


class ArgsCommand(click.Command):
    """A click command that keeps its raw arguments in ``ctx.meta`` (:func:`typed_flag`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[ARGS_META] = tuple(args)
        return super().parse_args(ctx, args)


def typed_flag(ctx: click.Context, name: str) -> str:
    """The spelling of parameter ``name`` the user typed (``--batch`` for ``--parallel``), from
    the raw arguments when the command kept them; else its first long name."""
    param = next((p for p in ctx.command.params if p.name == name), None)
    default = "--" + name.replace("_", "-")
    if param is None:
        return default
    names = [*param.opts, *param.secondary_opts]
    for arg in reversed(ctx.meta.get(ARGS_META, ())):  # the last one given is the one used
        if arg == "--":
            continue
        head = str(arg).split("=", 1)[0]
        if head in names:
            return head
    return next((n for n in names if n.startswith("--")), default)

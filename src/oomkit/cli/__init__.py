"""``oomkit`` command line: one thin module per command, errors mapped to exit codes here.

Exit codes: 0 success (it fits / a diagnosis was made), 1 error (bad input file, unknown name,
offline), 2 usage error, 3 a valid negative answer (does not fit, no OOM found).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import click

from oomkit import __version__
from oomkit.cli.output import (
    EXIT_ERROR,
    EXIT_USAGE,
    debug_enabled,
    error_exit_code,
    print_error,
    print_hint,
)
from oomkit.errors import OomkitError

__all__ = ["cli", "main"]


# Subcommand name -> (module, attribute). Imported only when that command runs (or for the
# group's --help): `oomkit estimate` never pays for the OOM doctor's parsers or GPU probing.
_COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("oomkit.cli.doctor", "doctor_command"),
    "estimate": ("oomkit.cli.estimate", "estimate_command"),
    "gpus": ("oomkit.cli.gpus", "gpus_command"),
    "models": ("oomkit.cli.models", "models_command"),
    "plan": ("oomkit.cli.plan", "plan_command"),
    "serve": ("oomkit.cli.serve", "serve_command"),
    "probe": ("oomkit.cli.probe", "probe_command"),
}


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; map every error to one ``Error:`` line on stderr and an exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:  # a bare `oomkit` asks what the tool does: the help, readable, exit 0
        with click.Context(cli, info_name="oomkit", **cli.context_settings) as ctx:
            click.echo(cli.get_help(ctx))
        return 0
    if "--debug" in args:
        args.remove("--debug")
        import os

        os.environ["OOMKIT_DEBUG"] = "1"
    try:
        rv = cli.main(args=args, prog_name="oomkit", standalone_mode=False)
    except click.exceptions.Abort:
        print_error("aborted")
        return EXIT_ERROR
    except click.UsageError as e:
        where = (
            f" (oomkit {e.ctx.command_path.split(' ', 1)[1]})"
            if e.ctx and " " in e.ctx.command_path
            else ""
        )
        print_error(f"{e.format_message()}{where}")
        return EXIT_USAGE
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        print_error(e.format_message())
        return int(e.exit_code)
    except OomkitError as e:
        if debug_enabled():
            raise
        code, hint = error_exit_code(e)
        print_error(str(e))
        if hint:
            print_hint(hint)
        return code
    except (OSError, ValueError) as e:
        if debug_enabled():
            raise
        print_error(str(e))
        print_hint("Run again with --debug for the traceback.")
        return EXIT_ERROR
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except Exception as e:  # last resort: never a traceback (issue 10)
        if debug_enabled():
            raise
        print_error(
            f"internal error: {type(e).__name__}: {e} — please report it "
            "(run with OOMKIT_DEBUG=1 for the traceback)"
        )
        return EXIT_ERROR
    return int(rv) if isinstance(rv, int) else 0


def entry() -> None:  # pragma: no cover - console script
    sys.exit(main())

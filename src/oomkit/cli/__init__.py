"""``oomkit`` command line: one thin module per command, errors mapped to exit codes here.

Exit codes: 0 success (it fits / a diagnosis was made), 1 error (bad input file, unknown model
or quant, offline), 2 usage error (a bad option value, an unknown ``--gpu`` or ``--runtime``, no
input at all), 3
a valid negative answer (does not fit, no OOM found), 4 ``estimate`` only: tight (README "Exit
codes"; ``oomkit --help`` says the same).

Start-up: the click group (``cli``, in ``oomkit.cli.group``) is built on first use. ``main``
first offers argv to ``estimate_fast``, which runs ``oomkit estimate MODEL [options]`` written
the common way without importing click (the import and building the group cost about as much
as the estimate itself); anything else — help, other commands, an option or form it does not
know, any value it cannot convert — goes to click unchanged. Once the group exists (a caller
imported ``oomkit.cli.cli``), click runs everything: the shortcut only saves importing click.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from oomkit.cli.output import (
    EXIT_ERROR,
    EXIT_USAGE,
    debug_enabled,
    error_exit_code,
    print_error,
    print_hint,
)
from oomkit.errors import OomkitError

if TYPE_CHECKING:
    from oomkit.cli.group import cli

__all__ = ["cli", "exit_process", "main"]


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


#: True once ``estimate_fast`` ran the command (see :func:`exit_process`)
_ran_fast = False


def __getattr__(name: str) -> Any:
    if name == "cli":
        from oomkit.cli.group import cli

        globals()["cli"] = cli
        return cli
    raise AttributeError(f"module 'oomkit.cli' has no attribute '{name}'")


def _where(e: Any) -> str:
    """`` (oomkit CMD)`` for a usage error inside a command."""
    ctx = e.ctx
    return (
        f" (oomkit {ctx.command_path.split(' ', 1)[1]})" if ctx and " " in ctx.command_path else ""
    )


def _negative_value(args: list[str], name: str, ctx: Any) -> str | None:
    """The message for a negative number click read as an unknown option: it does for the value
    of an option whose value is optional (``gpus --watch -1``, and ``--watch=-1`` too, in click
    8.x), saying only "No such option '-1'"; ``None`` when ``name`` is not such a value."""
    takes_value = {
        o
        for p in (ctx.command.params if ctx is not None else ())
        if not getattr(p, "is_flag", True)
        for o in p.opts
    }
    for i, arg in enumerate(args):
        opt, eq, value = arg.partition("=")
        if not eq:
            opt, value = (args[i - 1] if i else ""), arg
        if not (opt in takes_value and value.startswith(name) and value.startswith("-")):
            continue
        try:
            float(value)
        except ValueError:
            continue
        return f"Invalid value for '{opt}': {value} is negative; give a positive number"
    return None


def _run_click(args: list[str]) -> Any:
    """``args`` through the click group; click's own exceptions mapped to exit codes."""
    import click

    group = __getattr__("cli") if "cli" not in globals() else globals()["cli"]
    try:
        return group.main(args=args, prog_name="oomkit", standalone_mode=False)
    except click.exceptions.Abort:
        print_error("aborted")
        return EXIT_ERROR
    except click.NoSuchOption as e:
        negative = _negative_value(args, e.option_name, e.ctx)  # `--watch -1`
        print_error(f"{negative or e.format_message()}{_where(e)}")
        return EXIT_USAGE
    except click.UsageError as e:
        print_error(f"{e.format_message()}{_where(e)}")
        return EXIT_USAGE
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        print_error(e.format_message())
        return int(e.exit_code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; map every error to one ``Error:`` line on stderr and an exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:  # a bare `oomkit` asks what the tool does: the help, readable, exit 0
        import click

        group = __getattr__("cli")
        with click.Context(group, info_name="oomkit", **group.context_settings) as ctx:
            click.echo(group.get_help(ctx))
        return 0
    if "-fa" in args or any(a.startswith("--flash-attn") for a in args):
        from oomkit.cli.values import llamacpp_fa_args

        args = llamacpp_fa_args(args)  # llama-server's `-fa on|off|auto`
    from oomkit.cli.pasted_flags import strip_ignored

    args = strip_ignored(args)  # a pasted server line's --port, --jinja, -t 8 (named later)
    if "--debug" in args:
        args.remove("--debug")
        import os

        os.environ["OOMKIT_DEBUG"] = "1"
    global _ran_fast
    try:
        rv = None
        if "cli" not in globals():
            from oomkit._gcpause import take_start_pause
            from oomkit.cli.estimate_fast import run_fast

            # one command of a fresh process (argv from sys.argv): no cyclic-GC passes while it
            # imports ~45 modules and estimates (1-3 ms); back on before main returns. The
            # command paused it already at `import oomkit` (_gcpause.pause_for_command_start)
            started_paused = take_start_pause()
            pause_gc = started_paused or (argv is None and gc.isenabled())
            if pause_gc:
                gc.disable()
            try:
                rv = run_fast(args)
            finally:
                if pause_gc:
                    gc.enable()
            _ran_fast = rv is not None
        if rv is None:
            rv = _run_click(args)
    except OomkitError as e:
        if debug_enabled():
            raise
        from oomkit.cli.flags import SETTING_FLAGS, with_flag_names
        from oomkit.errors import InvalidSettingError

        if isinstance(e, InvalidSettingError):  # name the flag, not the library's field
            e = with_flag_names(e, SETTING_FLAGS)
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
    finally:
        from oomkit.cli.pasted_flags import forget_ignored

        forget_ignored()  # this command's pasted server flags, read by now
    return int(rv) if isinstance(rv, int) else 0


def skip_teardown() -> None:
    """Called by a command that wrote all its output and holds nothing that needs closing
    (``models --fits``: ~0.2 s of its run is freeing the estimator's caches at exit)."""
    global _ran_fast
    _ran_fast = True


def exit_process(code: int) -> NoReturn:
    """``sys.exit(code)``; after the click-free ``estimate`` without the interpreter's teardown.

    Freeing every module and object one by one at exit takes ~11 ms of a ~70 ms ``oomkit
    estimate`` (issue 10, cold start) and ~0.2 s of ``models --fits``. When ``estimate_fast``
    ran the command (or the command called :func:`skip_teardown`) and no other
    thread is alive, the ``atexit`` handlers run (the dataclass code cache is written there),
    the output is flushed, and the process ends with ``os._exit(code)``: same output, same
    exit code. Anything else — another command, a thread still running, an output that cannot
    be flushed (a closed pipe) — exits the ordinary way, with the interpreter's own reporting.
    """
    threading = sys.modules.get("threading")
    if not _ran_fast or (threading is not None and threading.active_count() > 1):
        sys.exit(code)
    import atexit
    import os

    atexit._run_exitfuncs()  # as the interpreter does first at exit (they do not run twice)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # the interpreter reports it at exit (status 120), as always
        sys.exit(code)
    os._exit(code)


def entry() -> None:  # pragma: no cover - console script
    exit_process(main())

"""Request body -> the CLI's ``--json`` document, through the CLI's own command code.

``POST /api/estimate`` and ``/api/plan`` take the CLI's long options in snake_case
(``shared/DESIGN.md``, Web API). Rather than re-assembling settings, hardware and the
suggestions the way ``oomkit estimate`` does (and drifting from it whenever the command
grows an option), the body is turned into that command's argv and the click command runs
in-process with ``--json``; its stdout *is* the response. So every number the page shows is
the CLI's number by construction. The CLI writes to ``sys.stdout``, so one lock serializes
the captures (the estimators are pure CPU-bound Python: the GIL serializes them anyway).

This module imports no web framework: it is safe for the import-boundary tests.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from oomkit.errors import InvalidSettingError, SourceNotFoundError, UnknownNameError

if TYPE_CHECKING:
    from oomkit.hardware.live import GpuBackend

__all__ = [
    "CliRejected",
    "check_model_ref",
    "cli_argv",
    "command_options",
    "field_names",
    "option_keys",
    "run_cli_json",
    "with_field_names",
]

_LOCK = threading.Lock()
_MAX_REF = 200


class CliRejected(ValueError):
    """The CLI refused the options (click usage error): the message is click's, one line."""


def check_model_ref(ref: str, *, hub: bool) -> str:
    """``ref`` if the web API may resolve it: a catalog name, or a Hub id when ``hub``.

    No endpoint reads a server path the user names, so anything that looks like a path, or
    names a file that exists where the server runs, is refused before the loaders see it.

    Raises:
        SourceNotFoundError: ``ref`` is a path (or an existing file/directory).
        UnknownNameError: not in the catalog (and not a Hub id, or Hub look-ups are off);
            InvalidModelNameError (a subclass) for an ``org/name`` that is no repo id.
    """
    from oomkit.catalog.models import find_model
    from oomkit.loaders.hub import parse_hub_ref
    from oomkit.loaders.source import invalid_repo_id

    text = ref.strip()
    if not text or len(text) > _MAX_REF or not text.isprintable():
        # control and format characters (a right-to-left override, a zero-width space) are
        # refused and never echoed as they are: the name comes back escaped
        raise UnknownNameError(
            kind="model",
            name=ascii(text[:60])[1:-1],
            hint=f"Give a catalog name such as llama-3.1-8b (1 to {_MAX_REF} printable "
            "characters).",
        )
    pathlike = text.startswith(("/", ".", "~", "\\")) or text.endswith(
        (".gguf", ".safetensors", ".json")
    )
    if pathlike or Path(text).exists():
        raise SourceNotFoundError(
            f"Loading model failed for '{text}' (web API): the web API does not read files on "
            "the server. Give a catalog name (see /api/models), or run `oomkit estimate PATH` "
            "on the command line.",
            source=text,
        )
    try:
        find_model(text)
    except UnknownNameError as unknown:
        if hub and parse_hub_ref(text) is not None and not text.startswith(("http:", "https:")):
            return text
        if parse_hub_ref(text) is not None:
            raise UnknownNameError(
                kind="model",
                name=text,
                hint="It is not in the catalog, and Hub look-ups are off on this server: "
                "start it with `oomkit serve --hub`, or pick a catalog model.",
            ) from None
        # the CLI's message for an org/name that is no repo id (oomkit.loaders.source)
        raise invalid_repo_id(text, unknown) or unknown from None
    return text


def command_options(command: str) -> dict[str, click.Option]:
    """``oomkit COMMAND``'s options by body key: the first long option in snake_case.

    >>> {"ctx", "gpu", "headroom", "json", "min_ctx"} <= set(command_options("plan"))
    True
    """
    from oomkit.cli import cli

    cmd = cli.get_command(click.Context(cli), command)
    if cmd is None:  # pragma: no cover - programming error
        raise LookupError(f"no oomkit command '{command}'")
    out: dict[str, click.Option] = {}
    for param in cmd.params:
        if isinstance(param, click.Option):
            longs = [o for o in param.opts if o.startswith("--")]
            if longs:
                out[longs[0][2:].replace("-", "_")] = param
    return out


def option_keys(command: str) -> dict[str, tuple[click.Option, str, bool]]:
    """Every long option of ``oomkit COMMAND`` by body key: (option, its flag, negated).

    The first long option names the option (:func:`command_options`); its aliases (``ctx``'s
    ``--max-model-len``, ``--context-length``) and a flag's ``--no-...`` form are keys too, as
    the command line takes them all. ``negated``: the key is the flag's secondary form.

    >>> keys = option_keys("estimate")
    >>> keys["max_model_len"][0] is keys["ctx"][0], keys["max_model_len"][1]
    (True, '--max-model-len')
    >>> keys["no_flash_attn"][1:]
    ('--no-flash-attn', True)
    """
    out: dict[str, tuple[click.Option, str, bool]] = {}
    for param in command_options(command).values():
        for negated, opts in ((False, param.opts), (True, param.secondary_opts)):
            for opt in opts:
                if opt.startswith("--"):
                    out.setdefault(opt[2:].replace("-", "_"), (param, opt, negated))
    return out


#: a command-line flag mentioned in a message: ``--vram``, ``-ctk`` (not ``llama-server``, ``-5``)
_FLAG = re.compile(r"(?<![\w.-])'?(-{1,2}[A-Za-z][\w-]*)(?![\w-])'?")


def field_names(message: str, command: str, keys: Collection[str] | None = None) -> str:
    """``message`` with each flag of ``oomkit COMMAND`` named by its request key instead.

    The CLI's errors name what the user typed (``--vram 0: ...``, ``Invalid value for
    '--os'``); a request to the web API or a form on the page has no flags, so its answer names
    the field (``'vram' 0: ...``). ``keys``: only these request keys (the doctor's body has a few
    of its command's options); other flags are left as they are.

    >>> field_names("--vram 0: a GPU or host with no memory runs nothing", "estimate")
    "'vram' 0: a GPU or host with no memory runs nothing"
    >>> field_names("Invalid value for '--os': 'plan9' is not one of 'linux'", "plan")
    "Invalid value for 'os': 'plan9' is not one of 'linux'"
    >>> field_names("use -r llama.cpp (llama-server -ngl 99)", "estimate")
    "use 'runtime' llama.cpp (llama-server 'n_gpu_layers' 99)"
    """
    by_flag: dict[str, str] = {}
    for key, param in command_options(command).items():
        if keys is None or key in keys:
            by_flag.update((opt, key) for opt in (*param.opts, *param.secondary_opts))
    out = _FLAG.sub(
        lambda m: f"'{by_flag[m.group(1)]}'" if m.group(1) in by_flag else m.group(0), message
    )
    # click names an option by all its flags: "'--ctx' / '-c'" -> "'ctx' / 'ctx'" -> "'ctx'"
    return re.sub(r"'(\w+)'(?: / '\1')+", r"'\1'", out)


def with_field_names(
    exc: BaseException, command: str, keys: Collection[str] | None = None
) -> BaseException:
    """``exc`` (same type, same attributes) with :func:`field_names` applied to its message;
    ``exc`` itself when no flag is named or its type composes its own message."""
    if isinstance(exc, InvalidSettingError):
        # a library keyword first gets the CLI's flag ('ctx' -> --ctx), as `oomkit` prints it,
        # so the planner's and the estimate's range errors read the same here too
        from oomkit.cli.flags import SETTING_FLAGS, with_flag_names

        exc = with_flag_names(exc, SETTING_FLAGS)
    text = str(exc)
    new = field_names(text, command, keys)
    if new == text or type(exc).__str__ is not BaseException.__str__ or len(exc.args) != 1:
        return exc
    out = type(exc).__new__(type(exc))
    out.__dict__.update(exc.__dict__)
    out.args = (new,)
    if isinstance(out, InvalidSettingError):  # the setting is the field too
        out.setting = field_names(out.setting, command, keys)
    return out


def _long(opts: Sequence[str]) -> str:
    return next(o for o in opts if o.startswith("--"))


def cli_argv(command: str, positional: Sequence[str], options: Mapping[str, Any]) -> list[str]:
    """argv of ``oomkit COMMAND ... --json`` for snake_case ``options`` (``None`` left out):
    any long option's key (:func:`option_keys`), passed as that very flag.

    A boolean is the option's flag when true; when false, the ``--no-...`` (secondary) flag
    if the option has one, else nothing. A list repeats the option; every other value is
    passed as ``--name=value``, so a value starting with ``-`` is never read as an option.
    Positional arguments follow ``--``.

    Raises:
        CliRejected: a key that is not an option of the command, or a non-boolean for a flag.

    >>> cli_argv("plan", ["llama-3.1-8b"], {"ctx": 8192, "gpu": ["rtx-4090"], "no_offload": True})
    ['plan', '--ctx=8192', '--gpu=rtx-4090', '--no-offload', '--json', '--', 'llama-3.1-8b']
    >>> cli_argv("estimate", ["m"], {"flash_attn": False})
    ['estimate', '--no-flash-attn', '--json', '--', 'm']
    >>> cli_argv("estimate", ["m"], {"max_model_len": 32768})
    ['estimate', '--max-model-len=32768', '--json', '--', 'm']
    """
    known = option_keys(command)
    argv = [command]
    for key, value in options.items():
        if value is None or key == "json":
            continue
        if key not in known:
            raise CliRejected(f"'{key}' is not an option of `oomkit {command}`")
        param, flag, negated = known[key]
        if param.is_flag:
            if not isinstance(value, bool):
                raise CliRejected(f"'{key}' is a flag: give true or false, not {value!r}")
            if value:
                argv.append(flag)
            elif negated:  # no_flash_attn: false is --flash-attn
                argv.append(_long(param.opts))
            elif param.secondary_opts:
                argv.append(_long(param.secondary_opts))
        elif isinstance(value, (list, tuple)):
            argv.extend(f"{flag}={v}" for v in value)
        else:
            argv.append(f"{flag}={value}")
    argv.append("--json")
    return [*argv, "--", *positional]


def run_cli_json(
    argv: Sequence[str], *, gpu_backend: Callable[[], GpuBackend] | None = None
) -> tuple[int, dict[str, Any], list[str]]:
    """Run ``oomkit ARGV`` (which must include ``--json``) in-process.

    ``gpu_backend``: where ``--gpu auto`` reads this machine's GPUs (as
    :func:`oomkit.cli.gpus.use_backend`; ``None``: the CLI's own detection), so the page's
    "My GPUs" and the estimate for them come from one source.

    Returns:
        (exit code, the JSON document it printed, its ``Warning:`` lines).

    Raises:
        CliRejected: click rejected an option value (a usage error).
        OomkitError, ValueError, OSError: as the command raises them (the app maps them).
    """
    from oomkit.cli import cli
    from oomkit.cli.gpus import backend_in_use

    out, err = io.StringIO(), io.StringIO()
    with (
        _LOCK,
        backend_in_use(gpu_backend),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            rv = cli.main(args=list(argv), prog_name="oomkit", standalone_mode=False)
        except click.UsageError as e:
            raise CliRejected(" ".join(e.format_message().split())) from e
        except click.exceptions.Exit as e:
            rv = e.exit_code
        except SystemExit as e:  # a command that calls sys.exit (doctor)
            rv = e.code if isinstance(e.code, int) else 1
    text = out.getvalue()
    if not text.strip():
        raise CliRejected(" ".join(err.getvalue().split()) or "the command printed nothing")
    warnings = [
        line.removeprefix("Warning: ")
        for line in err.getvalue().splitlines()
        if line.startswith("Warning: ")
    ]
    doc = json.loads(text)
    if not isinstance(doc, dict):  # pragma: no cover - every --json prints an object
        raise CliRejected("the command did not print a JSON object")
    return int(rv) if isinstance(rv, int) else 0, doc, warnings

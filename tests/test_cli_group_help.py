"""``oomkit --help`` lists the commands without importing them, and lists them as click would."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from oomkit.cli import _COMMANDS
from oomkit.cli.group import SUMMARIES


@pytest.mark.parametrize("name", sorted(_COMMANDS))
def test_summary_is_the_commands_own_first_paragraph(name: str) -> None:
    module, attr = _COMMANDS[name]
    command = getattr(importlib.import_module(module), attr)
    assert command.short_help is None  # click would use the help's first paragraph
    first = inspect.cleandoc(command.help).split("\n\n")[0]
    assert SUMMARIES[name] == first


def test_every_lazy_command_has_a_summary() -> None:
    assert set(SUMMARIES) == set(_COMMANDS)


def test_help_lists_commands_without_importing_them() -> None:
    code = (
        "import sys, json\nfrom oomkit.cli import main\n"
        "out = sys.stdout; sys.stdout = open('/dev/null', 'w')\n"
        "main(['--help'])\nsys.stdout = out\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('oomkit.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    commands = {module for module, _ in _COMMANDS.values()}
    assert not loaded & commands, loaded & commands
    assert "oomkit.diagnose.doctor" not in loaded


def test_listing_equals_clicks_own_with_every_command_imported() -> None:
    from oomkit.cli.group import cli

    lazy = CliRunner().invoke(cli, ["--help"], terminal_width=100).output
    eager = click.Group(
        name=cli.name, help=cli.help, context_settings=cli.context_settings, params=cli.params
    )
    for name, (module, attr) in _COMMANDS.items():
        eager.add_command(getattr(importlib.import_module(module), attr), name)
    full = CliRunner().invoke(eager, ["--help"], terminal_width=100).output
    assert "Commands:" in lazy
    assert lazy.split("Commands:")[1] == full.split("Commands:")[1]

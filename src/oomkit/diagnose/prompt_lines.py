"""What each prompt the doctor prints promises, and whether a fix's line keeps it (pure).

:func:`oomkit.diagnose.shell_lines.prompt` picks the prompt a line is printed after; this module
holds each kind to it:

* ``add to your command line:`` real flags, each with at most one value: a number, a word the
  flag takes (``on``, ``fp8``, ``q8_0``) or the placeholder ``<N>`` the user fills (the fix's
  text says what N is); never a ``/`` between alternatives or a word of prose (``smaller``);
* ``Python:`` a line ``ast.parse`` accepts;
* ``setting:`` keyword arguments or config overrides (``name=value`` items, a dotted name for
  a Hydra/Detectron override), each value a Python expression or ``true``/``false``;
* ``>>>`` an ``ollama run`` REPL command: ``/set parameter NAME VALUE`` with no trailing
  comment (cmd/interactive.go splits the line on spaces and hands every word after the name
  to the parameter: a ``# Ollama`` tail is a value it rejects);
* ``PS>`` ``$env:NAME="value"; program``;
* ``API request:`` / ``Modelfile:`` Ollama's request ``options`` and ``PARAMETER NAME VALUE``.

A placeholder written in words (``<fewer layers>``, ``<2x current>``, ``<bytes>``) becomes
``<N>`` and the words move into the fix's text (:func:`placeholders`).
"""

from __future__ import annotations

import ast
import re
import shlex

from oomkit.diagnose.script_lines import script_line_ok

__all__ = ["line_ok", "placeholders"]

#: a placeholder in words: ``<fewer layers>``; ``<N>`` (and ``<M>``) are the written form
_PLACEHOLDER = re.compile(r"<(?![NM]>)([^<>]{1,60})>")
#: words that are prose, not a value a flag takes
_PROSE_WORDS = frozenset(
    {"smaller", "larger", "fewer", "more", "less", "lower", "higher", "half", "current", "or",
     "and", "with", "a", "the", "of", "to", "not", "instead"}
)  # fmt: skip
_FLAG = re.compile(r"--?[A-Za-z][\w-]*(?:=\S+)?")
_VALUE = re.compile(r"<[NM]>|[\w.:,;=+\"'-]*\d[\w.:,;=+\"'-]*|[A-Za-z_][\w.=;\"'-]*")
_REPL = re.compile(r"/set parameter [a-z_]+ (?:<N>|\d+(?:\.\d+)?|[\w.]+)")
_POWERSHELL = re.compile(r"(?:\$env:[A-Z_][A-Z0-9_]*=\"[^\"]*\"; )+[\w.-]+(?: \S+)*")
_DOTTED = re.compile(r"([A-Za-z_]\w*)\.(?=[\w.]*=)")
_SETTING_ITEM = re.compile(r"([A-Za-z_][\w.]*)=(.+)")


def placeholders(line: str) -> tuple[str, tuple[str, ...]]:
    """``line`` with each worded placeholder written ``<N>`` (a second one ``<M>``), and the
    words each stood for, in order."""
    said: list[str] = []
    names = iter(("N", "M"))

    def sub(m: re.Match[str]) -> str:
        name = next(names, None)
        if name is None:
            return m.group(0)
        if len(m.group(1).strip()) > 1:  # ``<n>`` says nothing more than ``<N>``
            said.append(f"{name}: {m.group(1).strip()}")
        return f"<{name}>"

    return _PLACEHOLDER.sub(sub, line), tuple(said)


def _code(line: str) -> str:
    return line.split("   #", 1)[0].split("  #", 1)[0].strip()


def _flags_ok(line: str) -> bool:
    try:  # quotes kept: a quoted word is one literal value (``-ot 'blk\\.(0|1)...=CPU'``)
        words = shlex.split(_code(line), posix=False)
    except ValueError:
        return False
    if not words or not words[0].startswith("-"):
        return False
    after_flag = False
    for w in words:
        if _FLAG.fullmatch(w):
            after_flag = "=" not in w
            continue
        quoted = len(w) > 1 and w[0] in "'\"" and w[-1] == w[0]
        if not after_flag or w.lower() in _PROSE_WORDS or not (quoted or _VALUE.fullmatch(w)):
            return False
        after_flag = False
    return True


def _python_ok(line: str) -> bool:
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


def _setting_ok(line: str) -> bool:
    code = _code(line).replace("<N>", "0").replace("<M>", "0")
    undotted = _DOTTED.sub(r"\1_", code)  # a Hydra/Detectron override's dotted key
    try:
        ast.parse(f"f({undotted})")
        return True
    except SyntaxError:
        pass
    for item in code.replace(",", " ").split():
        m = _SETTING_ITEM.fullmatch(item)
        if m is None:
            return False
        value = m.group(2)
        if value.lower() in ("true", "false"):
            continue
        try:
            ast.parse(value, mode="eval")
        except SyntaxError:
            return False
    return True


def line_ok(prompt: str, line: str) -> bool:
    """Whether ``line``, printed after ``prompt``, is what that prompt promises (module doc).
    ``$`` lines are :func:`oomkit.diagnose.shell_lines.is_shell_line`'s; a kind this module does
    holds nothing else (:mod:`oomkit.diagnose.script_lines` holds ``config:``, ``Lua:`` and
    ``JavaScript:``)."""
    kind = prompt.strip()
    scripted = script_line_ok(kind, line)
    if scripted is not None:
        return scripted
    if kind == "add to your command line:":
        return _flags_ok(line)
    if kind == "Python:":
        return _python_ok(line)
    if kind == "setting:":
        return _setting_ok(line)
    if kind == ">>>":
        return _REPL.fullmatch(line) is not None
    if kind == "PS>":
        return _POWERSHELL.fullmatch(line) is not None
    if kind == "Modelfile:":
        return re.fullmatch(r"PARAMETER [a-z_]+ (?:<N>|\S+)", _code(line)) is not None
    if kind == "API request:":
        code = _code(line).replace("<N>", "0")
        return _python_ok("{" + code + "}")
    return True

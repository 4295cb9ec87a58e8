"""The prompt kinds of fix lines that are neither shell, flags nor Python (pure): a config-file
key (``config:``), a Lua (Torch7) statement (``Lua:``) and a TensorFlow.js statement
(``JavaScript:``), and whether a line keeps what its prompt promises
(:func:`oomkit.diagnose.prompt_lines.line_ok` dispatches here).

* ``config:`` one YAML ``key: value`` (``per_device_train_batch_size: 1``, ``vae_tiling: true``,
  a flow mapping ``resources: {limits: {memory: 1Gi}}``) or one JSON member (``"num_gpu": 19``):
  the value is a scalar (number, boolean, null, one word, a quoted string, ``<N>``) or a
  balanced flow collection; a JSON member's value is JSON. A prose tail (``<N> (mlc-chat-config /
  engine config)``) breaks the promise: what the key lives in goes in a ``   #`` comment.
* ``Lua:`` a Torch7 assignment ``name.name = value`` (``cudnn.benchmark = false``), the value a
  Lua literal or name; a line marked ``  -- Lua`` was printed after ``Python:`` before (and
  ``false -- Lua`` parses as Python arithmetic, so the Python check let it through).
* ``JavaScript:`` a TensorFlow.js statement (``tf.tidy(() => model.predict(x))``, ``await
  tf.setBackend('wasm')``): an optional ``await``, a call on a dotted name, balanced brackets
  and quotes. Such a line failed ``ast.parse`` under ``Python:`` and went into the prose.
"""

from __future__ import annotations

import json
import re

__all__ = ["script_kind", "script_line_ok"]

#: the comment that marks a Lua line (Lua comments start with ``--``)
_LUA_TAIL = re.compile(r"\s+--\s*Lua\b.*$")
#: the comment that marks a JavaScript line (``   // TensorFlow.js``; a bare ``//`` is Python's
#: floor division), or what only JavaScript writes (``await``, an arrow function); a bare
#: ``tf.x(...)`` may be TensorFlow's Python
_JS_TAIL = re.compile(r"\s+//\s*(?:TensorFlow\.js|JavaScript)\b.*$")
_JS_ONLY = re.compile(r"await\s|.*=>")
_LUA_LINE = re.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*=\s*"
    r"(?:true|false|nil|-?\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
)
_JS_CALL = re.compile(r"(?:await\s+)?[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\(.*\);?")
_YAML_KEY = re.compile(r"([a-z_][a-z0-9_.]*)(?: config)?: (.+)")
_JSON_KEY = re.compile(r"(\"\w+\"): (.+)")
_SCALAR = re.compile(
    r"<[NM]>|-?\d+(?:\.\d+)?(?:e-?\d+)?|true|false|null|[A-Za-z0-9_][\w.+-]*"
    r"|'[^']*'|\"[^\"]*\""
)
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _code(line: str, tail: re.Pattern[str] | None = None) -> str:
    code = tail.sub("", line) if tail is not None else line
    return code.split("   #", 1)[0].split("  #", 1)[0].strip()


def script_kind(command: str) -> str | None:
    """The prompt for ``command`` when it is a Lua or JavaScript line, else None."""
    if _LUA_TAIL.search(command):
        return "Lua: "
    if _JS_TAIL.search(command) or _JS_ONLY.match(command):
        return "JavaScript: "
    return None


def _balanced(code: str) -> bool:
    stack: list[str] = []
    quote = ""
    for ch in code:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch in "([{":
            stack.append(ch)
        elif ch in _PAIRS and (not stack or stack.pop() != _PAIRS[ch]):
            return False
    return not stack and not quote


def _flow_ok(value: str) -> bool:
    """A YAML flow collection: balanced; each piece between brackets and commas empty, a scalar,
    ``key: scalar`` or ``key:`` (a nested collection follows)."""
    if not _balanced(value):
        return False
    for piece in re.split(r"[{}\[\],]", value):
        key, sep, val = piece.strip().partition(":")
        parts = [key.strip(), val.strip()] if sep else [key.strip()]
        if not all(p == "" or _SCALAR.fullmatch(p) for p in parts):
            return False
    return True


def _config_ok(line: str) -> bool:
    code = _code(line)
    m = _JSON_KEY.fullmatch(code)
    if m is not None:
        try:
            json.loads("{" + m.group(1) + ": " + m.group(2).replace("<N>", "0") + "}")
        except ValueError:
            return False
        return True
    m = _YAML_KEY.fullmatch(code)
    if m is None:
        return False
    value = m.group(2).strip()
    if value[:1] in "{[":
        return _flow_ok(value)
    return _SCALAR.fullmatch(value) is not None


def script_line_ok(kind: str, line: str) -> bool | None:
    """Whether ``line`` keeps what ``kind`` (``config:``, ``Lua:``, ``JavaScript:``) promises;
    None for a kind this module does not hold."""
    if kind == "config:":
        return _config_ok(line)
    if kind == "Lua:":
        return _LUA_LINE.fullmatch(_code(line, _LUA_TAIL)) is not None
    if kind == "JavaScript:":
        code = _code(line, _JS_TAIL)
        return _JS_CALL.fullmatch(code) is not None and _balanced(code)
    return None

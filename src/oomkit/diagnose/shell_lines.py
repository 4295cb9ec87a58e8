"""Which of a fix's commands a shell runs, and the prompt each is printed after.

The doctor prints a fix's command after ``$ `` when it is a shell line, so users paste it. A
line printed so must start with a program (or environment assignments followed by one):

* a bare ``NAME=value`` sets a shell variable that no program sees. ``OLLAMA_*`` variables are
  read by the server when it starts (``envconfig/config.go``: ``ollama serve`` reads them), so
  they become ``OLLAMA_X=1 ollama serve`` (the form the Ollama fixes elsewhere print); any other
  becomes ``export NAME=value`` (the programs started from that shell see it);
* a setting (``batch_size=4``, ``n_ctx=2048``, a Hydra/Detectron override ``SOLVER.X=2``) is a
  keyword or config value, printed after ``setting: ``;
* anything else whose first word is not a program (``update llama.cpp``, ``max_length / image
  size // 2``, ``a CUDA / ROCm build of llama.cpp``) is prose: it moves into the fix's text
  (:func:`shell_ready`), never printed after ``$ ``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oomkit.diagnose.prompt_lines import line_ok, placeholders
from oomkit.diagnose.script_lines import script_kind

if TYPE_CHECKING:
    from oomkit.diagnose.fixes import Fix

__all__ = ["EXECUTABLES", "is_shell_line", "prompt", "shell_ready"]

#: a Python statement, not a shell command: a call on a dotted name (``config.set_...(``), an
#: augmented or spaced assignment (``batch_size //= 2``, ``x = f()``), an import or ``del``, a
#: decorator, an ``assert``, a tuple assignment. A shell line never starts so: its first word is a
#: program (``trtllm-build --x``, ``free -h``) and an environment prefix has no spaces around ``=``.
_PYTHON = re.compile(
    r"(?:import |from [\w.]+ import |del |with |assert |@\w)"
    r"|[A-Za-z_][\w.]*(?:\(|\[| ?(?://|\+|-|\*)?= )|\w+(?:, \w+)+ = "
)
#: a YAML or config-file key (``kv_cache_free_gpu_mem_fraction: 0.9``, ``"num_gpu": 19``,
#: ``"stage3_...": false``)
_CONFIG_KEY = re.compile(r"[a-z_][a-z0-9_.]*(?: config)?: \S|\"\w+\": \S")
#: an environment assignment as a shell reads it: ``NAME=value`` with no spaces
_ENV = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")
#: a keyword argument or config override (``batch_size=4``, ``SOLVER.IMS_PER_BATCH=2``,
#: ``device_map="auto"``): a name with a lower-case letter or a dot, then ``=``
_SETTING = re.compile(r"(?=[\w.]*[a-z.])[A-Za-z_][\w.]*=\S")

#: the programs (and shell builtins) the doctor's shell lines start with; a first word outside
#: this set is prose. ``<command>``-style placeholders name the user's own program.
EXECUTABLES = frozenset(
    {
        "accelerate", "adb", "bm-smi", "cat", "cmake", "conda", "ct2-transformers-converter",
        "df", "dmesg", "docker", "echo", "export", "free", "fuser", "git", "grep", "hf",
        "huggingface-cli", "journalctl", "kill", "kubectl", "llama-bench", "llama-cli",
        "llama-quantize", "llama-server", "lmdeploy", "lms", "ls", "make", "mlc_llm",
        "mlx_lm.convert", "mlx_lm.generate", "mlx_lm.server", "nvidia-smi", "ollama", "omlx",
        "oomkit", "pip", "pip3", "pkill", "python", "python3", "rocm-smi", "set", "sudo",
        "swapon", "sysctl", "systemctl", "tegrastats", "text-generation-launcher", "torchrun",
        "trtexec", "trtllm-build", "tune", "ulimit", "uv", "vllm", "vulkaninfo", "watch",
        "xpu-smi", "yolo",
    }
)  # fmt: skip


def prompt(command: str) -> str:
    """What to print before a fix's command: flags alone are added to the user's own command
    line (not a shell command to run), an Ollama ``/set`` goes in ``ollama run``'s prompt, a
    setting or Python statement is labelled so; ``$ `` only before a shell line."""
    scripted = script_kind(command)  # a Lua or TensorFlow.js line: its own prompt
    if scripted is not None:
        return scripted
    if command.startswith("-"):
        return "add to your command line: "
    if command.startswith("/set "):
        return ">>> "
    if command.startswith("$env:"):
        return "PS> "
    if command.startswith("PARAMETER "):
        return "Modelfile: "
    if command.startswith('"options"'):
        return "API request: "
    if _PYTHON.match(command):
        return "Python: "
    if _CONFIG_KEY.match(command):
        return "config: "
    if _SETTING.match(command) and not _ENV.match(command):
        return "setting: "
    return "$ "


def _words(command: str) -> list[str]:
    return command.split("#", 1)[0].split()


def is_shell_line(command: str) -> bool:
    """Whether ``command``, printed after ``$ ``, starts with a program: environment assignments
    then a program of :data:`EXECUTABLES` (or a ``<placeholder>`` for the user's own)."""
    words = _words(command)
    while words and _ENV.fullmatch(words[0]):
        words = words[1:]
    return bool(words) and (words[0] in EXECUTABLES or words[0].startswith("<"))


def _as_shell(command: str) -> str | None:
    """``command`` as a shell line (bare assignments given their program), or None for prose."""
    if prompt(command) != "$ " or is_shell_line(command):
        return command
    words = _words(command)
    if words and all(_ENV.fullmatch(w) for w in words):
        _, _, comment = command.partition("#")
        tail = f"   #{comment}" if comment else ""
        if all(w.startswith("OLLAMA_") for w in words):
            return f"{' '.join(words)} ollama serve{tail}"
        return f"export {' '.join(words)}{tail}"
    return None


#: the kinds whose ``<`` and ``>`` are code (comparison, an arrow function), never a placeholder
_CODE = ("Python: ", "JavaScript: ")


def _as_prompted(command: str) -> tuple[str | None, tuple[str, ...]]:
    """``command`` as its prompt promises (worded placeholders written ``<N>``, what N stands
    for), or None for prose (:mod:`oomkit.diagnose.prompt_lines`)."""
    kind = prompt(command)
    if kind == "$ ":
        return _as_shell(command), ()
    line, said = (command, ()) if kind in _CODE else placeholders(command)
    if kind == ">>> ":  # the REPL takes no comment: every word after the name is the value
        line = line.split("#", 1)[0].rstrip()
    return (line, said) if line_ok(kind, line) else (None, ())


def _fix_ready(fix: Fix) -> Fix:
    kept: list[str] = []
    prose: list[str] = []
    notes: list[str] = []
    for c in fix.commands:
        line, meant = _as_prompted(c)
        (kept if line is not None else prose).append(line if line is not None else c)
        named = {n.split(":", 1)[0] for n in notes}  # what N stands for is said once
        notes += [n for n in meant if n.split(":", 1)[0] not in named]
    kept = list(dict.fromkeys(kept))  # two forms may have become the same line
    if not prose and not notes and kept == list(fix.commands):
        return fix
    why = fix.why
    if prose or notes:
        said = (f" What to change: {'; '.join(p.strip() for p in prose)}." if prose else "") + (
            f" ({'; '.join(notes)}.)" if notes else ""
        )
        cut = why.find(" (oomkit's ")  # the shared basis stays last (cli/doctor.py prints it once)
        why = f"{why.rstrip()}{said}" if cut < 0 else f"{why[:cut].rstrip()}{said}{why[cut:]}"
    return dataclasses.replace(fix, why=why, commands=tuple(kept))


def shell_ready(fixes: Sequence[Fix]) -> tuple[Fix, ...]:
    """``fixes`` with every ``$`` line a shell line: bare assignments given the program that
    reads them, prose moved into the fix's ``why`` (module docstring)."""
    return tuple(_fix_ready(f) for f in fixes)

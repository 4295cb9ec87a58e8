"""Option values the CLI parses, without click: the click types in ``params`` and the
click-free ``estimate`` path (``estimate_fast``) both convert through these functions."""

from __future__ import annotations

from oomkit.units import is_context_max, parse_count, parse_size

__all__ = [
    "CTX_FLAGS",
    "CTX_MAX",
    "OS_CHOICES",
    "TP_FLAGS",
    "llamacpp_fa_args",
    "parse_context",
    "parse_count",
    "parse_size",
]

#: the context option's spellings on ``estimate``, ``plan`` and ``models --fits``: oomkit's, and
#: the runtimes' own (llama-server ``--ctx-size``, vLLM ``--max-model-len``, SGLang
#: ``--context-length``), so a flag pasted from a serve command means that command's context.
#: One tuple for every command (and the click-free ``estimate_fast`` table, and through the
#: click commands the web API's body keys), so the spellings cannot drift apart.
CTX_FLAGS = ("--ctx", "-c", "--ctx-size", "--max-model-len", "--context-length")
#: the tensor-parallel option's spellings (vLLM ``--tensor-parallel-size``/``-tp``, SGLang
#: ``--tp-size``) on ``estimate`` and ``plan``, as :data:`CTX_FLAGS`
TP_FLAGS = ("--tp", "--tensor-parallel-size", "-tp", "--tp-size")

#: the ``--os`` values of ``estimate``, ``plan``, ``models`` and ``doctor`` (one list for all)
OS_CHOICES = ("linux", "windows", "macos", "wsl")

#: what ``--ctx max`` converts to (no real context is negative)
CTX_MAX = -1


def parse_context(text: str) -> int:
    """A token count (``8192``, ``32k``), or ``max`` -> :data:`CTX_MAX`.

    Raises:
        ValueError: not a count.
    """
    if is_context_max(text):  # names max in its error (units.CONTEXT_FORMS)
        return CTX_MAX
    return parse_count(text)


#: llama-server's ``-fa on|off|auto`` (since b6325) as oomkit's switches; auto is the default
_FA_VALUES = {"on": ("--flash-attn",), "off": ("--no-flash-attn",), "auto": ()}


def llamacpp_fa_args(args: list[str]) -> list[str]:
    """``oomkit estimate`` / ``plan`` / ``models`` argv with llama-server's valued ``-fa
    on|off|auto`` read as the ``--flash-attn``/``--no-flash-attn`` switches, so flags copied
    from a llama-server command (as ``oomkit plan`` prints them) estimate that run instead of
    failing with "Got unexpected extra argument (on)". Other commands and a bare ``-fa`` are
    unchanged.

    >>> llamacpp_fa_args(["estimate", "m", "-fa", "on", "-ngl", "99"])
    ['estimate', 'm', '--flash-attn', '-ngl', '99']
    >>> llamacpp_fa_args(["estimate", "m", "--flash-attn=off"])
    ['estimate', 'm', '--no-flash-attn']
    >>> llamacpp_fa_args(["estimate", "m", "-fa", "auto"])
    ['estimate', 'm']
    >>> llamacpp_fa_args(["estimate", "m", "-fa", "-c", "8k"])
    ['estimate', 'm', '-fa', '-c', '8k']
    """
    if not args or args[0] not in ("estimate", "plan", "models"):
        return args
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        nxt = args[i + 1].lower() if i + 1 < len(args) else ""
        if name in ("-fa", "--flash-attn") and eq and value.lower() in _FA_VALUES:
            out.extend(_FA_VALUES[value.lower()])
        elif a in ("-fa", "--flash-attn") and nxt in _FA_VALUES:
            out.extend(_FA_VALUES[nxt])
            i += 1
        else:
            out.append(a)
        i += 1
    return out

"""Every fix line in the terms of the runtime the log came from (llama.cpp or Ollama; pure).

Ollama runs llama.cpp's code in its own runner, so a rule reading ggml lines may propose
llama-server flags; the runner takes none of them. Ollama's own knobs (ollama ``api/types.go``
``Options``/``Runner``: ``num_ctx``, ``num_batch``, ``num_gpu``, ``main_gpu``; server
environment ``envconfig/config.go``: ``OLLAMA_FLASH_ATTENTION``, ``OLLAMA_KV_CACHE_TYPE``,
``OLLAMA_NUM_PARALLEL``) are what a user of Ollama can change. A plain llama.cpp log has no
``ollama run`` REPL, Modelfile or request ``options`` either. :func:`route` rewrites a fix's
lines for the log's runtime: a llama.cpp flag with an Ollama equivalent becomes it, one without
(``-nkvo``: Ollama's runner always offloads the KV cache with the layers; ``--fit``; ``-ts``) is
dropped, and the other way round. A fix left with no line in the log's terms is dropped. A
bare Ollama parameter (``num_ctx 8192``) is written as the REPL command that sets it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix

__all__ = ["is_ollama_line", "llamacpp_only", "log_family", "route"]

#: llama.cpp's common/arg.cpp flags (short and long forms) the fixes use
_LLAMACPP_FLAGS = frozenset(
    {"-c", "--ctx-size", "-ngl", "--n-gpu-layers", "--gpu-layers", "-ub", "--ubatch-size",
     "-b", "--batch-size", "-fa", "--flash-attn", "-ctk", "--cache-type-k", "-ctv",
     "--cache-type-v", "-nkvo", "--no-kv-offload", "--fit", "-ts", "--tensor-split", "-np",
     "--parallel", "-mg", "--main-gpu", "--no-mmap", "--mlock"}
)  # fmt: skip
_OLLAMA_PREFIXES = ("/set parameter", '"options"', "PARAMETER ", "$env:OLLAMA_", "ollama ")
_VALUE = re.compile(r"\d+|<[NM]>|<[^<>]+>")


def is_ollama_line(line: str) -> bool:
    """A line only Ollama reads: its REPL, Modelfile, request options or server environment."""
    return (
        line.startswith(_OLLAMA_PREFIXES)
        or line.startswith("OLLAMA_")
        or " ollama serve" in line
        or "# Ollama" in line
    )


def _flags(line: str) -> list[str]:
    return [w.split("=", 1)[0] for w in line.split("#", 1)[0].split() if w.startswith("-")]


def llamacpp_only(line: str) -> bool:
    """A command-line line all of whose flags are llama.cpp's (no other engine's)."""
    flags = _flags(line)
    return bool(flags) and line.startswith("-") and all(f in _LLAMACPP_FLAGS for f in flags)


def log_family(e: OomEvent | None, ctx: LogContext, stated: str | None = None) -> str | None:
    """``ollama`` for an Ollama log (its runner's lines or its own errors), ``llama.cpp`` for a
    plain llama.cpp one, else None (other runtimes' lines are left as they are). A runtime the
    user states (``doctor --runtime``) wins over the log's."""
    from oomkit.diagnose.rules_ollama_runner import is_ollama_runner

    if stated is not None:
        said = stated.strip().lower().replace("_", "").replace("-", "").replace(".", "")
        return {"ollama": "ollama", "llamacpp": "llama.cpp"}.get(said)
    runtime = e.runtime if e is not None else None
    if is_ollama_runner(ctx) or runtime == "ollama":
        return "ollama"
    if runtime in ("llama.cpp", "ggml"):
        # ggml lines in an Ollama service's log (its journald ``ollama[PID]:`` prefix or its
        # ``level=INFO source=`` lines) are its runner's (docrt23)
        return "ollama" if ctx.runtime_hint == "ollama" else "llama.cpp"
    return None


def _to_ollama(line: str) -> list[str]:
    """An Ollama form of a llama.cpp flag line, or [] when Ollama has none."""
    words = line.split("#", 1)[0].split()
    out: list[str] = []
    env: list[str] = []
    i = 0
    while i < len(words):
        flag = words[i]
        value = words[i + 1] if i + 1 < len(words) and _VALUE.fullmatch(words[i + 1]) else None
        typed = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else None
        i += 2 if typed is not None else 1
        if flag in ("-c", "--ctx-size") and value:
            out.append(f"/set parameter num_ctx {value}")
        elif flag in ("-ngl", "--n-gpu-layers", "--gpu-layers") and value:
            out.append(f"/set parameter num_gpu {value}")
        elif flag in ("-ub", "--ubatch-size") and value:
            # n_ubatch = num_batch, n_batch = num_batch x num_parallel (ollama llama/llama.go
            # NewContextParams)
            out.append(f"/set parameter num_batch {value}")
        elif flag in ("-mg", "--main-gpu") and value:
            out.append(f"/set parameter main_gpu {value}")
        elif flag in ("-fa", "--flash-attn"):
            env.append("OLLAMA_FLASH_ATTENTION=1")
        elif flag in ("-ctk", "--cache-type-k") and typed:
            env.append(f"OLLAMA_KV_CACHE_TYPE={typed}")
        elif flag in ("-np", "--parallel") and value:
            env.append(f"OLLAMA_NUM_PARALLEL={value}")
    if env:
        out.append(f"{' '.join(dict.fromkeys(env))} ollama serve")
    return out


#: Ollama's REPL parameters and the llama.cpp flag each sets (llama/llama.go NewContextParams,
#: runner options: num_ctx -> n_ctx, num_gpu -> n_gpu_layers, num_batch -> n_batch/n_ubatch)
_AS_FLAG = {"num_ctx": "-c", "num_gpu": "-ngl", "num_batch": "-ub", "main_gpu": "-mg"}
_REPL = re.compile(r"/set parameter (num_ctx|num_gpu|num_batch|main_gpu) (\d+|<[^<>]+>)")


def _to_llamacpp(line: str) -> list[str]:
    """The llama.cpp flag an Ollama REPL line stands for, or [] (no llama.cpp form)."""
    m = _REPL.match(line)
    return [f"{_AS_FLAG[m.group(1)]} {m.group(2)}"] if m else []


#: a bare Ollama parameter (``num_ctx 8192   # Ollama``): api/types.go's option names, which
#: the ``ollama run`` REPL sets as ``/set parameter NAME VALUE`` (cmd/interactive.go)
_BARE_PARAMETER = re.compile(r"(num_ctx|num_gpu|num_batch|main_gpu) (\d+|<[^<>]+>)(?:\s+#.*)?")


def _as_repl(line: str) -> str:
    m = _BARE_PARAMETER.fullmatch(line)
    return f"/set parameter {m.group(1)} {m.group(2)}" if m else line


def _route_fix(fix: Fix, family: str | None) -> Fix | None:
    lines: list[str] = []
    for c in map(_as_repl, fix.commands):
        if family == "ollama" and llamacpp_only(c):
            lines += _to_ollama(c)
        elif family == "llama.cpp" and is_ollama_line(c):
            lines += _to_llamacpp(c)
        else:
            lines.append(c)
    lines = list(dict.fromkeys(lines))
    if fix.commands and not lines:
        return None
    title = _ollama_title(fix.title) if family == "ollama" else fix.title
    if lines == list(fix.commands) and title == fix.title:
        return fix
    return dataclasses.replace(fix, title=title, commands=tuple(lines))


def _ollama_title(title: str) -> str:
    """``Halve the context: -c <N>`` as ``Halve the context: num_ctx <N>`` (docrt23: the title
    named the llama.cpp flag above Ollama's lines)."""
    head, sep, tail = title.partition(": ")
    if not sep or not llamacpp_only(tail):
        return title
    moved = _to_ollama(tail)
    if not moved:
        return title
    said = moved[0].removeprefix("/set parameter ").removesuffix(" ollama serve")
    return f"{head}: {said}"


def route(
    fixes: Sequence[Fix], e: OomEvent | None, ctx: LogContext, stated: str | None = None
) -> tuple[Fix, ...]:
    """``fixes`` with every line in the terms of the log's runtime (module doc)."""
    from oomkit.diagnose.runtime_vocab import engine_family, route_engine

    family = log_family(e, ctx, stated)
    engine = engine_family(e, ctx) if family is None and stated is None else None
    if engine is not None:
        # a serving engine's or ExLlamaV2's log: its own spelling (runtime_vocab.LEVERS)
        kept: list[Fix] = []
        for f in (route_engine(x, engine) for x in fixes):
            # two fixes whose lines became the same (transformers' two quantized loads -> one
            # --quantize flag): the first says it
            if f is not None and not (f.commands and any(f.commands == k.commands for k in kept)):
                kept.append(f)
        return tuple(kept) if kept else tuple(fixes)
    routed = (_route_fix(f, family) for f in fixes)
    return tuple(f for f in routed if f is not None)

"""Ollama errors and its memory log lines (oom-messages.md §3), every era.

Errors: ``model requires more system memory (X) than is available (Y)`` (``llm/server.go``),
``llama runner process has terminated: <err>`` / ``llama-server process has terminated``,
``memory layout cannot be allocated [with num_gpu = N]``, ``insufficient memory - required
allocations``, ``model runner has unexpectedly stopped ...``, ``model request too large for
system``. Log lines: ``msg="offload to cuda" ... memory.required.full="5.6 GiB" ...`` (v0.1.40 -
v0.11, ``llm/memory.go``), ``msg="model weights" device=CUDA0 size="4.1 GiB"`` / ``kv cache`` /
``compute graph`` / ``total memory`` (v0.12+, ``ml/device.go``), ``msg="system memory"``.
Sizes are ``format.HumanBytes2`` (binary).
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import BufferLine, OomEvent
from oomkit.diagnose.scan import admitted
from oomkit.diagnose.sizes import to_int
from oomkit.diagnose.text import Lines, has_any, needles_re, size_of, sz

__all__ = ["parse_ollama"]

_RT = "ollama"
_U = "B|KiB|MiB|GiB|TiB"
_SYSMEM = re.compile(
    r"model requires more system memory(?: \("
    + sz("req", _U)
    + r"\) than is available(?: \("
    + sz("avail", _U)
    + r"\))?| than is currently available|(?=[^\w(]|$))"
)
_TOO_LARGE = re.compile(
    r"model request too large for system\"? requested=\"?"
    + sz("req", _U)
    + r"\"? available=\"?(?:(?P<avail_b>\d{1,20})(?=[\s\"]|$)(?! ?[KMGTPB])|"  # bytes, 0.1.33-0.3
    + sz("avail", _U)
    + ")"
)


def _below(m: re.Match[str]) -> str | None:
    """The contradiction of a "requires more than is available" whose requirement is below
    what is available: Ollama raises it only when the requirement is larger
    (``llm/server.go``: ``systemFreeMemory < systemMemoryRequired``)."""
    if not m.group("req") or not m.group("avail"):
        return None
    req, avail = size_of(m, "req", _RT), size_of(m, "avail", _RT)
    if req is None or avail is None or req >= avail:
        return None
    return (
        f"{m.group('req')} {m.group('req_u')} required is less than the {m.group('avail')} "
        f"{m.group('avail_u')} available (Ollama raises this only when it is more)"
    )


_TERMINATED = re.compile(
    r"(?P<who>llama runner|llama-server) process has terminated(?:: (?P<why>.{0,300}))?"
)
# llm/server.go: errors.New("memory layout cannot be allocated") and fmt.Errorf("memory layout
# cannot be allocated with num_gpu = %v", ...); Go's errors are lower-case, an issue title or a
# sentence capitalises the first word ("Memory layout cannot be allocated"; docpost23)
_LAYOUT = re.compile(r"[Mm]emory layout cannot be allocated(?: with num_gpu = (?P<n>-?\d{1,5}))?")
_KV = re.compile(
    r"(?P<k>(?:memory|layers|projector)\.[A-Za-z_.]{1,40})=(?:\"(?P<q>[^\"]{0,300})\"|(?P<u>\S{1,60}))"
)
_SIZE_ANY = re.compile(sz("v", _U))
_NEW_MEM = re.compile(
    r"msg=\"(?P<what>model weights|kv cache|compute graph|total memory)\""
    r"(?: device=(?P<dev>\S{1,40}))?"
    r" size=\"?" + sz("v", _U)
)
_SYSTEM = re.compile(
    r"msg=\"system memory\" total=\"?" + sz("t", _U) + r"\"? free=\"?" + sz("f", _U)
)

_LAYOUT_KINDS = {"model weights": "model", "kv cache": "KV", "compute graph": "compute"}
_NEEDLES = (
    "system memory",
    "process has terminated",
    "emory layout",
    "insufficient memory",
    "unexpectedly stopped",
    "memory.",
    'msg="model weights"',
    'msg="kv cache"',
    'msg="compute graph"',
    'msg="total memory"',
    "too large for system",
    "runtime OOM detected",
)
_PREFILTER = needles_re(_NEEDLES)
_GPU_OOM_WORDS = (
    "out of memory",
    "cudaMalloc failed",
    "hipMalloc failed",
    "unable to allocate",
    "failed to allocate",
    "allocation failed",
    "insufficient memory",
    "not enough memory",
    "out of device memory",
    "erroroutofmemory",
)


def _sizes(value: str) -> list[int]:
    out = []
    for m in _SIZE_ANY.finditer(value):
        b = size_of(m, "v", _RT)
        if b is not None:
            out.append(b)
    return out


_OFFLOAD_KEYS = {
    "memory.required.full": "ollama_required_full_bytes",
    "memory.required.partial": "ollama_required_partial_bytes",
    "memory.required.kv": "ollama_required_kv_bytes",
    "memory.graph.full": "ollama_graph_full_bytes",
    "memory.graph.partial": "ollama_graph_partial_bytes",
    "memory.weights.total": "ollama_weights_total_bytes",
    "memory.weights.repeating": "ollama_weights_repeating_bytes",
}


def _offload_line(line: str, facts: dict[str, Any]) -> None:
    for m in _KV.finditer(line):
        key = m.group("k")
        value = m.group("q") if m.group("q") is not None else m.group("u") or ""
        if key == "memory.available":
            facts["ollama_available_bytes"] = tuple(_sizes(value))
        elif key in _OFFLOAD_KEYS:
            sizes = _sizes(value)
            if sizes:
                facts[_OFFLOAD_KEYS[key]] = sizes[0]
        elif key in {"layers.model", "layers.offload"} and value.isdigit() and len(value) < 7:
            facts["ollama_" + key.replace(".", "_")] = int(value)
        elif key == "layers.split" and value:
            facts["tensor_split"] = value[:60]


def _event(kind: str, fmt: str, line: str, line_no: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=_RT, kind=kind, format=fmt, line=line_no, text=line[:600], **kw)


def parse_ollama(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """Find Ollama OOM errors and its memory estimate lines in ``lines``.

    Returns:
        Events and context facts (``ollama_*`` estimates, ``system_total_bytes``...). An error
        forwarded from the runner (``... terminated: cudaMalloc failed: out of memory``) keeps the
        runner's text in ``detail``. Never raises on arbitrary text.
    """
    events: list[OomEvent] = []
    facts: dict[str, Any] = {}
    for i in admitted(lines, _PREFILTER):
        line = lines.cleaned(i)
        n = lines.number[i]
        if "system memory" in line and "requires more" in line:
            m = _SYSMEM.search(line)
            if m is not None:
                events.append(
                    _event(
                        "host_oom",
                        "ollama_system_memory",
                        line,
                        n,
                        requested_bytes=size_of(m, "req", _RT) if m.group("req") else None,
                        free_bytes=size_of(m, "avail", _RT) if m.group("avail") else None,
                        stage="load",
                        inconsistent=_below(m),
                    )
                )
                continue
        if "too large for system" in line:
            m = _TOO_LARGE.search(line)
            if m is not None:
                events.append(
                    _event(
                        "host_oom",
                        "ollama_request_too_large",
                        line,
                        n,
                        requested_bytes=size_of(m, "req", _RT),
                        free_bytes=size_of(m, "avail", _RT) or to_int(m.group("avail_b") or ""),
                        stage="load",
                        inconsistent=_below(m),
                    )
                )
                continue
        if "process has terminated" in line:
            m = _TERMINATED.search(line)
            if m is not None:
                why = (m.group("why") or "").strip()
                if why.endswith('"') and line[: m.start()].endswith('"'):
                    why = why[:-1].rstrip()  # the closing quote of a logfmt value (error="...")
                low = why.lower()
                if "signal: killed" in low or "exit status 137" in low:
                    kind = "killed"
                elif has_any(low, _GPU_OOM_WORDS):
                    kind = "runner_oom"
                else:
                    kind = "runner_terminated"
                events.append(
                    _event(kind, "ollama_runner_terminated", line, n, detail=why[:300] or None)
                )
                facts["ollama_runner"] = True  # Ollama chose this runner's GPU layer count
                continue
        if "emory layout cannot be allocated" in line:
            m = _LAYOUT.search(line)
            num = m.group("n") if m else None
            events.append(
                _event(
                    "layout_oom",
                    "ollama_memory_layout",
                    line,
                    n,
                    num_gpu=int(num) if num else None,
                )
            )
            continue
        if "insufficient memory - required allocations" in line:
            events.append(_event("layout_oom", "ollama_insufficient_memory", line, n))
            continue
        if "runtime OOM detected" in line:
            # v0.30+ llm/llama_server.go: the runner hit an OOM mid-request
            events.append(_event("runner_oom", "ollama_runtime_oom", line, n, stage="runtime"))
            continue
        if "unexpectedly stopped" in line and (
            "resource limitations" in line or "model runner has" in line
        ):
            # a hard-wrapped paste splits the sentence after "resource"
            events.append(_event("runner_terminated", "ollama_runner_stopped", line, n))
            continue
        if "memory." in line and "=" in line:
            _offload_line(line, facts)
        if 'msg="' in line:
            m2 = _NEW_MEM.search(line)
            if m2 is not None:
                bkind = _LAYOUT_KINDS.get(m2.group("what"))
                size = size_of(m2, "v", _RT)
                if bkind is not None and size is not None:
                    facts.setdefault("buffers", []).append(
                        BufferLine(kind=bkind, name=m2.group("dev") or "?", size_bytes=size, line=n)
                    )
            m3 = _SYSTEM.search(line)
            if m3 is not None:
                facts["system_total_bytes"] = size_of(m3, "t", _RT)
                facts["system_free_bytes"] = size_of(m3, "f", _RT)
    return events, facts

"""An Ollama runner's llama.cpp allocation failure, read with the plan Ollama logged before it.

Ollama's llama runner (v0.1.40 - v0.11) logs its own estimate before it starts llama.cpp
(``llm/memory.go``, ``EstimateGPULayers``): ``msg="offload to cuda" layers.model=49
layers.offload=30 memory.available="[7.0 GiB]" memory.required.partial="6.9 GiB"
memory.required.kv=... memory.weights.repeating=... memory.graph.partial=...``, and passes
``--n-gpu-layers 30`` to the runner (``llm/server.go``). ``memory.available`` is the free memory
the GPU library reported; ``layers.model`` is the block count + 1 (the output layer), so the
blocks are ``layers.model - 1`` and ``memory.weights.repeating`` / ``memory.required.kv`` split
over them are what one more or one fewer GPU layer costs in Ollama's own terms.

When the runner's allocation fails anyway, Ollama's estimate was short, and the runner's own
buffer lines bound the free memory it really had: at least what llama.cpp had allocated on that
device before the failure, less than that plus the failed request. The fixes are Ollama's, in
its own syntax (never a llama.cpp flag for an Ollama user):

* fewer GPU layers: ``num_gpu N`` (``/set parameter num_gpu N``, a Modelfile's ``PARAMETER
  num_gpu N``, the API's ``options.num_gpu``), N the most Ollama-sized blocks that fit in the
  lower bound with ``memory.graph.partial`` and the doctor's headroom
  (:data:`~oomkit.diagnose.model_fixes.HEADROOM_BYTES`);
* ``OLLAMA_GPU_OVERHEAD``: bytes the scheduler keeps free on each GPU (``envconfig.GpuOverhead``,
  subtracted in ``memory.go`` before it places layers), sized to what Ollama counted above the
  lower bound;
* the context and KV-cache fixes as ``num_ctx`` / ``OLLAMA_*`` (the runner's ``n_ctx`` is
  ``num_ctx x num_parallel``); ``-nkvo`` is dropped (Ollama has no option for it).

Environment variables are written for the shell of the log's OS (PowerShell on Windows,
:func:`oomkit.planner.commands.ollama_serve_line`).
"""

from __future__ import annotations

import dataclasses
import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, size_text
from oomkit.diagnose.model_fixes import HEADROOM_BYTES
from oomkit.units import GiB, MiB

__all__ = ["is_ollama_runner", "ollama_runner_reading"]

#: ``format.HumanBytes2`` prints one decimal: a logged "7.0 GiB" may be up to 0.05 GiB more
_HUMAN_BYTES_SLACK = GiB // 20
_OVERHEAD_STEP = 256 * MiB
#: the planner's lever order (model_fixes_llamacpp._ORDER): fewer GPU layers
_ORDER_NGL = 400
_CTX_FLAG = re.compile(r"-c (\d{1,9})\b")


def is_ollama_runner(ctx: LogContext) -> bool:
    """The llama.cpp lines are an Ollama runner's (its offload line or forwarded error)."""
    return bool(
        ctx.ollama_runner or ctx.ollama_available_bytes or ctx.ollama_layers_model is not None
    )


def _serve(env: list[str], ctx: LogContext) -> str:
    from oomkit.planner.commands import ollama_serve_line

    return ollama_serve_line(env, ctx.host_os)


def _num_ctx(n_ctx: int, ctx: LogContext) -> int:
    return max(1, n_ctx // (ctx.n_seq or 1))  # the runner's n_ctx is num_ctx x num_parallel


def _as_ollama(f: Fix, ctx: LogContext) -> Fix | None:
    """``f`` in Ollama's terms, or None when it has no Ollama form."""
    if "-nkvo" in f.title:
        return None
    cmds: list[str] = []
    for c in f.commands:
        c = c.split("   # Ollama")[0]
        if c.startswith(("/set parameter", '"options"', "PARAMETER ")):
            cmds.append(c)
        elif c.startswith("OLLAMA_") and c.endswith(" ollama serve"):
            cmds.append(_serve(c.removesuffix(" ollama serve").split(), ctx))
        elif c == "free -h":  # host RAM: the same check under Ollama
            cmds.append(c)
        elif c == "remove --no-mmap / --mlock":
            # Ollama's use_mmap option (api/types.go Options.UseMMap) is llama.cpp's --no-mmap
            cmds.append('"options": {"use_mmap": true}')
        elif _CTX_FLAG.fullmatch(c):
            n = _num_ctx(int(c[3:]), ctx)
            cmds += [f"/set parameter num_ctx {n}", f'"options": {{"num_ctx": {n}}}']
    if not cmds:
        return None

    def sub(text: str) -> str:
        return _CTX_FLAG.sub(lambda m: f"num_ctx {_num_ctx(int(m.group(1)), ctx)}", text)

    return dataclasses.replace(
        f, title=sub(f.title), why=sub(f.why), commands=tuple(dict.fromkeys(cmds))
    )


def _plan_fixes(e: OomEvent, ctx: LogContext, low: int) -> list[Fix]:
    """num_gpu and OLLAMA_GPU_OVERHEAD sized from Ollama's plan and the runner's lower bound."""
    out: list[Fix] = []
    offload, blocks = ctx.ollama_layers_offload or 0, (ctx.ollama_layers_model or 0) - 1
    if offload < 1 or blocks < 1:
        return out
    # the advice puts fewer than layers.model layers on the GPU, a partial offload: llm/memory.go
    # sizes that with memory.graph.partial (the full-offload graph only when no partial is
    # printed), whatever Ollama's own plan was
    graph = (ctx.ollama_graph_partial_bytes or ctx.ollama_graph_full_bytes) or 0
    repeating = ctx.ollama_weights_repeating_bytes
    # a layer's weights from the model buffer(s) alone: ``low`` also holds the KV buffer, which
    # per_kv counts (memory.required.kv / blocks); counting it in per_w too charged it twice
    gpu = f"CUDA{e.device}" if e.device is not None else e.buffer_name
    weights = sum(
        b.size_bytes for b in ctx.buffers if b.name == gpu and b.kind == "model" and b.line < e.line
    )
    per_w = max(repeating // blocks if repeating else 0, weights // offload)
    per_kv = (ctx.ollama_required_kv_bytes or 0) // blocks
    per = per_w + per_kv
    n = min(offload - 1, (low - graph - HEADROOM_BYTES) // per) if per else -1
    if n >= 1:
        w_src = (
            f"memory.weights.repeating {size_text(repeating)} / {blocks} blocks"
            if repeating and repeating // blocks >= weights // offload
            else f"the runner's {size_text(weights)} model buffer / {offload} layers"
        )
        cmds = (
            f"/set parameter num_gpu {n}",
            f"PARAMETER num_gpu {n}",
            f'"options": {{"num_gpu": {n}}}',
        )
        out.append(
            Fix(
                title=f"Put fewer layers on the GPU: num_gpu {n}",
                why=f"one layer costs {size_text(per_w)} of weights ({w_src}) and "
                f"{size_text(per_kv)} of KV cache (memory.required.kv / {blocks}); {n} layers, "
                f"Ollama's {size_text(graph)} "
                f"{'partial' if ctx.ollama_graph_partial_bytes else 'full'}-offload graph "
                f"and {size_text(HEADROOM_BYTES)} headroom fit in the {size_text(low)} the GPU is "
                f"known to have had (the runner allocated that much there); Ollama chose "
                f"{offload}.",
                commands=cmds,
                expected_saving_bytes=(offload - n) * per,
                fits=True,
                order=_ORDER_NGL,
            )
        )
    dev = e.device or 0
    avail = ctx.ollama_available_bytes[dev] if dev < len(ctx.ollama_available_bytes) else None
    if avail is not None and avail + _HUMAN_BYTES_SLACK > low:
        over = avail + _HUMAN_BYTES_SLACK - low
        reserve = -(-over // _OVERHEAD_STEP) * _OVERHEAD_STEP
        out.append(
            Fix(
                title=f"Reserve what Ollama over-counted: OLLAMA_GPU_OVERHEAD={reserve}",
                why=f"Ollama planned with memory.available {size_text(avail)}, and the GPU is "
                f"only known to have had {size_text(low)}; OLLAMA_GPU_OVERHEAD (bytes) is "
                f"subtracted from each GPU's free memory before Ollama places layers, so "
                f"{size_text(reserve)} (rounded up; memory.available is printed to 0.1 GiB) "
                "makes its own plan put fewer layers there, for every model.",
                commands=(_serve([f"OLLAMA_GPU_OVERHEAD={reserve}"], ctx),),
                expected_saving_bytes=None,
            )
        )
    return out


def ollama_runner_reading(e: OomEvent, ctx: LogContext, base: Analysis) -> Analysis:
    """``base`` (the llama.cpp reading of ``e``) for an Ollama user: the fixes in Ollama's own
    terms, and, when Ollama logged its plan, what the runner's allocation says about it."""
    if e.runtime != "llama.cpp" or not is_ollama_runner(ctx):
        return base
    fixes = [g for g in map(lambda f: _as_ollama(f, ctx), base.fixes) if g is not None]
    dev = f"CUDA{e.device}" if e.device is not None else e.buffer_name
    low = sum(b.size_bytes for b in ctx.buffers if b.name == dev and b.line < e.line)
    req = e.requested_bytes
    offload, total = ctx.ollama_layers_offload, ctx.ollama_layers_model
    i = e.device or 0
    avail = ctx.ollama_available_bytes[i] if i < len(ctx.ollama_available_bytes) else None
    if not (low and req and offload and avail):
        return dataclasses.replace(base, fixes=tuple(fixes))
    need = ctx.ollama_required_partial_bytes or ctx.ollama_required_full_bytes
    which = "partial" if ctx.ollama_required_partial_bytes else "full"
    high = low + req
    expl = (
        f" Ollama planned {offload}"
        + (f" of {total}" if total else "")
        + " layers on the GPU from its own estimate ("
        + (f"memory.required.{which} {size_text(need)} within " if need else "")
        + f"memory.available {size_text(avail)}); the runner had {size_text(low)} there when "
        f"this {size_text(req)} allocation failed, so the GPU had less than {size_text(high)} "
        "free"
    )
    short = high < avail
    expl += (
        f", {size_text(avail - high)} or more below what Ollama counted: its estimate was short, "
        "so it put more layers on the GPU than fit."
        if short
        else "."
    )
    fixes = _plan_fixes(e, ctx, low) + fixes
    partial = total is not None and offload < total
    return dataclasses.replace(
        base,
        cause="model_too_large" if short and partial else base.cause,
        confidence=0.6 if short and partial else base.confidence,
        explanation=base.explanation + expl,
        fixes=tuple(fixes),
    )

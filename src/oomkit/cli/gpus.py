"""``oomkit gpus``: what is on the GPUs now (memory, processes, stragglers), or the catalog.

Where the live data comes from can be swapped with :func:`use_backend` (tests replay captured
outputs through a fake backend this way; an embedding app can hand in its own).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import click

from oomkit.cli.output import (
    EXIT_ERROR,
    EXIT_NEGATIVE,
    print_error,
    print_hint,
    print_json,
    print_warning,
)
from oomkit.cli.params import COUNT
from oomkit.errors import OomkitError
from oomkit.hardware.live import GpuBackend, GpuStatus, default_backend, detect_gpus
from oomkit.hardware.procinfo import ProcReader
from oomkit.units import format_bytes

__all__ = ["BackendFactory", "backend_in_use", "gpus_command", "live_snapshot", "use_backend"]

#: Builds the backend ``oomkit gpus`` reads; raises :class:`HardwareError` when there is none.
BackendFactory = Callable[[], GpuBackend]
_log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Source:
    """Where `oomkit gpus` reads devices and processes from (tests swap it)."""

    factory: BackendFactory
    procs: ProcReader | None


_SOURCE = _Source(factory=default_backend, procs=None)


def use_backend(factory: BackendFactory | None, procs: ProcReader | None = None) -> None:
    """Make ``oomkit gpus`` read from ``factory()`` and ``procs``; ``None`` restores the live ones.

    Args:
        factory: returns a :class:`~oomkit.hardware.live.GpuBackend`, or ``None`` for
            :func:`~oomkit.hardware.live.default_backend` (NVML, nvidia-smi, rocm-smi, Apple).
        procs: the process table reader; ``None`` for the live ``/proc``.
    """
    _SOURCE.factory = factory if factory is not None else default_backend
    _SOURCE.procs = procs


@contextlib.contextmanager
def backend_in_use(factory: BackendFactory | None) -> Iterator[None]:
    """:func:`use_backend` for a ``with`` block, then the source that was in use before
    (``oomkit serve`` runs ``--gpu auto`` on the GPUs its page lists); ``None``: unchanged."""
    before = (_SOURCE.factory, _SOURCE.procs)
    if factory is not None:
        _SOURCE.factory = factory
    try:
        yield
    finally:
        _SOURCE.factory, _SOURCE.procs = before


def _age(age_s: float | None) -> str:
    if age_s is None:
        return "-"
    if age_s >= 86400:
        return f"{age_s / 86400:.1f}d"
    if age_s >= 3600:
        return f"{age_s / 3600:.1f}h"
    return f"{age_s / 60:.0f}m"


def _state(alive: bool | None, zombie: bool | None) -> str:
    if alive is None:
        return "unseen"
    return "zombie" if zombie else "alive"


def _render(gpus: tuple[GpuStatus, ...]) -> list[str]:
    lines: list[str] = []
    for g in gpus:
        util = "n/a" if g.utilization_gpu_percent is None else f"{g.utilization_gpu_percent}%"
        lines.append(
            f"GPU {g.index}  {g.name}  used {format_bytes(g.memory_used_bytes)} / "
            f"{format_bytes(g.memory_total_bytes)}  free {format_bytes(g.memory_free_bytes)}"
            f"  util {util}"
        )
        for m in g.mig_slices:
            mem = (
                f"{format_bytes(m.memory_used_bytes)} / {format_bytes(m.memory_total_bytes)}"
                if m.memory_used_bytes is not None and m.memory_total_bytes is not None
                else "memory n/a"
            )
            gi = "-" if m.gpu_instance_id is None else str(m.gpu_instance_id)
            lines.append(f"  MIG {m.mig_index} {m.name or ''} GI {gi}  {mem}  {m.uuid or ''}")
        if not g.processes:
            lines.append("  no processes")
            continue
        lines.append(f"  {'PID':>8}  {'USER':<10} {'MEMORY':>11} {'AGE':>6}  {'STATE':<7} COMMAND")
        for p in g.processes:
            mem = "n/a" if p.used_bytes is None else format_bytes(p.used_bytes)
            cmd = (p.command or "?")[:60]
            lines.append(
                f"  {p.pid:>8}  {(p.user or '?')[:10]:<10} {mem:>11} {_age(p.age_s):>6}  "
                f"{_state(p.alive, p.zombie):<7} {cmd}"
            )
            if p.straggler_reason:
                lines.append(f"  {'':>8}  ! straggler: {p.straggler_reason}")
                if p.kill_command:
                    lines.append(f"  {'':>8}    end it: {p.kill_command}")
    return lines


def _catalog(query: str | None, as_json: bool) -> None:
    from oomkit.hardware.catalog import search_gpus

    rows = search_gpus(query)
    if as_json:
        print_json({"schema_version": 1, "gpus": [r.to_dict() for r in rows]})
    else:
        for r in rows:
            tflops = "-" if r.bf16_tflops is None else f"{r.bf16_tflops:g}"
            click.echo(
                f"{r.key:<24} {format_bytes(r.memory_bytes):>11}  "
                f"{r.bandwidth_bytes_per_s / 1e12:5.2f} TB/s  {tflops:>7} bf16 TFLOPS  {r.name}"
            )
    if not rows:
        print_warning(f"No GPU in the catalog matches '{query}'.")
        raise click.exceptions.Exit(EXIT_NEGATIVE)


#: how ``gpus --for`` orders its rows (:func:`oomkit.planner.reverse.gpus_for`'s sort)
GPUS_FOR_ORDER = (
    "least total GPU memory first (count x memory per GPU: the smallest purchase that runs it), "
    "then faster decode"
)


#: the runtimes whose ``gpus --for`` rows may use serving levers (planner.reverse._capped)
_SERVING = ("vllm", "sglang")


def _gpus_for(
    model: str,
    *,
    ctx: int | None,
    runtime: str,
    quant: str | None,
    tps: float | None,
    as_json: bool,
) -> None:
    """``gpus --for MODEL``: which catalog GPUs (and how many) run it on the GPUs alone."""
    from oomkit.estimate.registry import normalize_runtime
    from oomkit.planner.reverse import GPUS_FOR_LEVERS, gpus_for

    canonical = normalize_runtime(runtime)
    fits = gpus_for(model, runtime=canonical, ctx=ctx, quant=quant, min_tps=tps)
    contexts = sorted({c for f in fits if isinstance(c := f.estimate.settings.get("ctx"), int)})
    if as_json:
        doc: dict[str, object] = {"schema_version": 1, "model": model}
        doc["runtime"] = canonical
        doc["ctx"] = contexts[0] if len(contexts) == 1 else None
        doc["order"] = GPUS_FOR_ORDER
        print_json({**doc, "gpus": [f.to_dict() for f in fits]})
    else:
        if fits:
            # the context and runtime every row was sized at, and why the rows come in this
            # order (planner.reverse.gpus_for): `estimate` defaults differ (-c 0 on llama.cpp)
            where = "ctx " + "/".join(map(str, contexts))
            default = "" if ctx is not None else " (the default; --ctx N for another)"
            levers = f" Levers tried: {GPUS_FOR_LEVERS}." if canonical in _SERVING else ""
            click.echo(
                f"{model} on {canonical}, {where}{default}, every layer on the GPUs. "
                f"Order: {GPUS_FOR_ORDER}.{levers}",
                err=True,
            )
        for f in fits:
            speed = f.to_dict()["decode_tokens_per_s"]
            tok = f"~{speed:5.0f} tok/s" if speed else "          "
            needs = f"  with {' '.join(f.levers)}" if f.levers else ""
            click.echo(
                f"{f.count} x {f.gpu_key:<24} {f.quant:<8} {tok}  "
                f"{format_bytes(f.free_bytes):>11} free after 1 GiB headroom  {f.gpu_name}{needs}"
            )
        click.echo(f"{len(fits)} GPU model(s) run {model}", err=True)
        if ctx is None and normalize_runtime(runtime) == "ollama":
            from oomkit.estimate.ollama_num_ctx import OLLAMA_TIERS_NOTE

            click.echo(f"num_ctx not given: {OLLAMA_TIERS_NOTE}", err=True)
    if not fits:
        # with --tps the GPUs that hold the model but decode slower were dropped: say so, not
        # "no GPU runs it" (every card from a 12 GB one up runs an 8B model)
        fast = f" at {tps:g}+ tok/s decode (drop --tps to list the slower ones)" if tps else ""
        print_warning(
            f"No catalog GPU (up to 8 of one model) runs {model} entirely on the GPUs{fast}."
        )
        raise click.exceptions.Exit(EXIT_NEGATIVE)


def _snapshot() -> tuple[GpuStatus, ...]:
    return detect_gpus(_SOURCE.factory(), procs=_SOURCE.procs)


def live_snapshot() -> tuple[GpuBackend, tuple[GpuStatus, ...]]:
    """The backend :func:`use_backend` chose and what it sees now (``--gpu auto`` uses this).

    Raises:
        HardwareError: no backend works here.
    """
    backend = _SOURCE.factory()
    return backend, detect_gpus(backend, procs=_SOURCE.procs)


#: longest --watch interval (one day); inf/nan would sleep forever or fail inside time.sleep
_MAX_WATCH_S = 86_400.0
#: shortest --watch interval: 0 (or any tiny value) re-queries every GPU in a busy loop, one
#: core at 100% and a terminal cleared faster than it can be read
_MIN_WATCH_S = 0.1


def _check_watch(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    import math

    if value is not None and (
        not math.isfinite(value) or not _MIN_WATCH_S <= value <= _MAX_WATCH_S
    ):
        raise click.BadParameter(
            f"must be a number of seconds in [{_MIN_WATCH_S:g}, {_MAX_WATCH_S:g}], got {value}",
            ctx=ctx,
            param=param,
        )
    return value


@click.command("gpus")
@click.argument("query", required=False)
@click.option("--catalog", is_flag=True, help="List the GPU catalog (QUERY filters it).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")
@click.option(
    "--watch",
    type=float,
    callback=_check_watch,
    is_flag=False,
    flag_value=2.0,
    default=None,
    metavar="[SECONDS]",
    help="Refresh every SECONDS (default 2); with --json, one document per refresh.",
)
@click.option("--count", type=click.IntRange(min=1), default=None, hidden=True)
@click.option(
    "--for", "for_model", metavar="MODEL", help="Catalog GPUs (and how many) that run MODEL"
)
@click.option(
    "--ctx",
    "-c",
    type=COUNT,
    help="With --for: context to fit (default 4096; Ollama: its own default, from 0.15.5 by "
    "the GPUs' total VRAM)",
)
@click.option("--runtime", "-r", default="llama.cpp", show_default=True, help="With --for")
@click.option("--quant", "-q", help="With --for: weight quant (default: the runtime's default)")
@click.option("--tps", type=click.FloatRange(min=0), help="With --for: at least N decode tok/s")
def gpus_command(
    query: str | None,
    catalog: bool,
    as_json: bool,
    watch: float | None,
    count: int | None,
    for_model: str | None,
    ctx: int | None,
    runtime: str,
    quant: str | None,
    tps: float | None,
) -> None:
    """Show every GPU: memory, utilization, MIG slices and the processes holding memory.

    Stragglers (zombies, orphaned workers, idle Jupyter kernels, long-idle processes) are
    flagged with the command that ends them. With --catalog, list known GPU models instead.

    \b
    Exit codes: 0 ok, 1 no GPU could be queried, 3 no catalog row matches QUERY.
    """
    if for_model is not None:
        _gpus_for(for_model, ctx=ctx, runtime=runtime, quant=quant, tps=tps, as_json=as_json)
        return
    from oomkit.cli.models import reject_without

    reject_without(click.get_current_context(), ("ctx", "runtime", "quant", "tps"), "--for MODEL")
    if catalog or query:
        _catalog(query, as_json)
        return
    refreshes = 0
    while True:
        try:
            gpus = _snapshot()
            if not gpus:
                raise OomkitError("GPU detection found no devices.")
        except OomkitError as exc:
            _log.debug("gpu detection failed", exc_info=True)
            if as_json:  # a script reading stdout still gets a JSON document
                print_json({"schema_version": 1, "gpus": [], "error": str(exc).splitlines()[0]})
            print_error(str(exc).splitlines()[0])
            print_hint("list GPU models without a GPU: oomkit gpus --catalog")
            raise click.exceptions.Exit(EXIT_ERROR) from exc
        if as_json:
            print_json({"schema_version": 1, "gpus": [g.to_dict() for g in gpus]})
        else:
            if watch is not None and sys.stdout.isatty():
                click.clear()
            click.echo("\n".join(_render(gpus)))
            kills = [p.kill_command for g in gpus for p in g.processes if p.kill_command]
            if kills and watch is None:
                print_hint("end the stragglers with: " + "; ".join(kills))
        refreshes += 1
        if watch is None or (count is not None and refreshes >= count):
            return
        time.sleep(watch)

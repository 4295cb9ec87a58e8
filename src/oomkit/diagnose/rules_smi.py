"""What a pasted ``nvidia-smi`` table adds to a diagnosis the message alone could not decide.

An OOM message without numbers (``CUDA error: out of memory``, a bare ``CUDA out of memory``, a
runner that exited) cannot say who filled the GPU. A table pasted beside it can: the driver
reports the memory in use on each GPU and the processes holding it, whoever they are. When the
message left the cause ``unknown`` and the table shows the failing GPU at least half full, the
memory held when the table was taken is the evidence: other processes, if this job was not running
then or is not among the PIDs listed; this job's own memory otherwise. The diagnosis says so, at a
confidence that reflects that the table's timing is not known (0.35; 0.4 when two or more compute
processes share that GPU, which one job rarely does on its own).

Messages that state their own numbers are read by their runtime's rules; the table does not
override them.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, size_text

__all__ = ["with_smi_table"]

_FULL_SHARE = 0.5


def with_smi_table(result: Analysis, ctx: LogContext, primary: OomEvent) -> Analysis:
    """``result`` unchanged, or ``other_process_holding_memory`` read from an nvidia-smi table."""
    if result.cause != "unknown" or not ctx.smi_memory:
        return result
    # the message's device; else the table's only GPU, or its only GPU at least half full
    full = {g for g, u, t in ctx.smi_memory if t and u >= _FULL_SHARE * t}
    gpus = {g for g, _, _ in ctx.smi_memory}
    dev = primary.device
    if dev is None:
        dev = min(gpus) if len(gpus) == 1 else (min(full) if len(full) == 1 else None)
    row = next(((u, t) for g, u, t in ctx.smi_memory if g == dev), None)
    if row is None:
        return result
    used, total = row
    if not total or used < _FULL_SHARE * total:
        return result
    procs = [(pid, name, b) for g, pid, name, b in ctx.smi_processes if g == dev]
    listed = ", ".join(f"PID {pid} ({name}) {size_text(b)}" for pid, name, b in procs[:6])
    expl = (
        f"{result.explanation} The nvidia-smi table in the paste shows {size_text(used)} of "
        f"{size_text(total)} in use on GPU {dev}"
        + (f", held by {listed}" if procs else ", with no process listed (another container)")
        + ". Whether this job was running when the table was taken decides: if not, or if its "
        "PID is not among them, that memory belongs to other processes and is the cause; if it "
        "is this job's own PID, the memory is this job's (the model, the batch or an "
        "accumulation)."
    )
    fixes = [
        Fix(
            title=f"Stop or move process {pid}",
            why=f"nvidia-smi lists PID {pid} ({name}) holding {size_text(b)} of GPU {dev}.",
            commands=(f"kill {pid}   # if it is not this job",),
            expected_saving_bytes=b,
        )
        for pid, name, b in procs[:4]
    ]
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.4 if len(procs) >= 2 else 0.35,
        explanation=expl,
        fixes=(*fixes, *result.fixes),
    )

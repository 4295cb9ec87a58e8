"""Processes the PyTorch message lists that are the job's own workers, not someone else's.

PyTorch's allocator message lists every process NVML reports on the failing GPU
(``Process 4042162 has 49.78 GiB memory in use``). Read as a whole they are "other processes"
(rule T4, :func:`oomkit.diagnose.rules_torch_describe._others`), but their PIDs say more. A
launcher (torchrun, ``multiprocessing``, a serving engine's workers, gunicorn) forks its
workers within milliseconds, so the kernel hands them consecutive PIDs; unrelated jobs of other
users started at other times sit thousands of PIDs apart. Two or more listed processes whose
PIDs are within :data:`SIBLING_PID_GAP` of each other (or of this process's own, when the
message names it) are siblings: one job whose workers all put their memory on this GPU.

On GPU 0, the device every CUDA process uses until it selects another, that is the signature
of workers that never moved to their own device (no ``torch.cuda.set_device(local_rank)``, a
``CUDA_VISIBLE_DEVICES`` set after CUDA was initialised in the process, engines started
without a device each): ``multi_gpu_imbalance``, at 0.5 rather than the 0.85 of strangers'
processes, because on a machine with a single GPU the same listing means the job starts more
copies than the card holds (fewer workers is then the fix): the explanation names both and
what decides (``nvidia-smi``: the other GPUs idle or absent).
"""

from __future__ import annotations

import itertools

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent, OtherProcess
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["SIBLING_PID_GAP", "sibling_workers", "siblings_on_first_gpu"]

#: PIDs at most this far apart were forked together (a launcher's workers start back to back)
SIBLING_PID_GAP = 8


def sibling_workers(e: OomEvent) -> tuple[OtherProcess, ...]:
    """The listed processes whose PID is within :data:`SIBLING_PID_GAP` of another listed one
    (or of this process's own PID, when the message names it), in the message's order."""
    pids = sorted({p.pid for p in e.other_processes} | ({e.self_pid} if e.self_pid else set()))
    close = {pid for a, b in itertools.pairwise(pids) if b - a <= SIBLING_PID_GAP for pid in (a, b)}
    return tuple(p for p in e.other_processes if p.pid in close)


def siblings_on_first_gpu(e: OomEvent, total_bytes: int, others_bytes: int) -> Analysis | None:
    """``multi_gpu_imbalance`` when most of what other processes hold on GPU 0 is held by
    sibling workers of one job (module docstring), else ``None``."""
    if e.device != 0:
        return None
    siblings = sibling_workers(e)
    held = sum(p.used_bytes or 0 for p in siblings)
    if len(siblings) < 2 or 2 * held < others_bytes:
        return None
    listed = ", ".join(str(p.pid) for p in siblings)
    return Analysis(
        cause="multi_gpu_imbalance",
        confidence=0.5,
        explanation=f"Processes {listed} hold {size_text(held)} of the {size_text(total_bytes)} "
        "GPU 0 and their PIDs are consecutive: workers forked together by one launcher, not "
        "strangers' jobs. Workers that never select their own device all land on GPU 0. "
        "What decides: `nvidia-smi` (the other GPUs idle: give each worker its own device; "
        "a single GPU: the job starts more copies than it holds, so start fewer).",
        fixes=(
            generic(
                "Give each worker its own GPU",
                "every worker that does not select a device puts its memory on GPU 0.",
                (
                    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))",
                    "CUDA_VISIBLE_DEVICES=<index> set before the worker imports torch",
                ),
            ),
            generic(
                "Start fewer workers on this GPU",
                "each worker holds its own copy of the model and its own CUDA context.",
                ("--nproc_per_node 1", "--workers 1"),
            ),
        ),
    )

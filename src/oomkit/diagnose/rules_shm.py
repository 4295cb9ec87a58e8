"""A DataLoader worker's SIGBUS from a full ``/dev/shm`` (host shared memory, not the GPU)."""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import generic

__all__ = ["shm_bus_error"]


def shm_bus_error(e: OomEvent) -> Analysis:
    """A DataLoader worker died of SIGBUS: PyTorch's workers pass every batch to the main process
    in shared memory (``torch.multiprocessing``, file descriptors into ``/dev/shm``), and a
    write beyond what that tmpfs holds raises SIGBUS (``torch/csrc/DataLoader.cpp``: "It is
    possible that dataloader's workers are out of shared memory"). Docker gives containers
    64 MiB of ``/dev/shm`` unless ``--shm-size`` / ``--ipc=host`` says otherwise."""
    who = f"PID {e.pid}" if e.pid is not None else "a DataLoader worker"
    return Analysis(
        cause="host_ram",
        confidence=0.6,
        explanation=f"{who} died of a bus error (SIGBUS) while handing a batch over in shared "
        "memory: /dev/shm (a RAM-backed tmpfs, 64 MiB in a default Docker container) is full. "
        "The host RAM behind it, not the GPU, ran out; `df -h /dev/shm` and `free -h` at the "
        "time of the failure decide between the shm limit and the machine's RAM.",
        fixes=(
            generic(
                "Give the container more shared memory",
                "workers pass each batch through /dev/shm; its size caps batch x workers.",
                ("docker run --shm-size=8g ...  (or --ipc=host)", "df -h /dev/shm"),
            ),
            generic(
                "Use fewer DataLoader workers / a smaller prefetch",
                "each worker keeps prefetch_factor batches in shared memory.",
                ("DataLoader(num_workers=2, prefetch_factor=2)",),
            ),
            generic(
                "Share tensors through files instead of shm file descriptors",
                "the file_system strategy avoids the descriptor limit of /dev/shm handles.",
                ("torch.multiprocessing.set_sharing_strategy('file_system')",),
            ),
        ),
    )

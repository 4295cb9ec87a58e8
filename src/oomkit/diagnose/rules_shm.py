"""A full ``/dev/shm`` (host shared memory, not the GPU): a DataLoader worker's SIGBUS, and the
ENOSPC that PyTorch's shared tensors and NCCL's segments report (parse_shm)."""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import generic

__all__ = ["shm_bus_error", "shm_full"]


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


def shm_full(e: OomEvent) -> Analysis:
    """PyTorch's ``MapAllocator`` or NCCL's ``ncclShmOpen`` could not grow a segment in
    ``/dev/shm``: ENOSPC, the tmpfs is full (:mod:`oomkit.diagnose.parse_shm` cites both)."""
    nccl = e.detail == "nccl"
    who = (
        "NCCL could not create its intra-node shared-memory segment"
        if nccl
        else (
            "PyTorch could not grow a shared-memory tensor (DataLoader workers, "
            "torch.multiprocessing)"
        )
    )
    fixes = [
        generic(
            "Give the container more shared memory",
            "/dev/shm is a RAM-backed tmpfs; Docker caps it at 64 MiB unless told otherwise.",
            ("docker run --shm-size=8g ...  (or --ipc=host)", "df -h /dev/shm"),
        ),
    ]
    if nccl:
        fixes.append(
            generic(
                "Or keep NCCL out of /dev/shm",
                "NCCL then uses P2P or sockets between local ranks (slower on some machines).",
                ("NCCL_SHM_DISABLE=1",),
            )
        )
    else:
        fixes.append(
            generic(
                "Use fewer DataLoader workers / a smaller prefetch",
                "each worker keeps prefetch_factor batches in shared memory.",
                ("DataLoader(num_workers=2, prefetch_factor=2)",),
            )
        )
    return Analysis(
        cause="host_ram",
        confidence=0.6,
        explanation=f"{who}: No space left on device in /dev/shm. The shared-memory tmpfs (host "
        "RAM, not the GPU) is full; `df -h /dev/shm` shows its size and use.",
        fixes=tuple(fixes),
    )

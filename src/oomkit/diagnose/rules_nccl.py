"""NCCL could not allocate GPU memory (:mod:`oomkit.diagnose.parse_nccl`): NCCL's own levers.

What NCCL allocates on the GPU when a communicator is set up or a collective first runs
(``init.cc``, ``transport/*.cc``, ``enqueue.cc``; NCCL's environment-variable docs):

* a buffer per channel and peer for each protocol: ``NCCL_BUFFSIZE`` (default 4 MiB, the Simple
  protocol's) times the channels (``NCCL_MAX_NCHANNELS`` caps them; up to 32 on NVLink
  systems) times the peers;
* on NVSwitch systems (H100/H200 HGX) NVLink SHARP buffers: the init log's ``NVLS comm ...
  nvlsTotalSize 2415919104`` is 2.25 GiB per GPU in NVIDIA/nccl#1410; ``NCCL_NVLS_ENABLE=0``
  turns them off (CollNet's, ``NCCL_COLLNET_ENABLE``, are off by default);
* these come after the framework has taken its share: PyTorch's caching allocator keeps what it
  reserved, vLLM/SGLang reserve ``gpu_memory_utilization`` of the card, and another process on
  the same card counts too.

A few MiB failing means the card was already full (the framework's pool or another process);
the size NCCL asked for (``Failed to CUDA calloc N bytes``) and ``nvidia-smi`` at the failure
decide which. The cause stays open: the log does not say what filled the card.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["analyze_nccl"]

#: the framework's own share is the lever when the card was full of this job
_ROOM_FIX = generic(
    "Leave room on the card for NCCL",
    "a smaller batch (a fixed batch size instead of an automatic one that fills the card), the "
    "process group set up before the model fills the card, or a smaller reservation (vLLM: a "
    "lower --gpu-memory-utilization; SGLang: a lower --mem-fraction-static).",
    (),
)


def analyze_nccl(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The analysis of an ``nccl_cuda_oom`` event, else None."""
    del ctx
    if e.format != "nccl_cuda_oom":
        return None
    size = (
        f" NCCL asked for {size_text(e.requested_bytes)} (ncclCudaCalloc)."
        if e.requested_bytes is not None
        else ""
    )
    return Analysis(
        cause="unknown",
        confidence=0.4,
        explanation="NCCL failed a CUDA allocation with out of memory (CUDACHECK: Cuda failure 2 "
        f"'out of memory').{size} NCCL allocates its communicator buffers (NCCL_BUFFSIZE per "
        "channel and peer, NVLink SHARP buffers on NVSwitch systems) when the communicator is set "
        "up or a collective first runs, after the framework has taken its share of the card: "
        "the card was already nearly full, from the framework's own pool (PyTorch's cache, "
        "an automatic batch size, vLLM's gpu_memory_utilization) or another process. The log "
        "does not say which, so the cause stays unknown. What would decide: nvidia-smi at the "
        "failure (another process, or this one holding the card) and NCCL_DEBUG=INFO "
        "NCCL_DEBUG_SUBSYS=ALLOC (which NCCL allocation failed, and its size).",
        fixes=(
            generic(
                "Turn off NVLink SHARP buffers (NVSwitch systems)",
                "NVLS buffers are the largest NCCL allocation (2.25 GiB per GPU in "
                "NVIDIA/nccl#1410's init log); without NVSwitch it changes nothing.",
                ("NCCL_NVLS_ENABLE=0 <your launch command>",),
            ),
            generic(
                "Smaller NCCL buffers and fewer channels",
                "NCCL's buffers are NCCL_BUFFSIZE (4 MiB default) per channel and peer.",
                ("NCCL_BUFFSIZE=1048576 NCCL_MAX_NCHANNELS=8 <your launch command>",),
            ),
            _ROOM_FIX,
            generic(
                "Check for another process on the card",
                "a job left over on the same GPU takes what NCCL needs.",
                ("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
            ),
        ),
        # settled as unknown: what NCCL's arithmetic supports is its own buffers failing on a
        # full card, not what filled it. The base rate of CUDA-level errors under a framework
        # (priors: nccl is a gpu_framework runtime) guessed batch_or_activations with the
        # batch's question and fix under NCCL's levers (a headline that contradicted them); of
        # the development corpus' 8 NCCL records 7 are labelled unknown (revfix19f)
        open_question=False,
    )

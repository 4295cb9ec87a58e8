"""TensorFlow facts that move a single message's reading (docs/doctor-causes.md, section 4)."""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["tf_driver_while_running"]

_fb = size_text


def tf_driver_while_running(e: OomEvent, bfc_line: str) -> Analysis:
    """TensorFlow's driver allocation failed while the graph was running: the step's tensors.

    Mechanism. TensorFlow's GPU memory is a BFC pool that ``BFCAllocator::Extend`` grows from
    the driver (``cuMemAlloc``; ``cuda_driver.cc`` logs ``failed to allocate X from device:
    CUDA_ERROR_OUT_OF_MEMORY`` when it cannot). At start-up that is the one large reservation
    another process can make fail (the rule's default reading). The BFC warning ``Allocator
    (GPU_0_bfc) ran out of memory trying to allocate N. The caller indicates that this is not a
    failure`` is logged only for an op's retry-able allocation (``AllocationAttributes
    retry_on_failure`` / cuDNN's scratch allocator): the graph was already running, so the
    driver failure beside it is the pool growing for the step's own tensors, which scale with
    the batch and the input size -> ``batch_or_activations`` at 0.45 (another process taking
    the memory mid-run is the competing reading; ``nvidia-smi`` decides).
    """
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation=f"TensorFlow could not get {_fb(e.requested_bytes)} more from the driver "
        "while the graph was running: the BFC warning in the log ('ran out of memory trying to "
        "allocate ... not a failure') is logged only for an op's own allocation, so the pool was "
        "growing for this step's tensors, which scale with the batch and the input size. "
        f"({bfc_line[:160].strip()})",
        fixes=(
            generic(
                "Reduce the batch size or the input size",
                "the step's tensors are what the pool was growing for.",
                ("batch_size = max(1, batch_size // 2)", "a smaller image / sequence size"),
            ),
            generic(
                "Check that no other process took the GPU mid-run",
                "a second process is the other way the pool cannot grow.",
                ("nvidia-smi",),
            ),
        ),
    )

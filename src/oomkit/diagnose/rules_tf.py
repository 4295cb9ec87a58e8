"""TensorFlow facts that move a single message's reading (docs/doctor-causes.md, section 4)."""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import generic, size_text
from oomkit.diagnose.parse_other import tensor_bytes

__all__ = ["tf_driver_while_running", "tf_optimizer_state"]

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


def tf_optimizer_state(e: OomEvent, node: str) -> Analysis:
    """The failing tensor is an optimizer's state: the shape of a parameter, not of the batch.

    Mechanism. TF's optimizer update kernels live in ``tensorflow/core/kernels/training_ops.cc``
    (``ApplyAdamOp``, ``ApplyMomentumOp``...; their failures read ``OP_REQUIRES failed at
    training_ops.cc``), and ``slot_creator.create_zeros_slot``
    (``tensorflow/python/training/slot_creator.py``) creates each variable's slots as
    ``<var>/Adam/Initializer/zeros``. Either way the tensor that failed has the shape of one
    weight (an embedding's ``[vocab, hidden]``, a dense ``[in, out]``), and it is the same size
    at any batch: its first dimension is not the batch. Weights plus Adam's two slots (3x the
    weights, more in fp32) did not fit what was free -> ``model_too_large`` at 0.5; memory
    another process held at start-up looks the same (``nvidia-smi`` decides).
    """
    size = tensor_bytes(e.shape or (), e.dtype)
    dims = "x".join(str(d) for d in e.shape or ())
    return Analysis(
        cause="model_too_large",
        confidence=0.5,
        explanation=f"TensorFlow could not allocate a tensor of shape [{dims}]"
        + (f" ({e.dtype}: {_fb(size)})" if size else "")
        + f" in an optimizer op ({node.strip()[:80]}): it is an optimizer state with the shape "
        "of one weight, the same size at any batch, so its first dimension is not the batch. "
        "The weights and the optimizer's slots (Adam keeps two per weight) did not fit in what "
        "was free; another process holding the GPU at start-up looks the same (nvidia-smi "
        "decides).",
        fixes=(
            generic(
                "Train a smaller model or one with less optimizer state",
                "Adam's two slots triple the resident size of the weights; a smaller variant, "
                "SGD/momentum or Adafactor, or mixed precision shrinks what stays resident.",
                ("a smaller model variant (e.g. base instead of large)", "optimizer = SGD(...)"),
            ),
            generic(
                "Check that no other process holds the GPU",
                "the optimizer slots are created at start-up, when another process's memory "
                "is already gone.",
                ("nvidia-smi",),
            ),
        ),
    )

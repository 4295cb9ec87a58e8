"""Messages whose own wording shows that no memory ran out (docs/doctor-causes.md, section 1).

Some out-of-memory messages are printed by a guard or a retry loop, not by an allocator that
found the device full. Their cause is ``unknown`` *settled* (``open_question=False``): the base
rate must not turn them into a guess at what filled the card, because nothing filled it.

* PyTorch's size guard, ``CUDA out of memory. Tried to allocate more than 1EB memory.``: every
  device allocator of PyTorch (``CUDACachingAllocator::allocate``, ``CudaMallocAsyncAllocator``
  and the vendor forks, ``c10/cuda/CUDACachingAllocator.cpp`` / ``CUDAMallocAsyncAllocator.cpp``)
  checks ``size < one_exa_bytes`` (2^60 bytes) *before* it touches the device and raises this
  ``OutOfMemoryError``. No device has an exabyte: the requested size is corrupt -- a negative
  length cast to ``size_t``, an overflowed product, or a shape read from a collective that went
  out of step (an NCCL timeout before it). The lever is the code that computed the size.
* Wav2Lip's face-detection retry loop (``inference.py: face_detect``): ``except RuntimeError:``
  halves the batch and prints ``Recovering from OOM error; New batch size: N`` for *every*
  ``RuntimeError``, memory or not; at batch size 1 it raises ``Image too big to run face detection
  on GPU``. The printed line alone does not show that memory ran out -- the swallowed error
  decides. Forks of Wav2Lip (SadTalker, video-retalking, Easy-Wav2Lip) copy the loop verbatim.

* ONNX Runtime's arena asked for more than any address space holds: ``Failed to allocate memory
  for requested buffer of size N`` (``onnxruntime/core/framework/bfc_arena.cc``,
  ``BFCArena::AllocateRawInternal``) with N at or above 2^48 bytes (256 TiB). x86-64 and AArch64
  user space and CUDA's unified address space are 48-bit (``sizeof`` a pointer is 8, its usable
  width 48 bits), so no device allocation can reach it; the arena passes the size it was handed
  to ``Extend``, which computes it from the tensor's shape (``SafeInt`` products of the dims), so
  the shape itself is wrong -- an unset symbolic dimension, a -1 cast to ``size_t``, a corrupt
  input. Not a lack of memory.

Near misses that must stay with their own rules: a real PyTorch OOM with a requested size (the
allocator's numbers decide), and a real ``Image too big to run face detection on GPU`` (the loop
reached batch 1: one image is too large, an activation that scales with the resolution).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic

__all__ = ["analyze_not_memory"]

# c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate more than 1EB memory."
# (HIP builds print CUDA too; MLU/GCU/XPU forks print their device name)
_EXABYTE = re.compile(r"\b[A-Z]{2,5} out of memory\. Tried to allocate more than 1EB memory")
# Wav2Lip inference.py face_detect: print('Recovering from OOM error; New batch size: {}')
_RETRY = re.compile(r"Recovering from OOM error; New batch size: \d{1,6}")
#: 2^48 bytes: the 48-bit virtual address space of x86-64 / AArch64 user space and of CUDA's UVA
_ADDRESS_SPACE = 1 << 48


def analyze_not_memory(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """``unknown`` (settled) when the message is a size guard or a catch-all retry loop."""
    del ctx  # the message's own wording decides
    if _EXABYTE.search(e.text):
        return Analysis(
            cause="unknown",
            confidence=0.6,
            open_question=False,
            explanation="PyTorch refused a request of more than 1 EB (2^60 bytes) before "
            "touching the GPU: its allocator checks the size first, and no device is that "
            "large. The size itself is corrupt -- a negative or overflowed length, or a shape "
            "taken from a collective that went out of step (look for an NCCL timeout or error "
            "before it). This is not a lack of memory; the op that computed the size decides.",
            fixes=(
                generic(
                    "Find the op that computed the size",
                    "the traceback's last frame builds a tensor from a bogus length or shape.",
                    (
                        "CUDA_LAUNCH_BLOCKING=1 python ... # exact failing op",
                        "TORCH_NCCL_ASYNC_ERROR_HANDLING=1  # fail at the collective, not after",
                    ),
                ),
            ),
        )
    if (
        e.runtime == "onnxruntime"
        and (e.format or "").startswith("onnxruntime_bfc_arena")
        and e.requested_bytes is not None
        and e.requested_bytes >= _ADDRESS_SPACE
    ):
        return Analysis(
            cause="unknown",
            confidence=0.55,
            open_question=False,
            explanation=f"ONNX Runtime's arena was asked for {e.requested_bytes} bytes, more than "
            "the 48-bit address space (256 TiB) any GPU or host can map: no memory could ever "
            "satisfy it. The size is computed from the tensor's shape, so the shape is wrong -- "
            "an unset or negative dimension cast to an unsigned size, an overflowed product, a "
            "corrupt input. This is not a lack of memory; the node named in the message and its "
            "input shapes decide.",
            fixes=(
                generic(
                    "Check the failing node's input shapes",
                    "a dynamic dimension that was never set, or an input of the wrong shape, "
                    "makes the size absurd.",
                    (
                        "print each input's shape before session.run(...)",
                        "onnx.shape_inference.infer_shapes(model)  # the node's output dims",
                    ),
                ),
            ),
        )
    if e.runtime == "generic" and _RETRY.search(e.text):
        return Analysis(
            cause="unknown",
            confidence=0.4,
            open_question=False,
            explanation="Wav2Lip's face detector halves its batch and prints 'Recovering from OOM "
            "error' for every RuntimeError it catches, memory or not, so this line does not show "
            "that memory ran out. The error it swallowed decides: at batch size 1 it raises "
            "'Image too big to run face detection on GPU' (a frame too large: --resize_factor); "
            "any other error is a bug in the detector's input, not memory.",
            fixes=(
                generic(
                    "See the error the retry loop swallowed",
                    "run the detector once on one frame, or print the exception in "
                    "face_detect's except clause.",
                    ("--face_det_batch_size 1", "--resize_factor 2"),
                ),
            ),
        )
    return None

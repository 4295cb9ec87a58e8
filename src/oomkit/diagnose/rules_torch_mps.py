"""Apple MPS allocator OOMs: the pool, other Metal allocations and the high-watermark limit."""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.diagnose.rules_torch_fixes import _batch_fixes, _fb

__all__: list[str] = []


def _mps(e: OomEvent) -> Analysis:
    x, a, o, w = e.requested_bytes, e.allocated_bytes, e.other_allocations_bytes, e.allowed_bytes
    base = (
        f"MPS asked for {_fb(x)}; PyTorch's MPS pool holds {_fb(a)}, other Metal allocations "
        f"{_fb(o)}, limit {_fb(w)}."
    )
    wm = Fix(
        title="Lift the MPS high-watermark limit (risky)",
        why="the limit is a ratio of the recommended working set; 0.0 disables it but the system "
        "may swap heavily or freeze.",
        commands=("export PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0",),
        expected_saving_bytes=None,
        generic=True,
    )
    if x is None or a is None or w is None:
        return Analysis(cause="unknown", confidence=0.2, explanation=base, fixes=(wm,))
    if x > w:
        return Analysis(
            cause="batch_or_activations",
            confidence=0.8,
            explanation=base + " The single request exceeds the whole limit.",
            fixes=(*_batch_fixes(e, x - max(0, w - a - (o or 0))), wm),
        )
    if o is not None and o > a:
        # "other allocations" is ``current_allocated_size() - m_total_allocated_memory``, where
        # current_allocated_size() is ``[m_device currentAllocatedSize]``: the Metal memory of
        # *this* process's device object ("there are implicit allocations from MPS backend, so we
        # need to query the 'device'", aten/src/ATen/mps/MPSAllocator.h; the message is built in
        # MPSAllocator.mm). Other apps are not in it: it is the MPS backend's own implicit
        # buffers (MPSGraph temporaries and caches) beside PyTorch's pool, which grow with an
        # op's working set or with a graph cache that is never trimmed. One message cannot tell
        # which, so the cause stays open (doccause14: h26-discuss.huggingface.co-175777, a leak,
        # and h5-comfyui-9308, a batch, were both read as other processes before).
        return Analysis(
            cause="unknown",
            confidence=0.3,
            explanation=base + f" Metal memory outside PyTorch's pool ({_fb(o)}) is larger "
            f"than PyTorch's own ({_fb(a)}). That figure counts this process only (the MPS "
            "backend's own buffers: MPSGraph temporaries and caches), not other apps. What "
            "would decide: whether 'other allocations' grows from step to step (a cache or "
            "tensors kept alive: accumulation) or is the same at the first step (this batch's "
            "working set: a smaller batch or resolution).",
            fixes=(*_batch_fixes(e, None), wm),
            open_question=True,
        )
    if a >= 0.8 * w:
        return Analysis(
            cause="model_too_large",
            confidence=0.55,
            explanation=base + f" PyTorch alone holds {100 * a // max(w, 1)}% of the limit and the "
            "request is small: the resident model does not fit this Mac's working set.",
            fixes=(
                generic(
                    "Use fp16 weights or a smaller/quantized model",
                    "half precision halves the resident weights.",
                    ("model.half()",),
                ),
                wm,
            ),
        )
    return Analysis(
        cause="batch_or_activations",
        confidence=0.4,
        explanation=base,
        fixes=(*_batch_fixes(e, None), wm),
    )

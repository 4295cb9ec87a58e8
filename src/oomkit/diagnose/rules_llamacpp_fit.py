"""What llama.cpp's fit projection above the free device memory says (docpost20).

``parse_llamacpp_fit`` recognises the projection (``llama_params_fit_impl``: model + context +
compute buffers per device, measured by a load without allocation) when it is above the free
memory. Its summary line does not split the total, so the cause between the weights and the
context stays open (the base rate answers, section 8 of docs/doctor-causes.md); the levers are
the ones the fit itself uses, in its order: the context first (step 2, skipped when the user set
``-c``), then the layers on the GPU (step 3, skipped when the user set ``-ngl``). A user's
setting that stopped the fit is named, and leaving it to the fit is the first fix.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text

__all__ = ["fit_shortfall"]

_CTX = re.compile(r"context set by user to (?P<n>\d{1,9})")
_NGL = re.compile(r"n_gpu_layers set by user to (?P<n>-?\d{1,6})")


def fit_shortfall(e: OomEvent, ctx: LogContext) -> Analysis:
    """The fit's projection exceeds the free device memory: name the shortfall and the levers."""
    used, free = e.requested_bytes, e.free_bytes
    short = used - free if used is not None and free is not None else None
    detail = e.detail or ""
    c, g = _CTX.search(detail), _NGL.search(detail)
    fixes: list[Fix] = []
    if c is not None:
        n = int(c["n"])
        fixes.append(
            generic(
                "Use a shorter context (-c)",
                f"the fit keeps a context the user set ({n} tokens); the KV cache grows with it.",
                (f"llama-server ... -c {max(n // 2, 512)}", "-ctk q8_0 -ctv q8_0"),
            )
        )
    if g is not None:
        fixes.append(
            generic(
                "Drop -ngl (let the fit choose the GPU layers) or lower it",
                f"-ngl {g['n']} was set by the user, so the fit could not move layers to system "
                "memory.",
                ("llama-server ... --fit on   # without -ngl", "-ngl <fewer layers>"),
            )
        )
    fixes.append(
        generic(
            "Use a smaller quantization of the model",
            "the projection counts the weights on the GPU too.",
            ("pick a Q4_K_S / IQ4_XS / Q3_K_M GGUF",),
        )
    )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=f"llama.cpp's parameter fit projected {size_text(used)} of device memory "
        f"against {size_text(free)} free"
        + (f" (short by {size_text(short)})" if short is not None else "")
        + ": the model, context and compute buffers it is about to allocate do not fit the "
        "device, and the load that follows fails or spills. "
        + (
            "The user's settings stopped the fit from shrinking them ("
            + ", ".join(x for x in (c and f"context {c['n']}", g and f"-ngl {g['n']}") if x)
            + "). "
            if c is not None or g is not None
            else ""
        )
        + "The summary line does not split the total: the load's buffer lines (model buffer, "
        "KV buffer, compute buffer sizes) decide whether the weights or the context take it.",
        fixes=tuple(fixes),
        open_question=True,
    )

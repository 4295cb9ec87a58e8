"""A llama.cpp buffer over the Vulkan driver's per-allocation limit: the fixes by the stage that
failed.

ggml-vulkan refuses a buffer above the device's limit before asking the driver
(``ggml_vk_create_buffer``: ``if (size > device->max_memory_allocation_size) throw
vk::OutOfDeviceMemoryError("Requested buffer size exceeds device memory allocation limit")``;
the limit is ``min(maxMemoryAllocationSize, maxBufferSize)``, or
``GGML_VK_FORCE_MAX_ALLOCATION_SIZE`` when set; ggml/src/ggml-vulkan/ggml-vulkan.cpp, llama.cpp
c392e50). What the buffer held decides the lever:

* **weights** (``load_tensors`` / ``llama_model_load: error loading model: unable to allocate
  Vulkan0 buffer``, src/llama-model.cpp): the weights are already split into buffers no larger
  than the backend's max size (ggml-alloc.c ``ggml_backend_alloc_ctx_tensors_from_buft`` cuts at
  ``ggml_backend_buft_get_max_size``, which ggml-vulkan answers with ``suballocation_block_size``
  <= the limit), so a weights buffer above the limit is ONE tensor above it: in practice the
  output matrix (n_vocab x n_embd) of a large-vocabulary model. ``-ngl`` at the layer count (not
  99) keeps the output layer on the CPU (llama.cpp offloads it only when ``n_gpu_layers >
  n_layer``); a smaller quant shrinks that tensor;
* **KV cache**: one layer's K or V tensor grows with ``-c``; a shorter context or a quantized
  cache shrinks it;
* **compute**: ``ggml_gallocr_reserve_n`` allocates the graph's buffer whole (not split), and it
  scales with the micro-batch (``-ub``).
"""

from __future__ import annotations

import dataclasses

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic

__all__ = ["allocation_limit_analysis"]

_TEXT = (
    " But the driver says the request exceeds its per-allocation limit ({line}): one buffer is "
    "larger than the device allows in a single allocation (Vulkan maxMemoryAllocationSize / "
    "maxBufferSize), which is not a lack of total memory."
)


def _stage_fixes(stage: str | None, ctx: LogContext) -> tuple[str, tuple[Fix, ...]]:
    if stage == "weights":
        n_layer = ctx.layers_total - 1 if ctx.layers_total else None
        ngl = f"-ngl {n_layer}" if n_layer else "-ngl <the model's layer count, not 99>"
        return (
            " llama.cpp splits the weights into buffers no larger than the limit, so the buffer "
            "that exceeds it is a single tensor larger than the limit (usually the output "
            "matrix, n_vocab x n_embd): keep it on the CPU or make it smaller.",
            (
                generic(
                    "Keep the output layer on the CPU",
                    "llama.cpp offloads the output layer only when -ngl exceeds the layer count; "
                    "at the layer count every repeating layer stays on the GPU.",
                    (ngl,),
                ),
                generic(
                    "Use a smaller quantization",
                    "the oversized tensor shrinks with the quant (Q4_K_M takes ~60% of Q8_0, "
                    "~30% of F16). What to change: a Q4_K_M / IQ4_XS GGUF of the same model.",
                    (),
                ),
            ),
        )
    if stage == "kv_cache":
        return (
            " The failing buffer is the KV cache: each layer's K and V grow with the context.",
            (
                generic(
                    "Shorten the context or quantize the KV cache",
                    "one layer's K/V tensor scales with -c; q8_0 halves it (needs -fa).",
                    ("-c 8192", "-fa on -ctk q8_0 -ctv q8_0"),
                ),
            ),
        )
    return (
        " The failing buffer is the compute buffer, allocated whole; it scales with the "
        "micro-batch."
        if stage == "compute"
        else "",
        (
            generic(
                "Make the compute buffer smaller",
                "the compute buffer is one allocation that scales with the micro-batch.",
                ("-ub 256 -b 512",),
            ),
        ),
    )


def allocation_limit_analysis(
    result: Analysis, ctx: LogContext, primary: OomEvent | None
) -> Analysis:
    """``result`` re-read as a per-allocation-limit failure, with the fixes of the failing stage
    (module docstring) before the runtime rule's own. The rule's savings were sized against a
    lack of total memory, which the limit message rules out: they are kept, unsized, after."""
    stage = primary.stage if primary is not None else None
    said, fixes = _stage_fixes(stage, ctx)
    line = (ctx.allocation_limit or "")[:160]
    return Analysis(
        cause="unknown",
        confidence=0.6,
        explanation=result.explanation + _TEXT.format(line=line) + said + " The limit is the "
        "driver's (GGML_VK_FORCE_MAX_ALLOCATION_SIZE only overrides the value ggml-vulkan uses; "
        "above the driver's real limit the allocation fails in the driver instead). The CUDA "
        "and ROCm backends have no such per-allocation cap.",
        fixes=(
            *fixes,
            *(dataclasses.replace(f, expected_saving_bytes=None, fits=None) for f in result.fixes),
        ),
    )

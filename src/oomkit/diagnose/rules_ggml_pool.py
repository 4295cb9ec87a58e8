"""2023 ggml's fixed memory pools: the context's object pool and the scratch buffer.

Before the graph allocator (ggml-alloc, August 2023), llama.cpp, whisper.cpp and the apps built
on them (koboldcpp, llama-cpp-python, LocalAI, llama.clj) gave each ``ggml_context`` buffers
sized in advance: the context's memory pool (tensor objects and, without a scratch buffer, their
data: ``ggml_new_object: not enough space in the context's memory pool``) and the scratch
buffers that ``llama_eval`` set with ``ggml_set_scratch`` for the data of the eval graph's
intermediate tensors (``ggml_new_tensor_impl: not enough space in the scratch memory pool``,
ggml.c). Neither is the device's or the host's free memory running out.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["ggml_pool"]


def _fb(n: int | None) -> str:
    return size_text(n)


def ggml_pool(e: OomEvent) -> Analysis:
    """A fixed ggml pool overflowed: the scratch buffer is one eval's activations.

    Mechanism. The scratch buffers hold only the data of the intermediate tensors of one
    ``llama_eval`` call (attention scores, matmul outputs, dequantized weights for BLAS), and
    their size was fixed at load from the model type and n_ctx (``MEM_REQ_SCRATCH0(n_ctx)``)
    for the batch the library expected. The intermediates grow with the tokens evaluated at
    once (n_batch, koboldcpp's ``--blasbatchsize``) and with the prompt processed so far, so a
    scratch overflow is the batch's activations outgrowing the buffer: a smaller batch is the
    lever (``batch_or_activations``, 0.45: it is still a sizing limit of 2023 ggml, which an
    update removes, not a lack of memory). The context's pool holds tensor objects and their
    metadata, sized by a count the library computed: an overflow there is a sizing bug of that
    release (``unknown``, 0.5, settled).
    """
    if e.buffer_name == "scratch":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.45,
            explanation=f"ggml's fixed scratch buffer (sized by the library at load for the "
            f"batch it expected) needed {_fb(e.requested_bytes)} but holds "
            f"{_fb(e.free_bytes)}. The scratch buffer holds one eval's intermediate tensors, "
            "which grow with the tokens evaluated at once (n_batch / --blasbatchsize) and the "
            "prompt: the batch's activations outgrew it. It is a sizing limit of 2023 ggml, not "
            "a lack of device or host memory; newer llama.cpp sizes these buffers from the graph.",
            fixes=(
                generic(
                    "Evaluate fewer tokens at once",
                    "the scratch buffer holds one eval's intermediates, linear in the batch.",
                    ("-b 256", "--blasbatchsize 512   # koboldcpp", "n_batch=256"),
                ),
                generic(
                    "Update llama.cpp / llama-cpp-python",
                    "fixed scratch pools were replaced by the graph allocator.",
                    ("pip install -U llama-cpp-python",),
                ),
            ),
            open_question=False,
        )
    return Analysis(
        cause="unknown",
        confidence=0.5,
        explanation=f"ggml's fixed {e.buffer_name} memory pool (sized by the library at load) "
        f"needed {_fb(e.requested_bytes)} but holds {_fb(e.free_bytes)}. This is a sizing "
        "limit of 2023 ggml, not a lack of device or host memory; newer llama.cpp allocates "
        "these buffers dynamically. If it persists on a current build with a short prompt, "
        "report it upstream.",
        fixes=(
            generic(
                "Update llama.cpp / llama-cpp-python, or shorten the prompt/context",
                "fixed scratch pools were replaced by the graph allocator.",
                ("pip install -U llama-cpp-python", "n_ctx=2048"),
            ),
        ),
    )

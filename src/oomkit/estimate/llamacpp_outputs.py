"""How many output rows llama-server's reserve graph holds (pure).

``llama_context`` sizes its worst-case graph (``graph_reserve``) and its output buffer for
``cparams.n_outputs_max`` rows: ``params.n_outputs_max == 0 ? n_batch : params.n_outputs_max``
(src/llama-context.cpp). Every caller that leaves the parameter at its default (0: the C API,
llama-bench, llama-cli, llama-perplexity) reserves one output row per token of the micro-batch,
as before; llama.cpp PR #23861 ("llama: limit max outputs of ``llama_context``", am17an,
opened 2026-05-29, merged 2026-06-01; issue #23527: "Could save ~3 GB VRAM in ``graph_reserve``
when caller doesn't need logits") added the parameter and had llama-server set it: in
tools/server/server-context.cpp ``params_base.n_outputs_max = server_n_outputs_max(params_base)``
with ``server_n_outputs_max = min(n_batch, n_parallel * (1 + common_speculative_n_max(...)))``
(the speculative term came with the follow-up PR #23988; without a draft it is ``n_parallel``).

What that removes from the compute buffer (:func:`oomkit.estimate.llamacpp_compute.graph_shape`
reads ``LlamaCppOptions.reserve_outputs``): the ``n_vocab x n_ubatch`` f32 logits of the output
head on the GPU that holds it, and, when ``-ngl`` leaves the output layer on the CPU, the
op-offload staging of ``output.weight`` (ggml-cuda offloads a CPU matmul to the GPU only for
batches of at least 32 rows, ``ggml_backend_cuda_device_offload_op``): with one output row the
weight stays on the CPU. Issue #23527's A/B (Qwen3.6-35B-A3B, ``-ub 4096``) and the PR's own
"saves another 1.2GB of VRAM" measure the first; an RTX 2080 at ``-ngl 42`` of Qwen2.5-14B
(llmfit PR #778, llama-server of July 2026: 8 GB card, ran) the second.

The switch is ``InferenceSettings.llama_server`` (the record or caller says the run is
llama-server) and the build's generation (``server_outputs``, row ``2026-06-server-outputs`` of
:mod:`oomkit.estimate.generation_rows_llamacpp`). A draft model is left at the micro-batch's
rows: before PR #23988 the target context with a draft was not sized by this rule.
"""

from __future__ import annotations

import dataclasses

from oomkit.estimate.llamacpp_params import LlamaCppParams
from oomkit.spec.settings import InferenceSettings

__all__ = ["SOURCE", "server_outputs"]

SOURCE = (
    "llama.cpp PR #23861 (src/llama-context.cpp cparams.n_outputs_max; "
    "tools/server/server-context.cpp server_n_outputs_max = min(n_batch, n_parallel))"
)


def server_outputs(settings: InferenceSettings, params: LlamaCppParams) -> LlamaCppParams:
    """``params`` with llama-server's output reserve when the run is llama-server on a build
    from PR #23861: ``min(n_batch, n_seq_max)`` rows instead of the micro-batch's.

    Unchanged when the caller already fixed the rows (Ollama's own engine), when the run is
    not llama-server, the build predates the PR, or a draft model is set.
    """
    opts = params.options
    if (
        not settings.llama_server
        or not opts.server_outputs
        or opts.reserve_outputs is not None
        or settings.draft_model is not None
    ):
        return params
    rows = min(params.n_batch, params.n_seq_max)
    note = (
        f"llama-server (PR #23861): the context reserves {rows} output row(s) for its "
        f"{params.n_seq_max} sequence(s), not one per token of the {params.n_ubatch}-token "
        "micro-batch"
    )
    return dataclasses.replace(
        params,
        options=dataclasses.replace(opts, reserve_outputs=rows),
        assumptions=(*params.assumptions, note),
    )

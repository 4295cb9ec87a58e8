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

``llama-cli`` is one of them since its rewrite on the server's code: tools/cli/cli.cpp holds a
``server_context`` and starts it with ``ctx_cli.ctx_server.load_model(params)``, and
``load_model`` is where ``params_base.n_outputs_max = server_n_outputs_max(params_base)`` is set
(tools/server/server-context.cpp after PR #23861). What keeps one row per micro-batch token:
llama-bench, llama-completion, llama-perplexity and every program on the C API
(llama-cpp-python, LM Studio's engine), which leave ``n_outputs_max`` at 0.

The switch is ``InferenceSettings.llama_server`` (the record or caller says the run is
llama-server or llama-cli; the CLI's ``--llama-server/--no-llama-server``, on by default for
``estimate`` and ``plan``, whose commands are llama-server's) and the build's generation
(``server_outputs``, row ``2026-06-server-outputs`` of
:mod:`oomkit.estimate.generation_rows_llamacpp`). A draft model is left at the micro-batch's
rows: before PR #23988 the target context with a draft was not sized by this rule.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.estimate.llamacpp_params import SERVER_AUTO_SLOTS, LlamaCppParams
from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from oomkit.estimate.breakdown import Estimate

__all__ = [
    "NOTE_PREFIX",
    "SERVER_AUTO_SLOTS",
    "SOURCE",
    "bench_note",
    "server_default",
    "server_outputs",
]

#: runtime names for llama.cpp apps whose engine is a C-API program, not llama-server: LM Studio's
#: llama.cpp engine, koboldcpp's own server (gpttype_adapter.cpp) and llama-cpp-python's
#: ``Llama`` leave ``n_outputs_max`` at 0
C_API_APPS = frozenset({"lmstudio", "koboldcpp", "llama-cpp-python", "llama_cpp_python"})
#: how :func:`server_outputs`'s assumption starts (what :func:`bench_note` looks for)
NOTE_PREFIX = "llama-server (PR #23861)"

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
    # -np not given: resolve_llamacpp_params already gave llama-server's "auto" 4 slots (on one
    # unified KV cache), and server_n_outputs_max reads that n_parallel; llama-cli keeps
    # common_params' 1 (4 rows over-count it by 3)
    seqs = params.n_seq_max
    # PR #23988: n_parallel * (1 + common_speculative_n_max): with --spec-type draft-mtp each
    # slot verifies n_max drafted tokens plus one (oomkit.estimate.llamacpp_mtp)
    n_max = 0
    if settings.speculative_method == "mtp":
        from oomkit.estimate.llamacpp_mtp import DEFAULT_N_MAX

        n_max = settings.num_speculative_tokens or DEFAULT_N_MAX
    rows = min(params.n_batch, seqs * (1 + n_max))
    note = (
        f"{NOTE_PREFIX}: the context reserves {rows} output row(s) for its {seqs} "
        f"sequence(s){f' x (1 + draft n_max {n_max})' if n_max else ''}, not one per token of "
        f"the {params.n_ubatch}-token micro-batch"
    )
    return dataclasses.replace(
        params,
        options=dataclasses.replace(opts, reserve_outputs=rows),
        assumptions=(*params.assumptions, note),
    )


def server_default(settings: InferenceSettings) -> InferenceSettings:
    """``settings`` with ``llama_server=True`` for llama.cpp when the caller left it unset.

    For the CLI's ``estimate`` and ``plan``, whose llama.cpp commands are ``llama-server``
    (:func:`oomkit.planner.commands.emit_command`): the memory behind a printed command is
    the server's, and the command fed back to ``estimate`` gives the same numbers. The library
    default (None) stays the C API's, as llama-bench and the records without the setting run,
    and so does ``-r lmstudio``/``-r koboldcpp`` (:data:`C_API_APPS`).
    """
    from oomkit.estimate.registry import normalize_runtime

    if settings.llama_server is not None or normalize_runtime(settings.runtime) != "llama.cpp":
        return settings
    if settings.runtime.strip().lower() in C_API_APPS:
        return settings  # their engines run on the C API: one row per micro-batch token
    return dataclasses.replace(settings, llama_server=True)


def bench_note(server: Estimate, bench: Estimate) -> str | None:
    """What llama-bench / llama-completion / the C API reserve more than llama-server, from
    the two estimates of one configuration (``server`` with the server's output rows,
    ``bench`` with ``n_outputs_max = n_batch``); None when the server's rule did not apply
    (an older build, a draft model) or nothing differs."""
    if not any(a.startswith(NOTE_PREFIX) for a in server.assumptions):
        return None
    from oomkit.units import format_bytes

    pairs = list(zip(server.devices, bench.devices, strict=False))
    if not pairs:
        return None
    extra = max(b.total_bytes - s.total_bytes for s, b in pairs)
    if extra <= 0:
        return None
    fullest = max(pairs, key=lambda p: p[1].total_bytes - p[0].total_bytes)[1].device
    n_ubatch = bench.settings.get("ubatch")
    return (
        "estimated for llama-server / llama-cli: llama-bench, llama-completion and programs "
        f"on the C API (llama-cpp-python) reserve one output row per micro-batch token "
        f"({n_ubatch} x n_vocab f32 logits; with the output layer on the CPU its weight is "
        f"staged on the GPU too): +{format_bytes(extra)} on {fullest}; --no-llama-server "
        "estimates them"
    )

"""A serving engine's own levers where a PyTorch-path rule would give training fixes (docpost19).

The forward/backward rule, the numberless (phase-only) rule and the base-rate guess offered a
``vllm serve`` / SGLang / TGI / TensorRT-LLM / llama.cpp server / Ollama log the levers of a
training loop: ``batch_size //= 2`` and ``model.gradient_checkpointing_enable()``. A server has
neither: no batch_size argument and no backward pass. Its step's activations are sized by the
tokens it batches at once, which its own flags set:

* vLLM, SGLang, TGI, TensorRT-LLM: :func:`oomkit.diagnose.rules_torch_fixes.server_batch_fixes`
  (``--max-num-batched-tokens`` / ``--max-num-seqs``; ``--chunked-prefill-size`` /
  ``--max-running-requests``; ``--max-batch-prefill-tokens``; ``--max_num_tokens``).
* llama.cpp (``llama-server``, ``llama-cli``): the compute buffer is reserved for a graph of
  ``n_ubatch`` tokens (``src/llama-context.cpp``: the worst-case graph is built with
  ``n_tokens = min(n_ctx, n_ubatch)`` and ``ggml_backend_sched_reserve``d), and the server
  splits its context over ``--parallel`` slots (``common/arg.cpp``: ``-ub, --ubatch-size``,
  ``-np, --parallel``).
* Ollama: the runner's context is ``num_ctx x OLLAMA_NUM_PARALLEL`` (``server/sched.go``:
  ``req.opts.NumCtx = req.opts.NumCtx * numParallel``) and its batch ``num_batch``
  (``api/types.go`` ``Options.NumBatch``, default 512).

The engine is the one the log shows: the failing frame's path inside the engine's package, or
the log's runtime (``LogContext.runtime_hint``) when the frame is not a training loop's (a TRL
or DeepSpeed run that also starts vLLM for generation keeps its training fixes).
"""

from __future__ import annotations

from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.diagnose.rules_torch_fixes import server_batch_fixes

__all__ = ["engine_batch_fixes", "engine_lead", "serving_engine"]

# the engine's package as it appears in a traceback frame's path, most specific first
_FRAME_ENGINE = (
    ("tensorrt_llm", "tensorrt-llm"),
    ("sglang", "sglang"),
    ("text_generation_server", "tgi"),
    ("vllm", "vllm"),
)
_HINT_ENGINES = frozenset({"vllm", "sglang", "tgi", "tensorrt-llm", "llama.cpp", "ollama"})
# a frame of a training loop: the log's engine (vLLM started for a trainer's generation) is
# not what failed
_TRAINING_FRAME = ("trainer", "trl/", "accelerate", "deepspeed", "backward", "peft", "lightning")
_TRAINING_PHASES = frozenset({"backward", "optimizer_step", "checkpoint_save", "pin_memory"})

_LLAMACPP = generic(
    "Batch fewer tokens per step: a smaller micro-batch and fewer parallel slots",
    "llama.cpp reserves its compute buffer for a graph of n_ubatch tokens, and llama-server "
    "splits its context over --parallel slots.",
    ("-ub 256 -b 512", "--parallel 1   # llama-server"),
)
_OLLAMA = generic(
    "Serve fewer requests at once and smaller batches",
    "Ollama gives the runner num_ctx x OLLAMA_NUM_PARALLEL of context and builds its graph for "
    "num_batch tokens.",
    ("OLLAMA_NUM_PARALLEL=1 ollama serve", '"options": {"num_batch": 256}'),
)


def serving_engine(e: OomEvent, ctx: LogContext) -> str | None:
    """The serving engine the log shows (``vllm``, ``sglang``, ``tgi``, ``tensorrt-llm``,
    ``llama.cpp``, ``ollama``), or ``None`` for a training run or any other program."""
    if ctx.frame_phase in _TRAINING_PHASES:
        return None
    frame = (ctx.frame_text or "").lower()
    for needle, engine in _FRAME_ENGINE:
        if needle in frame:
            return engine
    if any(t in frame for t in _TRAINING_FRAME):
        return None
    if e.runtime in _HINT_ENGINES:
        return e.runtime
    return ctx.runtime_hint if ctx.runtime_hint in _HINT_ENGINES else None


def engine_batch_fixes(e: OomEvent, ctx: LogContext) -> tuple[Fix, ...]:
    """The engine's own batch levers, or ``()`` where the log shows no serving engine."""
    engine = serving_engine(e, ctx)
    if engine == "llama.cpp":
        return (_LLAMACPP,)
    if engine == "ollama":
        return (_OLLAMA,)
    return server_batch_fixes(engine)


def engine_lead(cause: str, e: OomEvent, ctx: LogContext) -> Fix | None:
    """The base-rate guess's first fix for ``batch_or_activations`` on a serving engine's log
    (:mod:`oomkit.diagnose.priors`: "Halve the batch size" otherwise), else ``None``."""
    if cause != "batch_or_activations":
        return None
    fixes = engine_batch_fixes(e, ctx)
    return fixes[0] if fixes else None

"""Evidence in the message that outranks a runtime rule's fallback reading.

A runtime's rule (``rules_llamacpp``, ``rules_families``...) reads its own message format; some
facts that decide the cause are not in that format but in what surrounds it: the phase the
traceback places the failure in, or which allocator's failure it is. :func:`refine_by_evidence`
applies them after the runtime rule and the log facts (``rules_families.decide_by_log_facts``)
and before the base rate (:mod:`oomkit.diagnose.priors`), only where the rule's reading was a
fallback (open, or a low-confidence default), never over arithmetic the rule did itself.

Each rule states its mechanism in its docstring; docs/doctor-causes.md section 4 lists them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text
from oomkit.diagnose.priors import is_open
from oomkit.diagnose.rules_diffusion import vae_decode_in_flight
from oomkit.diagnose.rules_siblings import sibling_workers
from oomkit.diagnose.rules_stated import (
    colocated_rollout_engine,
    fallback,
    stated_cotenants,
    stated_growth,
)
from oomkit.diagnose.rules_stated_alloc import (
    stated_checkpoint_on_first_gpu,
    stated_dataset_accumulation,
    stated_fragmentation,
    stated_free_memory,
    stated_kv_for_context,
    stated_model_too_large,
    stated_one_gpu_of_several,
    stated_reload_on_several_gpus,
)
from oomkit.diagnose.rules_stated_budget import (
    context_experiment,
    stated_configured_cap,
    stated_context_budget,
    stated_eval_fails_training_fits,
    stated_full_weights_on_device,
)
from oomkit.diagnose.rules_stated_contrast import stated_context_contrast
from oomkit.diagnose.rules_stated_design import (
    stated_full_logits,
    stated_graph_kept_in_inference,
    stated_replay_buffer,
)
from oomkit.diagnose.rules_stated_held import (
    stated_context_too_large,
    stated_context_unset,
    stated_outputs_kept_on_device,
    stated_resident_models,
)
from oomkit.diagnose.rules_stated_history import stated_chat_history, stated_conversation_growth
from oomkit.diagnose.rules_stated_host import (
    stated_conversion_on_host,
    stated_pinned_host,
    stated_unified_memory,
)
from oomkit.diagnose.rules_stated_levers import (
    comfy_loader_node,
    mistralrs_device_map,
    stated_batch_cut_still_fails,
    stated_kv_pool_took_memory,
    stated_process_outlives_exit,
)
from oomkit.diagnose.rules_stated_load import stated_load_need_over_available
from oomkit.diagnose.rules_stated_rerun import stated_rerun
from oomkit.diagnose.rules_stated_size import (
    stated_card_cannot_run,
    stated_lora_fits_full_does_not,
    stated_weights_exceed_card,
)
from oomkit.diagnose.rules_stated_state import stated_training_state_phase
from oomkit.diagnose.rules_surroundings import stated_around

__all__ = ["EVIDENCE_RULES", "refine_by_evidence"]

#: n_ctx at or above this is a long context (as rules_llamacpp's runtime-failure branch reads it)
_LONG_CTX = 8192
#: a context this long makes the KV cache the largest allocation of a load (see
#: _stated_long_context)
_HUGE_CTX = 131072
_NCTX_DETAIL = re.compile(r"\bn_ctx (?P<n>\d{1,9})\b")
# MLX's own wording (mlx/backend/metal: check_error throws "[METAL] Command buffer execution
# failed: <localizedDescription>") and Apple's status for a command buffer that could not make
# its working set resident (kIOGPUCommandBufferCallbackErrorOutOfMemory, "Insufficient Memory")
_METAL_CB = re.compile(
    r"\[METAL\] Command buffer execution failed: Insufficient Memory"
    r"|kIOGPUCommandBufferCallbackErrorOutOfMemory"
)


def refine_by_evidence(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis:
    """``result``, or the reading that the evidence named by one rule of this module decides."""
    for rule in EVIDENCE_RULES:
        found = rule(result, e, ctx)
        if found is not None:
            return found
    # the lines around the message, after everything its own line says (rules_surroundings)
    return stated_around(result, e, ctx) or result


_fallback = fallback


# (doccause11, heldout23) the text places the Metal failure in the model's load: "a Metal OOM
# during local model load", "crashing after breadcrumb `model.load begin`", "while loading the
# model"
_METAL_AT_LOAD = re.compile(
    r"(?i)\bduring\s+(?:the\s+)?(?:local\s+)?model\s+load(?:ing)?\b|\bmodel\.load\b"
    r"|\bwhile\s+loading\s+(?:the\s+)?model\b"
)


def _metal_at_load(result: Analysis, words: str) -> Analysis:
    """The Metal command-buffer failure the text places in the model's load: the weights.

    Mechanism. MLX loads lazily: ``load_weights`` maps the tensors and the first ``mx.eval``
    of the model (at load, to materialise and, for quantized models, dequantize/pack them)
    runs command buffers that must make every weight resident; a command buffer that fails
    then has no KV cache or prompt to blame: the weights exceed the GPU working set the Mac
    allows (osaurus's fix gates loads on the available memory). ``model_too_large`` at 0.45.
    """
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation="A Metal command buffer ran out of memory (Insufficient Memory), and the "
        f"text places it in the model's load ({words!r}): before any request there is no KV "
        "cache to grow, so making the weights resident is what did not fit the Mac's GPU "
        "working set. What would decide: the model's size against `recommendedMaxWorkingSetSize` "
        "(about 65-75% of unified memory), or whether a smaller quantization loads.",
        fixes=(
            generic(
                "Load a smaller model or quantization",
                "the weights must fit the GPU working set macOS allows, not all of RAM.",
                ("a 4-bit (or smaller) variant of the model",),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


def _metal_command_buffer(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """A Metal command buffer that ran out of memory while computing: the context is the lever.

    Mechanism. On Apple GPUs the weights are placed when the model loads (a load that does not
    fit fails there, as ``[metal::malloc]`` in MLX or ``ggml_metal_add_buffer`` in llama.cpp).
    A command buffer that fails *at execution* with ``Insufficient Memory`` means the working set
    grew after the load: in MLX (mlx_lm, its server and the apps on it) the KV cache grows with
    every token (``KVCache`` extends in steps of 256) and mlx_lm.server keeps a prompt cache
    across requests, while prefill runs in fixed chunks (``prefill_step_size``), so what grows
    without bound is the context (prompt + generated tokens, times concurrent sequences). In
    llama.cpp/Ollama on Metal, the KV buffer is sized by ``n_ctx`` (now the model's training
    context by default) and is only made resident when the graph first runs, so the same
    failure at the first long prompt is the KV cache of that context. The compute buffer is
    bounded by the micro-batch and is the second reading; a context the log states as short
    (< 8192) keeps the runtime rule's reading.
    """
    if e.format != "metal_command_buffer" and not _METAL_CB.search(e.text):
        return None
    if result.cause in {"kv_cache_or_context", "host_ram", "leak_or_accumulation"}:
        return None
    if ctx.n_ctx is not None and ctx.n_ctx < _LONG_CTX:
        return None
    if not _fallback(result):
        return None
    load = _METAL_AT_LOAD.search(e.text)
    if load is not None:
        return _metal_at_load(result, load.group(0))
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.4,
        explanation="A Metal command buffer ran out of memory while executing (Insufficient "
        "Memory): the model had loaded, and what grew after the load is the per-request working "
        "set, whose unbounded part is the KV cache (prompt + generated tokens x concurrent "
        "sequences; in mlx_lm.server also the prompt cache kept across requests). The message "
        "states no sizes. What would decide: does the same request pass with a short prompt in "
        "a freshly started server? If it does, the context is the cause; if even a short one "
        "fails, the model does not fit the Mac's GPU working set.",
        fixes=(
            generic(
                "Use a shorter context (and cap the prompt cache)",
                "the KV cache grows linearly with the tokens kept in context.",
                (
                    "mlx_lm.server --prompt-cache-bytes 1073741824 --max-kv-size 8192",
                    "-c 8192   # llama.cpp",
                    "num_ctx 8192   # Ollama",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


def _constructed_at_load(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """A numberless OOM whose traceback places it in model loading: the weights.

    Mechanism. Where the message carries no sizes (CTranslate2's ``CUDA failed with error out of
    memory``, a driver-level ``CUDA error: out of memory``) the traceback frames are the only
    evidence. A failure while the model is being built or loaded (``from_pretrained``,
    ``load_state_dict``, or a native library's constructor, ``WhisperModel.__init__``, as the
    innermost frame: ``parse_torch_frames``) happens before any input exists, so batch, context
    and accumulation cannot have caused it: the weights (model size x compute type) do not fit
    what is free. Another process holding the GPU is the competing reading, which `oomkit gpus`
    decides. Applied only where the runtime rule left the cause open.
    """
    if ctx.frame_phase != "model_load" or not is_open(result):
        return None
    if e.requested_bytes is not None or e.total_bytes is not None:
        return None  # sizes are the rule's own evidence
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=result.explanation + " The traceback places the failure in building the "
        f"model ({ctx.frame_text}): no input has been processed yet, so the weights (model "
        "size x compute type) do not fit what is free. What would decide: `oomkit gpus` "
        "(free memory before the load, other processes) against the model's size (`oomkit "
        "estimate MODEL`).",
        fixes=(
            generic(
                "Load a smaller model or a lower-precision compute type",
                "weights are what a model allocates when it is constructed.",
                (
                    "WhisperModel(name, compute_type='int8_float16')",
                    "from_pretrained(name, torch_dtype=torch.bfloat16)",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


#: at most this confidence for a cause the message cannot decide (docs/doctor-causes.md §8)
_UNDECIDED = 0.35


def _bare_ggml_weights(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """A llama.cpp ``cudaMalloc failed`` with nothing around it: the weights reading stays, but
    at the confidence of an undecided cause.

    Mechanism. ``rules_llamacpp`` infers the weights stage when no buffer line was logged before
    the failure (the load allocates the model's device buffer first). That places the
    *allocation*, not the *cause*: the same first buffer fails when the model is too large for
    the card, when a split (``-ts``, Ollama's layer count, a single-GPU split mode) puts too many
    layers on this device, and when another process already holds the VRAM. Without the card's
    free memory at load, the device list or the buffer sizes, the message cannot tell them
    apart, so the doctor says so (at most 0.35) and names the facts that decide.
    """
    if e.runtime != "llama.cpp" or e.stage is not None or result.cause != "model_too_large":
        return None
    if ctx.buffers or any(d.free_bytes for d in ctx.devices) or e.total_bytes is not None:
        return None
    if e.requested_bytes is not None or result.confidence <= _UNDECIDED:
        return None  # a stated buffer size is the rule's own evidence
    if (e.format or "").startswith("metal"):
        return None  # ggml-metal's working-set warnings compare the loaded size with the limit
    return Analysis(
        cause=result.cause,
        confidence=_UNDECIDED,
        explanation=result.explanation + " The message carries no sizes and no load log, so "
        "it places the failing allocation (the first device buffer: the weights) but does not "
        "decide why: a model too large for the card, a split that puts too many layers on this "
        "device, or another process holding the VRAM look the same. What would decide: the "
        "load log's buffer sizes against the card, the GPU count, and `oomkit gpus` (free "
        "memory and other processes before the load).",
        fixes=result.fixes,
        open_question=False,
    )


def _stated_context(e: OomEvent, ctx: LogContext) -> int | None:
    """The context length the log states: llama.cpp's ``n_ctx``, vLLM's ``max_model_len``, or
    the ``n_ctx`` an app's load report carries in the event's detail (LM Studio)."""
    for n in (ctx.n_ctx, ctx.max_model_len, e.max_model_len):
        if n:
            return n
    m = _NCTX_DETAIL.search(e.detail or "")
    return int(m["n"]) if m is not None else None


def _stated_long_context(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """A load that failed with a stated context of 128k tokens or more: the KV cache.

    Mechanism. llama.cpp (and the apps on it: LM Studio, Ollama, Jan) allocate the KV cache for
    the whole context when the model loads: n_ctx x layers x 2 (K, V) x KV heads x head size x
    bytes. Per token that is 32 KiB for a 1B model with grouped-query attention (Llama-3.2-1B,
    fp16) and 128 KiB for an 8B one, so 131072 tokens take 4-16 GiB and a million tokens
    32-128 GiB: at that length the cache, not the weights (0.7-4.5 GiB at 4 bits), is the
    largest allocation of the load, and the context is the lever. Applied only where the
    runtime rule left the cause open and the failure is at load or of unknown phase.
    """
    if not is_open(result) or result.cause == "kv_cache_or_context":
        return None
    if ctx.frame_phase not in {None, "model_load", "kv_cache_alloc"}:
        return None
    n = _stated_context(e, ctx)
    if n is None or n < _HUGE_CTX:
        return None
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.45,
        explanation=result.explanation + f" The log states a context of {n} tokens: the KV "
        "cache allocated for it at load is linear in the context and, at that length, larger "
        "than the weights of any model that fits the memory. What would decide: whether the "
        "same model loads at a 32k context.",
        fixes=(
            generic(
                "Load with a shorter context",
                f"the KV cache for {n} tokens is allocated up front; 32768 takes "
                f"{max(1, n // 32768)}x less.",
                ("Context Length: 32768 in the load settings", "-c 32768", "num_ctx 32768"),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


#: the compute-buffer reading when the run's context is unknown: the allocation is known, the
#: lever is not (docs/doctor-causes.md section 6)
_LEVER_UNKNOWN = 0.4


def _compute_buffer_without_context(
    result: Analysis, e: OomEvent, ctx: LogContext
) -> Analysis | None:
    """A llama.cpp compute (graph) buffer that failed in a log that states no context length:
    the micro-batch reading stays, at the confidence of an undecided lever.

    Mechanism. ggml reserves the compute buffer for the worst-case graph of one micro-batch:
    its size is linear in ``n_ubatch`` and, without flash attention, in ``n_ctx`` too (the
    attention scores are n_ctx x n_ubatch x heads; llama.cpp's default context is now the
    model's training context, 128k for recent models). A multi-GiB compute buffer is therefore
    either a large ``-ub`` or a long context, and the message alone cannot tell which; Ollama's
    automatic layer count (too many layers left too little room) is a third reading. Where the
    log states n_ctx, the runtime rule already reads it (>= 16k without flash attention is the
    context) and this rule does not apply.
    """
    if e.runtime != "llama.cpp" or e.stage != "compute" or ctx.n_ctx is not None:
        return None
    if result.cause != "batch_or_activations" or result.confidence <= _LEVER_UNKNOWN:
        return None
    if ctx.flash_attn is True:
        return None  # with flash attention the buffer does not grow with the context
    return Analysis(
        cause=result.cause,
        confidence=_LEVER_UNKNOWN,
        explanation=result.explanation + " The log states no context length: without flash "
        "attention the compute buffer grows with n_ctx x n_ubatch, so a long (default, "
        "training-length) context looks the same as a large micro-batch. What would decide: "
        "the run's n_ctx and flash-attention setting (the `llama_context:` lines of the load "
        "log); a buffer that shrinks with -c 8192 is the context.",
        fixes=result.fixes,
        open_question=False,
    )


#: the failing process holds at most this share of the card while the rest is held elsewhere
_RESTORE_SELF_SHARE = 0.25
_RESTORE_ELSEWHERE_SHARE = 0.5


def _restored_to_saved_device(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """``torch.load`` restoring a checkpoint onto a GPU that other processes fill: every process
    of the job put its copy on the device the checkpoint was saved from.

    Mechanism. Without ``map_location``, ``torch.load`` restores each CUDA storage onto the device
    recorded when it was saved (``torch/serialization.py``: ``default_restore_location`` ->
    ``_cuda_deserialize``), which is ``cuda:0`` for a checkpoint saved by rank 0 or by a
    single-GPU run. In a multi-process job (DDP ranks resuming, data-loader or server workers
    each loading the model) every process deserialises its copy onto that one GPU, so it fills
    with copies held by the sibling processes while the failing process itself holds little:
    ``multi_gpu_imbalance``. The traceback frame places the allocation in that restore; the
    numbers show the failing process holding at most a quarter of the card while at least half
    of it is held outside this process's allocator. An unrelated process on that GPU is the
    competing reading (``oomkit gpus`` decides); ``map_location`` fixes both, so the rule stays
    at 0.5. Without those numbers the restore frame places the load but not the cause, and the
    rule does not apply. Where the message names the other processes (a settled
    ``other_process_holding_memory``), the cause stands and ``map_location`` joins its fixes:
    those processes may be the job's own ranks, which "stop process N" would end.
    """
    if ctx.restore_frame is None:
        return None
    # the sibling-worker reading (rules_siblings: consecutive PIDs on the first GPU) is the same
    # job's processes: each restored its copy there, so map_location leads its fixes too
    siblings = result.cause == "multi_gpu_imbalance" and bool(sibling_workers(e))
    if not siblings and result.cause not in {
        "other_process_holding_memory", "unknown", "model_too_large",
    }:  # fmt: skip
        return None
    # a settled reading (the message names the other processes) keeps its cause; those
    # processes may be this job's own ranks restoring onto the same GPU, so map_location is
    # added to its fixes (stopping a sibling rank ends the job)
    settled = not _fallback(result)
    if settled and result.cause != "other_process_holding_memory" and not siblings:
        return None
    t, x = e.total_bytes, e.requested_bytes
    if t is None or x is None:
        return None
    held = e.process_in_use_bytes
    if held is None:
        if e.reserved_bytes is not None:
            held = e.reserved_bytes
        elif e.allocated_bytes is not None:
            held = e.allocated_bytes + (e.reserved_unallocated_bytes or 0)
    if held is None:
        return None
    free = e.free_bytes if e.free_bytes is not None else x
    elsewhere = t - free - held
    if held > _RESTORE_SELF_SHARE * t or elsewhere < _RESTORE_ELSEWHERE_SHARE * t:
        return None
    device = f"GPU {e.device}" if e.device is not None else "the GPU"
    restore_fix = Fix(
        title="Load the checkpoint to the CPU (or to this rank's own GPU)",
        why="map_location keeps every process's copy off the GPU it was saved from: "
        f"the {size_text(elsewhere)} the other copies hold there is freed.",
        commands=(
            "torch.load(path, map_location='cpu')",
            "torch.load(path, map_location=f'cuda:{local_rank}')",
        ),
        expected_saving_bytes=elsewhere,
    )
    if settled:
        return dataclasses.replace(
            result,
            explanation=result.explanation + " The traceback is in torch.load restoring a "
            "storage onto the device it was saved from: if those processes are this job's own "
            "ranks or workers, each restored its copy there (map_location keeps them off it).",
            fixes=(restore_fix, *result.fixes),
        )
    return Analysis(
        cause="multi_gpu_imbalance",
        confidence=0.5,
        explanation=result.explanation + f" The traceback is in torch.load restoring a storage "
        f"onto the device it was saved from ({ctx.restore_frame[:160]}), and this process holds "
        f"only {100 * held // t}% of {device} while {100 * elsewhere // t}% is held elsewhere: "
        "without map_location every process of the job (DDP ranks resuming, workers) restores "
        "its copy of the checkpoint onto that one device. What would decide: `oomkit gpus` "
        "(several processes of this job on that GPU, the others nearly empty) vs an unrelated "
        "process.",
        fixes=(restore_fix, *result.fixes),
        open_question=False,
    )


#: the GPU allocations a loop's first step makes (not host RAM, not a KV pool sized at start-up)
_STEP_KINDS = frozenset({"cuda_oom", "hip_oom", "xpu_oom", "mps_oom", "cuda_error_oom"})


def _first_step_in_flight(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """A loop's progress bar at 0 of N after it ran a while: the first step's activations.

    Mechanism. A training, evaluation or sampling loop starts its progress bar after the model
    is built and placed; tqdm prints ``0/N [elapsed<?, ...]`` while the first iteration runs and
    nothing has completed. A GPU OOM under such a bar (elapsed >= 1 s, so the loop really ran;
    not a loading/download bar) is therefore the first step: the weights fit, and what the step
    adds (activations of the batch / resolution / sequence length, logits) does not. That is
    the doctor's ``--when first-step`` answer, read from the log, so it decides what the rule
    left open at 0.45. A traceback in model loading, the optimizer step (its states are
    allocated on the first step: the model's size) or a KV-cache allocation outranks it.
    """
    if ctx.first_step_bar is None or e.kind not in _STEP_KINDS or not _fallback(result):
        return None
    if result.cause not in {"model_too_large", "unknown", "batch_or_activations"}:
        return None
    if ctx.frame_phase in {"model_load", "optimizer_step", "kv_cache_alloc"}:
        return None
    if (ctx.completed_steps or 0) > 0:
        return None  # steps completed: the log-facts rule reads growth
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation=result.explanation + f" The loop's progress bar stands at 0 of its steps "
        f"after running a while ({ctx.first_step_bar[:120].strip()}): the model had loaded and "
        "the first step failed, so what the step adds (activations of the batch, resolution or "
        "sequence length) does not fit beside the weights. What would decide: whether batch "
        "size 1 (or the smallest input) passes the first step.",
        fixes=(
            generic(
                "Halve the batch size (or sequence length / resolution)",
                "the first step's activations grow linearly with the batch and the input size.",
                ("batch_size //= 2", "gradient_accumulation_steps *= 2   # keep the batch"),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


def _ollama_layers_overshoot(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """An Ollama runner whose compute (graph) buffer did not fit: too many layers on the GPU.

    Mechanism. Ollama, not the user, decides how many layers go to each GPU: it estimates the
    weights, the KV cache for its ``num_ctx`` and the compute graph, and offloads as many
    layers as that estimate says fit (``llm/memory.go``). The runner then places the weights
    and the KV cache and reserves the compute graph last (``ggml_gallocr_reserve_n``). When that
    last reservation fails, the estimate put more of the model on the GPU than fits beside the
    graph: the lever is fewer GPU layers (``num_gpu``), i.e. the share of the model this GPU
    holds, not the batch -> ``model_too_large`` at 0.45. A context the log states (a long
    ``n_ctx`` makes the graph and KV the cause) keeps the context readings; another process
    that took memory after Ollama's estimate is the competing reading (``oomkit gpus``).
    """
    if not ctx.ollama_runner or e.runtime != "llama.cpp" or e.stage != "compute":
        return None
    if ctx.n_ctx is not None or result.cause != "batch_or_activations":
        return None
    if result.confidence > 0.6:
        return None
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=result.explanation + " Ollama chose how many layers this GPU holds from "
        "its own estimate and the runner reserves the compute graph last, after the weights "
        "and the KV cache: the graph not fitting means the estimate put too many layers on "
        "the GPU. What would decide: whether the model loads with fewer GPU layers "
        "(`num_gpu`), and `oomkit gpus` for memory another process took after the estimate.",
        fixes=(
            generic(
                "Offload fewer layers to the GPU",
                "each layer left on the CPU frees its weights and KV cache on the GPU for the "
                "compute graph.",
                ("PARAMETER num_gpu 20   # Modelfile", '"options": {"num_gpu": 20}   # API'),
            ),
            # (a micro-batch cut sized on the graph would lead it: the layer count is the lever)
            *(f for f in result.fixes if not f.title.startswith("Halve the micro-batch")),
        ),
        open_question=False,
    )


_Rule = Callable[[Analysis, OomEvent, LogContext], "Analysis | None"]
#: the rules refine_by_evidence tries, in order (the first that reads something decides); its
#: prose rules (``stated_*``, colocated_rollout_engine) are also read in the sentences around the
#: message, in the same order: rules_surroundings.PROSE_RULES, which
#: tests/test_doctor_surroundings.py checks against this list
EVIDENCE_RULES: tuple[_Rule, ...] = (
    stated_process_outlives_exit,
    stated_replay_buffer,
    stated_graph_kept_in_inference,
    stated_full_logits,
    stated_chat_history,
    stated_conversation_growth,
    stated_growth,
    stated_rerun,
    stated_eval_fails_training_fits,
    vae_decode_in_flight,
    _restored_to_saved_device,
    _first_step_in_flight,
    stated_fragmentation,
    colocated_rollout_engine,
    stated_cotenants,
    stated_resident_models,
    stated_checkpoint_on_first_gpu,
    stated_one_gpu_of_several,
    stated_reload_on_several_gpus,
    stated_kv_for_context,
    stated_context_unset,
    stated_context_too_large,
    stated_kv_pool_took_memory,
    context_experiment,
    stated_context_budget,
    stated_context_contrast,
    stated_configured_cap,
    stated_dataset_accumulation,
    stated_outputs_kept_on_device,
    stated_free_memory,
    mistralrs_device_map,
    stated_model_too_large,
    stated_training_state_phase,
    stated_load_need_over_available,
    stated_weights_exceed_card,
    stated_card_cannot_run,
    stated_lora_fits_full_does_not,
    stated_full_weights_on_device,
    stated_batch_cut_still_fails,
    stated_conversion_on_host,
    stated_unified_memory,
    stated_pinned_host,
    comfy_loader_node,
    _metal_command_buffer,
    _constructed_at_load,
    _stated_long_context,
    _bare_ggml_weights,
    _ollama_layers_overshoot,
    _compute_buffer_without_context,
)

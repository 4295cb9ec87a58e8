"""vLLM's KV start-up failures: the pool holds no block, or less than one max-length request.

vLLM sizes its KV pool as the residual of ``total x gpu_memory_utilization`` after weights,
activation peak and non-torch memory (memory-formulas.md §4.8), so a KV shortfall of ``need -
avail`` GiB is closed by ``max_model_len x avail / need`` or by raising the utilization by
``(need - avail) / total`` (split from :mod:`oomkit.diagnose.rules_serving`).
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, floor_to, generic, size_text, util_up

__all__ = ["vllm_kv", "vllm_no_blocks"]

_BLOCK = 16  # vLLM default block size (tokens)
_MAX_UTIL = 0.98
#: what must stay outside vLLM's budget when the utilization is raised: the CUDA graphs captured
#: after the KV cache (typically 0.2-1.9 GiB, oomkit.estimate.vllm_cudagraph; vLLM warns
#: "1~3 GiB per GPU", the planner's verdict band in planner/vllm_util.py carries that span) and
#: the CUDA context (~0.5 GiB)
_OUTSIDE_MIN = 1024**3


def _fb(n: int | None) -> str:
    return size_text(n)


def _util_fix(
    ctx: LogContext, extra: int, why: str, *, floor_bytes: int | None = None
) -> Fix | None:
    """The utilization raise that grows vLLM's budget by ``extra``, from the GPU total, else
    from a lower bound of it (``floor_bytes``: what the log shows inside the budget, over the
    utilization; a larger GPU needs a smaller raise, so the raise sized on the bound is enough).
    None above :data:`_MAX_UTIL` or where less than :data:`_OUTSIDE_MIN` would stay outside."""
    util, total = ctx.gpu_memory_utilization, ctx.total_gpu_memory_bytes
    if util is None:
        return None
    bound = False
    if not total:
        if not floor_bytes:
            return None
        total, bound = floor_bytes, True
    new = util_up(util + extra / total)
    if new > _MAX_UTIL or (1 - new) * total < _OUTSIDE_MIN:
        return None
    gpu = f"the GPU (at least {_fb(total)}: what the log shows in the {util:.2f} budget)"
    return Fix(
        title=f"Raise --gpu-memory-utilization to {new:.2f}",
        why=why + f" {_fb(extra)} more of {gpu if bound else f'the {_fb(total)} GPU'} is "
        f"{util:.2f} -> {new:.2f}, leaving at least {_fb(int((1 - new) * total))} outside the "
        "budget for the CUDA graphs captured after it (only if nothing else uses the GPU).",
        commands=(f"--gpu-memory-utilization {new:.2f}",),
        expected_saving_bytes=extra,
        fits=True,
        order=1,  # the remedy vLLM's own message names first, and the request stays whole
    )


def _stated(ctx: LogContext) -> str:
    """What the log states about the run when it has no profiling line, and what a shorter
    context would do: with chunked prefill (V1 always; V0 above 32K, PR #6666) the profile run
    pushes max_num_batched_tokens tokens, so --max-model-len does not change the budget the
    blocks come from; a pool of no block holds no request of any length."""
    facts = []
    if ctx.weights_bytes is not None:
        facts.append(f"weights {_fb(ctx.weights_bytes)} per GPU")
    if ctx.tensor_parallel_size:
        facts.append(f"tensor_parallel_size {ctx.tensor_parallel_size}")
    if ctx.gpu_memory_utilization is not None:
        facts.append(f"gpu_memory_utilization {ctx.gpu_memory_utilization:.2f}")
    if ctx.max_model_len:
        facts.append(f"max_model_len {ctx.max_model_len}")
    if not facts:
        return " (the log excerpt has no profiling numbers)."
    out = f" (no profiling line; the log states {', '.join(facts)})."
    if ctx.weights_bytes is not None and ctx.gpu_memory_utilization:
        floor = int(ctx.weights_bytes / ctx.gpu_memory_utilization)
        out += (
            f" The weights alone fill the {ctx.gpu_memory_utilization:.2f} budget of a "
            f"{_fb(floor)} GPU."
        )
    if ctx.max_model_len and ctx.max_model_len > 32768:
        out += (
            f" A shorter --max-model-len adds no block: at {ctx.max_model_len} tokens chunked "
            "prefill profiles max_num_batched_tokens, not the context, so the budget left for "
            "blocks is the same at any length."
        )
    return out


def _profile_batch(ctx: LogContext) -> str:
    """How many sequences the profile run the log's engine generation pushes by default.

    V0 (``worker.py determine_num_available_blocks`` -> ``model_runner.profile_run``, 0.6.3:
    ``max_num_seqs`` dummy sequences sharing ``max_num_batched_tokens``): SchedulerConfig's 256
    sequences and ``max(max_model_len, 2048)`` tokens, 2048 once chunked prefill is on (0.5.3+
    turns it on above 32K, PR #6666; :mod:`oomkit.estimate.vllm_v0_chunked`). V1: 1024 sequences
    on a >= 70 GiB GPU other than an A100 (every GPU in 0.8.0-0.8.3), else 256
    (:func:`oomkit.estimate.vllm_engines.v1_batch_defaults`, PR #16158).
    """
    release = f" {ctx.vllm_version}" if ctx.vllm_version else ""
    if ctx.vllm_engine == "V0":
        return (
            f"this log's vLLM V0{release} profiles max_num_seqs sequences, 256 by default, "
            "sharing max_num_batched_tokens tokens, max(max_model_len, 2048) by default or "
            "2048 with chunked prefill, which V0 turns on above a 32K context"
        )
    if ctx.vllm_engine == "V1":
        return (
            f"this log's vLLM V1{release} profiles max_num_seqs sequences, 1024 by default "
            "on a >= 70 GiB GPU other than an A100 (every GPU in 0.8.0-0.8.3), else 256"
        )
    return "vLLM V1 profiles 1024 sequences by default on a large GPU, V0 and smaller GPUs 256"


def vllm_kv(e: OomEvent, ctx: LogContext) -> Analysis:
    mml = e.max_model_len
    fixes: list[Fix] = []
    if e.needed_kv_bytes is not None and e.available_kv_bytes is not None and mml:
        need, avail = e.needed_kv_bytes, e.available_kv_bytes
        fit = e.estimated_max_model_len or (
            floor_to(mml * max(avail, 0) // need, _BLOCK) if need > 0 else None
        )
        expl = (
            f"vLLM needs {_fb(need)} of KV cache for one request of max_model_len={mml} but only "
            f"{_fb(avail)} is left after weights and activations (short by {_fb(need - avail)})."
        )
        if fit:
            fixes.append(
                Fix(
                    title=f"Serve a shorter context: --max-model-len {fit}",
                    why=f"KV is linear in length: {mml} x {_fb(avail)}/{_fb(need)} ~ {fit} tokens"
                    + (" (vLLM's own estimate)." if e.estimated_max_model_len else "."),
                    commands=(f"--max-model-len {fit}",),
                    expected_saving_bytes=need - avail,
                    fits=True,
                    order=2,
                )
            )
        if need // 2 <= avail:
            fixes.append(
                Fix(
                    title="Store the KV cache in fp8: --kv-cache-dtype fp8",
                    why=f"fp8 halves the KV need to {_fb(need // 2)}, which fits in {_fb(avail)}.",
                    commands=("--kv-cache-dtype fp8",),
                    expected_saving_bytes=need - need // 2,
                    fits=True,
                    order=3,
                )
            )
        util = ctx.gpu_memory_utilization
        # the budget holds at least the weights and the KV pool vLLM reported
        floor = int((ctx.weights_bytes + avail) / util) if ctx.weights_bytes and util else None
        u = _util_fix(
            ctx, need - avail, "the KV pool is what is left of the budget;", floor_bytes=floor
        )
        if u is not None:
            fixes.append(u)
        short = need - avail
    else:
        cap = e.kv_capacity_tokens
        held = f"the {cap} tokens" if cap else "what"
        expl = f"max_model_len={mml} needs more KV cache than {held} vLLM could allocate"
        short = None
        if cap and mml:
            expl += f" ({100 * cap // mml}% of it)."
            fixes.append(
                Fix(
                    title=f"Serve a shorter context: --max-model-len {floor_to(cap, _BLOCK)}",
                    why=f"the KV pool holds {cap} tokens; a request of at most that length fits.",
                    commands=(f"--max-model-len {floor_to(cap, _BLOCK)}",),
                    expected_saving_bytes=(ctx.kv_cache_bytes * (mml - cap) // cap)
                    if ctx.kv_cache_bytes
                    else None,
                )
            )
            u = None
            if ctx.kv_cache_bytes and ctx.kv_cache_bytes > 0:
                short = ctx.kv_cache_bytes * (mml - cap) // cap
                u = _util_fix(
                    ctx, short, f"each token of KV takes {_fb(ctx.kv_cache_bytes // cap)};"
                )
            if u is not None:
                fixes.append(u)
            elif mml > cap:
                grow = mml / cap
                fixes.append(
                    Fix(
                        title=f"Grow the KV pool {grow:.2f}x: raise --gpu-memory-utilization",
                        why=f"the pool must hold {mml} tokens instead of {cap}; it is what is "
                        "left of total x gpu_memory_utilization after weights and activations, "
                        "so raise the utilization until it grows by that factor (the log does "
                        "not give the profiling numbers to compute the exact value).",
                        commands=("--gpu-memory-utilization 0.95",),
                        expected_saving_bytes=None,
                    )
                )
        else:
            expl += " (the quoted message lost the pool's size)."
            fixes.extend(
                (
                    generic(
                        f"Serve a shorter context: --max-model-len {mml // 2 if mml else 8192}",
                        "the KV pool must hold one request of max_model_len tokens; the start-up "
                        "log's KV cache size says how many tokens it holds.",
                        (f"--max-model-len {mml // 2 if mml else 8192}",),
                    ),
                    generic(
                        "Grow the KV pool: raise --gpu-memory-utilization",
                        "the pool is what is left of total x gpu_memory_utilization after the "
                        "weights and activations.",
                        ("--gpu-memory-utilization 0.95",),
                    ),
                )
            )
    fixes.append(
        generic(
            "Shard the model: more tensor parallelism",
            "each extra GPU takes its share of the weights, leaving more room for KV.",
            ("--tensor-parallel-size <2x current>",),
        )
    )
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.9,
        explanation=expl
        + (
            f" Raising the budget by {_fb(short)} or shortening the context fixes it."
            if short
            else ""
        ),
        fixes=tuple(fixes),
    )


def vllm_no_blocks(e: OomEvent, ctx: LogContext) -> Analysis:
    w, nt, act, _kv = (
        ctx.weights_bytes,
        ctx.non_torch_bytes,
        ctx.activation_peak_bytes,
        ctx.kv_cache_bytes,
    )
    util, total = ctx.gpu_memory_utilization, ctx.total_gpu_memory_bytes
    if w is not None and util is not None and total:
        budget = int(total * util)
        used = w + (nt or 0) + (act or 0)
        expl = (
            f"vLLM's budget is {_fb(total)} x {util:.2f} = {_fb(budget)}; weights {_fb(w)} + "
            f"non-torch {_fb(nt)} + activation peak {_fb(act)} = {_fb(used)}, "
            + (
                f"leaving {_fb(budget - used)} for the KV cache."
                if budget >= used
                else f"{_fb(used - budget)} over the budget before any KV cache (vLLM logs it "
                f"as {_fb(budget - used)} for the KV cache)."
            )
        )
        fixes: list[Fix] = []
        need_util = util_up(used / total + 0.05)
        if need_util <= _MAX_UTIL:
            fixes.append(
                Fix(
                    title=f"Raise --gpu-memory-utilization to {need_util:.2f}",
                    why=f"({_fb(used)} + ~5% for KV) / {_fb(total)}.",
                    commands=(f"--gpu-memory-utilization {need_util:.2f}",),
                    expected_saving_bytes=used - budget + int(0.05 * total),
                )
            )
        if act:
            fixes.append(
                Fix(
                    title="Shrink the profiling batch: --max-num-batched-tokens 2048",
                    why=f"the activation peak ({_fb(act)}) is measured with max_num_batched_tokens "
                    "tokens in one forward pass; fewer tokens, smaller peak.",
                    commands=("--max-num-batched-tokens 2048 --max-num-seqs 64",),
                    expected_saving_bytes=act // 2,
                )
            )
        fixes.append(
            generic(
                "Quantize or offload the weights",
                "AWQ/GPTQ/fp8 weights or CPU offload free the weights' share.",
                ("--quantization fp8", "--cpu-offload-gb 4"),
            )
        )
        cause = (
            "model_too_large" if w >= budget * 0.8 or w >= (act or 0) else "batch_or_activations"
        )
        return Analysis(cause=cause, confidence=0.75, explanation=expl, fixes=tuple(fixes))
    # KV pool = utilization x total - (weights + non-torch + activation peak): without the
    # profiling line any of the three (or a co-tenant shrinking what is free) can be the one that
    # left nothing, so the weights reading is a guess at the confidence of an undecided cause
    return Analysis(
        cause="model_too_large",
        confidence=0.35,
        explanation="vLLM found no memory left for KV cache blocks after loading the weights and "
        "profiling activations" + _stated(ctx) + " What would decide: "
        "the profiling line before it (model weights, activation peak, non-torch memory against "
        "gpu_memory_utilization x total): weights near the budget mean the model, a large "
        "activation peak means the profiling batch (--max-num-seqs, --max-num-batched-tokens; "
        + _profile_batch(ctx)
        + "), and `oomkit gpus` shows a co-tenant.",
        fixes=(
            generic(
                "Raise --gpu-memory-utilization or quantize/offload the model",
                "the KV pool is the residual of utilization x total after weights. "
                "--quantization fp8 quantizes a bf16/fp16 checkpoint at load time; AWQ or GPTQ "
                "need a pre-quantized checkpoint (e.g. a '...-AWQ' repository passed as the "
                "model, which vLLM then detects).",
                ("--gpu-memory-utilization 0.95", "--quantization fp8", "--cpu-offload-gb 4"),
            ),
            generic(
                "Profile a smaller batch",
                "the activation peak subtracted from the budget is measured at max_num_seqs "
                "sequences / max_num_batched_tokens tokens in one forward pass.",
                # 256 is V0's default (no change there): half of it
                (
                    f"--max-num-seqs {128 if ctx.vllm_engine == 'V0' else 256}",
                    "--max-num-batched-tokens 2048",
                ),
            ),
            generic(
                "Check for other processes on the GPU",
                "vLLM's budget is a share of total memory; a co-tenant shrinks the residual.",
                ("nvidia-smi",),
            ),
        ),
    )

"""Diagnosis of SGLang's memory-pool messages (issue 9).

SGLang sizes its static pool as ``total x mem_fraction_static`` (weights + KV); the KV token
budget is ``(avail_after_weights - total x (1 - mem_fraction_static)) / bytes_per_token``
(``model_runner.py`` ``profile_max_num_token``). A budget <= 0 therefore means the weights alone
take more than ``mem_fraction_static`` of the card.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, shorter_context, size_text

__all__ = ["log_pool_bytes", "log_split", "sglang_pool", "sglang_runtime"]

_MAX_MFS = 0.95
#: what SGLang's rest outside the fraction keeps for activations: the planner's bound, from
#: SGLang's tuning guide (:mod:`oomkit.estimate.sglang_activation_floor`)
_FLOOR_TEXT = "5 GiB (SGLang's tuning guide: 'reserving 5-8 GB of memory for activations')"
# the runtime share SGLang's defaults keep outside the static pool (activations, CUDA graphs) is
# ~10-15%: weights that leave less than that are the cause label's "model too large"
_SGL_MIN_DYNAMIC = 0.10


def _fb(n: int | None) -> str:
    return size_text(n)


def log_split(ctx: LogContext) -> tuple[int | None, int | None]:
    """(weights per GPU, SGLang's ``total_gpu_memory``) from its "Load weight end ... avail
    mem=X GB, mem usage=Y GB" line: ``total`` is the free memory measured before the weights
    load (``min_per_gpu_memory``), so it is X + Y; (None, None) when the log lacks the line."""
    w, avail = ctx.weights_bytes, ctx.avail_after_weights_bytes
    if w is None or avail is None:
        return None, None
    return w, w + avail


def card_total(ctx: LogContext) -> int | None:
    """The card's capacity where the log states it without SGLang's load line (nvidia-smi's
    table, a device line, vLLM-style ``total_gpu_memory``): the smallest, as SGLang sizes the
    pool on ``min_per_gpu_memory`` (model_runner.py ``init_memory_pool``). (docfix22) The
    unsized step of the fraction must keep SGLang's activation floor outside it on this card
    too: ``total x (1 - fraction)`` is at most what is left (``largest_fraction``)."""
    totals = [t for _, _, t in ctx.smi_memory if t > 0]
    totals += [d.total_bytes for d in ctx.devices if d.total_bytes]
    if ctx.total_gpu_memory_bytes:
        totals.append(ctx.total_gpu_memory_bytes)
    return min(totals) if totals else None


def log_pool_bytes(ctx: LogContext, frac: float) -> int | None:
    """SGLang's own KV pool at ``frac`` from the log's numbers, in bytes (negative: none):
    ``rest_memory = available - total x (1 - mem_fraction_static)``
    (python/sglang/srt/model_executor/model_runner.py ``profile_max_num_token``, v0.4.x;
    ``model_runner_kv_cache_mixin.py`` / ``profile_available_bytes`` in newer releases)."""
    w, total = log_split(ctx)
    if w is None or total is None:
        return None
    return (total - w) - int(total * (1 - frac))


def _sized_mfs(ctx: LogContext, mfs: float | None) -> Fix | None:
    """Without the model (no bytes per KV token) the fraction is sized by SGLang's own pool
    arithmetic on the log's numbers (:func:`log_pool_bytes`): the smallest hundredth above the
    run's fraction whose pool is positive (SGLang starts), while the rest outside it keeps the
    activation floor of SGLang's tuning guide (:func:`~oomkit.estimate.sglang_activation_floor.
    largest_fraction`, the planner's bound); the why states the pool there and at the largest
    such fraction, since the model's KV per token (``-m``) sizes the tokens."""
    _, total = log_split(ctx)
    # lazy: a plain log imports no estimator (tests/test_doctor_model_fixes.py)
    from oomkit.estimate.sglang_activation_floor import largest_fraction

    top = largest_fraction(total or 0)
    if total is None or top is None:
        return None
    f = round(int((mfs or 0.0) * 100) / 100 + 0.01, 2)
    while f <= top:
        pool = log_pool_bytes(ctx, f)
        if pool is not None and pool > 0:
            best = log_pool_bytes(ctx, top) or pool
            return Fix(
                title=f"Raise --mem-fraction-static to {f:.2f}",
                why=f"SGLang's KV pool is avail - total x (1 - mem_fraction_static): "
                f"{_fb(pool)} at {f:.2f}, the smallest fraction that leaves one, and "
                f"{_fb(best)} at {top:.2f}, the largest that keeps {_FLOOR_TEXT} outside it "
                "for activations; how many tokens that is depends on the model's KV per token "
                "(name it with -m to size the fraction for one full-context request).",
                commands=(f"--mem-fraction-static {f:.2f}",),
                expected_saving_bytes=None,
            )
        f = round(f + 0.01, 2)
    return None


def _mfs_fix(mfs: float | None, ctx: LogContext) -> Fix | None:
    """The fraction raise: sized on the log's numbers (:func:`_sized_mfs`), else SGLang's
    description of the fraction with a step of 0.05 up to 0.95; none above the largest fraction
    that keeps the activation floor outside the pool (never the run's own value or less)."""
    now = log_pool_bytes(ctx, mfs) if mfs is not None else None
    if log_split(ctx)[1] is not None and (now is None or now <= 0):
        return _sized_mfs(ctx, mfs)
    # no log numbers, or they leave a pool at the run's own fraction (SGLang measured its total
    # on another rank or before another process): a step, not a size
    new = min(_MAX_MFS, (mfs or 0.85) + 0.05)
    total = log_split(ctx)[1] or card_total(ctx)
    # lazy: a plain log imports no estimator (tests/test_doctor_model_fixes.py)
    from oomkit.estimate.sglang_activation_floor import largest_fraction

    top = largest_fraction(total) if total is not None else None
    if total is not None:  # the log's total: never past the activation floor (as the planner)
        if top is None:
            return None
        new = min(new, top)
    if mfs is not None and new <= mfs:
        return None
    return generic(
        f"Raise --mem-fraction-static to {new:.2f}",
        "the static pool (weights + KV) is total x mem_fraction_static; a larger fraction leaves "
        "room for KV tokens after the weights (but less for activations/CUDA graphs).",
        (f"--mem-fraction-static {new:.2f}",),
    )


def sglang_pool(e: OomEvent, ctx: LogContext) -> Analysis:
    w, avail, mfs = ctx.weights_bytes, ctx.avail_after_weights_bytes, e.mem_fraction_static
    mfs = mfs or ctx.mem_fraction_static
    tokens = e.kv_capacity_tokens
    total = (w + avail) if w is not None and avail is not None else None
    share = avail / total if avail is not None and total else None
    expl = "SGLang could not build its KV pool"
    if tokens is not None:
        expl += f" (profiled KV budget {tokens} tokens)"
    expl += ": after the weights, total x mem_fraction_static leaves no room for KV tokens."
    if w is not None and avail is not None and share is not None:
        expl += (
            f" The weights take {_fb(w)} per GPU and leave {_fb(avail)} ({share:.0%} of the card)."
        )
    # SGLang's pool is rest = avail - total x (1 - mem_fraction_static) (model_runner.py
    # profile_max_num_token): any fraction above the weights' share (1 - share) leaves a pool.
    # Raising it cannot be the fix only where that fraction leaves less than the activation
    # floor outside it (largest_fraction) or the run already used one at least that large
    # (then the log's numbers do not explain the failure)
    raise_fix = _mfs_fix(mfs, ctx)
    raisable = share is not None and raise_fix is not None
    if total is not None and avail is not None and mfs is not None and raisable:
        rest = avail - int(total * (1 - mfs))
        expl += (
            f" SGLang's pool is avail - total x (1 - mem_fraction_static) = {_fb(avail)} - "
            f"{_fb(total)} x {1 - mfs:.2f} = {_fb(rest)} at {mfs:.2f}; any fraction above "
            f"{1 - (share or 0):.2f} leaves a pool."
        )
    # the cause: weights that take all but ~10-15% of the card are the model's size (the
    # fraction must then be raised past SGLang's defaults), whatever the fix
    weights_full = share is not None and share < _SGL_MIN_DYNAMIC + 0.05
    if weights_full or (tokens is not None and tokens < 0 and share is None):
        shrink = (
            generic(
                "Load the weights quantized (fp8 / AWQ / GPTQ)",
                "fp8 weights take half of bf16 ones.",
                ("--quantization fp8", "pick an AWQ/GPTQ checkpoint"),
            ),
            generic(
                "Shard over more GPUs: --tp 2x current",
                "each GPU holds 1/tp of the weights.",
                ("--tp <2x current>",),
            ),
        )
        if raisable and raise_fix is not None and share is not None:
            expl += (
                f" Raising mem_fraction_static above {1 - share:.2f} fixes it while at least "
                f"{_FLOOR_TEXT} stays outside it; else the weights must shrink."
            )
            return Analysis(
                cause="model_too_large",
                confidence=0.65,
                explanation=expl,
                fixes=(raise_fix, *shrink),
            )
        expl += (
            " The weights leave too little for any KV pool plus the share SGLang needs outside "
            f"mem_fraction_static (at least {_FLOOR_TEXT}): raising mem_fraction_static cannot "
            "fix it; the weights must shrink."
        )
        return Analysis(
            cause="model_too_large",
            confidence=0.65 if weights_full else 0.5,
            explanation=expl,
            fixes=shrink,
        )
    fixes = [] if raise_fix is None else [raise_fix]
    cap = shorter_context(ctx.max_model_len)
    fixes.append(
        generic(
            "Cap the context and the running requests",
            "a smaller pool suffices for fewer/shorter requests.",
            (*((f"--context-length {cap}",) if cap else ()), "--max-running-requests 64"),
        )
    )
    fixes += [
        generic(
            "Store the KV cache in fp8",
            "fp8 halves the bytes per KV token.",
            ("--kv-cache-dtype fp8_e5m2",),
        ),
    ]
    return Analysis(
        cause="kv_cache_or_context", confidence=0.55, explanation=expl, fixes=tuple(fixes)
    )


def sglang_runtime(e: OomEvent, ctx: LogContext) -> Analysis:
    phase = "prefill" if "prefill" in (e.format or "") else "decode"
    tok = e.prefill_tokens
    expl = (
        f"SGLang's KV pool ran out during {phase}"
        + (f" (it needed {tok} more tokens)" if tok else "")
        + ": the running requests' KV tokens fill the pool the server sized at startup."
    )
    fixes = [
        generic(
            "Fewer running requests",
            "each running request holds its KV tokens in the pool.",
            ("--max-running-requests 32",),
        ),
        generic(
            "Smaller prefill chunks",
            "a prefill chunk reserves KV for all its tokens at once.",
            (f"--chunked-prefill-size {max(512, (tok or 8192) // 2)}",),
        ),
        generic(
            "Lower --mem-fraction-static only if CUDA OOMs appear too; raise it otherwise",
            "the pool is total x mem_fraction_static minus the weights.",
            ("--mem-fraction-static 0.9",),
        ),
    ]
    return Analysis(
        cause="kv_cache_or_context", confidence=0.6, explanation=expl, fixes=tuple(fixes)
    )

"""Model-aware SGLang fixes: ``--mem-fraction-static``, ``--context-length``,
``--max-running-requests`` and ``--chunked-prefill-size`` sized by :mod:`oomkit.estimate.sglang`.

SGLang's KV token pool is ``free0 x mem_fraction_static - weights`` divided by the bytes of one
token's KV (``model_runner.py`` ``profile_max_num_token``); the rest, ``free0 x (1 -
mem_fraction_static)``, holds activations and CUDA graphs. The smallest fraction whose pool holds
one request of the context length while that rest keeps SGLang's activation floor (the
planner's bound, :mod:`oomkit.estimate.sglang_activation_floor`) is the sized
``--mem-fraction-static`` fix. When the log
gives no GPU capacity, it is inferred from SGLang's own ``Load weight end ... avail mem=X GB,
mem usage=Y GB`` line (capacity ~ X + Y + the CUDA context).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.diagnose.fixes import Fix, shorter_context, size_text
from oomkit.diagnose.model_fixes import EstimatedFix
from oomkit.diagnose.rules_sglang import log_pool_bytes, log_split
from oomkit.estimate.sglang_activation_floor import (
    ACTIVATION_FLOOR,
    FLOOR_SOURCE,
    activation_room,
)
from oomkit.spec.hardware import DeviceTarget, Hardware

if TYPE_CHECKING:
    from oomkit.diagnose.events import LogContext, OomEvent
    from oomkit.estimate.breakdown import Estimate
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

__all__ = ["sglang_fixes"]

_MAX_MFS = 0.95
#: a pool that holds one request of this many tokens (or the context length, if shorter) is the
#: target of the sized fraction: SGLang starts with any positive pool, but a pool smaller than
#: one ordinary request retracts every request
_USEFUL_TOKENS = 8192
_MIN_CONTEXT = 2048
_SUP_MFS = ("Raise --mem-fraction-static",)
_SUP_LEN = ("Cap the context and the running requests",)


def _fb(n: int | None) -> str:
    return size_text(n)


def _hardware(ctx: LogContext, hw: Hardware | None) -> tuple[Hardware, str] | None:
    if hw is not None and hw.devices and hw.devices[0].capacity_bytes:
        return hw, "GPU as given"
    w, avail = ctx.weights_bytes, ctx.avail_after_weights_bytes
    if w is None or avail is None:
        return None
    from oomkit.estimate.overhead import cuda_context_bytes

    probe = DeviceTarget(name="GPU", capacity_bytes=w + avail)
    overhead, _ = cuda_context_bytes("sglang", probe)
    cap = w + avail + overhead
    return (
        Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=cap),)),
        f"GPU capacity inferred as {_fb(cap)} from SGLang's 'avail mem' + 'mem usage'",
    )


def _tp_from_weights(est_weights: int, logged: int | None) -> int | None:
    """The tensor-parallel size a log without SGLang's ``ServerArgs`` line ran at: each rank
    loads 1/tp of the weights, so the "mem usage" of "Load weight end" against the estimate at
    --tp 1 names it (within 25%); None when it is 1 or no power of two matches."""
    if not logged:
        return None
    ratio = est_weights / logged
    for tp in (2, 4, 8, 16):
        if abs(ratio - tp) <= 0.25 * tp:
            return tp
    return None


def _log_tokens(ctx: LogContext, frac: float, cell: int) -> int | None:
    """SGLang's own pool at ``frac`` from the log's numbers, in tokens: ``max_num_token = rest
    x 2^30 // cell_size`` on the pool bytes of :func:`~oomkit.diagnose.rules_sglang.log_pool_bytes`
    (python/sglang/srt/model_executor/model_runner.py ``profile_max_num_token``, v0.4.x)."""
    rest = log_pool_bytes(ctx, frac)
    if rest is None or not cell:
        return None
    return max(0, rest) // cell


def _sized_fraction(
    spec: ModelSpec,
    s: InferenceSettings,
    hardware: Hardware,
    ctx: LogContext,
    frac0: float,
    length: int,
    tokens0: int | None,
    basis: str,
) -> Fix | None:
    """The smallest ``--mem-fraction-static`` (in hundredths, up to :data:`_MAX_MFS`) whose
    pool holds one request of the context length (else one of :data:`_USEFUL_TOKENS`), with
    the rest outside the fraction still holding what oomkit's SGLang estimate puts there (one
    prefill chunk's activations + the CUDA-graph logits, ``outside_pool``) and SGLang's
    activation floor (:func:`~oomkit.estimate.sglang_activation_floor.activation_room`, the
    planner's bound). The tokens are SGLang's own arithmetic on the log's
    numbers when it has them (:func:`_log_tokens`), else the estimate's."""
    from oomkit.estimate.sglang import estimate_sglang

    for target in dict.fromkeys((length, min(length, _USEFUL_TOKENS))):
        if (tokens0 or 0) >= target:
            return None
        f = round(frac0 + 0.01, 2)
        while f <= _MAX_MFS:
            est = estimate_sglang(spec, dataclasses.replace(s, mem_fraction_static=f), hardware)
            tokens, pool, rest = _pool(est)
            cell = est.runtime_details.get("cell_size_bytes")
            cell_b = cell if isinstance(cell, int) else 0
            logged = _log_tokens(ctx, f, cell_b)
            if logged is not None:
                tokens, pool = logged, logged * cell_b
            room = activation_room(est)
            left = rest if room is None else room  # no outside_pool sized: the whole rest
            if left < ACTIVATION_FLOOR:
                break  # a larger fraction leaves even less outside it
            if tokens is not None and tokens >= target:
                what = "one full-context" if target == length else f"one {target}-token"
                src = "SGLang's arithmetic on the log's numbers" if logged is not None else ""
                return EstimatedFix(
                    title=f"Raise --mem-fraction-static to {f:.2f}",
                    why=f"the smallest fraction (from {frac0:.2f}) whose KV pool holds "
                    f"{what} request ({length} tokens of context): {tokens} tokens, "
                    f"{_fb(pool)}{' (' + src + ')' if src else ''}, while {_fb(rest)} stays "
                    f"outside it, {_fb(left)} of it for activations after the CUDA graphs "
                    f"(at least {_fb(ACTIVATION_FLOOR)}, {FLOOR_SOURCE}) {basis}",
                    commands=(f"--mem-fraction-static {f:.2f}",),
                    expected_saving_bytes=max(1, pool - (tokens0 or 0) * cell_b),
                    supersedes=_SUP_MFS,
                    fits=True,
                    order=1,
                )
            f = round(f + 0.01, 2)
    return None


def _pool(est: Estimate) -> tuple[int | None, int, int]:
    """(tokens, KV pool bytes, activations rest bytes) of the first rank."""
    comps = {c.label: c.n_bytes for c in est.devices[0].components}
    tokens = est.runtime_details.get("max_total_num_tokens")
    return (
        tokens if isinstance(tokens, int) else None,
        comps.get("KV token pool", 0),
        comps.get("activations + CUDA graphs (reserved rest)", 0),
    )


def sglang_fixes(
    spec: ModelSpec, user: InferenceSettings, e: OomEvent, ctx: LogContext, hw: Hardware | None
) -> list[Fix]:
    """Sized SGLang fixes for the resolved model (empty when no GPU capacity is known)."""
    from oomkit.estimate.sglang import estimate_sglang, sglang_batch_defaults

    got = _hardware(ctx, hw)
    if got is None:
        return []
    hardware, cap_note = got
    s = dataclasses.replace(
        user,
        runtime="sglang",
        tp=user.tp or ctx.tensor_parallel_size,
        mem_fraction_static=user.mem_fraction_static
        or e.mem_fraction_static
        or ctx.mem_fraction_static,
        ctx=user.ctx or ctx.max_model_len,
    )
    est0 = estimate_sglang(spec, s, hardware)
    tp_w = _tp_from_weights(est0.devices[0].weights_bytes, ctx.weights_bytes) if not s.tp else None
    if tp_w is not None:
        s = dataclasses.replace(s, tp=tp_w)
        est0 = estimate_sglang(spec, s, hardware)
    frac_v, ctx_v = est0.settings["mem_fraction_static"], est0.settings["ctx"]
    if not isinstance(frac_v, float) or not isinstance(ctx_v, int):
        return []
    frac0, length = frac_v, ctx_v
    cap = hardware.devices[0].capacity_bytes or 0
    tokens0, _, _ = _pool(est0)
    cell0 = est0.runtime_details.get("cell_size_bytes")
    logged0 = _log_tokens(ctx, frac0, cell0) if isinstance(cell0, int) else None
    if logged0 is not None:  # the run the log shows: SGLang's own arithmetic on its numbers
        tokens0 = logged0
    basis = f"(oomkit's SGLang estimate for {spec.name}; {cap_note}.)"
    out: list[Fix] = []
    target = min(length, _USEFUL_TOKENS)
    w_log, total_log = log_split(ctx)
    weights = w_log if w_log is not None else est0.devices[0].weights_bytes
    if weights > (total_log or cap) * _MAX_MFS:
        # no fraction holds the weights: a larger fraction or smaller prefill chunks cannot help
        n_given = len(hw.devices) if hw is not None and hw.devices else 1
        return _weights_fixes(spec, s, hardware, est0, target, n_given, basis)
    mfs = _sized_fraction(spec, s, hardware, ctx, frac0, length, tokens0, basis)
    if mfs is not None:
        out.append(mfs)
    cell = est0.runtime_details.get("cell_size_bytes")
    if tokens0 is not None and tokens0 < length and isinstance(cell, int) and cell:
        fit = tokens0 // 256 * 256
        if fit >= _MIN_CONTEXT:
            out.append(
                EstimatedFix(
                    title=f"Serve a shorter context: --context-length {fit}",
                    why=f"at --mem-fraction-static {frac0:.2f} the pool holds {tokens0} tokens "
                    f"of {_fb(cell)} each; one request of at most {fit} tokens fits {basis}",
                    commands=(f"--context-length {fit}",),
                    expected_saving_bytes=None,
                    supersedes=_SUP_LEN,
                )
            )
    if tokens0 is not None and tokens0 >= length:
        n = max(1, tokens0 // length)
        out.append(
            EstimatedFix(
                title=f"Cap running requests: --max-running-requests {n}",
                why=f"the pool holds {tokens0} tokens, {n} request(s) of {length} tokens; more "
                f"concurrent requests fill it and SGLang retracts or fails {basis}",
                commands=(f"--max-running-requests {n}",),
                expected_saving_bytes=None,
                # the sized form of the rules' "cap the context and the running requests": one
                # full-context request fits, so no shorter context is needed
                supersedes=_SUP_LEN,
            )
        )
    chunk, _ = sglang_batch_defaults(cap or None, s.tp or 1)
    # the rules' generic context cap (fixes.shorter_context of the stated context) is no change
    # when the model's own context is no longer: drop it even where no sized length fix exists
    generic_cap = shorter_context(ctx.max_model_len)
    stale = generic_cap is None or generic_cap >= length
    replaced = any(_SUP_LEN[0] in getattr(f, "supersedes", ()) for f in out)
    out.append(
        EstimatedFix(
            title=f"Smaller prefill chunks: --chunked-prefill-size {chunk // 2}",
            why=f"SGLang's default for this GPU is {chunk} tokens per prefill chunk; prefill "
            "activations and the KV a chunk reserves at once halve with it "
            f"{basis}",
            commands=(f"--chunked-prefill-size {chunk // 2}",),
            expected_saving_bytes=None,
            supersedes=_SUP_LEN if stale and not replaced else (),
        )
    )
    return out


def _weights_fixes(
    spec: ModelSpec,
    s: InferenceSettings,
    hardware: Hardware,
    est0: Estimate,
    target: int,
    n_given: int,
    basis: str,
) -> list[Fix]:
    """The weights of one rank exceed what any ``--mem-fraction-static`` can hold (SGLang's
    "Not enough memory" at start-up with, e.g., Llama-3.1-70B in bf16 on one 80 GB card): the
    fixes that shrink the weights per GPU, each sized by the SGLang estimate until the pool
    holds one ``target``-token request: the smallest tensor-parallel size (a hardware change
    beyond the GPUs given), then fp8 or AWQ weights."""
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.sglang import estimate_sglang

    w0 = est0.devices[0].weights_bytes
    dev = hardware.devices[0]
    out: list[Fix] = []
    tp0 = s.tp or 1
    for tp in (2, 4, 8, 16):
        if tp <= tp0:
            continue
        try:
            est = estimate_sglang(
                spec, dataclasses.replace(s, tp=tp), Hardware(devices=(dev,) * tp)
            )
        except InvalidSettingError:  # heads not divisible by tp
            continue
        tokens, pool, _ = _pool(est)
        if tokens is not None and tokens >= target:
            w = est.devices[0].weights_bytes
            out.append(
                EstimatedFix(
                    title=f"Shard the weights over {tp} GPUs: --tp {tp}",
                    why=f"the weights take {_fb(w0)} per GPU at --tp {tp0}, more than any "
                    f"--mem-fraction-static can hold on {_fb(dev.capacity_bytes)}; at --tp {tp} "
                    f"they take {_fb(w)} and the KV pool holds {tokens} tokens ({_fb(pool)}) "
                    f"{basis}",
                    commands=(f"--tp {tp}",),
                    # per GPU, what the per-device estimate frees: never more than the card
                    expected_saving_bytes=min(w0 - w, dev.capacity_bytes or w0 - w),
                    hardware=tp > n_given,
                    fits=True,
                    supersedes=(*_SUP_MFS, *_SUP_LEN, "Shard the model"),
                )
            )
            break
    if spec.quantization is None:
        for quant in ("fp8", "awq"):
            try:
                est = estimate_sglang(spec, dataclasses.replace(s, quant=quant), hardware)
            except InvalidSettingError:
                continue
            tokens, pool, _ = _pool(est)
            if tokens is None or tokens < target:
                continue
            w = est.devices[0].weights_bytes
            ckpt = " (needs a pre-quantized AWQ checkpoint)" if quant == "awq" else ""
            out.append(
                EstimatedFix(
                    title=f"Quantize the weights: --quantization {quant}{ckpt}",
                    why=f"{quant} weights take {_fb(w)} per GPU instead of {_fb(w0)}; the KV "
                    f"pool then holds {tokens} tokens ({_fb(pool)}) {basis}",
                    commands=(f"--quantization {quant}",),
                    expected_saving_bytes=min(w0 - w, dev.capacity_bytes or w0 - w),
                    fits=True,
                    supersedes=(*_SUP_MFS, *_SUP_LEN),
                )
            )
            break
    return out

"""Model-aware SGLang fixes: ``--mem-fraction-static``, ``--context-length``,
``--max-running-requests`` and ``--chunked-prefill-size`` sized by :mod:`oomkit.estimate.sglang`.

SGLang's KV token pool is ``free0 x mem_fraction_static - weights`` divided by the bytes of one
token's KV (``model_runner.py`` ``profile_max_num_token``); the rest, ``free0 x (1 -
mem_fraction_static)``, holds activations and CUDA graphs. The smallest fraction whose pool holds
one request of the context length while leaving that rest at least
:data:`MIN_DYNAMIC_SHARE` of the card is the sized ``--mem-fraction-static`` fix. When the log
gives no GPU capacity, it is inferred from SGLang's own ``Load weight end ... avail mem=X GB,
mem usage=Y GB`` line (capacity ~ X + Y + the CUDA context).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.diagnose.fixes import Fix, size_text
from oomkit.diagnose.model_fixes import EstimatedFix
from oomkit.spec.hardware import DeviceTarget, Hardware

if TYPE_CHECKING:
    from oomkit.diagnose.events import LogContext, OomEvent
    from oomkit.estimate.breakdown import Estimate
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

__all__ = ["MIN_DYNAMIC_SHARE", "sglang_fixes"]

#: share of the card SGLang's non-static rest must keep for activations and CUDA graphs
MIN_DYNAMIC_SHARE = 0.05
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
    frac_v, ctx_v = est0.settings["mem_fraction_static"], est0.settings["ctx"]
    if not isinstance(frac_v, float) or not isinstance(ctx_v, int):
        return []
    frac0, length = frac_v, ctx_v
    cap = hardware.devices[0].capacity_bytes or 0
    tokens0, pool0, _ = _pool(est0)
    basis = f"(oomkit's SGLang estimate for {spec.name}; {cap_note}.)"
    out: list[Fix] = []
    target = min(length, _USEFUL_TOKENS)
    if est0.devices[0].weights_bytes > cap * _MAX_MFS:
        # no fraction holds the weights: a larger fraction or smaller prefill chunks cannot help
        n_given = len(hw.devices) if hw is not None and hw.devices else 1
        return _weights_fixes(spec, s, hardware, est0, target, n_given, basis)
    f = round(frac0 + 0.01, 2)
    while f <= _MAX_MFS and (tokens0 or 0) < target:
        est = estimate_sglang(spec, dataclasses.replace(s, mem_fraction_static=f), hardware)
        tokens, pool, rest = _pool(est)
        if tokens is not None and tokens >= target and rest >= MIN_DYNAMIC_SHARE * cap:
            out.append(
                EstimatedFix(
                    title=f"Raise --mem-fraction-static to {f:.2f}",
                    why=f"the smallest fraction (from {frac0:.2f}) whose KV pool holds one "
                    f"{target}-token request: {tokens} tokens, {_fb(pool)}, while "
                    f"{_fb(rest)} stays for activations and CUDA graphs {basis}",
                    commands=(f"--mem-fraction-static {f:.2f}",),
                    expected_saving_bytes=max(0, pool - pool0),
                    supersedes=_SUP_MFS,
                )
            )
            break
        f = round(f + 0.01, 2)
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
            )
        )
    chunk, _ = sglang_batch_defaults(cap or None, s.tp or 1)
    out.append(
        EstimatedFix(
            title=f"Smaller prefill chunks: --chunked-prefill-size {chunk // 2}",
            why=f"SGLang's default for this GPU is {chunk} tokens per prefill chunk; prefill "
            "activations and the KV a chunk reserves at once halve with it "
            f"{basis}",
            commands=(f"--chunked-prefill-size {chunk // 2}",),
            expected_saving_bytes=None,
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
                    expected_saving_bytes=w0 - w,
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
                    expected_saving_bytes=w0 - w,
                    fits=True,
                    supersedes=(*_SUP_MFS, *_SUP_LEN),
                )
            )
            break
    return out

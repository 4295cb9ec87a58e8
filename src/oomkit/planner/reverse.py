"""Reverse search: which catalog models fit a GPU, and which GPUs (and how many) run a model.

Both answer "entirely on the GPU(s) at this context", the configuration people shop for; the
planner (:mod:`oomkit.planner.core`) handles offload for one model. Every answer comes from
the runtime's own estimator; a cheap lower bound on the weights (parameters x the file
type's smallest bits per weight) only skips estimates that could not fit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oomkit.errors import InvalidSettingError, OomkitError
from oomkit.estimate.breakdown import Estimate
from oomkit.planner.knobs import CHECKPOINT, Candidate
from oomkit.planner.request import DEFAULT_HEADROOM_BYTES, PlanRequest
from oomkit.planner.search import Evaluation, Searcher
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec

__all__ = [
    "FITS_DEFAULT_CTX",
    "FitsReport",
    "GpuFit",
    "ModelFit",
    "ModelMiss",
    "fits_report",
    "gpus_for",
    "models_that_fit",
]

#: vLLM/SGLang/transformers: a pre-quantized checkpoint (gpt-oss's native MXFP4 experts,
#: DeepSeek-V3's block FP8) runs as it is, so its own format comes first; the planner's ladder
#: holds only that entry for such a model (:func:`oomkit.planner.knobs.quant_ladder`)
_SHOP_HF = (CHECKPOINT, "bf16", "fp8", "awq")
#: the lower bound uses 90% of the file type's main GGML type: llama-quantize never stores a
#: 2-D weight below it except where it falls back to a *larger* type
_LOWER_BOUND_FRACTION = 0.9
#: how many GPUs ``gpus --for`` tries
GPU_COUNTS = (1, 2, 4, 8)
#: the levers ``gpus --for`` tries at the asked context, as ``plan`` does for its first plan
#: with the quant held (:func:`gpus_for`); the KV cache stays at its default type
GPUS_FOR_LEVERS = (
    "vLLM --gpu-memory-utilization / SGLang --mem-fraction-static raised, and a lower "
    "--max-num-seqs / --max-running-requests, where that makes it fit (as plan); "
    "KV cache at its default type"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelFit:
    """A catalog model that fits: its best shop quant, the longest context, the estimate."""

    key: str
    params: int
    quant: str
    ctx: int
    max_ctx: int
    estimate: Estimate
    speed: Any = None
    #: the KV cache type the fit uses (llama.cpp/Ollama "f16", "q8_0", "q4_0"; vLLM "auto")
    kv: str = "f16"
    #: why ``ctx`` is not the default every model is sized at (a model trained for fewer
    #: tokens than :data:`FITS_DEFAULT_CTX` is sized at its own trained context); None otherwise
    ctx_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.key,
            "params": self.params,
            "quant": self.quant,
            "kv": self.kv,
            "ctx": self.ctx,
            "max_ctx": self.max_ctx,
            "ctx_reason": self.ctx_reason,
            "gpu_bytes": max((d.total_bytes for d in self.estimate.devices), default=0),
            "decode_tokens_per_s": _tps(self.speed),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuFit:
    """A catalog GPU (times ``count``) that runs the model entirely on the GPUs."""

    gpu_key: str
    gpu_name: str
    count: int
    quant: str
    free_bytes: int
    estimate: Estimate
    speed: Any = None
    #: the serving levers the row needed, as flags (:data:`GPUS_FOR_LEVERS`): vLLM
    #: "--gpu-memory-utilization 0.96", "--max-num-seqs 59"; empty when the defaults run it
    levers: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu_key,
            "name": self.gpu_name,
            "count": self.count,
            "quant": self.quant,
            "free_bytes": self.free_bytes,
            "decode_tokens_per_s": _tps(self.speed),
            "levers": list(self.levers),
        }


def _tps(speed: Any) -> float | None:
    value = getattr(speed, "decode_tokens_per_s", None)
    return float(value) if isinstance(value, int | float) else None


def _speed(spec: ModelSpec, est: Estimate, hardware: Hardware) -> Any:
    from oomkit.planner.speed import estimate_speed

    return estimate_speed(spec, est, hardware)


def _weights_lower_bound(params: int, quant: str) -> int:
    from oomkit.quant.ggml_types import ggml_type
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    try:
        t = ggml_type(llamacpp_ftype(quant).default_type)
    except OomkitError:
        return 0
    return int(params * 8 * t.type_size / t.block_size / 8 * _LOWER_BOUND_FRACTION)


def _gpu_weights_lower_bound(spec: ModelSpec, quant: str) -> int:
    """Bytes of the GGUF's tensors that must sit on the GPUs when every layer is offloaded:
    all but the input embeddings (llama.cpp keeps those on the CPU); backend padding and a
    tied output copy only add to it. Cheap: the weights table is memoised and the estimate
    reuses it."""
    from oomkit.estimate.llamacpp_weights import weight_tensors

    try:
        rows, _, _ = weight_tensors(spec, quant)
    except OomkitError:
        return 0
    return sum(n for t, _, n in rows if not t.name.startswith(_CPU_INPUTS))


_CPU_INPUTS = ("token_embd", "position_embd", "token_types", "per_layer_token_embd")


def _shop(searcher: Searcher, params: int | None) -> tuple[Evaluation | None, str]:
    """(the best shop quant that runs entirely on the GPUs at the target context, or None;
    why the last quant tried does not fit, "" when one fits)."""
    # GGUF: the planner's own ladder down to its default start (Q8_0 ... Q5_K_S, Q4_K_M; the
    # file's own types for a .gguf, MXFP4_MOE for gpt-oss), each with the KV types the planner
    # allows it at the asked context (knobs.upgrade_kvs), so `plan` and `models --fits` agree
    shop = searcher.ladder[: searcher.default_index + 1] if searcher.gguf else _SHOP_HF
    cap = sum(d.capacity_bytes or 0 for d in searcher.hardware.devices)
    why = ""
    tried: list[str] = []
    for q in shop:
        if q not in searcher.ladder:
            continue
        tried.append(q)
        bound = 0
        if searcher.gguf and params:
            bound = _weights_lower_bound(params, q)
        if searcher.gguf and bound <= cap:
            bound = max(bound, _gpu_weights_lower_bound(searcher.spec, q))
        if bound > cap:
            why = f"{q} weights alone need at least {_fmt(bound)}, the GPUs have {_fmt(cap)}"
            continue
        upgrade = searcher.gguf and searcher.ladder.index(q) < searcher.default_index
        kvs = searcher.upgrade_kvs() if upgrade else searcher.kvs
        ev = searcher.level_gpu(q, upgrade=True, kvs=kvs if searcher.gguf else ())
        if ev is not None:
            return ev, ""
        miss = searcher.evaluate(
            Candidate(q, searcher.kvs[0], searcher.target_ctx, tp=searcher._tp())
        )
        why = f"{q} at {searcher.target_ctx} tokens: {miss.reason or 'does not fit'}"
    if not tried:
        why = f"none of the compared formats ({', '.join(shop)}) applies to this model"
    return None, why


def _quant_name(spec: ModelSpec, quant: str) -> str:
    """A pre-quantized checkpoint's own format by name ("mxfp4", "fp8"), as ``-q`` takes it."""
    if quant == CHECKPOINT and spec.quantization is not None:
        return spec.quantization.method
    return quant


def _fmt(n: int) -> str:
    from oomkit.units import format_bytes

    return format_bytes(n)


#: the context ``models_that_fit`` (``oomkit models --fits``) asks for when none is given: the
#: llama.cpp / Ollama default (llama-server ``-c``, Ollama ``num_ctx``), used for every runtime
FITS_DEFAULT_CTX = 4096


@dataclass(frozen=True, slots=True)
class ModelMiss:
    """A catalog model that does not fit, or that the runtime cannot run, and why."""

    key: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"model": self.key, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class FitsReport:
    """Every catalog model matched, in exactly one of three lists."""

    fits: list[ModelFit]
    not_fitting: list[ModelMiss]
    unsupported: list[ModelMiss]


def models_that_fit(
    hardware: Hardware,
    *,
    runtime: str = "llama.cpp",
    ctx: int | None = None,
    headroom_bytes: int = DEFAULT_HEADROOM_BYTES,
    query: str | None = None,
) -> tuple[list[ModelFit], int]:
    """(catalog models that run entirely on ``hardware`` at ``ctx``, number skipped because
    the runtime does not support their architecture). Largest models first. See
    :func:`fits_report` for the models that do not fit and why."""
    r = fits_report(hardware, runtime=runtime, ctx=ctx, headroom_bytes=headroom_bytes, query=query)
    return r.fits, len(r.unsupported)


def fits_report(
    hardware: Hardware,
    *,
    runtime: str = "llama.cpp",
    ctx: int | None = None,
    headroom_bytes: int = DEFAULT_HEADROOM_BYTES,
    query: str | None = None,
    kv: str | None = None,
) -> FitsReport:
    """Every catalog model (matching ``query``): those that run entirely on ``hardware`` at
    ``ctx`` (largest first), those that do not (with the shortfall), and those the runtime
    cannot run (with the error) — each model in exactly one list.

    ``ctx`` None means Ollama's own default for ``runtime`` "ollama" (4096, or from 0.15.5
    32768/262144 by the total VRAM, capped at the trained context) and :data:`FITS_DEFAULT_CTX`
    (4096) for every other runtime (a model trained
    for fewer positions, e.g. GPT-NeoX-20B's 2048 or BERT's 512, is sized at its own trained
    context then, as the runtime runs it: llama-server caps each slot at ``n_ctx_train``;
    with ``--ctx N`` it is in ``not_fitting``); ``kv`` pins the KV cache type (``--kv-dtype``), as
    ``oomkit models --fits`` documents: not vLLM's/transformers' own default (the model's
    whole context), which would drop e.g. a 128k-context 8B model from a 24 GB GPU that runs
    it well at 4096 (``max_ctx`` still reports the longest context that fits).
    """
    from oomkit.catalog.models import search_models
    from oomkit.estimate.checks import runtime_hardware_refusal, vllm_kernel_caveat

    # vLLM/SGLang on an Apple GPU: no model runs, as estimate says; vLLM on a Pascal card runs
    # only from a source build or a fork, which a listing of what fits does not assume
    refusal = runtime_hardware_refusal(hardware, runtime) or vllm_kernel_caveat(hardware, runtime)
    if refusal is not None:
        raise InvalidSettingError(refusal, setting="runtime", value=runtime)
    out: list[ModelFit] = []
    not_fitting: list[ModelMiss] = []
    unsupported: list[ModelMiss] = []
    # Ollama with no num_ctx: its own default, from 0.15.5 by the total VRAM and capped at
    # the trained context as Ollama caps it (the planner's default_target_ctx, as `estimate`)
    ollama_default = ctx is None and runtime == "ollama"
    # oomkit's own default context (not Ollama's): a quant capped at it gives way (_roomier)
    roomy = ctx is None and not ollama_default
    if ctx is None and not ollama_default:
        ctx = FITS_DEFAULT_CTX
    request = PlanRequest(
        runtime=runtime, ctx=ctx, no_offload=True, headroom_bytes=headroom_bytes, kv=kv
    )
    for entry in search_models(query):
        try:
            spec = entry.spec()
            trained = spec.max_position_embeddings
            ask, own = request, None
            if ctx is not None and trained and trained < ctx:
                if not roomy:
                    # the planner would aim at min(ctx, trained): no fit at the asked context
                    not_fitting.append(ModelMiss(entry.key, _short_ctx(trained, ctx)))
                    continue
                # no --ctx: the runtime runs such a model at its own trained context
                ask, own = dataclasses.replace(request, ctx=trained), _own_ctx(trained, ctx)
            s = Searcher(spec, runtime, hardware, ask)
            ev, why = _shop(s, entry.params)
        except OomkitError as exc:
            unsupported.append(ModelMiss(entry.key, str(exc)))
            continue
        if ev is None:
            not_fitting.append(ModelMiss(entry.key, why))
            continue
        max_ctx = _max_ctx(s, ev)
        if roomy:
            ev, max_ctx = _roomier(s, ev, max_ctx)
        out.append(
            ModelFit(
                key=entry.key,
                params=entry.params or ev.estimate.model.params,
                quant=_quant_name(spec, ev.cand.quant),
                ctx=ev.cand.ctx,
                max_ctx=max_ctx,
                estimate=ev.estimate,
                # an encoder (BERT family) generates no tokens: no decode speed
                speed=None if spec.is_encoder else _speed(spec, ev.estimate, hardware),
                kv=ev.cand.kv,
                ctx_reason=own,
            )
        )
    out.sort(key=lambda m: (-m.params, m.key))
    return FitsReport(fits=out, not_fitting=not_fitting, unsupported=unsupported)


#: ``models --fits`` without ``--ctx``: the context a GGUF quant should reach before it is
#: preferred to a smaller one (twice :data:`FITS_DEFAULT_CTX`, at most the model's own)
FITS_ROOM_FACTOR = 2


def _roomier(s: Searcher, ev: Evaluation, max_ctx: int) -> tuple[Evaluation, int]:
    """The quant ``models --fits`` shows when no ``--ctx`` was asked (GGUF runtimes).

    The rule: the highest-quality quant of the shop ladder (Q8_0 ... Q4_K_M) whose longest
    context reaches ``FITS_ROOM_FACTOR`` x the default context (8192 tokens, or the model's
    trained context if shorter); when none does, the one with the longest context (the
    higher quality on a tie). A quant that fits only the 4096-token default leaves no room
    for a real conversation, while one step down often runs several times that context
    (qwen2.5-14b on a 12 GB card: Q5_K_M stops at 4096, Q4_K_M runs far more). With
    ``--ctx N`` the asked context is the goal and the highest-quality quant that fits it is
    shown, as before.
    """
    trained = s.spec.max_position_embeddings or ev.cand.ctx
    goal = min(FITS_ROOM_FACTOR * ev.cand.ctx, trained)
    if not s.gguf or max_ctx >= goal:
        return ev, max_ctx
    shop = s.ladder[: s.default_index + 1]
    best = (ev, max_ctx)
    start = shop.index(ev.cand.quant) + 1 if ev.cand.quant in shop else len(shop)
    for q in shop[start:]:
        upgrade = s.ladder.index(q) < s.default_index
        kvs = s.upgrade_kvs() if upgrade else s.kvs
        lower = s.level_gpu(q, upgrade=True, kvs=kvs)
        if lower is None:
            continue
        reach = _max_ctx(s, lower)
        if reach > best[1]:
            best = (lower, reach)
        if reach >= goal:
            break
    return best


def _short_ctx(trained: int, ctx: int) -> str:
    """Why a model trained for fewer than the asked ``ctx`` positions is not listed."""
    return (
        f"trained context {trained} tokens (max_position_embeddings): the asked {ctx} "
        "needs a model trained for at least that many"
    )


def _own_ctx(trained: int, ctx: int) -> str:
    """Why a model is sized at its trained context when no ``--ctx`` was given: the runtime
    runs it there (llama-server caps each slot's context at ``n_ctx_train``, "exceeds the
    training context of the model ... capping", tools/server; Ollama caps ``num_ctx`` at the
    GGUF's trained context, :func:`oomkit.estimate.ollama_layers.clamps_num_ctx`; vLLM's
    default ``max_model_len`` is the model's own)."""
    return (
        f"trained context {trained} tokens (max_position_embeddings), under the {ctx}-token "
        "default: sized at its own trained context, as the runtime runs it"
    )


def _max_ctx(s: Searcher, ev: Evaluation) -> int:
    """The longest context (up to the model's own maximum) for the candidate's quant and KV."""
    model_max = s.spec.max_position_embeddings or ev.cand.ctx
    if model_max <= ev.cand.ctx:
        return ev.cand.ctx
    step = max(s.request.ctx_step, 1024)
    lo, hi = ev.cand.ctx // step, model_max // step

    def make(k: int) -> Any:
        ctx = ev.cand.ctx if k == lo else min(k * step, model_max)
        return dataclasses.replace(ev.cand, ctx=ctx)

    found = s._largest(lo, hi, make)
    if found is None:
        return ev.cand.ctx
    return found[1].cand.ctx


def gpus_for(
    model: str | ModelSpec,
    *,
    runtime: str = "llama.cpp",
    ctx: int | None = None,
    quant: str | None = None,
    headroom_bytes: int = DEFAULT_HEADROOM_BYTES,
    counts: Sequence[int] = GPU_COUNTS,
    min_tps: float | None = None,
    offline: bool | None = None,
) -> list[GpuFit]:
    """Catalog GPUs, with the fewest of each that run ``model`` entirely on the GPUs.

    Sorted by total memory bought (count x memory), then by speed.

    Raises:
        InvalidSettingError: ``min_tps`` negative or not finite (NaN would filter nothing, inf
            everything: neither is a speed).
    """
    import math

    if min_tps is not None and not (math.isfinite(min_tps) and min_tps >= 0):
        raise InvalidSettingError(
            f"min_tps must be a finite number of tokens/s, at least 0, got {min_tps}",
            setting="min_tps",
            value=min_tps,
        )
    from oomkit.api import load_model
    from oomkit.estimate.checks import runtime_hardware_refusal, vllm_kernel_caveat
    from oomkit.hardware.catalog import all_gpus

    spec = load_model(model, offline=offline) if isinstance(model, str) else model
    request = PlanRequest(
        runtime=runtime, ctx=ctx, quant=quant, no_offload=True, headroom_bytes=headroom_bytes
    )
    if quant is not None:
        # an unknown quant (or one named for a .gguf file) is the user's error, not "no GPU
        # runs it": the per-GPU search below reads every refusal as a miss
        from oomkit.planner.knobs import quant_ladder

        quant_ladder(runtime, spec, quant, None)
        if runtime not in ("llama.cpp", "ollama"):
            from oomkit.quant.hf_formats import hf_format

            hf_format(quant)
    out: list[GpuFit] = []
    floors: dict[str, int] = {}  # per quant: the weights no GPU count may hold less of
    for gpu in all_gpus():
        if runtime in ("vllm", "sglang") and gpu.vendor not in ("nvidia", "amd"):
            continue
        one = Hardware(devices=(gpu.to_device_target(),))
        if runtime_hardware_refusal(one, runtime) or vllm_kernel_caveat(one, runtime):
            continue  # an Apple GPU for vLLM/SGLang, or a Pascal card vLLM's wheels lack
        for n in counts:
            if n > 1 and gpu.unified_memory:
                break
            hw = Hardware(devices=tuple(gpu.to_device_target() for _ in range(n)))
            try:
                s = Searcher(spec, runtime, hw, request)
                # one quant for every GPU (the runtime's default unless named), so the
                # rows compare hardware, not quants
                q = s.ladder[s.default_index]
                if q not in floors:
                    floors[q] = _weights_floor(s, q)
                if n * (gpu.to_device_target().capacity_bytes or 0) < floors[q]:
                    continue  # the weights alone exceed the GPUs' total: no lever helps
                # the evaluation raises vLLM's utilization / SGLang's fraction as plan's does;
                # then plan's sequence cap (review22: 2 x H100 SXM runs Llama-3.1-70B at 32k
                # with --max-num-seqs 59 and util 0.96, and plan says so)
                ev = s.level_gpu(q, upgrade=True) or _capped(s, q)
            except OomkitError:
                ev = None
            if ev is None:
                continue
            speed = _speed(spec, ev.estimate, hw)
            tps = _tps(speed)
            if min_tps is not None and (tps is None or tps < min_tps):
                continue
            out.append(
                GpuFit(
                    gpu_key=gpu.key,
                    gpu_name=gpu.name,
                    count=n,
                    quant=ev.cand.quant,
                    free_bytes=ev.margin_bytes,
                    estimate=ev.estimate,
                    speed=speed,
                    levers=_levers(ev),
                )
            )
            break
    out.sort(key=lambda f: (f.count * _cap(f), -(_tps(f.speed) or 0.0), f.gpu_key))
    return out


def _weights_floor(s: Searcher, quant: str) -> int:
    """Bytes of ``quant``'s weights that every layout of ``s``'s runtime keeps on the GPUs
    together (0 when unknown): the GGUF's tensors but the input embeddings (llama.cpp,
    Ollama), else the checkpoint's unsharded total (vLLM/SGLang shard it by ``tp`` and
    replicate some tensors, transformers splits it over the GPUs: never less in all). A
    count of GPUs whose memory together is below it is no fit; ``gpus --for`` skips it
    before any estimate."""
    if s.gguf:
        return _gpu_weights_lower_bound(s.spec, quant)
    from oomkit.estimate.hf_weights import plan_weights
    from oomkit.spec.tensors import model_tensors

    try:
        tensors = model_tensors(s.spec)
        named = None if quant == CHECKPOINT else quant
        return plan_weights(s.spec, tensors, quant=named).total_bytes
    except OomkitError:
        return 0


def _cap(f: GpuFit) -> int:
    return max((d.capacity_bytes or 0 for d in f.estimate.devices), default=0)


def _capped(s: Searcher, quant: str) -> Evaluation | None:
    """vLLM/SGLang: the asked context, the default KV type, the largest sequence cap below the
    runtime's own that fits (plan's ``--max-num-seqs`` lever, :mod:`oomkit.planner.seqs`);
    None for other runtimes or when even one sequence does not fit."""
    if s.runtime not in ("vllm", "sglang"):
        return None
    from oomkit.planner.seqs import seqs_top

    top = seqs_top(s, quant)
    floor = s.seqs_floor
    if top is None or top <= floor:
        return None

    def make(n: int) -> Candidate:
        return Candidate(quant, s.kvs[0], s.target_ctx, tp=s._tp(), max_num_seqs=n)

    # a cap shrinks the activations and graphs, never the weights: where the weights alone
    # fill a GPU (or the runtime refused the layout: no devices) no cap helps
    at_default = s.evaluate(Candidate(quant, s.kvs[0], s.target_ctx, tp=s._tp())).estimate.devices
    if not at_default or any(d.weights_bytes >= (d.capacity_bytes or 0) for d in at_default):
        return None
    if not s.evaluate(make(floor)).fits:
        return None
    # bisection, not the planner's regula falsi: the raised utilization leaves every fitting
    # cap a margin near 0, so interpolation crept up one cap at a time (18-39 estimates per
    # GPU row, now log2 of the range)
    from oomkit.estimate.boundary import largest

    n = largest(floor, top - 1, lambda k: s._gpu_fits(s.evaluate(make(k))))
    if n is None:
        return None
    ev = s.evaluate(make(n))
    return ev if ev.fits else None


def _levers(ev: Evaluation) -> tuple[str, ...]:
    """The flags a ``gpus --for`` row needed beyond the runtime's defaults."""
    from oomkit.planner.search import SEQS_LEVER

    out: list[str] = []
    details = ev.estimate.runtime_details
    util = ev.estimate.settings.get("gpu_memory_utilization")
    default = details.get("default_util")
    if isinstance(util, float) and isinstance(default, float) and util > default:
        out.append(f"--gpu-memory-utilization {util:g}")
    from oomkit.planner.sglang_fraction import RAISED_FROM

    frac = ev.estimate.settings.get("mem_fraction_static")
    was = details.get(RAISED_FROM)
    if isinstance(frac, float) and isinstance(was, float) and frac > was:
        out.append(f"--mem-fraction-static {frac:g}")
    if ev.cand.max_num_seqs is not None and ev.estimate.runtime in SEQS_LEVER:
        out.append(f"{SEQS_LEVER[ev.estimate.runtime][1]} {ev.cand.max_num_seqs}")
    return tuple(out)

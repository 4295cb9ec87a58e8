"""The planner's "nothing fits" paragraph: why no candidate fits, what the asked and the
cheapest configuration would need, and what is left to change (split from
:mod:`oomkit.planner.core`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from oomkit.errors import OomkitError
from oomkit.planner.knobs import LEVEL_LAYERS_CPU, Candidate
from oomkit.planner.search import SEQS_LEVER, Evaluation, Searcher
from oomkit.planner.speed import estimate_speed
from oomkit.units import format_bytes

__all__ = ["impossible"]


def impossible(s: Searcher, result_rejected: Sequence[Evaluation]) -> str:
    """One paragraph: why nothing fits and what would be needed."""
    heads: list[str] = []
    worst_quant = s.ladder[-1]
    top = s._seqs_top(worst_quant) if s.seqs_lever else None
    fewest = s.seqs_floor if top is not None and top > s.seqs_floor else None
    ev = s.evaluate(Candidate(worst_quant, s.kvs[-1], s.min_ctx, tp=s._tp(), max_num_seqs=fewest))
    with_fewest = f" and {SEQS_LEVER[s.runtime][1]} {fewest}" if fewest is not None else ""
    default_q = s.ladder[s.default_index]
    want = s.evaluate(Candidate(default_q, s.kvs[0], s.target_ctx, tp=s._tp()))
    heads.append(
        f"Nothing fits: {default_q} entirely on the GPU at {s.target_ctx} tokens "
        f"{_needs(s, want, 'would need')}, and even {worst_quant} with a {s.kvs[-1]} KV cache "
        f"at {s.min_ctx} tokens{with_fewest} {_needs(s, ev, 'needs')}."
    )
    if s.offload_ok:
        host = s.hardware.host_ram_bytes
        off = s.evaluate(
            Candidate(
                worst_quant, s.kvs[-1], s.min_ctx, LEVEL_LAYERS_CPU, n_gpu_layers=1, tp=s._tp()
            )
        )
        have = f" (you have {format_bytes(host)})" if host else ""
        sp = estimate_speed(s.spec, off.estimate, s.hardware, settings=off.cand.apply(s.base))
        tps = sp.decode_tokens_per_s
        speed = f", at about {tps:.1f} tok/s" if tps is not None else ""
        heads.append(
            "Offloading all but one layer to the CPU needs "
            f"{format_bytes(off.estimate.host.total_bytes)} of host RAM{have}{speed}."
        )
    elif s.request.no_offload:
        heads.append("Offload to the CPU was ruled out (--no-offload).")
    heads.extend(_lower_util(s, ev))
    smaller = _smaller_that_fit(s)
    also = f"; smaller models of the family that fit: {', '.join(smaller)}" if smaller else ""
    heads.append(
        "Options: a GPU with more memory (see `oomkit gpus --for MODEL`), more GPUs, "
        f"or a smaller model (see `oomkit models --fits GPU`{also})."
    )
    return " ".join(heads)


def _needs(s: Searcher, ev: Evaluation, verb: str) -> str:
    """What one candidate needs per GPU and why it was rejected; a combination the runtime
    refuses outright (e.g. a context above the release's cap) has no estimate, only its reason
    (vLLM 2024-11 refusing Gemma 2 above 4096 tokens crashed here on an empty device list)."""
    if not ev.estimate.devices:
        return f"is refused ({ev.reason or 'the runtime refuses this combination'})"
    need = max(d.total_bytes for d in ev.estimate.devices) + (
        s.request.headroom_bytes if s.gguf else 0
    )
    return f"{verb} {format_bytes(need)} per GPU ({ev.reason or 'fits the GPU'})"


_SAFE_UTIL = re.compile(r"Safe margin: --gpu-memory-utilization (\d\.\d+)")


def _lower_util(s: Searcher, ev: Evaluation) -> list[str]:
    """The user's own --gpu-memory-utilization when it leaves too little free: vLLM takes that
    share of every GPU whatever the model, so only a lower fraction (the verdict's safe margin)
    helps (4 x RTX 3090 at 0.95 said "buy more GPUs"; at 0.93 bf16 runs at the asked context)."""
    util = s.base.gpu_memory_utilization if s.base is not None else None
    m = _SAFE_UTIL.search(ev.reason or "")
    if s.runtime != "vllm" or util is None or m is None:
        return []
    return [
        f"At --gpu-memory-utilization {util:g} vLLM reserves that share of every GPU whatever "
        f"the model, and too little is left beside it: plan again with "
        f"--gpu-memory-utilization {m.group(1)} (the verdict's safe margin) or without it."
    ]


def _smaller_that_fit(s: Searcher, limit: int = 3) -> list[str]:
    """Catalog models of the same family, smaller, that run entirely on the GPU(s) at the
    asked context with the runtime's default quant (largest first)."""
    from oomkit.catalog.models import family_of, search_models

    family = family_of(s.spec.name)
    if family is None or not s.gguf:
        return []
    out: list[str] = []
    mine = s.spec.declared_params or 0
    rows = [e for e in search_models(None) if family_of(e.key) == family and e.key != s.spec.name]
    rows = [e for e in rows if e.params and (not mine or e.params < mine)]
    for entry in sorted(rows, key=lambda e: -(e.params or 0))[: limit + 2]:
        try:
            other = Searcher(entry.spec(), s.runtime, s.hardware, s.request, s.base)
            ev = other.level_gpu(other.ladder[other.default_index], upgrade=True)
        except OomkitError:
            continue
        if ev is not None:
            out.append(f"{entry.key} ({ev.cand.quant})")
        if len(out) >= limit:
            break
    return out

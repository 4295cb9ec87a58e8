"""The planner's transformers moves beyond the weight format and the prompt length.

``from_pretrained(...)`` + ``generate()`` users change, besides the dtype / bitsandbytes
format (the quant ladder) and the prompt (the context search):

* the attention kernel: ``attn_implementation="eager"`` keeps the fp32 softmax of the
  ``B x heads x S x S`` scores (``eager_attention_forward``:
  ``softmax(attn_weights, dim=-1, dtype=torch.float32)``); SDPA keeps no ``S^2`` tensor
  (:func:`oomkit.estimate.transformers.prefill_activation_bytes`). :func:`level_sdpa` proposes
  sdpa where eager is what does not fit;
* the ``generate()`` batch: the sequence lever (:mod:`oomkit.planner.seqs`, entry
  ``"transformers"`` of :data:`oomkit.planner.search.SEQS_LEVER`) lowers it, the caller then
  runs more, smaller batches;
* ``device_map="auto"`` with ``max_memory``: accelerate's offload to CPU RAM, modelled by the
  estimator (a plan that offloads is the layers-on-CPU level, with its decode speed);
* ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` when the caching allocator's split
  segments are what keeps the asked run inside the band (:func:`allocator_note`: a note, not
  a plan; not on Windows, where PyTorch ignores it).

:func:`transformers_safe_change` computes, for a "tight" transformers run whose verdict names
no change (the desktop display or the CUDA context spread decide it: no prompt length frees
them), the least intrusive change that clears the band: a smaller batch, a shorter prompt,
fewer new tokens, or the next smaller weight format, each re-estimated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from oomkit.estimate.boundary import largest
from oomkit.planner.knobs import Candidate

if TYPE_CHECKING:
    from oomkit.estimate.breakdown import Estimate
    from oomkit.estimate.verdict import Platform
    from oomkit.planner.search import Evaluation, Searcher
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

__all__ = [
    "EXPANDABLE_SEGMENTS",
    "allocator_note",
    "level_sdpa",
    "smaller_formats",
    "transformers_safe_change",
]

#: the environment setting PyTorch's caching allocator reads (c10/cuda/CUDAAllocatorConfig)
EXPANDABLE_SEGMENTS = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"

#: transformers weight formats by bytes per weight, largest first (bitsandbytes LLM.int8 and
#: NF4 load a 16-bit checkpoint; fp32 -> bf16 halves it)
_FORMAT_ORDER: tuple[str, ...] = ("fp32", "bf16", "int8", "nf4")
_SAME_SIZE = {"f32": "fp32", "fp16": "bf16", "f16": "bf16", "fp4": "nf4"}


def level_sdpa(
    s: Searcher, quant: str, gpu: Evaluation | None, *, upgrade: bool = False
) -> list[Evaluation]:
    """The transformers moves of one format beside ``gpu`` (the plain all-on-GPU candidate):
    SDPA instead of the run's eager attention, and ``device_map=None`` + ``.to("cuda")``
    where ``device_map="auto"`` offloads weights that fit the one GPU whole (accelerate keeps
    10% of its free memory and the largest layer back: ``get_balanced_memory``). Each at the
    asked prompt if it fits, else the longest that does (when longer than ``gpu``'s). Nothing
    for other runtimes or for an upgrade (formats above the default are proposed as asked)."""
    if s.runtime != "transformers" or upgrade:
        return []
    out: list[Evaluation] = []
    offloads = gpu is not None and gpu.estimate.host.weights_bytes > 0
    short = gpu is None or gpu.cand.ctx < s.target_ctx or offloads
    if short and (s.base.attn_implementation or "").lower() == "eager":
        out += _longest(s, gpu, lambda ctx: Candidate(quant, s.kvs[0], ctx, attn="sdpa"))
    gpus = [d for d in s.hardware.devices if d.backend != "cpu"]
    if short and s.base.device_map == "auto" and len(gpus) == 1:
        whole = _longest(s, gpu, lambda ctx: Candidate(quant, s.kvs[0], ctx, device_map="none"))
        out += whole
        batch = s.request.parallel or 1
        if offloads and batch > 1 and not any(e.cand.ctx >= s.target_ctx for e in whole):
            # accelerate's map does not depend on the batch: only without it does a smaller
            # batch keep every weight on the GPU (the sequence lever runs on the plain map)
            def make(n: int) -> Candidate:
                return Candidate(quant, s.kvs[0], s.target_ctx, max_num_seqs=n, device_map="none")

            found = s._largest(1, batch - 1, make)
            out += [found[1]] if found is not None and found[1].fits else []
    return out


def _longest(
    s: Searcher, gpu: Evaluation | None, make: Callable[[int], Candidate]
) -> list[Evaluation]:
    """``make(asked prompt)`` if it fits, else the longest prompt that does when it beats
    ``gpu`` (longer, or the same without weights on the CPU)."""
    ev = s.evaluate(make(s.target_ctx))
    if ev.fits:
        return [ev]
    found = s._largest_ctx(make)
    if found is None or not found[1].fits:
        return []
    offloads = gpu is not None and gpu.estimate.host.weights_bytes > 0
    if gpu is not None and found[0] <= gpu.cand.ctx and not offloads:
        return []
    return [found[1]]


def allocator_note(s: Searcher) -> str | None:
    """The asked run (best format, asked prompt and batch, all on the GPU) when only the
    caching allocator's split segments keep it inside the band
    (:func:`oomkit.estimate.verdict_advice.allocator_split_decides`): ``expandable_segments``
    removes them, but no band of ``generate()`` runs with it is measured, so neither the
    planner nor the verdict counts it as a fit (nor offers it as the safe change); it says what
    to set and what it removes. Never on Windows, where PyTorch ignores it
    (:data:`oomkit.planner.training.EXPANDABLE_UNSUPPORTED_OS`)."""
    from oomkit.estimate.verdict import verdict
    from oomkit.estimate.verdict_advice import allocator_split_decides
    from oomkit.planner.training import EXPANDABLE_UNSUPPORTED_OS
    from oomkit.units import format_bytes

    if (s.platform.os or "").lower() in EXPANDABLE_UNSUPPORTED_OS:
        return None
    ev = s.evaluate(Candidate(s.ladder[0], s.kvs[0], s.target_ctx))
    if ev.fits or not ev.estimate.devices:
        return None
    v = verdict(ev.estimate, s.platform)
    m = v.tightest
    split = None if v.level != "tight" or m is None else allocator_split_decides(ev.estimate, m)
    if split is None:
        return None
    return (
        f"{ev.cand.quant} at the asked {s.target_ctx}-token prompt is tight only by PyTorch's "
        f"caching allocator: with {EXPANDABLE_SEGMENTS} set before torch starts "
        f"(os.environ or the shell) the {format_bytes(split)} its split segments may take "
        "beyond allocated goes; "
        "no band of generate() runs with it is measured, so the plans above do without it"
    )


def smaller_formats(quant: str | None) -> tuple[str, ...]:
    """The transformers weight formats smaller than ``quant`` (None: the checkpoint's 16-bit
    default), smallest change first."""
    q = (quant or "bf16").lower()
    q = _SAME_SIZE.get(q, q)
    if q not in _FORMAT_ORDER:
        return ()  # a pre-quantized checkpoint (gptq, awq, fp8, mxfp4) loads as it ships
    return _FORMAT_ORDER[_FORMAT_ORDER.index(q) + 1 :]


def _clears(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware, platform: Platform
) -> Estimate | None:
    """The estimate of ``settings`` when the verdict calls it "fits" (clear of the band)."""
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.registry import get_estimator
    from oomkit.estimate.verdict import verdict

    try:
        est = get_estimator("transformers")(spec, settings, hardware)
    except InvalidSettingError:
        return None
    if est.fits is False or est.blockers:
        return None
    return est if verdict(est, platform).level == "fits" else None


def _free_text(est: Estimate, platform: Platform) -> str:
    from oomkit.estimate.verdict import verdict
    from oomkit.units import format_bytes

    m = verdict(est, platform).tightest
    if m is None:
        return ""
    return (
        f"{format_bytes(m.free_bytes)} free on {m.device}, clear of its "
        f"±{format_bytes(m.band_bytes)} band"
    )


def transformers_safe_change(
    spec: ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    platform: Platform,
    est: Estimate,
) -> str | None:
    """The least intrusive change that takes a "tight" transformers run clear of the band,
    re-estimated: the largest smaller batch, else the longest shorter prompt (multiples of
    256), else the most new tokens below the asked, else the next smaller weight format that
    clears it (at the asked batch and prompt). None when none does. When the display term is
    only assumed (``display`` unknown) and leaving it out clears the band, the text says so."""
    change = _safe_change(spec, settings, hardware, platform, est)
    from oomkit.estimate.verdict import verdict

    if platform.display is None:
        headless = verdict(est, dataclasses.replace(platform, display=False))
        if headless.level == "fits":
            also = "; or, " if change else ""
            return (change or "") + (
                f"{also}if no display is attached to this GPU: --headless (the desktop's "
                "0.2-1 GiB is then not in the band)"
            )
    return change


def _safe_change(
    spec: ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    platform: Platform,
    est: Estimate,
) -> str | None:
    resolved = est.settings
    batch = settings.parallel or 1
    ctx = resolved.get("ctx") if isinstance(resolved.get("ctx"), int) else settings.ctx
    new = resolved.get("max_new_tokens")
    new_tokens = new if isinstance(new, int) else settings.max_new_tokens or 256
    quant = resolved.get("quant") if isinstance(resolved.get("quant"), str) else settings.quant

    def at(**changes: object) -> Estimate | None:
        return _clears(spec, dataclasses.replace(settings, **changes), hardware, platform)  # type: ignore[arg-type]

    if batch > 1:
        n = largest(1, batch - 1, lambda b: at(parallel=b) is not None)
        if n is not None:
            done = at(parallel=n)
            assert done is not None
            return f"--batch {n} (asked {batch}; {_free_text(done, platform)})"
    if isinstance(ctx, int) and ctx > 256:
        k = largest(1, (ctx - 1) // 256, lambda i: at(ctx=i * 256) is not None)
        if k is not None and k * 256 >= ctx // 2:
            done = at(ctx=k * 256)
            assert done is not None
            return f"--ctx {k * 256} (prompt tokens, asked {ctx}; {_free_text(done, platform)})"
    if new_tokens > 16:
        n = largest(1, new_tokens - 1, lambda t: at(max_new_tokens=t) is not None)
        if n is not None and n >= new_tokens // 2:
            done = at(max_new_tokens=n)
            assert done is not None
            return f"--max-new-tokens {n} (asked {new_tokens}; {_free_text(done, platform)})"
    for q in smaller_formats(quant if isinstance(quant, str) else None):
        done = at(quant=q)
        if done is not None:
            what = {"int8": "bitsandbytes 8-bit", "nf4": "bitsandbytes 4-bit NF4"}.get(q, q)
            return f"--quant {q} ({what}; {_free_text(done, platform)})"
    return None

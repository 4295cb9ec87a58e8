"""``--ctx max``: the largest context whose verdict is "fits" (every other setting kept).

A binary search over multiples of ``step`` tokens (:func:`oomkit.estimate.boundary.largest`) on
the estimator of the settings' runtime; margins that are equally tight at every context (vLLM's
device memory is ``gpu_memory_utilization x total`` at any ``max_model_len``; the Windows commit
margin, cleared by a page file) are the answer's risks, not limits on the context.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from oomkit.errors import InvalidSettingError
from oomkit.estimate.boundary import largest
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.registry import normalize_runtime
from oomkit.estimate.verdict import WDDM_COMMIT_WHAT, Platform, verdict
from oomkit.planner.seq_cap import model_max_seq
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["max_context"]


def _context_free_margins(
    low: Estimate, high: Callable[[], Estimate], platform: Platform | None
) -> set[tuple[str, str]]:
    """(device, what) of the margins tight at the shortest context with the same free bytes
    and band at the longest."""
    lows = {(m.device, m.what): m for m in verdict(low, platform).margins if m.level == "tight"}
    if not lows:
        return set()
    try:
        highs = verdict(high(), platform).margins
    except InvalidSettingError:
        return set()
    return {
        (m.device, m.what)
        for m in highs
        if (m.device, m.what) in lows
        and m.level == "tight"
        and (m.free_bytes, m.band_bytes)
        == (lows[m.device, m.what].free_bytes, lows[m.device, m.what].band_bytes)
    }


def max_context(
    spec: ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    *,
    platform: Platform | None = None,
    step: int = 256,
    top: int | None = None,
) -> tuple[int, Estimate] | None:
    """The largest context (a multiple of ``step``, up to the model's maximum) whose verdict
    is "fits" — clear of the measured variance band, not merely "tight"; None when not even
    ``step`` tokens do. Every other setting is kept as it is. The model's maximum is its
    trained one (:func:`oomkit.planner.seq_cap.model_max_seq`: ``max_position_embeddings``,
    scaled by a stretching ``rope_scaling``; 131072 when the config states none); ``top``
    searches up to another length instead (what memory would allow past that maximum).

    Raises:
        InvalidSettingError: no GPU capacity (or host RAM for a CPU-only target) is known.
    """
    from oomkit.estimate.registry import get_estimator

    # the answer is a -c to pass with every layer as given: no --fit behind it
    estimator = get_estimator(normalize_runtime(settings.runtime), planned=True)
    if top is None:
        cap = model_max_seq(spec)
        top = cap.tokens if cap is not None else 131072
    if normalize_runtime(settings.runtime) == "transformers":
        # a learned position table (GPT-2, OPT) holds the prompt and the generated tokens
        from oomkit.estimate.transformers_layouts import ctx_cap

        top = min(top, ctx_cap(spec, settings.max_new_tokens) or top)
    hi = max(1, top // step)

    def run(k: int) -> Estimate:
        return estimator(spec, dataclasses.replace(settings, ctx=k * step), hardware)

    fixed: set[tuple[str, str]] = set()  # tight margins no context changes (see below)

    def ok(est: Estimate) -> bool:
        # the Windows commit margin is cleared by a page file, not a shorter context
        v = verdict(est, platform)
        tight = [
            m
            for m in v.margins
            if m.level == "tight" and m.what != WDDM_COMMIT_WHAT and (m.device, m.what) not in fixed
        ]
        return v.level == "fits" or (v.level == "tight" and not tight)

    memo: dict[int, Estimate] = {}

    def at(k: int) -> Estimate:
        if k not in memo:
            memo[k] = run(k)
        return memo[k]

    if at(1).fits is None:
        raise InvalidSettingError(
            "--ctx max needs the memory to fit in: pass --gpu NAME or --vram SIZE "
            "(or --ram SIZE for the CPU)",
            setting="ctx",
        )

    # a margin equally tight at the shortest and the longest context does not depend on it
    # (vLLM's device memory is gpu_memory_utilization x total at any max_model_len; its CUDA
    # graph band neither): it is the answer's risk, not a limit on the context
    fixed.update(_context_free_margins(at(1), lambda: at(hi), platform))

    def fits_at(k: int) -> bool:
        # a context the runtime refuses (vLLM 0.5.1-0.6.4 caps Gemma 2 to its sliding window,
        # oomkit.estimate.vllm_gemma2) does not fit; step 1 was estimated above, so a setting
        # that is wrong at every context still raises
        try:
            return ok(at(k))
        except InvalidSettingError:
            return False

    found = largest(1, hi, fits_at)
    return None if found is None else (found * step, at(found))

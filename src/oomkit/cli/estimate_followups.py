"""The further estimates ``oomkit estimate`` runs around the asked one: ``--ctx max`` (the
largest context that fits), llama-bench's extra output rows (llama-server's answer with the
C API's note), and Ollama 0.30+'s one retry a context tier lower."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from oomkit.estimate.breakdown import Estimate
    from oomkit.estimate.verdict import Platform
    from oomkit.spec.hardware import Hardware

__all__ = ["estimate_max_ctx", "ollama_load_retry", "with_bench_note"]


def ollama_load_retry(
    model: str,
    settings: InferenceSettings,
    hardware: Hardware,
    platform: Platform,
    est: Estimate,
    offline: bool,
) -> dict[str, object] | None:
    """Ollama 0.30+ retries an out-of-memory load once a context tier lower when num_ctx was
    its own (:mod:`oomkit.estimate.ollama_load_retry`): the verdict of that second load."""
    from oomkit.api import estimate
    from oomkit.estimate.ollama_load_retry import load_retry_applies, retry_line, retry_num_ctx
    from oomkit.estimate.verdict import verdict

    if not load_retry_applies(settings.runtime_version, settings.ctx is not None):
        return None
    tiers = retry_num_ctx(est)
    if tiers is None:
        return None
    first, lower = tiers
    second = estimate(
        model,
        dataclasses.replace(settings, ctx=lower),
        hardware,
        offline=True if offline else None,
    )
    level = verdict(second, platform).level
    return {
        "first_num_ctx": first,
        "num_ctx": lower,
        "verdict": level,
        "text": retry_line(first, lower, level),
    }


def with_bench_note(
    model: str, settings: InferenceSettings, hardware: Hardware, est: Estimate, offline: bool
) -> Estimate:
    """``est`` with what llama-bench / the C API reserve more, when it is llama-server's
    (:func:`oomkit.estimate.llamacpp_outputs.bench_note`): the same configuration estimated
    with ``n_outputs_max = n_batch``."""
    from oomkit.estimate.llamacpp_outputs import NOTE_PREFIX, bench_note

    if not any(a.startswith(NOTE_PREFIX) for a in est.assumptions):
        return est
    from oomkit.api import estimate

    def resolved(name: str, given: int | None) -> int | None:
        # what the server's estimate resolved (its --fit context and layers, its -np auto
        # slots): the bench estimate differs from it in the output rows only
        value = est.settings.get(name)
        return int(str(value)) if given is None and isinstance(value, int) else given

    bench_settings = dataclasses.replace(
        settings,
        llama_server=False,
        ctx=resolved("ctx", settings.ctx),
        n_gpu_layers=resolved("n_gpu_layers", settings.n_gpu_layers),
        n_cpu_moe=resolved("n_cpu_moe", settings.n_cpu_moe),
        parallel=resolved("parallel", settings.parallel),
        kv_unified=(
            bool(est.settings.get("kv_unified"))
            if settings.kv_unified is None
            else settings.kv_unified
        ),
    )
    bench = estimate(model, bench_settings, hardware, offline=True if offline else None)
    note = bench_note(est, bench)
    return est if note is None else dataclasses.replace(est, assumptions=(*est.assumptions, note))


def estimate_max_ctx(
    model: str,
    settings: InferenceSettings,
    hardware: Hardware,
    platform: Platform,
    offline: bool,
) -> Estimate:
    """``--ctx max``: the estimate at the largest context that fits (exit 3 if none does)."""

    from oomkit.api import estimate, load_model
    from oomkit.planner.core import max_context

    spec = load_model(model, offline=True if offline else None)
    found = max_context(spec, settings, hardware, platform=platform)
    from oomkit.estimate.verdict import verdict

    layers = ""  # which layers the answer assumes (llama.cpp): every one, or the given -ngl
    hint = ""
    if isinstance(settings.n_gpu_layers, int):
        layers = f" with -ngl {settings.n_gpu_layers} as given"
    if settings.n_gpu_layers is None:
        # the search placed the layers as a plan does (llama.cpp: every layer, --fit off); the
        # answer keeps that placement, or --fit would move layers to the CPU at 256 tokens and
        # call "fits" what the search found does not
        from oomkit.estimate.registry import get_estimator, normalize_runtime

        probe = found[1] if found is not None else None
        if probe is None:
            planned = get_estimator(normalize_runtime(settings.runtime), planned=True)
            probe = planned(spec, dataclasses.replace(settings, ctx=256), hardware)
        ngl = probe.settings.get("n_gpu_layers")
        if isinstance(ngl, int):
            settings = dataclasses.replace(settings, n_gpu_layers=ngl)
            layers = f" with {ngl} layers on the GPU (every one, as a plan places them"
            hint = "; fewer layers leave room for more context: pass -ngl N or see `oomkit plan`)"

    if found is None:
        est = estimate(spec, dataclasses.replace(settings, ctx=256), hardware)
        clear = " clear of the variance band" if verdict(est, platform).level == "tight" else ""
        return dataclasses.replace(
            est,
            assumptions=(
                *est.assumptions,
                f"--ctx max: not even 256 tokens fit{clear}{layers}{hint}",
            ),
        )
    n, est = found
    # the search ran the estimator alone; the answer goes through the API as --ctx N does, so
    # it keeps what the API adds (the "modelled:" generation, check_run's and the loader's notes)
    est = estimate(spec, dataclasses.replace(settings, ctx=n), hardware)
    if verdict(est, platform).level == "tight":  # a margin no context changes (max_context)
        note = f"--ctx max: {n} is the largest context that fits (x256"
        tail = "; what keeps it tight is the same at any context"
    else:
        note = f"--ctx max: {n} is the largest context that fits clear of the variance band (x256"
        tail = ""
    from oomkit.planner.seq_cap import capped_words, model_max_seq

    longest = model_max_seq(spec)
    if hint and longest is not None and n >= longest.tokens:
        hint = ")"  # the model's whole context: nothing to gain from fewer layers
    if longest is not None and n >= longest.tokens:
        # the cap, not memory, decided: say so, and how far memory would go
        end = 8 * longest.tokens
        past = max_context(spec, settings, hardware, platform=platform, top=end)
        more = past[0] if past is not None and past[0] > longest.tokens else None
        words = capped_words(longest, more, searched_to=end - end % 256)
        note = note.replace(f"{n} is", f"{words} is", 1)
    note += (", up to the model's maximum)" if longest is not None else ")") + tail
    note += layers + hint
    return dataclasses.replace(est, assumptions=(note, *est.assumptions))

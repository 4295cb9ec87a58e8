"""llama.cpp's ``--fit``: the context and layers a recent build picks when the user left them.

Since ggml-org/llama.cpp PR #16653 ("llama: automatically set parameters not set by the user in
such a way that maximizes GPU utilization", JohannesGaessler; merged mid-December 2025: PR
#18070 of 2025-12-15 fixes it "already merged", issue #18097 of 2025-12-16 names build 7437)
``common_init_from_params`` runs ``llama_params_fit`` (today ``common_fit_params``,
common/fit.cpp) before it loads the model, for every common-based tool (llama-server,
llama-cli, llama-perplexity); llama-bench and programs on the C API (llama-cpp-python, LM
Studio's and koboldcpp's engines) do not. The defaults (common/common.h ``common_params``):
``n_ctx = 0`` ("0 == context the model was trained with"; ``-c/--ctx-size`` "default: 0, 0 =
loaded from model", common/arg.cpp), ``fit_params = true`` (``-fit on|off``),
``fit_params_target`` 1024 MiB per device (``-fitt``) and ``fit_params_min_ctx = 4096``
(``-fitc``). ``common_params_fit_impl`` then, with the memory it projects per device
(model + context + compute, against the device's free memory):

1. changes nothing when every device keeps the target free at the initial parameters;
2. if ``n_ctx`` was left at 0 (``n_ctx_auto``) and the model's context exceeds the minimum:
   measures again at the minimum context and interpolates linearly between the two for the
   context whose total leaves the targets free, rounded down to a multiple of 256 per stream
   (never below the minimum); on one device that ends the fit. A context set by the user (or
   ``-c 0``, which sets the minimum to ``UINT32_MAX``, PR #19070) is never changed;
3. otherwise (the context is at its minimum now) lowers the layers: it aborts ("n_gpu_layers
   already set by user") when ``-ngl`` was given, else it fills layers back to front until the
   target is met (a MoE model first with every expert tensor in system memory, then turning
   front layers back into full layers: step 4), down to 0 layers.

This module replays steps 1-3 with oomkit's own estimate in place of llama.cpp's measurement
(:func:`fitted_estimate`). A MoE model's expert overflow is modelled as ``--n-cpu-moe``: the
same number of layers' experts in system memory (upstream keeps the front layers whole and
spills the back ones; the bytes are the same up to one layer). On several GPUs step 2 keeps
upstream's extra margin of ``(nd + 1) * model_per_layer / (dense ? 2 : 6)`` and step 3 always
follows: a dense model's layers are filled from the last GPU back (their counts written to
``tensor_split``, as upstream does); a MoE model's experts leave by ``--n-cpu-moe`` over the
default split (upstream's MoE layer fill over several GPUs is not replayed: said in the note).
On one GPU upstream returns right after the interpolation without measuring again: where the
line overshoots, the note says so.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from oomkit.estimate.boundary import largest_by_margin
from oomkit.estimate.breakdown import Estimate
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "FIT_DETAIL",
    "FIT_MIN_CTX",
    "FIT_PR",
    "FIT_TARGET_BYTES",
    "fit_enabled",
    "fitted_estimate",
    "plan_note",
]

#: common_params.fit_params_target: 1024 MiB kept free per device (``-fitt``)
FIT_TARGET_BYTES = 1024 * 1024 * 1024
#: common_params.fit_params_min_ctx (``-fitc``)
FIT_MIN_CTX = 4096
#: common_params_fit_impl: "round down context for CUDA backend", 256 per stream
_CTX_ALIGN = 256
FIT_PR = "PR #16653"
#: ``Estimate.runtime_details`` key of a run whose -c/-ngl llama.cpp's fit chose and whose
#: projection keeps the target free: llama.cpp measures its own buffers, so the verdict's band
#: (oomkit's error on them) is absorbed by the fit (:func:`oomkit.estimate.verdict.verdict`)
FIT_DETAIL = "llamacpp_fit"

Estimator = Callable[[InferenceSettings], Estimate]


def fit_enabled(settings: InferenceSettings) -> bool:
    """Whether the run's llama.cpp fits unset parameters: llama-server / llama-cli
    (``settings.llama_server``, the CLI's default; the library's None stays the C API's, as
    for the output rows of :mod:`oomkit.estimate.llamacpp_outputs`, and so do LM Studio and
    koboldcpp) of a build from PR #16653 on, with something left unset (the context or
    ``-ngl``) and no draft model (its memory is not replayed)."""
    if not settings.llama_server or settings.draft_model is not None:
        return False
    if settings.ctx is not None and _placed_by_user(settings) is not None:
        return False
    if settings.runtime_version is None:
        return True
    from oomkit.estimate.generations import resolve_generation

    return bool(
        resolve_generation("llama.cpp", settings.runtime_version).effects.get("fit_params", True)
    )


def _placed_by_user(settings: InferenceSettings) -> str | None:
    """The flag that makes step 3 abort (common_params_fit_impl: "n_gpu_layers already set
    by user", "tensor_buft_overrides already set by user"; --n-cpu-moe is such an override),
    or None."""
    if settings.n_gpu_layers is not None:
        return f"-ngl {settings.n_gpu_layers} was given ('n_gpu_layers already set by user')"
    if settings.n_cpu_moe or settings.override_tensor:
        return "-ot/--n-cpu-moe was given ('tensor_buft_overrides already set by user')"
    return None


def _budget(est: Estimate) -> list[tuple[int, int]]:
    """(projected use, target use) per device that has a capacity; without a GPU the host's
    (common_params_fit_impl with no device fits to system memory), when ``--ram`` gave it."""
    if not est.devices:
        cap = est.host.capacity_bytes
        return [] if cap is None else [(est.host.total_bytes, cap - FIT_TARGET_BYTES)]
    return [
        (d.total_bytes, d.capacity_bytes - FIT_TARGET_BYTES)
        for d in est.devices
        if d.capacity_bytes is not None
    ]


def _fits(est: Estimate) -> bool:
    return all(used <= target for used, target in _budget(est))


def _margin(est: Estimate) -> int:
    """Bytes below the target on the tightest device (negative when over): steers the search."""
    return min((target - used for used, target in _budget(est)), default=0)


def _with_note(est: Estimate, note: str, fitted: bool) -> Estimate:
    """``est`` with the fit's assumption first and, when the fit succeeded (``fitted``: what
    common_fit_params reports as "successfully fit params to free device memory"), the
    :data:`FIT_DETAIL` of what it chose."""
    details = dict(est.runtime_details)
    if est.devices and fitted:
        details[FIT_DETAIL] = {
            "n_ctx": est.settings.get("ctx"),
            "n_gpu_layers": est.settings.get("n_gpu_layers"),
            "n_cpu_moe": est.settings.get("n_cpu_moe"),
            "tensor_split": est.settings.get("tensor_split"),
            "target_bytes_per_device": FIT_TARGET_BYTES,
        }
    return dataclasses.replace(est, assumptions=(note, *est.assumptions), runtime_details=details)


def _ctx_note(settings: InferenceSettings, n_ctx_train: int, what: str) -> str:
    build = f"llama.cpp {settings.runtime_version}" if settings.runtime_version else "llama.cpp"
    return (
        f"n_ctx not given: {build} uses the model's {n_ctx_train} tokens (-c 0) and `--fit` (on "
        f"by default, {FIT_PR}) {what}"
    )


def fitted_estimate(
    spec: ModelSpec, settings: InferenceSettings, estimate: Estimator, *, unified: bool = False
) -> Estimate:
    """The estimate at the context/layers llama.cpp's fit picks for ``settings``.

    ``estimate`` is the plain estimator (settings -> Estimate); ``spec`` gives the trained
    context (``max_position_embeddings``); ``unified``: the GPU shares the host's memory
    (Apple silicon). Call only when :func:`fit_enabled` is true.
    """
    return _host_unchecked(_fitted(spec, settings, estimate), unified)


def _host_unchecked(est: Estimate, unified: bool) -> Estimate:
    """``est`` with a word on system memory where the fit chose for GPUs and the host's size
    is unknown: with a GPU, common_params_fit_impl weighs device memory only (the host's
    ``dmds.back()`` enters the fit only when there is no device, common/fit.cpp), so what it
    leaves in system memory is never checked by llama.cpp, and oomkit checks it only against
    a known ``--ram`` (the verdict's host margin)."""
    if not est.devices or est.host.capacity_bytes is not None or not est.assumptions:
        return est
    if not est.assumptions[0].startswith(("n_ctx not given", "-ngl not given")):
        return est
    host = est.host.total_bytes
    if host < FIT_TARGET_BYTES:
        return est
    from oomkit.units import format_bytes

    note = (
        f"; system memory is not checked (llama.cpp's fit weighs GPU memory only): this run "
        f"needs {format_bytes(host)} of it"
    )
    if unified:
        gpu = sum(d.total_bytes for d in est.devices)
        note += f" besides the GPU's {format_bytes(gpu)}, from the same unified memory"
    note += ": give --ram SIZE to check it"
    return dataclasses.replace(est, assumptions=(est.assumptions[0] + note, *est.assumptions[1:]))


def _fitted(spec: ModelSpec, settings: InferenceSettings, estimate: Estimator) -> Estimate:
    n_ctx_train = spec.max_position_embeddings or 0
    ctx_auto = settings.ctx is None
    if ctx_auto and n_ctx_train <= 0:
        return estimate(settings)  # no trained context known: keep the old default
    # llama-server's -np auto is 4 slots on a unified cache (one stream); an explicit -np
    # without --kv-unified has one stream per sequence, each n_ctx_train long
    n_streams = 1 if settings.kv_unified or settings.parallel is None else settings.parallel
    n_ctx_max = n_ctx_train * n_streams if ctx_auto else 0
    n_ctx_min = FIT_MIN_CTX * n_streams
    base = dataclasses.replace(settings, ctx=n_ctx_max) if ctx_auto else settings
    full = estimate(base)
    gib = "1 GiB"
    nd = len(full.devices)
    first = full.devices[0].device if full.devices else "the host"
    if _fits(full):
        if ctx_auto:
            what = f"leaves it: {gib} stays free on every GPU"
            if not full.devices:
                what = "leaves it"
                if _budget(full):
                    what += f" while {gib} of system memory stays free (no GPU)"
            elif not _budget(full):  # no capacity known: nothing to say about the margin
                what = (
                    "would lower it where it does not fit the GPU's free memory; no GPU memory "
                    "was given, so the full context is estimated (pass --gpu or --vram)"
                )
            return _with_note(full, _ctx_note(settings, n_ctx_max, what), True)
        return full
    # step 2: lower an automatic context, linearly between its full and minimum totals
    ctx = settings.ctx
    if ctx_auto and n_ctx_max <= n_ctx_min:
        ctx = n_ctx_max  # "default model context size is ... <= the min. context size"
        at_min = full
    elif ctx_auto:
        at_min = estimate(dataclasses.replace(settings, ctx=n_ctx_min))
        used_full = sum(u for u, _ in _budget(full))
        used_min = sum(u for u, _ in _budget(at_min))
        target = sum(t for _, t in _budget(full)) - _several_gpus_margin(spec, full)
        ctx = n_ctx_min
        if target > used_min and used_full > used_min:
            ctx += (n_ctx_max - n_ctx_min) * (target - used_min) // (used_full - used_min)
            align = _CTX_ALIGN * n_streams
            ctx = max(ctx - ctx % align, n_ctx_min)
            fitted = estimate(dataclasses.replace(settings, ctx=ctx))
            if nd <= 1:
                # "entire model can be fit by reducing context": common_params_fit_impl returns
                # right after the interpolation, without measuring at the context it picked
                # (common/fit.cpp, `if (nd <= 1) { ... return; }`)
                if _fits(fitted):
                    note = f"lowers it to {ctx} to keep {gib} free on {first}"
                else:
                    note = (
                        f"lowers it to {ctx} by its linear fit between the {n_ctx_max} and "
                        f"{n_ctx_min}-token totals, which overshoots here (llama.cpp does not "
                        "measure again at the context it picks): the run would fail at load"
                    )
                return _with_note(fitted, _ctx_note(settings, n_ctx_max, note), _fits(fitted))
            at_min = fitted  # several GPUs: "should be fit across devices", layers next
    sets = f"keeps {ctx}" if ctx == n_ctx_max else f"lowers it to {ctx}"
    if ctx == n_ctx_min and ctx != n_ctx_max:
        sets = f"lowers it to its {ctx} minimum"
    if not ctx_auto:
        at_min = full
    user = _placed_by_user(settings) or (_split_by_user(settings) if nd > 1 else None)
    if user is not None or nd == 0:
        if not ctx_auto:
            return full
        why = user or f"no GPU, and {gib} of system memory cannot be kept free"
        # "unable to fit model into system memory by reducing context" / "... already set by user"
        return _with_note(
            at_min, _ctx_note(settings, n_ctx_max, f"{sets}; layers unchanged: {why}"), False
        )
    # step 3: fewer layers (or, for a MoE model, experts in system memory) at that context
    ctx_settings = dataclasses.replace(settings, ctx=ctx)
    if nd > 1 and spec.moe is None:
        fitted, how, ok = _fill_back_to_front(spec, ctx_settings, estimate, nd)
    else:
        fitted, how, ok = _fit_layers(spec, ctx_settings, estimate)
        if nd > 1:  # upstream: dense-only layers back to front, then whole ones front to back
            how += " (over several GPUs, oomkit's even split stands in for its MoE layer fill)"
    if ctx_auto:
        note = _ctx_note(settings, n_ctx_max, f"{sets} and {how}")
    else:
        note = f"-ngl not given: `--fit` (on by default, {FIT_PR}) {how}"
    return _with_note(fitted, note, ok)


def _several_gpus_margin(spec: ModelSpec, est: Estimate) -> int:
    """The extra memory common_params_fit_impl keeps free when it fits the context over
    several devices (common/fit.cpp: "for dense models only whole layers can be assigned to
    devices ... on average we expect a waste of 0.5 layers/tensors per device":
    ``sum_used_target -= (nd + 1) * model_per_layer / (hp_nex == 0 ? 2 : 6)`` with
    ``model_per_layer = sum_projected_model / min(n_gpu_layers, hp_ngl)``); 0 on one device."""
    nd = len(est.devices)
    if nd <= 1 or spec.num_hidden_layers <= 0:
        return 0
    model_per_layer = sum(d.weights_bytes for d in est.devices) // spec.num_hidden_layers
    return (nd + 1) * model_per_layer // (6 if spec.moe is not None else 2)


def _split_by_user(settings: InferenceSettings) -> str | None:
    """Several GPUs: the other aborts of step 3 (common/fit.cpp: "model_params::tensor_split
    already set by user", "changing weight allocation for LLAMA_SPLIT_MODE_ROW not
    implemented")."""
    if settings.tensor_split is not None:
        return "-ts was given ('tensor_split already set by user')"
    if settings.split_mode == "row":
        return "-sm row ('changing weight allocation for LLAMA_SPLIT_MODE_ROW not implemented')"
    return None


def _fill_back_to_front(
    spec: ModelSpec, settings: InferenceSettings, estimate: Estimator, nd: int
) -> tuple[Estimate, str, bool]:
    """Step 3 of a dense model on several GPUs (common/fit.cpp "filling dense layers
    back-to-front"): from the last device to the first, each gets the most of the layers not
    yet assigned that keep its target free (upstream by false position, here by oomkit's
    boundary search, largest_by_margin: the same largest count); the split is written as
    layer counts to ``tensor_split`` and the front layers left over stay in system memory."""
    n_total = spec.num_hidden_layers + 1  # -ngl counts the output layer too
    counts = [0] * nd

    def run(c: list[int]) -> Estimate:
        if not any(c):
            return estimate(dataclasses.replace(settings, n_gpu_layers=0))
        split = tuple(float(x) for x in c)
        return estimate(dataclasses.replace(settings, n_gpu_layers=sum(c), tensor_split=split))

    def room(est: Estimate, i: int) -> int:
        """Bytes below the target on device ``i`` (negative when over; no capacity: room)."""
        d = est.devices[i]
        cap = d.capacity_bytes
        return FIT_TARGET_BYTES if cap is None else cap - FIT_TARGET_BYTES - d.total_bytes

    def has_room(est: Estimate, i: int) -> bool:
        return room(est, i) >= 0

    def on(i: int, m: int) -> Estimate:
        """Device ``i`` with ``m`` layers, the later devices as already filled."""
        return run([*counts[:i], m, *counts[i + 1 :]])

    for i in reversed(range(nd)):
        found = largest_by_margin(
            0,
            n_total - sum(counts[i + 1 :]),
            functools.partial(on, i),
            functools.partial(has_room, i=i),
            functools.partial(room, i=i),
        )
        counts[i] = 0 if found is None else found[0]
    best = run(counts)
    keep = f"keep {FIT_TARGET_BYTES >> 30} GiB free"
    split = "+".join(str(c) for c in counts)
    how = (
        f"offloads {sum(counts)} of {n_total} layers ({split}, filled from the last GPU) to {keep}"
    )
    return best, how, _fits(best)


def _fit_layers(
    spec: ModelSpec, settings: InferenceSettings, estimate: Estimator
) -> tuple[Estimate, str, bool]:
    """The most layers (dense) or the fewest CPU expert layers (MoE) that keep the target
    free on the one GPU, by oomkit's boundary search over its estimate (upstream: false
    position over its own measurement; the answer is the same largest count that fits)."""
    n_layer = spec.num_hidden_layers
    keep = f"keep {FIT_TARGET_BYTES >> 30} GiB free"
    if spec.moe is not None:
        all_cpu = estimate(dataclasses.replace(settings, n_cpu_moe=n_layer))
        if _fits(all_cpu):
            lo, hi = 0, n_layer  # hi fits; find the fewest CPU expert layers that fit
            best = all_cpu
            while hi - lo > 0:
                mid = (lo + hi) // 2
                trial = estimate(dataclasses.replace(settings, n_cpu_moe=mid))
                if _fits(trial):
                    hi, best = mid, trial
                else:
                    lo = mid + 1
            what = f"keeps the experts of {hi} of {n_layer} layers in system memory to {keep}"
            return best, what, True
        settings = dataclasses.replace(settings, n_cpu_moe=n_layer)

    def at(n: int) -> Estimate:
        return estimate(dataclasses.replace(settings, n_gpu_layers=n))

    found = largest_by_margin(0, n_layer + 1, at, _fits, _margin)  # -ngl counts the output layer
    if found is None:
        return at(0), f"offloads 0 layers and still cannot {keep}", False
    n, best = found
    return best, f"offloads {n} of {n_layer + 1} layers to {keep}", True


def plan_note(spec: ModelSpec, settings: InferenceSettings) -> str | None:
    """What a plan's llama-server command means under ``--fit`` (``plan``, ``models --fits``):
    it passes ``-c`` and ``-ngl``, so the fit leaves both; None when the build has no fit or
    the plan is not llama-server's."""
    if not settings.llama_server or not fit_enabled(
        dataclasses.replace(settings, ctx=None, n_gpu_layers=None)
    ):
        return None
    trained = spec.max_position_embeddings
    own = f"the model's {trained} tokens" if trained else "the model's trained context"
    return (
        "the llama-server commands pass -c and -ngl, so llama.cpp's --fit (on by default since "
        f"{FIT_PR}) keeps the planned context and layers; without -c it would start from {own} "
        "and lower the context, then the layers, until 1 GiB stays free per GPU"
    )

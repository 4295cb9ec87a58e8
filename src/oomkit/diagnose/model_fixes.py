"""Model-aware fixes: the doctor asks the estimators what each change would free.

When the model is known (``--model``, or a log that names it: llama.cpp/Ollama ``general.name``),
:func:`estimator_fix_provider` rebuilds the failing setup from the log (runtime, file type,
``n_ctx``, ``n_ubatch``, flash attention, KV types, ``-ngl``, device count and free memory) merged
with the user's explicit settings (those win), runs that runtime's estimator for it and for each
candidate change, and returns fixes whose ``expected_saving_bytes`` is the estimate difference on
the failing device:

* llama.cpp / Ollama (:mod:`oomkit.diagnose.model_fixes_llamacpp`): halve / quarter the
  context, the largest context that fits, a quantized KV cache (+ flash attention where a
  quantized V needs it), ``-fa on``, a smaller ``-ub``, the largest ``-ngl`` that fits with
  headroom (binary search over the estimator), ``--n-cpu-moe`` for MoE models and the
  next-smaller file type (Q6_K -> Q5_K_M -> Q4_K_M -> IQ4_XS -> Q3_K_M), as llama.cpp flags or
  Ollama's ``num_ctx`` / ``OLLAMA_KV_CACHE_TYPE`` / ``num_gpu`` forms;
* vLLM (:mod:`oomkit.diagnose.model_fixes_hf`): the saving is the change of the KV pool left
  over after one ``max_model_len`` request;
* transformers, only with an explicit model: bf16, 8-/4-bit bitsandbytes, a smaller batch, SDPA.

A model that cannot be resolved gives no fixes, so the rules' own (log-arithmetic or generic)
fixes stand. Estimator modules and the catalog are imported only when a model is in play.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oomkit.diagnose.fixes import Fix, size_text
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import MiB

if TYPE_CHECKING:
    from oomkit.diagnose.events import LogContext, OomEvent
    from oomkit.diagnose.rules import Finding, FixProvider
    from oomkit.estimate.breakdown import Estimate
    from oomkit.spec.model import ModelSpec

__all__ = [
    "HEADROOM_BYTES",
    "Case",
    "EstimatedFix",
    "estimate_case",
    "estimator_fix_provider",
    "fits",
    "fits_with",
    "largest",
    "log_runtime",
    "make_fix",
    "model_fixes",
    "resolve_log_model",
    "try_estimate",
]

#: memory a fitting configuration must leave free on each GPU (allocator slack, other apps)
HEADROOM_BYTES = 512 * MiB
_LOG_RUNTIME = {"llama.cpp": "llama.cpp", "ollama": "ollama", "vllm": "vllm", "sglang": "sglang"}


@dataclass(frozen=True, slots=True, kw_only=True)
class EstimatedFix(Fix):
    """A fix computed by the estimators for the resolved model.

    ``supersedes`` lists title prefixes of the rules' own fixes for the same change (sized from
    the log's arithmetic alone, or generic); :func:`oomkit.diagnose.rules.diagnose` drops those.
    """

    supersedes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """:meth:`Fix.to_dict` plus ``"estimated": true`` (the saving is an estimate difference)."""
        return {**Fix.to_dict(self), "estimated": True}


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """The failing setup as the estimators see it: model, merged settings, hardware, device."""

    runtime: str  # canonical estimator runtime
    spec: ModelSpec
    settings: InferenceSettings
    hardware: Hardware
    device: int  # index of the failing GPU in ``hardware.devices``
    headroom_bytes: int
    basis: str  # what the numbers rest on, for every ``why``
    #: the log's stated compute buffer over the estimate's, on the failing device (a llama.cpp /
    #: Ollama failed compute-buffer allocation: the log is the ground truth for that run); every
    #: estimate's compute/activations there are scaled by it, keeping the model's dependence on
    #: n_ubatch and n_ctx (:func:`oomkit.diagnose.model_fixes_llamacpp.compute_scale`)
    compute_scale: float | None = None


def _fb(n: int | None) -> str:
    return size_text(n)


def resolve_log_model(name: str | None) -> ModelSpec | None:
    """The catalog spec for a model name a log prints (fuzzy), or ``None`` when unknown."""
    if not name:
        return None
    from oomkit.catalog.models import find_model
    from oomkit.errors import OomkitError

    try:
        return find_model(name).spec()
    except OomkitError:
        return None


def _runtime(explicit: str | None, e: OomEvent, ctx: LogContext) -> str | None:
    if explicit:
        from oomkit.estimate.registry import normalize_runtime

        return normalize_runtime(explicit)
    if e.runtime == "llama.cpp" and (
        ctx.ollama_runner or ctx.ollama_available_bytes or ctx.ollama_layers_model is not None
    ):
        # the ggml lines of an Ollama runner (its server.go offload line or the runner error
        # in the same log): Ollama's estimator and num_gpu/num_ctx, not llama-server's -ngl/-c
        return "ollama"
    if e.runtime in _LOG_RUNTIME:
        return _LOG_RUNTIME[e.runtime]
    if e.runtime == "pytorch":
        # a PyTorch OOM inside a serving engine (its scheduler or model runner raised it): the
        # engine's fixes, not transformers' (bitsandbytes loading for a `vllm serve`). SGLang's
        # own "Load weight end ... avail mem" line, or the engine named at the top of the log
        if ctx.avail_after_weights_bytes is not None:
            return "sglang"
        if ctx.runtime_hint in ("vllm", "sglang"):
            return ctx.runtime_hint
        return "transformers"
    return _LOG_RUNTIME.get(ctx.runtime_hint or "")


def log_runtime(e: OomEvent, ctx: LogContext) -> str | None:
    """The estimator runtime a log's OOM belongs to (PyTorch: transformers), or ``None``."""
    return _runtime(None, e, ctx)


def estimate_case(
    case: Case, settings: InferenceSettings, spec: ModelSpec | None = None
) -> Estimate:
    """One estimate of ``settings`` on the case's hardware (public API, so tests can redo it)."""
    from oomkit.api import estimate

    est = estimate(spec or case.spec, settings, case.hardware)
    if case.compute_scale is None or case.device >= len(est.devices):
        return est
    d = est.devices[case.device]
    scaled = tuple(
        dataclasses.replace(c, n_bytes=round(c.n_bytes * case.compute_scale))
        if c.category == "activations"
        else c
        for c in d.components
    )
    devices = list(est.devices)
    devices[case.device] = dataclasses.replace(d, components=scaled)
    return dataclasses.replace(est, devices=tuple(devices))


def try_estimate(
    case: Case, settings: InferenceSettings, spec: ModelSpec | None = None
) -> Estimate | None:
    """:func:`estimate_case`, or ``None`` when the estimator refuses the settings."""
    from oomkit.errors import OomkitError

    try:
        return estimate_case(case, settings, spec)
    except (OomkitError, ValueError):
        return None


def fits(case: Case, est: Estimate) -> bool | None:
    """Every GPU of known capacity keeps the headroom; ``None`` if the failing one is unknown."""
    if case.device >= len(est.devices) or est.devices[case.device].capacity_bytes is None:
        return None
    return all(
        d.total_bytes + case.headroom_bytes <= d.capacity_bytes
        for d in est.devices
        if d.capacity_bytes is not None
    )


def fits_with(case: Case, settings: InferenceSettings) -> bool:
    """True when the estimate of ``settings`` fits every GPU with the case's headroom."""
    est = try_estimate(case, settings)
    return est is not None and fits(case, est) is True


def largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """:func:`oomkit.estimate.boundary.largest`, imported when a fix is sized (a plain log
    never loads the estimators)."""
    from oomkit.estimate.boundary import largest as search

    return search(lo, hi, ok)


def _saving(case: Case, base: Estimate, cand: Estimate) -> int:
    i = case.device
    return base.devices[i].total_bytes - cand.devices[i].total_bytes


def _totals(case: Case, base: Estimate, cand: Estimate) -> str:
    d0, d1 = base.devices[case.device], cand.devices[case.device]
    text = f"{d0.device} total {_fb(d0.total_bytes)} -> {_fb(d1.total_bytes)}"
    if d1.capacity_bytes is not None:
        text += f" of {_fb(d1.capacity_bytes)}"
    return text


def _parts(case: Case, base: Estimate, cand: Estimate, skip: str = "") -> str:
    """The categories that changed on the failing device, as ``label a -> b``."""
    d0, d1 = base.devices[case.device], cand.devices[case.device]
    out = []
    for cat, label in (
        ("weights", "weights"),
        ("kv_cache", "KV cache"),
        ("activations", "compute/activations"),
        ("overhead", "overhead"),
    ):
        a, b = d0.category_bytes(cat), d1.category_bytes(cat)
        if a != b and cat != skip:
            out.append(f"{label} {_fb(a)} -> {_fb(b)}")
    return "; ".join(out)


def make_fix(
    case: Case,
    base: Estimate,
    cand: Estimate,
    *,
    title: str,
    lead: str,
    commands: Sequence[str],
    supersedes: tuple[str, ...],
    skip: str = "",
    saving: int | None = None,
    order: int | None = None,
) -> EstimatedFix | None:
    """A fix from two estimates; ``None`` when the change frees nothing on the failing device.
    ``order`` ranks it among the fixes that fit (smaller: less intrusive, :func:`fixes.rank`)."""
    n = _saving(case, base, cand) if saving is None else saving
    if n <= 0:
        return None
    parts = _parts(case, base, cand, skip)
    why = lead + (f"; {parts}" if parts else "") + f"; {_totals(case, base, cand)}"
    ok = fits(case, cand)
    if fits(case, base) is True:
        # the run as estimated already fits: "fits" after this change says nothing, and the
        # ranking must not put it first as if it were the remedy (Ollama "unable to allocate
        # CUDA0 buffer" for llama-3.1-8b Q4_K_M on a 12 GB card: 5.2 GiB estimated)
        ok = None
        why += (
            "; oomkit's estimate of the run as logged already fits, so these settings alone do "
            "not explain the failure (another process on the GPU? `oomkit gpus`)"
        )
    if ok is not None:
        d = cand.devices[case.device]
        left = (d.capacity_bytes or 0) - d.total_bytes
        # (an over-full device is "N short", never "-N left")
        why += (
            f" ({_fb(left)} left on {d.device}"
            if left >= 0
            else f" ({_fb(-left)} over on {d.device}"
        )
        short = [
            x.device
            for x in cand.devices
            if x.capacity_bytes is not None
            and x.total_bytes + case.headroom_bytes > x.capacity_bytes
        ]
        why += f"; still short on {', '.join(short[:3])})" if short else ", fits)"
    return EstimatedFix(
        title=title,
        why=f"{why}. {case.basis}",
        commands=tuple(commands),
        expected_saving_bytes=n,
        supersedes=supersedes,
        fits=ok,  # the why says "fits" / "still short": rank() puts the fitting ones first
        order=order,
    )


# --- the provider ---------------------------------------------------------------------------------


def model_fixes(
    finding: Finding,
    *,
    model: ModelSpec | None = None,
    settings: InferenceSettings | None = None,
    hardware: Hardware | None = None,
    runtime: str | None = None,
) -> list[Fix]:
    """Estimator-computed fixes for one finding (see the module docstring); pure.

    Args:
        finding: what the rules concluded (events, context, primary event, cause).
        model: the model, when the user named it; else the log's model name is looked up.
        settings: explicit user settings; fields left ``None`` come from the log. Its
            ``runtime`` is ignored: pass ``runtime`` (else the log's runtime is used).
        hardware: explicit hardware; else built from what the log says about the devices.
        runtime: explicit runtime name (``llama.cpp``, ``ollama``, ``vllm``, ``transformers``).

    Returns:
        Fixes with estimator-computed savings, or an empty list when the model is unknown.
    """
    e, ctx = finding.primary, finding.context
    if e is None or finding.cause == "host_ram":
        return []
    rt = _runtime(runtime, e, ctx)
    if rt is None or (rt == "transformers" and model is None):
        return []
    if e.runtime == "pytorch" and rt in ("vllm", "sglang") and runtime is None:
        # a PyTorch OOM inside a running engine: its start-up capacity fixes (a KV pool that
        # must hold one request) do not size it, and transformers' (bitsandbytes loading) are
        # not this engine's; the rules' engine fixes (utilization, CUDA graphs) stand alone
        return []
    spec = model or resolve_log_model(ctx.model_name)
    if spec is None:
        return []
    user = settings or InferenceSettings(runtime=rt)
    if rt == "sglang":
        from oomkit.diagnose.model_fixes_sglang import sglang_fixes

        return sglang_fixes(spec, dataclasses.replace(user, runtime=rt), e, ctx, hardware)
    if rt == "vllm":
        from oomkit.diagnose.model_fixes_hf import vllm_fixes

        return vllm_fixes(spec, dataclasses.replace(user, runtime=rt), e, ctx, hardware)
    if rt == "transformers":
        if ctx.frame_phase in ("backward", "optimizer_step"):
            return []  # a training step: the inference estimate would not size it
        from oomkit.diagnose.model_fixes_hf import transformers_fixes

        return transformers_fixes(spec, dataclasses.replace(user, runtime=rt), e, hardware)
    from oomkit.diagnose.model_fixes_llamacpp import llamacpp_fixes

    return llamacpp_fixes(spec, dataclasses.replace(user, runtime=rt), e, ctx, hardware)


def estimator_fix_provider(
    model: ModelSpec | None = None,
    settings: InferenceSettings | None = None,
    hardware: Hardware | None = None,
    *,
    runtime: str | None = None,
) -> FixProvider:
    """A fix provider for :func:`oomkit.diagnose.rules.diagnose` bound to the user's facts.

    Explicit ``model``/``settings``/``hardware``/``runtime`` win over what the log says; without
    a model the provider looks up the model name the log prints, and gives no fixes when the
    catalog does not know it.
    """

    def estimator_fixes(finding: Finding) -> list[Fix]:
        return model_fixes(
            finding, model=model, settings=settings, hardware=hardware, runtime=runtime
        )

    return estimator_fixes

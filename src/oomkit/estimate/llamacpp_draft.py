"""llama-server speculative decoding: the draft model's weights, KV caches and compute buffers.

``llama-server -m big.gguf -md draft.gguf`` loads a second model and gives every slot its own
context on it. What llama.cpp does (tools/server/server.cpp ``server_context::load_model`` and
``init``, examples/server/server.cpp before the move to tools/):

* ``auto params_dft = params_base``: the draft's parameters are a **copy of the main model's**,
  so it inherits ``-sm``, ``-ts``, ``-fa``, ``-ub``, ``--no-mmap``, ``--swa-full``; then
  ``devices = speculative.devices`` (``-devd``; empty: every GPU, as the main model),
  ``n_gpu_layers = speculative.n_gpu_layers`` (``-ngld``; not given: ``llama_model_default_params``,
  0 layers before PR #15434 of 2025-08-30, all layers since), ``n_parallel = 1`` and
  ``tensor_buft_overrides = speculative.tensor_buft_overrides`` (the main model's ``-ot`` /
  ``--n-cpu-moe`` are not inherited);
* ``n_ctx = speculative.n_ctx`` (``-cd``) or, when 0, the slot context of the main model:
  ``params_base.n_ctx / params_base.n_parallel`` (PR #10586, 2024-11-29), later
  ``llama_n_ctx_seq(ctx)`` (the same with per-sequence streams; ``n_ctx`` under
  ``--kv-unified``);
* the KV cache is **f16** (PR #10586: "force F16 KV cache for the draft model"); from PR #13782
  (2025-06) ``-ctkd``/``-ctvd`` choose it, f16 by default; the main ``-ctk``/``-ctv`` never apply;
* the load context is freed ("we will create one for each slot") and ``init()`` creates
  ``llama_init_from_model(model_dft, cparams_dft)`` **once per slot** (``-np`` contexts) with
  ``cparams_dft.n_batch = n_ctx_dft``: each holds its own KV cache, compute buffer and output
  buffer; the weights are loaded once.

Each draft context is estimated with the llama.cpp estimator itself on the draft spec, and its
buffers are added per device as separate components (``draft model weights``, ``draft KV
cache``, ``draft compute buffer``) so that the verdict and the planner see them in the device
totals. Not modelled: with ``-sm row`` the draft's matrices follow ``--tensor-split`` over
every CUDA device (``ggml_backend_cuda_split_buffer_type``) even when ``-devd`` names fewer;
the short-lived load context (freed before the slot contexts exist); ``-otd``/``-cmoed``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate, InputValue
from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from datetime import date

    from oomkit.estimate.llamacpp_params import LlamaCppOptions, LlamaCppParams
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec

__all__ = [
    "DraftPlan",
    "estimate_llamacpp_planned",
    "estimate_llamacpp_server",
    "plan_draft",
    "with_draft",
]

SRC_SERVER = (
    "llama.cpp tools/server/server.cpp server_context::load_model (params_dft = params_base) "
    "and init() (one draft context per slot)"
)
#: ggml-org/llama.cpp PR #10455 (server : add speculative decoding support)
SPEC_SERVER_SINCE = "2024-11-25"
#: PR #13782 (server: args for draft model cache types, -ctkd/-ctvd); merged after its
#: 2025-06-19 review comments
DRAFT_CACHE_TYPES_SINCE = "2025-06-20"
#: PR #15434 (use FA + max. GPU layers by default): llama_model_default_params().n_gpu_layers
#: went from 0 to all layers; -ngld not given takes that default (the generations table's
#: "2025-08-fa-auto" row)
MAX_GPU_LAYERS_SINCE = "2025-08-30"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DraftPlan:
    """The settings one draft context is estimated with, and how many such contexts exist."""

    settings: InferenceSettings
    n_ctx: int  # cells asked of each draft context (before llama.cpp's padding)
    n_slots: int  # draft contexts: one per llama-server slot
    notes: tuple[str, ...]


def _build_date(version: str | None) -> date | None:
    if version is None:
        return None
    from datetime import date

    from oomkit.estimate.generations import parse_runtime_version

    when = parse_runtime_version("llama.cpp", version)
    return when if isinstance(when, date) else None


def _before(when: date | None, iso: str) -> bool:
    from datetime import date

    return when is not None and when < date.fromisoformat(iso)


def _draft_tensor_split(settings: InferenceSettings, n_gpus: int) -> tuple[float, ...] | None:
    """``-ts`` as the draft sees it. llama.cpp indexes ``tensor_split`` by the model's own
    device list, so the k-th ``-devd`` device takes entry k; all zero means "by free memory"
    (``llama_model::load_tensors``), read here as equal shares."""
    dd = settings.draft_devices
    if dd is None:
        return settings.tensor_split
    base = settings.tensor_split or ()
    mine = [float(base[k]) if k < len(base) else 0.0 for k in range(len(dd))]
    if not any(x > 0 for x in mine):
        mine = [1.0] * len(dd)
    split = [0.0] * n_gpus
    for k, gi in enumerate(dd):
        split[gi] = mine[k]
    return tuple(split)


#: the draft context's setting -> (the draft field that sets it, llama-server's flag), for
#: errors the draft's own estimate raises in the main run's terms ("'cache_type_k' ('q9')")
_DRAFT_OF: dict[str, tuple[str, str]] = {
    "cache_type_k": ("draft_cache_type_k", "-ctkd"),
    "cache_type_v": ("draft_cache_type_v", "-ctvd"),
    "n_gpu_layers": ("draft_n_gpu_layers", "-ngld"),
    "ctx": ("draft_ctx", "-cd"),
    "quant": ("draft_quant", "--draft-quant"),
}


def plan_draft(settings: InferenceSettings, params: LlamaCppParams, n_gpus: int) -> DraftPlan:
    """The draft context's settings from the main run's (``params``: the main context).

    Raises:
        InvalidSettingError: a ``-devd`` index past the target's GPUs, a build before
            llama-server had ``-md``, or a draft context of no cells.
    """
    notes: list[str] = []
    when = _build_date(settings.runtime_version)
    if _before(when, SPEC_SERVER_SINCE):
        raise InvalidSettingError(
            f"--draft-model/-md: llama-server {settings.runtime_version} has no draft model (-md "
            f"arrived with PR #10455, {SPEC_SERVER_SINCE}); drop the draft or name a later build",
            setting="draft_model",
            value=settings.draft_model,
        )
    dd = settings.draft_devices
    if dd is not None and (not n_gpus or max(dd) >= n_gpus):
        raise InvalidSettingError(
            f"-devd {','.join(map(str, dd))}: the target has {n_gpus} GPU(s), "
            f"indices 0 to {max(n_gpus - 1, 0)}",
            setting="draft_devices",
            value=None,
        )
    if settings.draft_ctx is not None:
        n_ctx = settings.draft_ctx
    elif not params.options.kv_streams:
        # PR #10586: params_base.n_ctx / params_base.n_parallel (the requested -c)
        n_ctx = params.n_ctx_requested // params.n_seq_max
        notes.append(f"draft n_ctx = -c {params.n_ctx_requested} / -np {params.n_seq_max}")
    else:
        n_ctx = params.n_ctx_seq  # llama_n_ctx_seq(ctx) of the main context
        notes.append(f"draft n_ctx = the main context's n_ctx_seq ({n_ctx})")
    if n_ctx < 1:
        raise InvalidSettingError(
            f"-cd: -c {params.n_ctx_requested} over -np {params.n_seq_max} slots leaves "
            "the draft no context; give the draft context (-cd)",
            setting="draft_ctx",
            value=n_ctx,
        )
    ngl = settings.draft_n_gpu_layers
    if ngl == -1:
        ngl = None  # all layers
    elif ngl is None and _before(when, MAX_GPU_LAYERS_SINCE):
        ngl = 0
        notes.append(
            "-ngld not given: builds before PR #15434 keep the draft on the CPU "
            "(llama_model_default_params n_gpu_layers = 0)"
        )
    type_k, type_v = settings.draft_cache_type_k, settings.draft_cache_type_v
    if (type_k or type_v) and _before(when, DRAFT_CACHE_TYPES_SINCE):
        notes.append(
            "draft cache types ignored: builds before PR #13782 force an f16 draft KV cache"
        )
        type_k = type_v = None
    split_mode = settings.split_mode
    if split_mode == "none" and dd is not None:
        split_mode = "layer"  # one device: -sm none on the first -devd device
        dd = dd[:1]
    draft = dataclasses.replace(
        settings,
        quant=settings.draft_quant,
        ctx=n_ctx,
        parallel=1,
        batch_size=n_ctx,  # cparams_dft.n_batch = n_ctx_dft
        cache_type_k=type_k or "f16",
        cache_type_v=type_v or "f16",
        n_gpu_layers=ngl,
        split_mode=split_mode,
        tensor_split=_draft_tensor_split(dataclasses.replace(settings, draft_devices=dd), n_gpus)
        if n_gpus
        else None,
        n_cpu_moe=None,
        override_tensor=None,
        draft_model=None,
        draft_quant=None,
        draft_n_gpu_layers=None,
        draft_ctx=None,
        draft_cache_type_k=None,
        draft_cache_type_v=None,
        draft_devices=None,
        # the draft's rows by ordinal would need the main -ts as typed; it is re-indexed above
        device_ordinals=None,
    )
    return DraftPlan(settings=draft, n_ctx=n_ctx, n_slots=params.n_seq_max, notes=tuple(notes))


def _sum(dev: DeviceUsage, category: str, label: str | None = None) -> int:
    return sum(
        c.n_bytes
        for c in dev.components
        if c.category == category and (label is None or c.label.startswith(label))
    )


def _draft_components(
    dev: DeviceUsage, plan: DraftPlan, details: dict[str, InputValue], host: bool
) -> list[Component]:
    """The draft's buffers on one device: weights once, KV/compute/output per slot context."""
    s = plan.n_slots
    per_ctx: dict[str, InputValue] = {
        "n_slots": s,
        "n_ctx_draft": details.get("n_ctx"),
        "type_k": str(plan.settings.cache_type_k),
        "type_v": str(plan.settings.cache_type_v),
    }
    out: list[Component] = []
    w = _sum(dev, "weights")
    if w:
        out.append(
            Component(
                category="weights",
                label="draft model weights",
                n_bytes=w,
                formula="the draft GGUF's tensor bytes on this device (llama.cpp's placement of "
                "the draft with -ngld, -devd and the inherited -sm/-ts), loaded once",
                inputs={"model_buffer_bytes": w},
                source=f"{SRC_SERVER}; llama.cpp src/llama-model.cpp llama_model::load_tensors",
            )
        )
    kv = _sum(dev, "kv_cache")
    if kv:
        out.append(
            Component(
                category="kv_cache",
                label=f"draft KV cache (K {plan.settings.cache_type_k}, "
                f"V {plan.settings.cache_type_v})",
                n_bytes=kv * s,
                formula="n_slots x the KV buffer of one draft context (n_seq_max 1, "
                "n_ctx_draft cells)",
                inputs={**per_ctx, "kv_bytes_per_context": kv},
                source=f"{SRC_SERVER}; llama.cpp src/llama-kv-cache.cpp",
            )
        )
    cb = _sum(dev, "activations", "compute buffer")
    if cb:
        out.append(
            Component(
                category="activations",
                label="draft compute buffer",
                n_bytes=cb * s,
                formula="n_slots x the compute buffer of one draft context (n_batch = "
                "n_ctx_draft, n_ubatch inherited from -ub)",
                inputs={**per_ctx, "compute_bytes_per_context": cb},
                source=f"{SRC_SERVER}; llama.cpp src/llama-context.cpp graph_reserve",
            )
        )
    ob = _sum(dev, "activations", "output buffer") if host else 0
    if ob:
        out.append(
            Component(
                category="activations",
                label="draft output buffer (logits)",
                n_bytes=ob * s,
                formula="n_slots x n_vocab x 1 output x 4 (f32 logits of one draft context)",
                inputs={"n_slots": s, "output_bytes_per_context": ob},
                source=f"{SRC_SERVER}; llama.cpp llama_context::output_reserve",
            )
        )
    return out


def with_draft(
    est: Estimate,
    params: LlamaCppParams,
    settings: InferenceSettings,
    hardware: Hardware,
    options: LlamaCppOptions | None,
) -> Estimate:
    """``est`` (the main model's llama.cpp estimate) plus the draft model of ``settings``.

    Raises:
        InvalidSettingError: the draft options cannot run (see :func:`plan_draft`), or the
            draft context refuses them (named as the draft's).
    """
    from oomkit.estimate.llamacpp import _estimate, llamacpp_view
    from oomkit.loaders.source import resolve_model

    assert settings.draft_model is not None
    n_gpus = sum(1 for d in hardware.devices if d.backend != "cpu")
    plan = plan_draft(settings, params, n_gpus)
    # offline: oomkit.api.estimate_model resolved it first, with the caller's offline rule
    spec = llamacpp_view(resolve_model(settings.draft_model, offline=True))
    try:
        d_est, d_bd = _estimate(spec, plan.settings, hardware, options, False, "llama.cpp")
    except InvalidSettingError as e:
        field = _DRAFT_OF.get(e.setting or "")
        setting, flag = field if field else ("draft_model", "")
        message = str(e)
        if flag:  # the draft context's own setting named as the flag that sets it
            message = re.sub(rf"(?<![\w/.-])'?{re.escape(e.setting or '')}'?(?![\w/-])",
                             flag, message)  # fmt: skip
        raise InvalidSettingError(
            f"draft model '{spec.name}' (-md): {message}", setting=setting, value=e.value
        ) from e
    d_details = d_est.runtime_details.get("devices")
    per_dev = d_details if isinstance(d_details, dict) else {}
    by_name = {d.device: d for d in d_est.devices}
    devices: list[DeviceUsage] = []
    summary: dict[str, dict[str, int]] = {}
    for dev in est.devices:
        d_dev = by_name.get(dev.device)
        extra = (
            []
            if d_dev is None
            else _draft_components(d_dev, plan, per_dev.get(dev.device, {}), False)
        )
        devices.append(dataclasses.replace(dev, components=(*dev.components, *extra)))
        if extra:
            summary[dev.device] = {c.label.split(" (")[0]: c.n_bytes for c in extra}
    host_extra = _draft_components(d_est.host, plan, per_dev.get("cpu", {}), True)
    host = dataclasses.replace(est.host, components=(*est.host.components, *host_extra))
    if host_extra:
        summary["cpu"] = {c.label.split(" (")[0]: c.n_bytes for c in host_extra}
    dp = d_bd.params
    rd = dict(est.runtime_details)
    rd["draft"] = {
        "model": spec.name,
        "n_slots": plan.n_slots,
        "n_ctx": dp.n_ctx,
        "n_batch": dp.n_batch,
        "n_ubatch": dp.n_ubatch,
        "type_k": dp.type_k.lower(),
        "type_v": dp.type_v.lower(),
        "n_gpu_layers": dp.n_gpu_layers,
        "offloaded_layers": d_est.runtime_details.get("offloaded_layers"),
        "weights_file_bytes": d_est.runtime_details.get("weights_file_bytes"),
        "devices": summary,
    }
    s = dict(est.settings)
    s.update(
        draft_model=settings.draft_model,
        draft_quant=settings.draft_quant,
        draft_ctx=dp.n_ctx,
        draft_n_gpu_layers=dp.n_gpu_layers,
        draft_cache_type_k=dp.type_k.lower(),
        draft_cache_type_v=dp.type_v.lower(),
        draft_devices=None
        if settings.draft_devices is None
        else ",".join(map(str, settings.draft_devices)),
    )
    offloaded = d_est.runtime_details.get("offloaded_layers")
    notes = (
        *plan.notes,
        f"draft model {spec.name}: {plan.n_slots} draft context(s) of {dp.n_ctx} cells "
        f"(K {dp.type_k.lower()}, V {dp.type_v.lower()}), {offloaded} "
        "layers offloaded; the draft's -sm/-ts/-fa/-ub are the main model's (params_dft = "
        "params_base)",
    )
    return dataclasses.replace(
        est,
        devices=tuple(devices),
        host=host,
        settings=s,
        runtime_details=rd,
        assumptions=(*est.assumptions, *notes),
    )


def estimate_llamacpp_planned(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware
) -> Estimate:
    """:func:`estimate_llamacpp_server` for a plan's settings: its command passes ``-c`` and
    ``-ngl``, so no ``--fit`` (``get_estimator(..., planned=True)``)."""
    return estimate_llamacpp_server(spec, settings, hardware, fit=False)


def estimate_llamacpp_server(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware, *, fit: bool = True
) -> Estimate:
    """The ``llama.cpp`` estimator of the registry: :func:`~oomkit.estimate.llamacpp.
    estimate_llamacpp` at the context and layers llama.cpp's ``--fit`` picks when they are
    unset (``fit``; :mod:`oomkit.estimate.llamacpp_fit`), plus the draft model when
    ``settings.draft_model`` is set, or the MTP context when ``speculative_method`` is "mtp"
    (``--spec-type draft-mtp``, :mod:`oomkit.estimate.llamacpp_mtp`). Ollama and the oracle
    call ``estimate_llamacpp`` itself and never see a draft."""
    from oomkit.estimate.llamacpp import estimate_llamacpp, llamacpp_view
    from oomkit.estimate.llamacpp_fit import fit_enabled, fitted_estimate
    from oomkit.estimate.llamacpp_mtp import check_mtp, mtp_enabled, with_mtp
    from oomkit.estimate.llamacpp_params import LlamaCppOptions, resolve_llamacpp_params

    if settings.speculative_method not in (None, "mtp"):
        raise InvalidSettingError(
            f"speculative_method '{settings.speculative_method}': llama-server drafts with the "
            "model's MTP head (--spec-type draft-mtp) or a draft model (-md); oomkit prices those",
            setting="speculative_method",
            value=settings.speculative_method,
        )
    if mtp_enabled(settings):  # --spec-type draft-mtp: the MTP context on the loaded model
        check_mtp(spec, settings)  # refused before the main estimate (-md with it, old builds)
    if fit and fit_enabled(settings):  # --fit of builds from PR #16653: -c/-ngl the user left unset
        unified = any(d.unified_memory for d in hardware.devices)
        est = fitted_estimate(
            spec, settings, lambda s: estimate_llamacpp(spec, s, hardware), unified=unified
        )
        return with_mtp(est, spec, settings, hardware) if mtp_enabled(settings) else est
    est = estimate_llamacpp(spec, settings, hardware)
    if mtp_enabled(settings):
        return with_mtp(est, spec, settings, hardware)
    if settings.draft_model is None:
        return est
    options: LlamaCppOptions | None = None
    if settings.runtime_version is not None:
        from oomkit.estimate.generations import llamacpp_options

        gen_opts = llamacpp_options(settings.runtime_version, None)
        assert gen_opts is None or isinstance(gen_opts, LlamaCppOptions)
        options = gen_opts
    # the main context's parameters, as estimate_llamacpp resolved them
    params = resolve_llamacpp_params(
        settings,
        n_layer=llamacpp_view(spec).num_hidden_layers,
        has_gpu=hardware.has_gpu,
        options=options,
    )
    return with_draft(est, params, settings, hardware, None)

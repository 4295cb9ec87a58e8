"""``oomkit.plan``: the best configuration that fits, its alternatives, and the command.

>>> import oomkit
>>> gpu = oomkit.find_gpu("rtx-4090").to_device_target()
>>> hw = oomkit.Hardware(devices=(gpu,))
>>> result = oomkit.plan("llama-3.1-8b", hw, oomkit.PlanRequest(ctx=8192))
>>> result.plans[0].settings.quant, result.plans[0].estimate.fits
('Q8_0', True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from oomkit.errors import InvalidSettingError, OomkitError
from oomkit.estimate.breakdown import Estimate, ModelInfo
from oomkit.estimate.checks import runtime_hardware_refusal, vllm_kernel_caveat
from oomkit.estimate.registry import RUNTIMES, normalize_runtime
from oomkit.planner.commands import emit_command, prepare_lines
from oomkit.planner.describe import describe, reject_text
from oomkit.planner.dominated import drop_dominated
from oomkit.planner.impossible import impossible as impossible_text
from oomkit.planner.lmstudio import command_target
from oomkit.planner.max_context import max_context
from oomkit.planner.ngl import LAYER_SPLIT_RUNTIMES
from oomkit.planner.ollama_tags import ollama_plan_quants
from oomkit.planner.plan_result import Plan, PlanResult, Rejected
from oomkit.planner.quality import QuantQuality, quant_quality
from oomkit.planner.request import PlanRequest
from oomkit.planner.runtime_spec import runtime_spec
from oomkit.planner.search import HOST_HEADROOM_BYTES, Evaluation, Searcher
from oomkit.planner.sglang_fraction import RAISED_FROM
from oomkit.planner.speed import SpeedEstimate, estimate_speed
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import format_bytes

__all__ = [
    "Plan",
    "PlanResult",
    "Rejected",
    "max_context",
    "plan",
    "plan_spec",
    "suggest_changes",
]

#: runtimes ``--runtime any`` compares (vLLM/SGLang only where they run: CUDA or ROCm)
_ANY = ("llama.cpp", "ollama", "vllm", "sglang", "transformers")


def _speed(
    spec: ModelSpec, est: Estimate, hardware: Hardware, settings: InferenceSettings | None = None
) -> SpeedEstimate:
    return estimate_speed(spec, est, hardware, settings=settings)


def _quality(quant: str | None) -> QuantQuality | None:
    if quant is None:
        return None
    try:
        return quant_quality(quant)
    except OomkitError:  # a format oomkit's quant table does not know (a checkpoint's own)
        return None


def _to_plan(ev: Evaluation, s: Searcher, model_ref: str) -> Plan:
    settings = ev.cand.apply(s.base)
    util = ev.estimate.settings.get("gpu_memory_utilization")
    if isinstance(util, float) and settings.gpu_memory_utilization is None:
        settings = dataclasses.replace(settings, gpu_memory_utilization=util)
    frac = ev.estimate.settings.get("mem_fraction_static")
    if RAISED_FROM in ev.estimate.runtime_details and isinstance(frac, float):
        settings = dataclasses.replace(settings, mem_fraction_static=frac)  # the raised one
    return Plan(
        runtime=s.runtime,
        settings=settings,
        estimate=ev.estimate,
        level=s.level_of(ev),
        margin_bytes=ev.margin_bytes,
        changes=describe(ev, s),
        launcher=command_target(s.request.runtime, s.runtime),
        command=emit_command(
            command_target(s.request.runtime, s.runtime),
            settings,
            s.spec,
            model_ref,
            device_kind=next((d.backend for d in s.hardware.devices if d.backend != "cpu"), "cuda"),
            os=s.hardware.os,
        ),
        prepare=prepare_lines(s.runtime, settings, s.spec, model_ref),
        speed=_speed(s.spec, ev.estimate, s.hardware, settings),
        quality=_quality(ev.cand.quant),
    )


def _diverse(found: Sequence[Evaluation], limit: int, target_ctx: int) -> list[Evaluation]:
    """The best candidate, then the best of each other kind of change (same level and
    whether the context was cut), then the rest in rank order — so alternatives differ."""
    picked: list[Evaluation] = []
    kinds: set[tuple[int, bool]] = set()
    for ev in found:
        kind = (ev.cand.level, ev.cand.ctx < target_ctx)
        if kind not in kinds and len(picked) < limit:
            picked.append(ev)
            kinds.add(kind)
    for ev in found:
        if len(picked) >= limit:
            break
        if ev not in picked:
            picked.append(ev)
    order = {id(ev): i for i, ev in enumerate(found)}
    return sorted(picked[:limit], key=lambda ev: order[id(ev)])


def _hardware_notes(hardware: Hardware) -> list[str]:
    """What limits the GPU's share of unified memory, per platform: Metal's recommended working
    set (Apple); the firmware carve-out and the GTT limit (AMD APUs: Strix Halo); on NVIDIA GB10
    (DGX Spark) neither: CUDA's total is the OS's ``MemTotal`` (``torch.cuda.mem_get_info()[1]
    == /proc/meminfo MemTotal``, the catalog's ``cuda_total_source``), shared with the OS."""
    from oomkit.hardware.catalog import find_gpu

    out: list[str] = []
    for d in hardware.devices:
        if not d.unified_memory or d.key is None or d.capacity_bytes is None:
            continue
        gpu = find_gpu(d.key)
        total = gpu.memory_bytes
        share = (
            f"the plan lets the GPU use {format_bytes(d.capacity_bytes)} of {format_bytes(total)}"
        )
        if gpu.vendor == "apple":
            out.append(
                f"{d.name}: unified memory; the GPU may use {format_bytes(d.capacity_bytes)} of "
                f"{format_bytes(total)} (Metal recommendedMaxWorkingSetSize). macOS lets you raise "
                "it with `sudo sysctl iogpu.wired_limit_mb=N` at the cost of RAM for everything "
                "else."
            )
        elif gpu.vendor == "nvidia":
            out.append(
                f"{d.name}: unified memory; {share}. CUDA reports the OS's MemTotal as the GPU's "
                "total (no firmware or driver limit to raise); the OS, the page cache and other "
                "processes draw on the same memory: free what you can (drop caches, stop other "
                "services) or pass --vram with the free figure the runtime logs."
            )
        else:
            # an AMD APU (Strix Halo): the firmware's carve-out and the driver's GTT limit
            out.append(
                f"{d.name}: unified memory; {share}. The GPU's real share is what the firmware's "
                "carve-out and the driver allow (on Linux the GTT limit): pass --vram with the "
                "figure your driver reports."
            )
        break
    return out


def _reads_quant(runtime: str, quant: str) -> bool:
    """Whether ``runtime`` reads weights in ``quant`` (GGUF types for llama.cpp and Ollama,
    HF formats for the others)."""
    from oomkit.errors import UnknownNameError
    from oomkit.quant.hf_formats import hf_format
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    try:
        (llamacpp_ftype if runtime in ("llama.cpp", "ollama") else hf_format)(quant)
    except UnknownNameError:
        return False
    return True


def _resolve_ctx_max(spec: ModelSpec, request: PlanRequest) -> tuple[PlanRequest, list[str]]:
    """``--ctx max``: the model's whole context as the target, any context down to one step as
    the floor; the search's ``_largest_ctx`` (a binary search on the step grid, as ``estimate
    --ctx max``'s :func:`~oomkit.planner.max_context.max_context`) finds each plan's largest."""
    top = spec.max_position_embeddings
    if not top:
        raise InvalidSettingError(
            f"--ctx max: {spec.name} names no maximum context (max_position_embeddings); "
            "pass --ctx N",
            setting="ctx",
            value="max",
        )
    floor = request.min_ctx if request.min_ctx is not None else min(top, request.ctx_step)
    resolved = dataclasses.replace(
        request, ctx=top, min_ctx=floor, ctx_max=False, ctx_from_max=True
    )
    note = (
        f"--ctx max: aiming for the model's whole context ({top}); each plan runs the largest "
        f"context its settings fit (x{request.ctx_step}, not below {floor})"
    )
    return resolved, [note]


def plan_spec(
    spec: ModelSpec,
    hardware: Hardware,
    request: PlanRequest | None = None,
    *,
    model_ref: str | None = None,
    base: InferenceSettings | None = None,
    max_plans: int = 4,
) -> PlanResult:
    """Plan for a resolved :class:`ModelSpec` (see :func:`plan`)."""
    request = request or PlanRequest()
    ref = model_ref or spec.name
    ctx_note: list[str] = []
    if request.ctx_max:
        request, ctx_note = _resolve_ctx_max(spec, request)
    runtimes: tuple[str, ...]
    if request.runtime.strip().lower() == "any":
        gpu_backends = {d.backend for d in hardware.devices}
        runtimes = tuple(
            r
            for r in _ANY
            if r in RUNTIMES and not (r in ("vllm", "sglang") and gpu_backends - {"cuda", "rocm"})
        )
    else:
        runtimes = (normalize_runtime(request.runtime),)
    plans: list[Plan] = []
    notes: list[str] = [*ctx_note, *_hardware_notes(hardware)]
    if request.n_gpu_layers is not None and len(runtimes) > 1:  # -ngl N: layer-split runtimes
        out = ", ".join(r for r in runtimes if r not in LAYER_SPLIT_RUNTIMES)
        notes += [f"{out} left out: -ngl fixes a layer count, which they have not"] if out else []
        runtimes = tuple(r for r in runtimes if r in LAYER_SPLIT_RUNTIMES)
    named = [q for q in (request.quant, request.min_quant) if q is not None]
    readers = tuple(r for r in runtimes if all(_reads_quant(r, q) for q in named))
    if len(runtimes) > 1 and readers and readers != runtimes:  # --runtime any --quant Q4_K_M
        kinds = " / ".join(named)
        notes += [
            f"{r} left out: it reads no {kinds} weights" for r in runtimes if r not in readers
        ]
        runtimes = readers
    if base is not None and base.runtime_version:
        notes.append(
            f"memory modelled for runtime version {base.runtime_version}; llama.cpp and "
            "Ollama commands use that release's flags (oomkit.estimate.flag_eras), the others "
            "today's flags (see oomkit.planner.commands.FLAG_TABLES for the version each describes)"
        )
    trained = spec.max_position_embeddings
    if request.ctx is not None and trained and request.ctx > trained:
        # as estimate says it: llama-server caps each slot at the training context
        notes.append(
            f"context {request.ctx} is above the model's trained context {trained} "
            f"(max_position_embeddings): the plans aim for {trained}"
        )
    rejected: list[Rejected] = []
    impossible: list[str] = []
    n_estimates = 0
    target_ctx = 0
    fit_top: int | None = None
    info: ModelInfo | None = None
    for runtime in runtimes:
        refusal = runtime_hardware_refusal(hardware, runtime)
        if refusal is not None:  # as estimate refuses it (vLLM/SGLang on an Apple GPU)
            if len(runtimes) == 1:
                raise InvalidSettingError(refusal, setting="runtime", value=runtime)
            notes.append(f"{runtime} left out: {refusal}")
            continue
        caveat = vllm_kernel_caveat(hardware, runtime)
        if caveat is not None and len(runtimes) > 1:
            # vLLM on a Pascal card runs only from a source build or a fork: a runtime the
            # planner picks itself is one that runs from its release
            notes.append(f"{runtime} left out: {caveat}")
            continue
        notes.extend([caveat] if caveat else [])
        if runtime == "vllm" and base is not None and base.runtime_version:
            # a vLLM release that cannot load the model: one line, not an empty search
            from oomkit.estimate.vllm_support import vllm_model_version

            try:
                vllm_model_version(spec, base.runtime_version)
            except InvalidSettingError as exc:
                if len(runtimes) == 1:
                    raise
                notes.append(f"vllm left out: {exc}")
                continue
        if runtime in ("llama.cpp", "ollama") and base is not None and base.runtime_version:
            # a llama.cpp build older than the architecture cannot load the GGUF
            from oomkit.estimate.llamacpp_python import binding_plan_base, is_binding
            from oomkit.estimate.llamacpp_support import check_llamacpp_support

            version: str | None = base.runtime_version
            if is_binding(request.runtime):  # llama-cpp-python: the llama.cpp it vendors
                version = binding_plan_base(base).runtime_version
            try:
                check_llamacpp_support(spec, runtime, version)
            except InvalidSettingError as exc:
                if len(runtimes) == 1:
                    raise
                notes.append(f"{runtime} left out: {exc}")
                continue
        rspec = runtime_spec(spec, runtime, notes)
        published = ollama_plan_quants(runtime, rspec, request.quant, request.min_quant, ref)
        s = Searcher(rspec, runtime, hardware, request, base, published)
        found = s.search()
        if published is not None and not found:  # no published quant fits: plan the others
            n_estimates += s.n_estimates
            s = Searcher(rspec, runtime, hardware, request, base)
            found = s.search()
        elif published is not None:
            listed = ", ".join(q for q in s.ladder)
            notes.append(
                f"ollama: weights limited to the quantizations the Ollama library publishes for "
                f"this model ({listed}), so `ollama pull` finds the tag; pass --quant to plan "
                "another one (it then needs an imported GGUF)"
            )
        target_ctx = s.target_ctx
        fit_top = s.fit_top
        per_runtime = _diverse(found, max_plans if len(runtimes) == 1 else 1, s.target_ctx)
        made = [_to_plan(ev, s, ref) for ev in per_runtime]
        kept = drop_dominated(made)
        plans.extend(kept)
        shown = [ev for ev, p in zip(per_runtime, made, strict=True) if any(p is k for k in kept)]
        for ev in s.rejected():
            miss = Rejected(
                runtime=runtime,
                description=reject_text(ev, s),
                reason=ev.reason,
                launcher=command_target(request.runtime, runtime),
            )
            if miss not in rejected:  # two probes that read the same are one line
                rejected.append(miss)
        if not found:
            missed = s.rejected()
            refused = [ev for ev in missed if ev.reason and not ev.estimate.devices]
            if len(runtimes) == 1 and refused and len(refused) == len(missed):
                # the runtime refuses the settings themselves (a draft's -devd past the GPUs):
                # that is the answer, not "nothing fits"
                raise InvalidSettingError(refused[0].reason or "", setting="plan")
            impossible.append(impossible_text(s, missed))
        if runtime == "transformers":
            from oomkit.planner.transformers_moves import allocator_note

            alloc = allocator_note(s)
            notes.extend([alloc] if alloc else [])
        n_estimates += s.n_estimates
        notes.extend(n for n in s.precision_notes if n not in notes)
        host_note = (
            f"plans that run layers or experts on the CPU leave "
            f"{format_bytes(HOST_HEADROOM_BYTES)} of RAM for the system"
        )
        # (the plans shown: a dominated offload plan that was dropped needs no RAM note)
        offloads = any(ev.cand.level and ev.estimate.host.total_bytes for ev in shown)
        if offloads and host_note not in notes:
            notes.append(host_note)
        if offloads and hardware.host_ram_bytes is None:
            # with no --ram the offload plans are not checked against the host at all
            most = max(ev.estimate.host.total_bytes for ev in shown)
            ram_note = (
                f"--ram not given: the plans that offload assume the host has up to "
                f"{format_bytes(most)} of RAM for them; pass --ram SIZE to plan within yours"
            )
            if ram_note not in notes:
                notes.append(ram_note)
        if info is None:
            any_ev = next(iter(s._memo.values()), None)
            if any_ev is not None:
                info = any_ev.estimate.model
    if info is None:  # pragma: no cover - every search evaluates at least one candidate
        raise InvalidSettingError("nothing was evaluated", setting="runtime")
    return PlanResult(
        model=info,
        request=request,
        hardware=hardware,
        target_ctx=target_ctx,
        plans=tuple(plans),
        rejected=tuple(rejected),
        impossible=None if plans else " ".join(impossible),
        n_estimates=n_estimates,
        notes=tuple(notes),
        fit_ctx_top=fit_top,
    )


def _load_ref(model: str, offline: bool | None) -> ModelSpec:
    """The spec :func:`oomkit.api.estimate` resolves ``model`` to: an Ollama-style
    ``hf.co/org/repo:QUANT`` reference is looked up by its repo name, as there (without this,
    the changes suggested for such a reference failed after its estimate had succeeded)."""
    from oomkit.api import _hf_co_ref, load_model

    hf = _hf_co_ref(model)
    return load_model(hf[0] if hf is not None else model, offline=offline)


def plan(
    model: str | ModelSpec,
    hardware: Hardware,
    request: PlanRequest | None = None,
    *,
    base: InferenceSettings | None = None,
    offline: bool | None = None,
    max_plans: int = 4,
) -> PlanResult:
    """The best configurations of ``model`` that fit ``hardware``, best first.

    Args:
        model: a :class:`ModelSpec` or a reference :func:`oomkit.load_model` resolves.
        hardware: the GPUs (with capacities) and, optionally, host RAM.
        request: workload, constraints and preference (:class:`PlanRequest`).
        base: runtime settings kept as they are (batch sizes, flash attention, ...).
        offline: force offline mode for Hub look-ups.

    Raises:
        InvalidSettingError: no GPU or no GPU capacity, or a bad request value.
    """
    if isinstance(model, str):
        from oomkit.api import _hf_co_ref

        hf = _hf_co_ref(model)
        ref = hf[0] if hf is not None else model  # the commands name what was resolved
        spec = _load_ref(ref, offline)
    else:
        spec, ref = model, model.name
    return plan_spec(spec, hardware, request, model_ref=ref, base=base, max_plans=max_plans)


def suggest_changes(
    model: str | ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    *,
    limit: int = 3,
    offline: bool | None = None,
) -> tuple[Plan, ...]:
    """The ``limit`` best changes that make a configuration that does not fit, fit.

    The planner starts from the user's own settings: their quant, context and parallel
    sequences are the request, every other setting (batch sizes, flash attention, ...) is
    kept as it is.
    """
    if not any(d.backend != "cpu" and d.capacity_bytes for d in hardware.devices):
        return ()
    quant = settings.quant
    if quant is not None:
        spec = _load_ref(model, offline) if isinstance(model, str) else model
        if spec.source == "gguf":  # a .gguf file's types are fixed: its --quant was ignored
            quant = None
    runtime = normalize_runtime(settings.runtime)
    ctx = settings.ctx
    if (
        runtime == "llama.cpp"
        and ctx is not None
        and settings.parallel
        and settings.parallel > 1
        and not settings.kv_unified
    ):
        # estimate's --ctx is llama.cpp's -c, shared by the -np slots; the planner's context
        # is per sequence (Candidate.apply multiplies it back): -c 131072 -np 4 asked 32768
        # per slot, and the suggestions offered "context 69888 (asked 131072) per sequence"
        ctx = max(1, ctx // settings.parallel)
    request = PlanRequest(
        runtime=runtime,
        ctx=ctx,
        parallel=settings.parallel,
        quant=quant,
    )
    base = dataclasses.replace(
        settings,
        quant=None,
        ctx=None,
        cache_type_k=None,
        cache_type_v=None,
        n_gpu_layers=None,
        n_cpu_moe=None,
    )
    return plan(model, hardware, request, base=base, offline=offline, max_plans=limit).plans

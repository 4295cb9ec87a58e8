"""Model-aware fixes for llama.cpp and Ollama, computed by their estimators.

The failing setup is rebuilt from the load log (file type, ``n_ctx``, ``n_batch``/``n_ubatch``,
flash attention, KV types, ``-ngl`` or ``offloaded A/B layers``, the GPUs with the free memory
llama.cpp printed or their catalog capacity, and the per-GPU model buffers as the tensor split),
merged with the user's settings; each candidate change is estimated and its saving is the
difference on the failing device. Ollama settings are in Ollama's terms (``num_ctx`` per
sequence; the runner's ``n_ctx`` is ``num_ctx x num_parallel``, llm/server.go).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from oomkit.diagnose.fixes import Fix, size_text
from oomkit.diagnose.model_fixes import (
    HEADROOM_BYTES,
    Case,
    estimate_case,
    fits,
    fits_with,
    largest,
    make_fix,
    try_estimate,
)
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import MiB

if TYPE_CHECKING:
    from oomkit.diagnose.events import LogContext, OomEvent
    from oomkit.estimate.breakdown import Estimate
    from oomkit.spec.model import ModelSpec

__all__ = [
    "LLAMACPP_QUANT_LADDER",
    "OLLAMA_QUANT_LADDER",
    "OLLAMA_RESERVE_BYTES",
    "gguf_quant",
    "llamacpp_fixes",
    "ollama_tag_suffix",
]

#: llama.cpp file types from largest to smallest; a fix proposes the next one below the current
LLAMACPP_QUANT_LADDER = ("F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M", "Q2_K")
#: the same for Ollama, whose library publishes no i-quant tags
OLLAMA_QUANT_LADDER = ("F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K")
#: Ollama's scheduler keeps this much free per CUDA/ROCm GPU (envconfig GpuOverhead minimum)
OLLAMA_RESERVE_BYTES = 457 * MiB
_GPU_NAME = re.compile(r"^(?P<p>CUDA|ROCm|MTL|Metal|Vulkan|SYCL|MUSA)(?P<i>\d{1,3})$", re.I)
_BACKEND = {"cuda": "cuda", "musa": "cuda", "rocm": "rocm", "mtl": "metal", "metal": "metal"}
_KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")

_SUP_CTX = ("Halve the context", "Largest context that fits", "Shrink the context")
_SUP_KV = ("Quantize the KV cache",)
_SUP_FA = ("Enable flash attention",)
_SUP_UB = ("Halve the micro-batch",)
#: llama.cpp's "-ngl 999": every layer on the GPU
_ALL_LAYERS = 999
_SUP_NGL = ("Offload fewer layers", "Put fewer layers on the GPU")
_SUP_QUANT = (
    "Use a smaller quantization",
    "Pick a smaller model or quantization",
    "Use a model/quantization at most",
)


#: among llama.cpp/Ollama fixes that fit, the least intrusive first, in the planner's lever
#: order (README "Plan"): settings that cost nothing, a quantized KV cache, a shorter context
#: (the smallest cut first: "Largest context that fits" before halving, halving before
#: quartering; ``ctx`` + the percent cut), MoE experts on the CPU, fewer GPU layers, a smaller
#: quant. Without it the fitting ones ranked by saving: "Quarter the context" came first and
#: "Largest context that fits" after "-ngl 23".
_ORDER = {"fa": 1, "ub": 2, "kv": 3, "ctx": 100, "moe": 300, "ngl": 400, "quant": 500}


def _fb(n: int | None) -> str:
    return size_text(n)


def ollama_tag_suffix(quant: str) -> str:
    """The quantization suffix of Ollama library tags.

    >>> ollama_tag_suffix("Q4_K_M"), ollama_tag_suffix("F16")
    ('q4_K_M', 'fp16')
    """
    return {"F16": "fp16", "BF16": "bf16", "F32": "fp32"}.get(quant, quant[:1].lower() + quant[1:])


def _detail(est: Estimate, *keys: str) -> int:
    """An integer from ``runtime_details`` (nested keys), 0 when absent."""
    node: object = est.runtime_details
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return int(node) if isinstance(node, (int, float)) else 0


# --- the failing setup from the log --------------------------------------------------------------


def gguf_quant(text: str | None) -> str | None:
    """The llama-quantize name of a file type as a log prints it (``Q4_K - Medium``), or None."""
    if not text:
        return None
    from oomkit.errors import OomkitError
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    try:
        return llamacpp_ftype(text).name
    except OomkitError:
        return None


def _kv_type(text: str | None) -> str | None:
    key = (text or "").strip().lower()
    return key if key in _KV_TYPES else None


def _gpu_index(name: str | None) -> int | None:
    m = _GPU_NAME.match((name or "").strip())
    return int(m.group("i")) if m else None


def _llama_hardware(e: OomEvent, ctx: LogContext) -> tuple[Hardware, int, str]:
    """GPUs the log shows (count, backend, free memory or catalog capacity) and the failing one."""
    from oomkit.hardware.catalog import find_gpu_by_nvml_name

    names = [b.name for b in ctx.buffers if not b.on_host] + [e.buffer_name or ""]
    idx = [i for i in map(_gpu_index, names) if i is not None]
    prefix = next((m.group("p") for m in map(_GPU_NAME.match, names) if m), "CUDA")
    n_logged = sum(1 for d in ctx.devices if d.name.startswith(("CUDA", "ROCm", "Device", "MTL")))
    n = max([i + 1 for i in idx] + [n_logged, (e.device or 0) + 1, len(ctx.ollama_available_bytes)])
    devices: list[DeviceTarget] = []
    where: list[str] = []
    for i in range(n):
        same = [d for d in ctx.devices if d.name in (f"{prefix}{i}", f"Device {i}", f"CUDA{i}")]
        # ggml_cuda_init's "Device 0: <name>" line states no free memory; the loader's
        # "using device CUDA0 (...) - 7101 MiB free" line does: the one with free memory wins
        info = next((d for d in same if d.free_bytes is not None), same[0] if same else None)
        backend = _BACKEND.get(prefix.lower(), "cuda")
        dev = DeviceTarget(name=f"{prefix}{i}", backend=backend, unified_memory=backend == "metal")
        row = find_gpu_by_nvml_name(info.description) if info and info.description else None
        if row is not None:
            dev = dataclasses.replace(row.to_device_target(), name=f"{prefix}{i}")
        free = info.free_bytes if info else None
        if free is None and i < len(ctx.ollama_available_bytes):
            free = ctx.ollama_available_bytes[i]
        if free is not None:
            dev = dataclasses.replace(dev, capacity_bytes=free)
            where.append(f"{dev.name} {_fb(free)} free at load")
        elif row is not None:
            where.append(f"{dev.name} {row.name} {_fb(dev.capacity_bytes)}")
        devices.append(dev)
    i = e.device if e.device is not None else _gpu_index(e.buffer_name) or 0
    cap = "capacity from the log: " + ", ".join(where[:4]) if where else "capacity not in the log"
    return Hardware(devices=tuple(devices)), min(i, n - 1), cap


def _llama_settings(user: InferenceSettings, rt: str, ctx: LogContext) -> InferenceSettings:
    n_ctx = ctx.n_ctx
    if rt == "ollama" and n_ctx and ctx.n_seq:
        n_ctx = max(1, n_ctx // ctx.n_seq)  # the runner's n_ctx is num_ctx x num_parallel
    ngl = ctx.n_gpu_layers if ctx.n_gpu_layers is not None else ctx.layers_offloaded
    if ngl is None and rt == "ollama":
        # the run died, so Ollama had scheduled every layer on the GPU (oomkit's Ollama
        # estimate would otherwise model Ollama's automatic offload, which did not happen)
        ngl = _ALL_LAYERS
    return dataclasses.replace(
        user,
        runtime=rt,
        quant=user.quant or gguf_quant(ctx.quant),
        ctx=user.ctx or n_ctx,
        parallel=user.parallel or ctx.n_seq,
        batch_size=user.batch_size or ctx.n_batch,
        ubatch=user.ubatch or ctx.n_ubatch,
        flash_attn=user.flash_attn if user.flash_attn is not None else ctx.flash_attn,
        cache_type_k=user.cache_type_k or _kv_type(ctx.type_k),
        cache_type_v=user.cache_type_v or _kv_type(ctx.type_v),
        n_gpu_layers=user.n_gpu_layers if user.n_gpu_layers is not None else ngl,
    )


def _basis(rt: str, spec: ModelSpec, settings: InferenceSettings, cap: str) -> str:
    # Ollama's estimate takes the library tag's quant (gpt-oss: MXFP4), not Q4_K_M
    q = settings.quant or (
        "Q4_K_M assumed"
        if rt == "llama.cpp"
        else "the Ollama library's default quant"
        if rt == "ollama"
        else "model dtype"
    )
    return f"(oomkit's {rt} estimate for {spec.name}, {q}; {cap}.)"


# --- the candidate changes ------------------------------------------------------------------------


def _fa_on(case: Case) -> str:
    """``-fa on``, or a bare ``-fa`` for the builds before b6343 (PR #15434) the log names."""
    from oomkit.planner.commands import llamacpp_fa_flags

    return " ".join(llamacpp_fa_flags(dataclasses.replace(case.settings, flash_attn=True)))


def _cpu_moe(case: Case, n: int) -> str:
    """``--n-cpu-moe N``, or the ``-ot`` overrides it stands for on a build before it."""
    from oomkit.planner.commands import llamacpp_cpu_moe_flags

    return " ".join(llamacpp_cpu_moe_flags(n, case.settings.runtime_version))


def _cmd(case: Case, knob: str, value: str) -> tuple[str, ...]:
    if case.runtime == "ollama":
        ollama = {
            "ctx": (
                f"/set parameter num_ctx {value}",
                f"OLLAMA_CONTEXT_LENGTH={value} ollama serve",
            ),
            "kv": (f"OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE={value} ollama serve",),
            "fa": ("OLLAMA_FLASH_ATTENTION=1 ollama serve",),
            "ub": (f"/set parameter num_batch {value}", f'"options": {{"num_batch": {value}}}'),
            "ngl": (f"/set parameter num_gpu {value}", f'"options": {{"num_gpu": {value}}}'),
            "quant": (f"ollama pull <model>:<tag>-{ollama_tag_suffix(value)}",),
        }
        return ollama[knob]
    if knob == "moe":
        return (_cpu_moe(case, int(value)),)
    llama = {
        "ctx": (f"-c {value}",),
        "kv": (value,),
        "fa": (_fa_on(case),),
        "ub": (f"-ub {value}",),
        "ngl": (f"-ngl {value}",),
        "quant": (
            f"-m <model>-{value}.gguf",
            f"llama-quantize <model>-F16.gguf <model>-{value}.gguf {value}",
        ),
    }
    return llama[knob]


def _ctx_fixes(case: Case, base: Estimate) -> list[Fix]:
    s, i = case.settings, case.device
    ollama = case.runtime == "ollama"
    ctx0 = base.settings.get("ctx")
    cur = _detail(base, "ollama", "num_ctx") if ollama else int(ctx0 or 0)
    flag = "num_ctx" if ollama else "-c"
    kv0 = base.devices[i].kv_cache_bytes
    targets = {"Halve the context": max(256, cur // 2 // 256 * 256)}
    targets["Quarter the context"] = max(256, cur // 4 // 256 * 256)
    if fits(case, base) is False:
        n = largest(
            1, cur // 256 - 1, lambda k: fits_with(case, dataclasses.replace(s, ctx=k * 256))
        )
        if n is not None:
            targets["Largest context that fits"] = n * 256
    out: list[Fix] = []
    for title, n1 in targets.items():
        if n1 >= cur:
            continue
        cand = try_estimate(case, dataclasses.replace(s, ctx=n1))
        if cand is None:
            continue
        kv1 = cand.devices[i].kv_cache_bytes
        fix = make_fix(
            case,
            base,
            cand,
            title=f"{title}: {flag} {n1}" if ollama else f"{title}: -c {n1}",
            lead=f"KV cache at {flag} {cur} is {_fb(kv0)}; at {flag} {n1} it is {_fb(kv1)}",
            commands=_cmd(case, "ctx", str(n1)),
            supersedes=_SUP_CTX,
            skip="kv_cache",
            order=_ORDER["ctx"] + (cur - n1) * 100 // max(cur, 1),  # the smallest cut first
        )
        out += [fix] if fix else []
    return out


def _kv_fix(case: Case, base: Estimate) -> list[Fix]:
    rd = base.runtime_details
    tk, tv = str(rd["type_k"]), str(rd["type_v"])
    if tk in ("f16", "bf16", "f32") or tv in ("f16", "bf16", "f32"):
        new = "q8_0"
    elif tk == tv == "q8_0":
        new = "q4_0"
    else:
        return []
    need_fa = not rd["flash_attn"]
    s = dataclasses.replace(
        case.settings,
        cache_type_k=new,
        cache_type_v=new,
        flash_attn=True if need_fa else case.settings.flash_attn,
    )
    cand = try_estimate(case, s)
    if cand is None:
        return []
    flags = f"--cache-type-k {new} --cache-type-v {new}" + (" -fa on" if need_fa else "")
    i = case.device
    fix = make_fix(
        case,
        base,
        cand,
        title=f"Quantize the KV cache to {new}",
        lead=f"KV cache ({tk}/{tv}) is {_fb(base.devices[i].kv_cache_bytes)}; in {new} it is "
        f"{_fb(cand.devices[i].kv_cache_bytes)}"
        + (" (flash attention on: llama.cpp needs it for a quantized V cache)" if need_fa else ""),
        commands=_cmd(case, "kv", new if case.runtime == "ollama" else flags),
        supersedes=_SUP_KV,
        skip="kv_cache",
        order=_ORDER["kv"],
    )
    return [fix] if fix else []


def _fa_ub_fixes(case: Case, base: Estimate) -> list[Fix]:
    out: list[Fix | None] = []
    rd = base.runtime_details
    if rd["flash_attn"] is False:
        cand = try_estimate(case, dataclasses.replace(case.settings, flash_attn=True))
        if cand is not None:
            out.append(
                make_fix(
                    case,
                    base,
                    cand,
                    title="Enable flash attention: "
                    + ("OLLAMA_FLASH_ATTENTION=1" if case.runtime == "ollama" else _fa_on(case)),
                    lead="without flash attention the compute buffer holds the n_ctx x n_ubatch "
                    "attention scores",
                    commands=_cmd(case, "fa", "on"),
                    supersedes=_SUP_FA,
                    order=_ORDER["fa"],
                )
            )
    ub = _detail(base, "n_ubatch")
    if ub >= 128:
        new = ub // 2
        flag = "num_batch" if case.runtime == "ollama" else "-ub"
        s = dataclasses.replace(case.settings, ubatch=new)
        if case.runtime == "ollama":
            s = dataclasses.replace(s, batch_size=new)
        cand = try_estimate(case, s)
        if cand is not None:
            out.append(
                make_fix(
                    case,
                    base,
                    cand,
                    title=f"Halve the micro-batch: {flag} {new}",
                    lead=f"the compute buffer scales with n_ubatch ({ub} -> {new})",
                    commands=_cmd(case, "ub", str(new)),
                    supersedes=_SUP_UB,
                    order=_ORDER["ub"],
                )
            )
    return [f for f in out if f is not None]


def _fit_fixes(case: Case, base: Estimate) -> list[Fix]:
    """Largest -ngl (and for MoE the smallest --n-cpu-moe) that fits with headroom."""
    if fits(case, base) is not False:
        return []
    out: list[Fix | None] = []
    s = case.settings
    n_total = case.spec.num_hidden_layers + 1
    cur = min(_detail(base, "n_gpu_layers"), n_total)
    flag = "num_gpu" if case.runtime == "ollama" else "-ngl"
    best = largest(1, cur - 1, lambda n: fits_with(case, dataclasses.replace(s, n_gpu_layers=n)))
    if best is not None:
        cand = try_estimate(case, dataclasses.replace(s, n_gpu_layers=best))
        if cand is not None:
            out.append(
                make_fix(
                    case,
                    base,
                    cand,
                    title=f"Offload {best} of {n_total} layers: {flag} {best}",
                    lead=f"the largest {flag} whose estimate keeps {_fb(case.headroom_bytes)} "
                    f"headroom on every GPU ({flag} {cur} now; the rest run on the CPU)",
                    commands=_cmd(case, "ngl", str(best)),
                    supersedes=_SUP_NGL,
                    order=_ORDER["ngl"],
                )
            )
    moe = case.spec.moe is not None and case.runtime == "llama.cpp"
    n_layer = case.spec.num_hidden_layers
    if moe:

        def ok(k: int) -> bool:  # fewer CPU-expert layers is the monotone direction
            return fits_with(case, dataclasses.replace(s, n_cpu_moe=n_layer - k))

        k = largest(0, n_layer - 1, ok)
        if k is not None:
            n_moe = n_layer - k
            cand = try_estimate(case, dataclasses.replace(s, n_cpu_moe=n_moe))
            if cand is not None:
                out.append(
                    make_fix(
                        case,
                        base,
                        cand,
                        title=f"Keep the experts of {n_moe} layers on the CPU: --n-cpu-moe {n_moe}",
                        lead="the fewest expert layers on the CPU whose estimate keeps "
                        f"{_fb(case.headroom_bytes)} headroom (attention and KV stay on the GPU)",
                        commands=_cmd(case, "moe", str(n_moe)),
                        supersedes=(),
                        order=_ORDER["moe"],
                    )
                )
    return [f for f in out if f is not None]


def _quant_fixes(case: Case, base: Estimate) -> list[Fix]:
    spec = case.spec
    if spec.tensors:  # exact GGUF tensors: compare types predicted over the config's tensors
        spec = dataclasses.replace(spec, tensors=None)
    cur_q = str(base.settings.get("quant") or "Q4_K_M")
    cur_file = _detail(base, "weights_file_bytes")
    out: list[Fix] = []
    found_next = False
    ladder = OLLAMA_QUANT_LADDER if case.runtime == "ollama" else LLAMACPP_QUANT_LADDER
    for q in ladder:
        if q == gguf_quant(cur_q):
            continue
        cand = try_estimate(case, dataclasses.replace(case.settings, quant=q), spec)
        if cand is None:
            continue
        new_file = _detail(cand, "weights_file_bytes")
        if new_file >= cur_file:
            continue
        ok = fits(case, cand)
        if found_next and not ok:
            continue
        title = "Use a smaller quantization" if not found_next else "Largest quantization that fits"
        i = case.device
        fix = make_fix(
            case,
            base,
            cand,
            title=f"{title}: {q}",
            lead=f"weights on {base.devices[i].device} at {cur_q} are "
            f"{_fb(base.devices[i].weights_bytes)}; at {q} they are "
            f"{_fb(cand.devices[i].weights_bytes)} (file {_fb(cur_file)} -> {_fb(new_file)})",
            commands=_cmd(case, "quant", q),
            supersedes=_SUP_QUANT,
            skip="weights",
            order=_ORDER["quant"],
        )
        out += [fix] if fix else []
        if ok is not False or found_next:
            break
        found_next = True
    return out


def _all_fixes(case: Case) -> list[Fix]:
    base = estimate_case(case, case.settings)  # a bad setting is reported, not hidden
    if case.device >= len(base.devices):
        return []
    return [
        *_ctx_fixes(case, base),
        *_kv_fix(case, base),
        *_fa_ub_fixes(case, base),
        *_fit_fixes(case, base),
        *_quant_fixes(case, base),
    ]


def _log_split(ctx: LogContext, n: int) -> tuple[float, ...] | None:
    """The tensor split the log's per-GPU model buffers show (llama.cpp splits by layer)."""
    sizes: dict[int, int] = {}
    for name, n_bytes in ctx.device_buffers("model").items():
        i = _gpu_index(name)
        if i is not None:
            sizes[i] = sizes.get(i, 0) + n_bytes
    if n < 2 or sorted(sizes) != list(range(n)) or min(sizes.values()) <= 0:
        return None
    return tuple(float(sizes[i]) for i in range(n))


def llamacpp_fixes(
    spec: ModelSpec, user: InferenceSettings, e: OomEvent, ctx: LogContext, hw: Hardware | None
) -> list[Fix]:
    """Fixes for a llama.cpp or Ollama failure (``user.runtime``), sized by the estimator."""
    rt = user.runtime
    merged = _llama_settings(user, rt, ctx)
    if hw is not None and any(d.key for d in hw.devices):  # catalog GPUs named by the user
        dev, cap = min(e.device or 0, len(hw.devices) - 1), "GPUs as given"
    else:
        log_hw, dev, cap = _llama_hardware(e, ctx)
        if hw is not None and hw.devices:  # --vram alone: the log's devices, the user's size
            size = hw.devices[0].capacity_bytes
            devices = tuple(dataclasses.replace(d, capacity_bytes=size) for d in log_hw.devices)
            log_hw, cap = Hardware(devices=devices), f"{_fb(size)} per GPU as given"
        hw = log_hw
    if merged.tensor_split is None:
        merged = dataclasses.replace(merged, tensor_split=_log_split(ctx, len(hw.devices)))
    headroom = max(HEADROOM_BYTES, OLLAMA_RESERVE_BYTES if rt == "ollama" else 0)
    case = Case(
        runtime=rt,
        spec=spec,
        settings=merged,
        hardware=hw,
        device=dev,
        headroom_bytes=headroom,
        basis="",
    )
    merged, notes = _calibrate(case, e, ctx)
    case = dataclasses.replace(case, settings=merged)
    scale, note = compute_scale(case, e, ctx)
    case = dataclasses.replace(
        case, compute_scale=scale, basis=_basis(rt, spec, merged, cap + "".join(notes) + note)
    )
    return _all_fixes(case)


def compute_scale(
    case: Case, e: OomEvent, ctx: LogContext | None = None
) -> tuple[float | None, str]:
    """The run's logged compute buffer over the estimate's compute on that device, and the note
    that says so; ``(None, "")`` when the log states none or the two agree.

    ggml's graph allocator sizes the whole compute buffer of a backend by measuring the worst-
    case graph and then allocates it in one call (ggml/src/ggml-alloc.c ``ggml_gallocr_reserve_n``
    -> ``ggml_backend_buft_alloc_buffer``: "failed to allocate CUDA0 buffer of size N";
    llama.cpp src/llama-context.cpp then "failed to allocate compute buffers"), so a failed
    size is that run's compute buffer. When that allocation succeeded, llama.cpp prints the
    same measured size (src/llama-context.cpp: "%10s compute buffer size = %8.2f MiB" per
    backend buffer type) and an OOM that comes later (a decode-time cudaMalloc, a cuBLAS
    workspace) happens with that buffer resident. Either way the estimate's compute is scaled
    to the logged figure (as :func:`_calibrate` scales n_ctx to the logged KV) instead of its
    own figure sizing the micro-batch and flash-attention fixes.
    """
    measured, what = 0, ""
    if e.stage == "compute" and e.requested_bytes and e.device in (None, case.device):
        measured, what = e.requested_bytes, "the log's failed allocation states"
    elif ctx is not None and case.device < len(case.hardware.devices):
        name = case.hardware.devices[case.device].name
        measured = ctx.device_buffers("compute").get(name, 0)
        what = f"the log's {name} compute buffer line states"
    if measured <= 0:
        return None, ""
    base = try_estimate(case, case.settings)
    if base is None or case.device >= len(base.devices):
        return None, ""
    est = base.devices[case.device].activations_bytes
    if est <= 0 or abs(measured - est) <= est // 7:
        return None, ""
    return measured / est, (
        f"; compute buffer {_fb(measured)} as {what} (the estimate's {_fb(est)} scaled to it)"
    )


def _calibrate(case: Case, e: OomEvent, ctx: LogContext) -> tuple[InferenceSettings, list[str]]:
    """Fill an unlogged n_ctx from the logged KV buffers; flag a model buffer the estimate misses.

    The KV cache is linear in n_ctx, so ``n_ctx = default x logged KV / estimated KV`` (rounded
    to llama.cpp's 256-cell padding).
    """
    s, notes = case.settings, list[str]()
    base = try_estimate(case, s)
    if base is None:
        return s, notes
    kv_log = sum(ctx.device_buffers("KV").values()) or ctx.kv_self_bytes
    kv_log = kv_log or ctx.ollama_required_kv_bytes
    kv_est = sum(d.kv_cache_bytes for d in base.devices) + base.host.kv_cache_bytes
    if s.ctx is None and kv_log and kv_est > 0:
        ollama = case.runtime == "ollama"
        default = _detail(base, "ollama", "num_ctx") if ollama else int(base.settings["ctx"] or 0)
        n_ctx = max(256, round(default * kv_log / kv_est / 256) * 256)
        s = dataclasses.replace(s, ctx=n_ctx)
        notes.append(f"; n_ctx {n_ctx} inferred from the {_fb(kv_log)} KV cache the log shows")
        base = try_estimate(case, s) or base
    d = base.devices[case.device] if case.device < len(base.devices) else None
    name = case.hardware.devices[case.device].name if d is not None else ""
    logged = ctx.device_buffers("model").get(name)
    what = "model buffer"
    if logged is None and not ctx.buffers and e.requested_bytes and e.stage in (None, "weights"):
        # nothing allocated yet and no later stage named: llama.cpp allocates the weights
        # first, so this is them (a failure the log ties to the KV cache or the compute
        # buffer is not)
        logged, what = e.requested_bytes, "failed weights allocation"
    if d is not None and logged and abs(d.weights_bytes - logged) > logged // 7:
        notes.append(
            f"; the log's {name} {what} is {_fb(logged)}, the estimate "
            f"{_fb(d.weights_bytes)} (check the model and --quant)"
        )
    return s, notes

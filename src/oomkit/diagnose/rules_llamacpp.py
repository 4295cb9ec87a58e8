"""Diagnosis of llama.cpp / ggml failures, with fixes sized from the load log.

llama.cpp allocates per device, in order: weights (``model buffer``), KV cache (``KV buffer``,
linear in n_ctx x n_seq and in the cache type's bytes), compute (``compute buffer``, ~linear in
n_ubatch, and in n_ctx when flash attention is off) — oom-messages.md §2.2, memory-formulas.md
§4.9. The stage of a failure is the one whose buffer lines are missing when it fails.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, kv_type_ratio, mib, size_text
from oomkit.diagnose.gpu_count import devices_phrase, listed_gpus
from oomkit.diagnose.kv_context import compute_reserve, half_context_unknown

__all__ = ["analyze_llamacpp", "analyze_ollama", "kv_fixes"]

_GPU_PREFIXES = ("CUDA", "ROCM", "MTL", "VULKAN", "SYCL", "MUSA", "CANN", "METAL")
_SMALL_BUFFER = 512 << 20
# Vulkan spec: maxMemoryAllocationSize is at least 2^30 on every conformant driver, so a smaller
# allocation cannot hit the per-allocation limit: it failed because the device is full.
_VK_MIN_MAX_ALLOCATION = 1 << 30
# A pinned (page-locked) buffer this small never fails for lack of host RAM; the driver or the
# page-lock limit refused it (llama.cpp then falls back to pageable memory).
_TINY_PINNED = 64 << 20


def _fb(n: int | None) -> str:
    return size_text(n)


def _gpu_names(ctx: LogContext) -> set[str]:
    names = {
        b.name for b in ctx.buffers if not b.on_host and b.name.upper().startswith(_GPU_PREFIXES)
    }
    if not names:  # fall back to the device list (same devices under other names)
        names = {d.name for d in ctx.devices if d.name.startswith(("CUDA", "ROCm", "Device"))}
    return names


def _stage(e: OomEvent, ctx: LogContext) -> tuple[str, bool]:
    """(stage, inferred): the message's own stage, else the first stage whose lines are missing."""
    if e.stage is not None:
        return e.stage, False
    before = {b.kind for b in ctx.buffers if b.line < e.line}
    if "KV" in before or (ctx.kv_self_bytes is not None):
        return "compute", True
    if "model" in before:
        return "kv_cache", True
    if any(n < e.line for n in ctx.context_lines):
        # (docpost27) the context's settings were logged before it: the weights had loaded and
        # the first device buffer a context allocates is the KV cache (parse_llamacpp's
        # _CONTEXT_INIT); a compute failure names its own stage (ggml_gallocr)
        return "kv_cache", True
    return "weights", True


def _dev_name(e: OomEvent) -> str:
    if e.buffer_name:
        return e.buffer_name
    return f"CUDA{e.device}" if e.device is not None else "the GPU"


def kv_fixes(ctx: LogContext, kv: int | None, shortfall: int | None) -> list[Fix]:
    """Fixes that shrink a llama.cpp KV cache of ``kv`` bytes (context, quantized KV)."""
    return _kv_fixes(ctx, kv, shortfall)


def _kv_fixes(
    ctx: LogContext,
    kv: int | None,
    shortfall: int | None,
    compute_failed: bool = False,
    *,
    ollama: bool | None = None,  # Ollama's own errors (rules_ollama) say True
    unsized: bool = True,  # False: the caller has its own lever when neither size is known
) -> list[Fix]:
    out: list[Fix] = []
    n_ctx = ctx.n_ctx
    if ollama is None:
        ollama = _ollama_runner(ctx)  # Ollama's forms only in an Ollama log
    if n_ctx and kv:
        half = max(256, n_ctx // 2 // 256 * 256)
        saving = kv - kv * half // n_ctx
        out.append(
            Fix(
                title=f"Halve the context: -c {half}",
                why=f"the KV cache ({_fb(kv)} at n_ctx={n_ctx}) is linear in n_ctx, so -c {half} "
                f"frees {_fb(saving)}.",
                commands=(f"-c {half}", *[f"/set parameter num_ctx {half}   # Ollama"] * ollama),
                expected_saving_bytes=saving,
            )
        )
        reserve, kept = compute_reserve(ctx, compute_failed)
        if shortfall and 0 < shortfall + reserve < kv:
            fit = (n_ctx * (kv - shortfall - reserve) // kv) // 256 * 256
            if fit >= 256:
                out.append(
                    Fix(
                        title=f"Largest context that fits: -c {fit}",
                        why=f"the device is short by {_fb(shortfall)}; KV per token is "
                        f"{_fb(kv // n_ctx)}, and {kept}, so n_ctx <= {fit} (multiple of 256) "
                        "fits.",
                        commands=(f"-c {fit}",),
                        expected_saving_bytes=kv - kv * fit // n_ctx,
                        # sized to fit with the headroom: it ranks before the fixes not known
                        # to fit (fixes.rank; docs/doctor-causes.md §5)
                        fits=True,
                        order=100 + (n_ctx - fit) * 100 // n_ctx,
                    )
                )
    elif n_ctx:
        half = max(256, n_ctx // 2 // 256 * 256)
        out.append(
            generic(
                f"Shrink the context: -c {half}",
                f"the KV cache is linear in n_ctx ({n_ctx} now).",
                (f"-c {half}",),
            )
        )
    elif kv or unsized:
        out.append(half_context_unknown(kv, ollama))
    ratio = kv_type_ratio(ctx.type_k or "f16", "q8_0")
    if kv and ratio is not None and ratio < 1:
        saving = kv - int(kv * ratio)
        assumed = (
            "" if ctx.type_k else " (the log does not print the cache type; f16 is the default)"
        )
        out.append(
            Fix(
                title="Quantize the KV cache to q8_0",
                why=f"q8_0 stores 34 bytes per 32 values vs {ctx.type_k or 'f16'}{assumed}: "
                f"{_fb(kv)} becomes {_fb(int(kv * ratio))} (V quantization needs flash attention).",
                commands=(
                    "-fa on -ctk q8_0 -ctv q8_0",
                    *["OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve"] * ollama,
                ),
                expected_saving_bytes=saving,
            )
        )
    if kv:
        # llama.cpp -nkvo: cparams.offload_kqv = false; the cache goes to a CPU buffer and
        # llm_graph_context::build_attn_mha pins "all nodes between the KV store and the
        # attention output" to the CPU backend (ggml_backend_sched_set_tensor_backend). On Apple
        # Silicon that buffer is the same unified RAM, outside the Metal working set: no PCIe hop,
        # no RAM saved, the attention runs on the CPU cores instead.
        where = (
            f"moves the {_fb(kv)} KV cache out of the Metal working set into a plain CPU "
            "buffer of the same unified memory (the Mac's RAM in use does not shrink) and runs "
            "attention on the CPU cores (slower decoding, more so at long context); the compute "
            "buffer stays on the GPU"
            if _on_metal(ctx)
            else f"moves the {_fb(kv)} KV cache off the GPU (slower decoding: every token "
            "reads it over PCIe); the compute buffer stays on the GPU"
        )
        out.append(
            Fix(
                title="Keep the KV cache out of the Metal working set: -nkvo"
                if _on_metal(ctx)
                else "Keep the KV cache in host RAM: -nkvo",
                why=where
                + (
                    ", and without flash attention it grows with n_ctx."
                    if ctx.flash_attn is False
                    else "."
                ),
                commands=("-nkvo",),
                expected_saving_bytes=kv,
                slow=True,  # ranks after the context and cache-type levers (fixes.rank)
            )
        )
    return out


def _on_metal(ctx: LogContext) -> bool:
    """The log's GPU buffers are Metal's (``Metal``/``MTL0`` buffer lines), none CUDA/ROCm/..."""
    names = [b.name.upper() for b in ctx.buffers if not b.on_host]
    return bool(names) and all(n.startswith(("MTL", "METAL")) for n in names)


def _ollama_runner(ctx: LogContext) -> bool:
    """The ggml lines are an Ollama runner's (its server.go offload line or runner error in the
    same log), as :func:`oomkit.diagnose.model_fixes.log_runtime` decides: fixes in Ollama's
    terms, since its runner takes no llama.cpp flags."""
    return bool(
        ctx.ollama_runner
        or ctx.ollama_available_bytes
        or ctx.ollama_layers_model is not None
        # the Ollama service's journal (``ollama[PID]:`` on every line) or its own log lines
        # (parse._RUNTIME_HINTS; docrt23)
        or ctx.runtime_hint == "ollama"
    )


def _compute_fixes(e: OomEvent, ctx: LogContext, compute: int | None) -> list[Fix]:
    out: list[Fix] = []
    ub = ctx.n_ubatch or 512
    ollama = _ollama_runner(ctx)
    if compute:
        new_ub = max(32, ub // 2)
        # Ollama's n_ubatch is num_batch (llama/llama.go NewContextParams:
        # `params.n_ubatch = C.uint(batchSize)`; n_batch is batchSize x numSeqMax)
        flag = f"num_batch {new_ub}" if ollama else f"-ub {new_ub}"
        out.append(
            Fix(
                title=f"Halve the micro-batch: {flag}",
                why=f"the compute buffer ({_fb(compute)} at n_ubatch={ub}"
                + ("" if ctx.n_ubatch else ", the default; the log does not print it")
                + ") scales about linearly "
                f"with it, so {flag} saves about {_fb(compute - compute * new_ub // ub)}.",
                commands=(
                    f"/set parameter num_batch {new_ub}",
                    f'"options": {{"num_batch": {new_ub}}}',
                )
                if ollama
                else (f"-ub {new_ub} -b {max(new_ub, (ctx.n_batch or 2048) // 2)}",),
                expected_saving_bytes=compute - compute * new_ub // ub,
            )
        )
    # Ollama turns flash attention on server-wide with OLLAMA_FLASH_ATTENTION=1 (envconfig
    # config.go `FlashAttention`); llama.cpp with -fa on (a bare -fa before b6343)
    fa_title = "Enable flash attention: " + ("OLLAMA_FLASH_ATTENTION=1" if ollama else "-fa on")
    fa_commands = ("OLLAMA_FLASH_ATTENTION=1 ollama serve",) if ollama else ("-fa on",)
    fa_builds = "" if ollama else "; builds before b6343, Aug 2025, take a bare -fa"
    if ctx.flash_attn is False:
        out.append(
            Fix(
                title=fa_title,
                why="the log shows flash_attn = 0: the compute buffer then holds the n_ctx x "
                "n_ubatch attention scores, which flash attention never materialises (the log "
                f"does not give the numbers to size the saving{fa_builds}).",
                commands=fa_commands,
                expected_saving_bytes=None,
            )
        )
    elif ctx.flash_attn is None:
        out.append(
            generic(
                fa_title,
                "without flash attention the compute buffer holds the n_ctx x n_ubatch attention "
                f"scores; with it that term disappears{fa_builds.replace(';', ' (', 1)}"
                + (")." if fa_builds else "."),
                fa_commands,
            )
        )
    if ctx.pipeline_copies and ctx.pipeline_copies > 1 and compute:
        saving = compute - compute // ctx.pipeline_copies
        out.append(
            Fix(
                title="Build without pipeline-parallel copies",
                why=f"pipeline parallelism keeps {ctx.pipeline_copies} copies of the compute "
                f"buffer; one copy saves about {_fb(saving)}.",
                commands=("cmake -B build -DGGML_SCHED_MAX_COPIES=1",),
                expected_saving_bytes=saving,
            )
        )
    return out


def _split_fix(e: OomEvent, ctx: LogContext, gpus: set[str]) -> Fix:
    free = [d for d in ctx.devices if d.free_bytes]
    if len(free) >= 2:
        ts = ",".join(str(mib(d.free_bytes or 0)) for d in free)
        model = ctx.device_buffers("model")
        total_free = sum(d.free_bytes or 0 for d in free)
        weights = sum(model.get(d.name, 0) for d in free)
        dev = _dev_name(e)
        mine = next((d.free_bytes for d in free if d.name == dev), None)
        saving = None
        why = (
            "the default split ignores what each device has free; weighting by the free MiB "
            "each device reported at load balances it."
        )
        if weights and mine and dev in model and total_free:
            share = weights * mine // total_free
            if model[dev] > share:
                saving = model[dev] - share
                why += (
                    f" {dev} would hold {_fb(share)} of the {_fb(weights)} weights instead of "
                    f"{_fb(model[dev])}."
                )
        return Fix(
            title=f"Split by free memory: -ts {ts}",
            why=why,
            commands=(f"-ts {ts}",),
            expected_saving_bytes=saving,
        )
    n = listed_gpus(ctx)  # the count the log lists, never one guessed from the index (gpu_count)
    if n is not None and e.device is not None and e.device < n:
        shares = ["1"] * n
        shares[e.device] = "0.5"
    else:
        shares = [f"<one share per GPU, {_dev_name(e)}'s half the others'>"]
    return Fix(
        title=f"Give {_dev_name(e)} a smaller share: -ts {','.join(shares)}"
        if n is not None
        else f"Give {_dev_name(e)} a smaller tensor-split share (-ts)",
        why=f"the failure is on {_dev_name(e)} only; lowering its tensor-split share moves layers "
        "to the other devices (or drop the small GPU with CUDA_VISIBLE_DEVICES).",
        commands=(f"-ts {','.join(shares)}", "--main-gpu 0"),
        expected_saving_bytes=None,
    )


def _ngl_fixes(e: OomEvent, ctx: LogContext, shortfall: int | None) -> list[Fix]:
    layers = ctx.layers_offloaded or ctx.n_gpu_layers
    weights = e.requested_bytes
    if layers and weights and layers > 1 and shortfall is None:
        # revfix21b: the capacity is not in the log, so no layer count is known to fit (a guess
        # such as a quarter fewer layers can still fail: 60 of 81 layers of a 70B Q4_K_M is
        # 29 GiB, over a 24 GiB card); the per-layer cost and what decides N are given instead
        per_layer = weights // layers
        return [
            Fix(
                title=f"Offload fewer layers: -ngl <N>, ~{_fb(per_layer)} per layer",
                why=f"{_fb(weights)} over {layers} layers is ~{_fb(per_layer)} per layer; the log "
                f"does not state {_dev_name(e)}'s memory, so N is not known from it: N = (free "
                f"VRAM - KV cache - compute buffer - ~0.5 GiB CUDA context) / {_fb(per_layer)}. "
                "What decides it: the card (give the doctor --gpu NAME or --vram SIZE and it "
                "sizes N), or recent llama.cpp's --fit on, which picks the layers itself.",
                commands=("-ngl <N>", "/set parameter num_gpu <N>   # Ollama"),
                expected_saving_bytes=None,
            ),
            generic(
                "Use a smaller quantization",
                "e.g. Q4_K_M takes ~60% of Q8_0 and ~30% of F16.",
                (
                    "pick a Q4_K_M / IQ4_XS GGUF",
                    "--fit on   # recent llama.cpp fits -ngl/-c itself",
                ),
            ),
        ]
    if layers and weights and layers > 1:
        per_layer = weights // layers
        k = max(1, -(-(shortfall or weights // 4) // max(1, per_layer)))
        k = min(k, layers - 1)
        return [
            Fix(
                title=f"Offload fewer layers: -ngl {layers - k}",
                why=f"{_fb(weights)} over {layers} layers is ~{_fb(per_layer)} per layer; "
                f"{k} fewer layers free ~{_fb(k * per_layer)} (they run on the CPU).",
                commands=(f"-ngl {layers - k}", f"/set parameter num_gpu {layers - k}   # Ollama"),
                expected_saving_bytes=k * per_layer,
            ),
            generic(
                "Use a smaller quantization",
                "e.g. Q4_K_M takes ~60% of Q8_0 and ~30% of F16.",
                (
                    "pick a Q4_K_M / IQ4_XS GGUF",
                    "--fit on   # recent llama.cpp fits -ngl/-c itself",
                ),
            ),
        ]
    return [
        generic(
            "Offload fewer layers (or let llama.cpp fit them)",
            "each layer left on the CPU frees its share of the weights on the GPU.",
            ("-ngl <fewer layers>", "--fit on   # recent llama.cpp", "/set parameter num_gpu <n>"),
        ),
        generic(
            "Use a smaller quantization",
            "e.g. Q4_K_M takes ~60% of Q8_0 and ~30% of F16.",
            ("pick a Q4_K_M / IQ4_XS GGUF",),
        ),
    ]


def analyze_llamacpp(e: OomEvent, ctx: LogContext) -> Analysis:
    """Diagnose a llama.cpp/ggml failure with the buffers and settings the log printed."""
    dev = _dev_name(e)
    err = (e.detail or "").split(":", 1)[-1].strip().lower()
    tiny = e.requested_bytes is not None and e.requested_bytes < _TINY_PINNED
    if e.format == "llama.cpp_pinned_alloc" and (
        tiny or (err and not ("memory" in err or "out of memory".startswith(err)))
    ):
        return Analysis(
            cause="unknown",
            confidence=0.3,
            open_question=False,  # a refused pin, not a lack of memory
            explanation=f"The driver refused to pin {_fb(e.requested_bytes)} of host memory with "
            f"'{e.detail}'. "
            + (
                "A pinned buffer that small never fails for lack of host RAM: the driver or the "
                "page-locked memory limit refused it. "
                if tiny
                else "That error is not a lack of memory (a driver/runtime mismatch or setup "
                "problem). "
            )
            + "llama.cpp falls back to pageable memory; if the run failed, the cause is "
            "elsewhere in the log. Check the driver and the CUDA/ROCm runtime versions.",
            fixes=(
                generic(
                    "Fix the driver / CUDA runtime pairing",
                    "the error string names the driver, not memory.",
                    ("nvidia-smi   # driver version", "GGML_CUDA_NO_PINNED=1"),
                ),
            ),
        )
    if e.format == "llama.cpp_pinned_alloc":
        return Analysis(
            cause="host_ram",
            confidence=0.4,
            explanation=f"The driver could not pin {_fb(e.requested_bytes)} of host memory "
            f"({e.detail}). llama.cpp only warns and falls back to pageable memory (slower); "
            "if the run failed, look for the error after this line. Pinning fails when host RAM "
            "is short or the page-locked limit (WSL, containers) is low.",
            fixes=(
                Fix(
                    title="Free host RAM or disable pinned staging buffers",
                    why=f"the pinned buffer was {_fb(e.requested_bytes)}.",
                    commands=("free -h", "GGML_CUDA_NO_PINNED=1"),
                    expected_saving_bytes=e.requested_bytes,
                ),
            ),
        )
    # ggml's graph allocator (`ggml_gallocr_reserve_n`) failing on the CPU backend is still the
    # compute buffer: its size is set by -ub/-b (and -c without flash attention), not by the
    # weights, so it goes to the compute-stage reading below, not to "host RAM exhausted"
    graph_buffer = e.stage == "compute" and e.kind != "host_alloc_failed"
    # a "<backend>_Host" buffer is host RAM too: ggml-cuda's ggml_backend_cuda_host_buffer_type
    # ("CUDA_Host", cudaMallocHost: pinned system memory) and its Vulkan/SYCL/CANN twins; when
    # ggml-alloc.c's alloc_tensor_range reports "failed to allocate CUDA_Host buffer" the weights
    # were staged in system RAM (--no-mmap, or Ollama's patched tensors), not on the GPU
    host_name = (e.buffer_name or "").upper()
    if not graph_buffer and (
        e.kind == "host_alloc_failed" or host_name.startswith("CPU") or host_name.endswith("_HOST")
    ):
        return Analysis(
            cause="host_ram",
            confidence=0.7,
            explanation=f"llama.cpp could not allocate a {_fb(e.requested_bytes)} host "
            "(CPU/pinned) buffer: system RAM is exhausted.",
            fixes=(
                Fix(
                    title="Free host RAM or keep weights memory-mapped",
                    why=f"the failing host buffer is {_fb(e.requested_bytes)}; with mmap the "
                    "weights are page cache, not allocations (drop --no-mmap).",
                    commands=("free -h", "remove --no-mmap / --mlock"),
                    expected_saving_bytes=e.requested_bytes,
                ),
            ),
        )
    stage, inferred = _stage(e, ctx)
    stage_text = (
        f"{stage} stage, inferred from the buffer lines logged before it"
        if inferred
        else f"{stage} stage"
    )
    gpus = _gpu_names(ctx)
    multi = (
        len(gpus) >= 2 or (e.device is not None and e.device >= 1) or (ctx.pipeline_copies or 0) > 1
    )
    free_at_load = next((d.free_bytes for d in ctx.devices if d.name == dev), None)
    if free_at_load is None and e.device is not None:
        # ggml-cuda names HIP devices CUDA<n> in its errors while the device list says ROCm<n>
        same = [
            d
            for d in ctx.devices
            if d.free_bytes
            and d.name.rstrip("0123456789") != d.name
            and d.name[len(d.name.rstrip("0123456789")) :] == str(e.device)
        ]
        if len(same) == 1:
            free_at_load = same[0].free_bytes
    used_before = sum(b.size_bytes for b in ctx.buffers if b.name == dev and b.line < e.line)
    shortfall = None
    if free_at_load is not None and e.requested_bytes is not None:
        shortfall = e.requested_bytes - (free_at_load - used_before)
    kv_dev = ctx.device_buffers("KV").get(dev)
    kv_total = sum(
        v for k, v in ctx.device_buffers("KV").items() if not k.upper().startswith("CPU")
    )
    # on several devices only this device's own KV buffer frees memory here
    kv = kv_dev if multi else (kv_dev or kv_total or ctx.kv_self_bytes)
    on_all = devices_phrase(ctx)  # "all 3 devices", or no count when the log lists none
    if (
        e.requested_bytes is not None
        and free_at_load is not None
        and e.requested_bytes <= free_at_load - used_before
    ):
        return Analysis(
            cause="unknown",
            confidence=0.5,
            explanation=f"llama.cpp failed to allocate {_fb(e.requested_bytes)} on {dev}, but "
            f"{dev} reported {_fb(free_at_load)} free at load and only {_fb(used_before)} was "
            "allocated there before: total memory is not what ran out. One allocation that "
            "large hits a per-allocation limit of the driver (Windows/ROCm, Vulkan "
            "maxMemoryAllocationSize) or a driver bug.",
            fixes=(
                generic(
                    "Split the weights into smaller allocations",
                    "several smaller buffers pass a per-allocation limit that one large one hits.",
                    (
                        "-ngl <fewer layers>   # smaller device buffer",
                        "GGML_VK_FORCE_MAX_ALLOCATION_SIZE=2147483648   # Vulkan",
                    ),
                ),
                generic(
                    "Update the GPU driver / llama.cpp build",
                    "per-allocation limits and regressions are driver/build specific.",
                    ("git pull && cmake --build build",),
                ),
            ),
        )
    if (
        inferred
        and e.format in {"vulkan_alloc", "vulkan_out_of_device_memory"}
        and not ctx.buffers
        and free_at_load is None
        and (e.requested_bytes is None or e.requested_bytes > _VK_MIN_MAX_ALLOCATION)
    ):
        return Analysis(
            cause="unknown",
            confidence=0.3,
            # a per-allocation limit (not a lack of memory) is as likely as full VRAM here, and
            # the base rate counts only capacity failures: it stays unknown
            open_question=False,
            explanation="Vulkan could not allocate "
            f"{_fb(e.requested_bytes) if e.requested_bytes else 'a buffer'} on {dev}, and the "
            "log shows neither the buffers loaded before it nor the free memory. Vulkan drivers "
            "return ErrorOutOfDeviceMemory both when VRAM is full and when one allocation "
            "exceeds the driver's maxMemoryAllocationSize, so the message alone cannot tell "
            "weights that do not fit from a per-allocation limit or a driver regression. The "
            "free VRAM at load (`oomkit gpus`) and the model size decide.",
            fixes=(
                generic(
                    "Cap the size of one Vulkan allocation",
                    "splits large buffers below the driver's per-allocation limit.",
                    ("GGML_VK_FORCE_MAX_ALLOCATION_SIZE=2147483648",),
                ),
                *_ngl_fixes(e, ctx, None),
            ),
        )
    if e.requested_bytes is None:
        base = f"llama.cpp ran out of memory on {dev} ({stage_text})."
    else:
        base = f"llama.cpp failed to allocate {_fb(e.requested_bytes)} on {dev} ({stage_text})."
    if free_at_load is not None:
        base += (
            f" {dev} had {_fb(free_at_load)} free at load and {_fb(used_before)} was already "
            f"allocated there, so it was short by {_fb(shortfall)}."
        )
    if ctx.n_ctx:
        base += f" n_ctx={ctx.n_ctx}"
        base += f", KV cache {_fb(kv)}." if kv else "."
    if stage == "weights":
        cause = "multi_gpu_imbalance" if multi and (e.device or 0) >= 1 else "model_too_large"
        fixes = _ngl_fixes(e, ctx, shortfall)
        if multi:
            fixes.append(_split_fix(e, ctx, gpus))
        return Analysis(
            cause=cause,
            confidence=(0.75 if cause == "model_too_large" else 0.55) - (0.15 if inferred else 0),
            explanation=base + f" The weights ({_fb(e.requested_bytes)} for this device) do not "
            f"fit in {dev}'s memory.",
            fixes=tuple(fixes),
        )
    # On several GPUs a KV or compute failure is still decided by what failed: the KV cache
    # and the compute buffer are sized by -c / -ub / -b (and pipeline copies), which are the
    # levers; re-splitting only moves the same bytes (docs/doctor-causes.md, rule L2).
    split = [_split_fix(e, ctx, gpus)] if multi else []
    req = e.requested_bytes
    # the split put more weights on this device than its share of the free memory, or a small
    # default-size buffer (<= 512 MiB, or a tenth of what this device already holds) found no
    # room: the device was filled by what the split placed there (rule L2)
    over_share = bool(split) and split[0].expected_saving_bytes is not None
    small = req is not None and (req <= _SMALL_BUFFER or (used_before and req * 10 <= used_before))
    if multi and stage in {"compute", "kv_cache"} and (over_share or small):
        return Analysis(
            cause="multi_gpu_imbalance",
            confidence=0.6 if over_share else 0.5,
            explanation=base + f" The weights loaded on {on_all}, but {dev} has no "
            f"room left for a {'small ' if small else ''}{stage.replace('_', ' ')} buffer"
            + (
                ": the split put more weights on it than its share of the free memory."
                if over_share
                else ": the split filled this device while the buffer itself is small. "
                "The free memory of each GPU at load (run `oomkit gpus`) confirms it."
            ),
            fixes=tuple(
                split
                + (_compute_fixes(e, ctx, req) if stage == "compute" else [])
                + _kv_fixes(ctx, kv, shortfall, compute_failed=stage == "compute")
            ),
        )
    multi_note = (
        f" The weights loaded on {on_all}; the buffer that failed is sized by the "
        "context/batch settings, so those are the lever (a different -ts only moves it)."
        if multi
        else ""
    )
    if stage == "kv_cache":
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.75 if multi else 0.8,
            explanation=base
            + " The KV cache"
            + (f" ({_fb(e.requested_bytes)})" if e.requested_bytes else "")
            + " does not fit next to the weights."
            + multi_note,
            fixes=tuple(_kv_fixes(ctx, e.requested_bytes or kv, shortfall) + split),
        )
    if stage == "compute":
        long_ctx = ctx.flash_attn is not True and (ctx.n_ctx or 0) >= 16384
        cause = "kv_cache_or_context" if long_ctx else "batch_or_activations"
        copies = (
            f" Pipeline parallelism keeps {ctx.pipeline_copies} copies of the compute buffer."
            if (ctx.pipeline_copies or 0) > 1
            else ""
        )
        return Analysis(
            cause=cause,
            confidence=0.6,
            explanation=base
            + f" The compute (graph) buffer of {_fb(e.requested_bytes)} does not "
            + (
                "fit in host RAM (the CPU backend's graph allocator): it scales with -ub/-b"
                if graph_buffer and dev.upper().startswith("CPU")
                else "fit after the weights and KV cache"
            )
            + (" — without flash attention it grows with n_ctx." if long_ctx else ".")
            + copies
            + multi_note,
            fixes=tuple(
                _compute_fixes(e, ctx, e.requested_bytes)
                + _kv_fixes(ctx, kv, shortfall, compute_failed=True)
                + split
            ),
        )
    # runtime failures during compute (CUDA abort, Metal command buffer)
    long_ctx = (ctx.n_ctx or 0) >= 8192
    return Analysis(
        cause="kv_cache_or_context" if long_ctx else "batch_or_activations",
        confidence=0.55 if long_ctx else 0.35,
        explanation=base + " The model loaded, then ran out of memory while computing: the "
        "per-context working set (KV cache + compute buffers) exceeded what the device allows"
        + (f" at n_ctx={ctx.n_ctx}." if ctx.n_ctx else "."),
        fixes=tuple(_kv_fixes(ctx, kv, None) + _compute_fixes(e, ctx, None)),
    )


def analyze_ollama(e: OomEvent, ctx: LogContext) -> Analysis:
    """Ollama's own errors; lives in :mod:`oomkit.diagnose.rules_ollama` (kept here for importers
    of the old location)."""
    from oomkit.diagnose.rules_ollama import analyze_ollama as _analyze_ollama

    return _analyze_ollama(e, ctx)

"""Ollama: its defaults on top of the llama.cpp memory model.

Modelled behaviour: Ollama 0.12.x (late 2025) running a GGUF through its llama.cpp-based runner.
Ollama decides the settings, llama.cpp allocates the buffers, so the buffers come from
:func:`oomkit.estimate.llamacpp.estimate_llamacpp`; this module supplies Ollama's defaults:

* ``num_ctx``: 4096 (the default of Ollama 0.6.7-0.15.4, commit 44b466eeb; 2048 in older
  releases; from 0.15.5 4096/32768/262144 by the GPUs' total VRAM,
  :mod:`oomkit.estimate.ollama_num_ctx`;
  ``OLLAMA_CONTEXT_LENGTH`` or the Modelfile/API ``num_ctx`` override it);
* ``OLLAMA_NUM_PARALLEL``: 1 (0.10.0+ and before 0.2.0); with N parallel requests Ollama
  creates a context of ``num_ctx * N`` tokens shared by N sequences (llm/server.go: ``numCtx *
  numParallel``); unset in 0.2.0-0.9.x the scheduler picks 4 (2 from 0.6.7) when every layer
  still fits (:mod:`oomkit.estimate.ollama_parallel`);
* ``OLLAMA_KV_CACHE_TYPE``: f16 (q8_0 / q4_0 need flash attention);
* ``OLLAMA_FLASH_ATTENTION``: when unset, on for models that run on Ollama's own engine
  (ollamarunner enables it where the GPUs support it), off on the llama runner until 0.13.4 and
  llama.cpp's ``auto`` from it (:mod:`oomkit.estimate.ollama_runner`, which also says which
  architectures 0.12-0.2x run on which runner);
* the Ollama engine reserves its worst-case graph with ``num_parallel`` output rows
  (runner/ollamarunner ``reserveWorstCaseGraph``), so the logits term is small; the llama
  runner reserves ``n_ubatch`` rows (llama.cpp's own reserve);
* ``num_batch``: 512 (so ``n_ubatch`` 512);
* per-GPU reserve: Ollama keeps a minimum of 457 MiB free per CUDA/ROCm GPU (512 MiB on Metal)
  plus ``OLLAMA_GPU_OVERHEAD`` (default 0) when it schedules; that is reported in
  ``runtime_details["ollama"]["reserve_bytes"]``, while the device total carries the CUDA context
  a process really uses (``settings.overhead_bytes`` overrides it);
* quant: the library tag's default (``ollama_default_quant``; Q4_K_M for most tags);
* ``num_gpu`` unset: on the llama runner always the ``-ngl``/``--tensor-split`` that
  ``llm/memory.go`` picks (its own KV formula of that release and its graph estimate) counting
  from ``blk.0``, while llama.cpp offloads the last blocks
  (:mod:`oomkit.estimate.ollama_memory_go`); for architectures whose ``GraphSize`` case is not
  modelled, and on the Ollama engine, the most layers that fit.
"""

from __future__ import annotations

import dataclasses

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import (
    Generation,
    parse_runtime_version,
    resolve_generation,
)
from oomkit.estimate.llamacpp_params import LlamaCppOptions
from oomkit.estimate.ollama_gptoss import check_gptoss_release, gptoss_for_ollama
from oomkit.estimate.ollama_layers import (
    OLLAMA_DEFAULT_NUM_BATCH,
    OLLAMA_DEFAULT_NUM_CTX,
    auto_num_gpu,
    clamps_num_ctx,
    fits_with_reserve,
    memory_go_modelled,
    memory_go_num_gpu,
    nvml_crossed,
)
from oomkit.estimate.ollama_llm_go import llm_go_layers
from oomkit.estimate.ollama_num_ctx import ollama_ctx_floor, ollama_default_num_ctx
from oomkit.estimate.ollama_parallel import auto_parallel, ollama_llamacpp_layout
from oomkit.estimate.ollama_runner import (
    OLLAMA_ENGINE_ARCHS,
    engine_archs_required,
    engine_required,
    runner_attention,
    runs_llama_server,
    server_output_rows,
)
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "OLLAMA_DEFAULT_NUM_BATCH",
    "OLLAMA_DEFAULT_NUM_CTX",
    "OLLAMA_DEFAULT_QUANT",
    "OLLAMA_ENGINE_ARCHS",
    "OLLAMA_VERSION_MODELLED",
    "estimate_ollama",
    "ollama_settings",
]

OLLAMA_VERSION_MODELLED = "0.12.x (llama.cpp runner)"
OLLAMA_DEFAULT_QUANT = "Q4_K_M"


def ollama_settings(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware | None = None
) -> tuple[InferenceSettings, list[str]]:
    """Translate Ollama settings into the llama.cpp settings its runner starts with
    (``hardware``: the GPUs whose total VRAM picks the default num_ctx from 0.15.5,
    :mod:`oomkit.estimate.ollama_num_ctx`)."""
    gen = _generation(settings)
    engine = spec.model_type == "gpt_oss" and bool(gen and "gptoss_graph" in gen.effects)
    notes: list[str] = [f"{_modelled(spec, gen, engine)}, with its defaults"]
    num_ctx = settings.ctx
    if num_ctx is None:
        num_ctx, why = ollama_default_num_ctx(settings.runtime_version, hardware)
        notes.append(f"num_ctx not given: {why}")
    floor = ollama_ctx_floor(spec, settings.runtime_version, hardware)
    if floor is not None and num_ctx < floor[0]:
        notes.append(f"num_ctx {num_ctx} -> {floor[0]}: {floor[1]}")
        num_ctx = floor[0]
    train = spec.max_position_embeddings
    if train and num_ctx > train and clamps_num_ctx(settings.runtime_version):
        notes.append(
            f"num_ctx {num_ctx} is above the model's trained context: Ollama uses {train} "
            "(0.9.3+ and 0.1.32, llm/server.go: 'requested context size too large for model')"
        )
        num_ctx = train
    parallel = settings.parallel or 1
    quant = settings.quant
    if quant is None:
        quant = _tag_quant(spec.name) or OLLAMA_DEFAULT_QUANT
        notes.append(f"quant not given: Ollama library default {quant}")
    new_engine = _new_engine(spec, gen)
    flash, kv, unified = runner_attention(
        settings, gen, new_engine, _kv_cache_type(settings), notes
    )
    batch = settings.batch_size or OLLAMA_DEFAULT_NUM_BATCH
    mapped = dataclasses.replace(
        settings,
        cache_type_k=kv,
        cache_type_v=kv,
        runtime="ollama",
        quant=quant,
        ctx=num_ctx * parallel,
        parallel=parallel,
        kv_unified=unified if settings.kv_unified is None else settings.kv_unified,
        flash_attn=flash,
        batch_size=batch,
        ubatch=min(settings.ubatch or batch, batch),
        # the vendored llama.cpp of that Ollama release (None: today's llama.cpp)
        runtime_version=_llamacpp_version(settings.runtime_version, gen),
        llama_server=None,  # Ollama's rows are its own (_options), not llama.cpp's switch
    )
    return mapped, notes


#: OLLAMA_KV_CACHE_TYPE values the server accepts (``fs/ggml`` ``SupportsKVCacheType``: any
#: other value falls back to f16 with a warning in Ollama's log)
OLLAMA_KV_CACHE_TYPES = ("f16", "q8_0", "q4_0")


def _kv_cache_type(settings: InferenceSettings) -> str | None:
    """The one KV cache type Ollama applies to K and V (``OLLAMA_KV_CACHE_TYPE``).

    Raises:
        InvalidSettingError: different K and V types, or a type Ollama does not take.
    """
    k, v = settings.cache_type_k, settings.cache_type_v
    if k is None and v is None:
        return None
    if k is not None and v is not None and k.lower() != v.lower():
        raise InvalidSettingError(
            f"ollama sets one KV cache type for K and V (OLLAMA_KV_CACHE_TYPE), got K {k} and "
            f"V {v}: give --kv-dtype",
            setting="cache_type_k",
            value=k,
        )
    kv = (k or v or "f16").lower()
    if kv not in OLLAMA_KV_CACHE_TYPES:
        raise InvalidSettingError(
            f"ollama's OLLAMA_KV_CACHE_TYPE takes {', '.join(OLLAMA_KV_CACHE_TYPES)}, got {kv} "
            "(Ollama would fall back to f16)",
            setting="cache_type_k",
            value=kv,
        )
    return kv


def _generation(settings: InferenceSettings) -> Generation | None:
    if settings.runtime_version is None:
        return None
    return resolve_generation("ollama", settings.runtime_version)


def _options(settings: InferenceSettings, new_engine: bool) -> LlamaCppOptions:
    """The llama.cpp options of Ollama's runner for the Ollama ``settings``: the Ollama engine
    reserves ``num_parallel`` outputs; releases whose Linux build forced MMQ have no
    dequantize pool (:func:`oomkit.estimate.ollama_vendored.force_mmq`). The Ollama engine's
    MoE graphs are built in Go (model/models), not by llama.cpp's build_moe_ffn: the CUDA
    fusions' allocation dependencies (``cuda_moe_fusion_deps``) are not assumed to match them."""
    force = False
    if settings.runtime_version is not None and not new_engine:
        from oomkit.estimate.generations import parse_runtime_version
        from oomkit.estimate.ollama_vendored import force_mmq

        force = force_mmq(parse_runtime_version("ollama", settings.runtime_version))
    # llama-server from v0.30.5 (ollama_runner.server_output_rows): every GGUF reserves
    # min(n_batch, n_parallel) rows, as the Ollama engine reserves num_parallel
    server = server_output_rows(settings.runtime_version)
    rows = min(settings.parallel or 1, settings.batch_size or OLLAMA_DEFAULT_NUM_BATCH)
    return LlamaCppOptions(
        reserve_outputs=rows if new_engine or server else None,
        force_mmq=force,
        cuda_moe_fusion_deps=not new_engine,
    )


def _llamacpp_version(version: str | None, gen: Generation | None) -> str | None:
    """The date of the llama.cpp the Ollama release ``version`` runs: the one it vendored
    (:mod:`oomkit.estimate.ollama_vendored`, 0.1.0-0.6.5), else its generation's
    ``llamacpp_date``; None (today's llama.cpp) for the Ollama-engine generation."""
    if gen is None or version is None or "llamacpp_date" not in gen.effects:
        return None
    from oomkit.estimate.ollama_vendored import vendored_llamacpp_date

    vendored = vendored_llamacpp_date(parse_runtime_version("ollama", version))
    return vendored or _str_or_none(gen.effects.get("llamacpp_date"))


def _modelled(spec: ModelSpec, gen: Generation | None, engine: bool = False) -> str:
    """The Ollama generation modelled (``--runtime-version``'s, else the newest) and the runner
    this model gets in it (``engine``: the Ollama engine whatever the generation says)."""
    newest = gen or resolve_generation("ollama")
    runner = "the Ollama engine" if engine or _new_engine(spec, gen) else "the llama.cpp runner"
    if newest.effects.get("runner") == "llama-server":
        runner = "llama-server"
    # the row's label names what changed in that release (e.g. the llama runner's flash
    # attention); which runner *this* model gets is said apart, or the two read as one claim
    return f"{newest.label}; {spec.name} runs on {runner}"


def _vendored_llamacpp(version: str | None, gen: Generation | None) -> str:
    """The llama.cpp build the Ollama release vendors, as a date (``current`` for the newest
    generation, modelled on today's llama.cpp): :func:`_llamacpp_version`'s date."""
    if version is None:
        date = None if gen is None else _str_or_none(gen.effects.get("llamacpp_date"))
    else:
        date = _llamacpp_version(version, gen)
    return date or "current"


def _new_engine(spec: ModelSpec, gen: Generation | None) -> bool:
    """Whether the model runs on Ollama's own engine (before 0.12 the llama runner is assumed;
    gpt-oss has only the engine's model/models/gptoss from its first release, 0.11.0, whatever
    the GPU: its vendored llama.cpp does not know the architecture)."""
    if gen is not None and spec.model_type == "gpt_oss" and "gptoss_graph" in gen.effects:
        return True
    if gen is not None and "llamacpp_date" in gen.effects:
        return False
    if engine_archs_required(
        gen
    ):  # 0.12-0.2x: OllamaEngineRequired (oomkit.estimate.ollama_runner)
        return engine_required(spec)
    return spec.model_type in OLLAMA_ENGINE_ARCHS


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _tag_quant(name: str) -> str | None:
    try:
        from oomkit.catalog.models import ollama_default_quant
    except ImportError:  # the catalog is optional for this module
        return None
    try:
        quant = ollama_default_quant(name)
        if quant is None:
            quant = _library_quant(name)
        return quant
    except Exception:  # an unknown tag simply has no default
        return None


def _library_quant(name: str) -> str | None:
    """A catalog model with Ollama library tags (``gpt-oss-20b`` -> ``gpt-oss:20b`` MXFP4): the
    quant of its ``:latest`` tag, else the one quant all its tags share."""
    from oomkit.catalog.models import find_model

    tags = find_model(name).ollama_tags
    latest = [q for t, q in tags.items() if t.endswith(":latest")]
    if latest:
        return latest[0]
    quants = set(tags.values())
    return quants.pop() if len(quants) == 1 else None


def estimate_ollama(spec: ModelSpec, settings: InferenceSettings, hardware: Hardware) -> Estimate:
    """Per-device memory of ``spec`` served by Ollama with ``settings`` on ``hardware``."""
    check_gptoss_release(spec, settings.runtime_version)
    gen = _generation(settings)
    new_engine = _new_engine(spec, gen)
    chosen = auto_parallel(
        spec,
        settings,
        hardware,
        lambda p: ollama_settings(spec, dataclasses.replace(settings, parallel=p), hardware)[0],
        _options(settings, new_engine),
    )
    if chosen is not None:  # 0.2.0-0.9.x: the scheduler's num_parallel (ollama_parallel)
        settings = dataclasses.replace(settings, parallel=chosen[0])
    mapped, notes = ollama_settings(spec, settings, hardware)
    if chosen is not None:
        notes.append(chosen[1])
    server = runs_llama_server(gen)  # 0.30+: llama-server only, no ollamarunner to name
    if new_engine and not server:
        # runner/ollamarunner reserveWorstCaseGraph: batch.Outputs = Empty(I32, s.parallel)
        notes.append("Ollama engine (ollamarunner): worst-case graph reserves num_parallel outputs")
    opts = _options(settings, new_engine)
    if new_engine and server and not server_output_rows(settings.runtime_version):
        notes.append(
            "llama-server (Ollama 0.30.0-0.30.4): num_parallel output rows reserved for this "
            "family, as a 2026 log measures (generation llama-server-0.30)"
        )
    elif (server or not new_engine) and opts.reserve_outputs is not None:
        notes.append(
            f"llama-server (llama.cpp PR #23861, in Ollama's llama.cpp from v0.30.5): the "
            f"context reserves {opts.reserve_outputs} output row(s) (min(num_batch, "
            "num_parallel)), not one per token of the micro-batch"
        )
    if opts.force_mmq:
        notes.append(
            "Ollama 0.1.23-0.2.1: the Linux CUDA build set LLAMA_CUDA_FORCE_MMQ (gen_linux.sh, "
            "until ollama PR #5588): quantized matmuls stay in MMQ, no dequantized weights in "
            "the CUDA pool (the Windows build had no such flag)"
        )
    # the context a process really uses is llama.cpp's; Ollama's larger per-GPU minimum is a
    # scheduling reserve it keeps free, reported in runtime_details
    est = ollama_llamacpp_layout(spec, mapped, hardware, opts)
    reserve: dict[str, int] = {}
    for i, dev in enumerate(d for d in hardware.devices if d.backend != "cpu"):
        reserve[est.devices[i].device] = cuda_context_bytes("ollama", dev)[0]
    auto_layers: int | None = None
    auto: tuple[int, Estimate] | None = None
    n_all = spec.num_hidden_layers + 1
    gptoss = gptoss_for_ollama(spec, mapped, settings, hardware, gen, reserve, notes)
    legacy = None
    if gptoss is None and not new_engine:
        legacy = llm_go_layers(
            spec, mapped, hardware, est, settings, opts, notes, OLLAMA_DEFAULT_NUM_CTX
        )
    if legacy is not None:
        # 0.1.20-0.1.31: CheckVRAM's overhead is that release's reserve; llm.go picks -ngl
        reserve = dict.fromkeys(reserve, legacy[2])
    if gptoss is not None:
        est, auto_layers, _ = gptoss  # Ollama 0.11.x's own estimate and engine for gpt-oss
    elif legacy is not None and legacy[1] is not None:
        auto = (legacy[0], legacy[1])
    elif settings.n_gpu_layers is not None:
        pass  # the user's num_gpu
    elif (
        settings.n_gpu_layers is None
        and not new_engine
        and (
            memory_go_modelled(spec, settings.runtime_version)
            or nvml_crossed(spec, hardware, settings.runtime_version) is not None
        )
    ):
        # the llama runner always lets llm/memory.go pick -ngl and --tensor-split when num_gpu
        # is unset (llm/server.go: NumGPU < 0 -> estimate.Layers), whether or not llama.cpp's
        # own layout would fit: memory.go's KV and graph figures decide
        picked = memory_go_num_gpu(
            spec, mapped, hardware, reserve, notes, opts, settings.runtime_version
        )
        if picked is not None:
            if picked[0] >= n_all:
                est = picked[1]  # every layer on the GPU, split as memory.go counted
            else:
                auto = picked
    elif settings.n_gpu_layers is None and not fits_with_reserve(est, reserve):
        auto = auto_num_gpu(spec, mapped, hardware, new_engine, reserve, opts)
    if auto is not None:
        auto_layers, est = auto
        notes.append(
            f"num_gpu not set: Ollama offloads what fits, {auto_layers}/"
            f"{n_all} layers on the GPU (each GPU keeps its reserve "
            "free), the rest run on the CPU (llm/server.go, ml/backend layer assignment)"
        )
    if legacy is None:
        notes.append(
            "Ollama keeps a per-GPU minimum free (457 MiB CUDA/ROCm, 512 MiB Metal) plus "
            "OLLAMA_GPU_OVERHEAD when it schedules; see runtime_details.ollama.reserve_bytes"
        )
    details = dict(est.runtime_details)
    engine = new_engine or gptoss is not None  # gpt-oss: the Ollama engine from 0.11.0
    ollama: dict[str, object] = {
        "version_modelled": _modelled(spec, gen, engine),
        "llamacpp_vendored": _vendored_llamacpp(settings.runtime_version, gen),
        "num_ctx": (mapped.ctx or OLLAMA_DEFAULT_NUM_CTX) // (mapped.parallel or 1),
        "num_parallel": mapped.parallel,
        "kv_cache_type": (mapped.cache_type_k or "f16"),
        "flash_attention": (
            est.runtime_details.get("flash_attn")
            if gptoss or mapped.flash_attn is None
            else mapped.flash_attn
        ),
        "num_batch": mapped.batch_size,
        "engine": "ollamarunner" if engine else "llama runner",
        "reserve_bytes": reserve,
        "num_gpu": auto_layers,
        "auto_offload": auto_layers is not None,
    }
    if gptoss is not None:  # llm/server.go ran it on the CPU (estimate.Layers == 0)
        ollama["cpu_fallback"] = gptoss[2]
    details["ollama"] = ollama
    # llama.cpp's note points at the generation line, which for Ollama names Ollama's release
    named = "the llama.cpp generation modelled is named above"
    vendored_date = _vendored_llamacpp(settings.runtime_version, gen)
    vendored = f"llama.cpp as vendored by this Ollama release: {vendored_date}"
    est = dataclasses.replace(
        est,
        runtime="ollama",
        runtime_details=details,
        assumptions=(*notes, *(a.replace(named, vendored) for a in est.assumptions)),
    )
    if gptoss is None and settings.n_gpu_layers is not None:
        from oomkit.estimate.ollama_vision_graph import ollama_vision_graph

        # no --runtime-version is the newest release, as the "modelled:" line says
        est = ollama_vision_graph(
            spec,
            est,
            gen or resolve_generation("ollama"),
            n_gpu_layers=settings.n_gpu_layers,
            flash_attn=bool(mapped.flash_attn),
        )
    if spec.multimodal_params:
        from oomkit.estimate.gguf_vision import gguf_vision

        est = gguf_vision(spec, est, "ollama")
    return _metal_partial_no_mmap(est, settings, hardware)


def _metal_partial_no_mmap(est: Estimate, settings: InferenceSettings, hw: Hardware) -> Estimate:
    """Ollama 0.1.40-0.29.x load a Metal partial offload with ``--no-mmap`` (llm/server.go,
    "mmap has issues with partial offloading on metal"): the CPU weights are read into the RAM
    the Metal buffers share (:mod:`oomkit.estimate.llamacpp_unified`)."""
    from oomkit.estimate.llamacpp_unified import ollama_metal_no_mmap, with_unified_ram_blocker

    done = str(est.runtime_details.get("offloaded_layers", "0/0")).split("/")
    partial = 0 < int(done[0]) < int(done[1])
    metal = any(d.backend == "metal" for d in hw.devices)
    if not (metal and partial and ollama_metal_no_mmap(settings.runtime_version)):
        return est
    # the settings echo says what the runner was started with: --no-mmap
    est = dataclasses.replace(est, settings={**est.settings, "mmap": False})
    return with_unified_ram_blocker(est, hw, no_mmap=True)

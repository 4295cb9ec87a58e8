"""How many layers Ollama puts on the GPU when ``num_gpu`` is unset (pure).

Split out of :mod:`oomkit.estimate.ollama`: the scheduler's own count on the Ollama engine (the
most layers that fit every GPU with its reserve kept free), ``llm/memory.go``'s block count and
``--tensor-split`` for the llama runner (its KV formula and ``GraphSize``,
:mod:`oomkit.estimate.ollama_memory_go`), the releases that cap ``num_ctx`` at the trained
context, and Windows 0.1.45-0.3.x's crossed NVML free memory
(:mod:`oomkit.estimate.ollama_nvml_order`).
"""

from __future__ import annotations

import dataclasses
from datetime import date

from oomkit.estimate.boundary import largest
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import (
    generation_effect,
    parse_runtime_version,
    resolve_generation,
)
from oomkit.estimate.llamacpp import estimate_llamacpp, estimate_llamacpp_breakdown
from oomkit.estimate.llamacpp_params import LlamaCppOptions
from oomkit.estimate.ollama_memory_go import (
    OllamaLayerPlan,
    estimate_gpu_layers,
    graph_size,
    ollama_kv_bytes,
)
from oomkit.estimate.ollama_nvml_order import crossed_gpu_order, llama_graph_partial
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import format_bytes

__all__ = [
    "OLLAMA_DEFAULT_NUM_BATCH",
    "OLLAMA_DEFAULT_NUM_CTX",
    "MemoryGoInputs",
    "auto_num_gpu",
    "clamps_num_ctx",
    "fits_with_reserve",
    "memory_go_graph",
    "memory_go_inputs",
    "memory_go_modelled",
    "memory_go_num_gpu",
    "nvml_crossed",
    "ollama_free_memory",
]

OLLAMA_DEFAULT_NUM_CTX = 4096  # 0.6.7-0.15.4 (commit 44b466eeb); 2048 before
OLLAMA_DEFAULT_NUM_BATCH = 512


def fits_with_reserve(est: Estimate, reserve: dict[str, int]) -> bool:
    """Every GPU of known capacity holds the estimate plus Ollama's reserve."""
    return all(
        d.capacity_bytes is None or d.total_bytes + reserve.get(d.device, 0) <= d.capacity_bytes
        for d in est.devices
    )


def auto_num_gpu(
    spec: ModelSpec,
    mapped: InferenceSettings,
    hardware: Hardware,
    new_engine: bool,
    reserve: dict[str, int],
    opts: LlamaCppOptions,
) -> tuple[int, Estimate] | None:
    """Ollama's own choice when ``num_gpu`` is unset: the most layers that fit every GPU with
    its reserve kept free (the scheduler assigns layers until a GPU's free memory minus the
    minimum runs out). None when no capacity is known or nothing fits."""
    if any(d.capacity_bytes is None for d in hardware.devices if d.backend != "cpu"):
        return None

    def run(ngl: int) -> Estimate:
        return estimate_llamacpp(
            spec,
            dataclasses.replace(mapped, n_gpu_layers=ngl),
            hardware,
            options=opts,
            default_swa_full=False,
            runtime_name="llama.cpp",
            vision_note=False,
        )

    memo: dict[int, Estimate] = {}

    def at(ngl: int) -> Estimate:
        if ngl not in memo:
            memo[ngl] = run(ngl)
        return memo[ngl]

    # the largest layer count that fits (all n_layer + 1 did not); GPU memory grows with it
    found = largest(0, spec.num_hidden_layers, lambda n: fits_with_reserve(at(n), reserve))
    return None if found is None else (found, at(found))


#: HF model types whose GGUF architecture has its own case in ``GGML.GraphSize`` (llm/ggml.go,
#: later fs/ggml/ggml.go: llama, gemma*, qwen2, phi2, stablelm, chatglm, mllama, gptoss,
#: mistral3, qwen25vl, llama4) that is not modelled here; deepseek2's case is, and qwen2's
#: from v0.1.32 on, the release that added it
#: (:func:`oomkit.estimate.ollama_memory_go.graph_size`); every other architecture takes
#: memory.go's own ``GQA x kv / 6`` fallback
_GRAPH_CASE_UNMODELLED: frozenset[str] = frozenset(
    {
        "llama",
        "mistral",
        "mixtral",
        "llama4",
        "llama4_text",
        "gemma",
        "gemma2",
        "gemma3",
        "gemma3_text",
        "gemma3n",
        "phi",
        "stablelm",
        "chatglm",
        "mllama",
        "gpt_oss",
        "mistral3",
        "qwen2_5_vl",
    }
)


#: ollama commit 12e923e15 ("update graph size estimate", 2024-04-02) added GraphSize's
#: ``qwen2`` case; it is first in v0.1.32
_QWEN2_GRAPH_CASE = (0, 1, 32)


def memory_go_modelled(spec: ModelSpec, version: str | None = None) -> bool:
    """Whether memory.go's estimate (its KV formula and GraphSize) is modelled for ``spec``
    under Ollama ``version`` (None: the newest)."""
    if spec.model_type == "qwen2" and _version_before(version, _QWEN2_GRAPH_CASE):
        return False  # the older graph estimate of that release is not modelled
    return spec.mla is not None or spec.model_type not in _GRAPH_CASE_UNMODELLED


#: Ollama v0.9.3 (2025-06-26), whose llm/server.go first caps num_ctx per sequence at the
#: GGUF's context_length (PR #11175 "avoid context overflow"; NewLlamaServer on current main)
_CLAMP_RELEASE = (0, 9, 3)
_CLAMP_DATE = date(2025, 6, 26)


def clamps_num_ctx(version: str | None) -> bool:
    """The Ollama release caps ``num_ctx`` at the model's trained context: 0.9.3+, and 0.1.32
    alone before it (its llm/server.go of 2024-03-14 capped; PR #3988 of 0.1.33 made it a
    warning). A date stands for the releases of that day (0.1.32's weeks are not told apart)."""
    if version is None or not version.strip():
        return True
    when = parse_runtime_version("ollama", version)
    if isinstance(when, tuple):
        return when >= _CLAMP_RELEASE or when[:3] == (0, 1, 32)
    return when >= _CLAMP_DATE


def _version_before(version: str | None, release: tuple[int, ...]) -> bool:
    """``--runtime-version`` names an Ollama release older than ``release``."""
    if version is None or not version.strip():
        return False
    when = parse_runtime_version("ollama", version)
    return isinstance(when, tuple) and when < release


def _kv_elem_bytes(mapped: InferenceSettings, version: str | None) -> float:
    """Bytes per KV element in memory.go's formula: f16 (2) until 0.5.0; from 0.5.0
    (ollama#6279) ``kvCacheBytesPerElement`` of OLLAMA_KV_CACHE_TYPE, which the server only
    passes on with flash attention (q8_0 1, q4_0 0.5)."""
    if _version_before(version, (0, 5, 0)) or not mapped.flash_attn:
        return 2.0
    return {"q8_0": 1.0, "q4_0": 0.5}.get((mapped.cache_type_k or "f16").lower(), 2.0)


#: HF model types whose GGUF architecture is ``llama`` (GraphSize's ``llama`` case)
_LLAMA_GRAPH_CASE: frozenset[str] = frozenset({"llama", "mistral"})


#: ollama commit e873841cb ("deepseek v2 graph", 2024-06-18) added GraphSize's ``deepseek2``
#: case; it is first in v0.1.45 (before it DeepSeek-V2 took the ``GQA x kv / 6`` fallback)
_DEEPSEEK2_GRAPH_CASE = (0, 1, 45)


def memory_go_graph(
    spec: ModelSpec, ctx: int, batch: int, kv: int, version: str | None
) -> tuple[int, int]:
    """``GraphSize`` (partial, full) of the Ollama release ``version``
    (:func:`oomkit.estimate.ollama_memory_go.graph_size`)."""
    return graph_size(
        spec, ctx, batch, kv, deepseek2_case=not _version_before(version, _DEEPSEEK2_GRAPH_CASE)
    )


def nvml_crossed(
    spec: ModelSpec, hardware: Hardware, version: str | None
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(runner order, believed free) when Ollama ``version`` on Windows crosses the GPUs' free
    memory (:mod:`oomkit.estimate.ollama_nvml_order`) and memory.go's graph is modelled for
    ``spec`` there; else None."""
    gpus = [d for d in hardware.devices if d.backend == "cuda"]
    if len(gpus) < 2 or len(gpus) != len(hardware.devices) or version is None:
        return None
    gen = resolve_generation("ollama", version)
    if (hardware.os or "").lower() != "windows" or not generation_effect(
        gen, "nvml_by_index", False
    ):
        return None
    if not memory_go_modelled(spec, version) and (
        spec.model_type not in _LLAMA_GRAPH_CASE or spec.moe is not None
    ):
        return None
    free = [
        (d.capacity_bytes or 0) - cuda_context_bytes("llama.cpp", d)[0]
        for d in gpus
        if d.capacity_bytes is not None
    ]
    if len(free) != len(gpus):
        return None
    return crossed_gpu_order(gpus, free)


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryGoInputs:
    """What ``EstimateGPULayers`` counts: the tensors of each block (``blk.0 ..``, the GGUF
    ``block_count``, MTP/nextn blocks included), the output layer, its own KV figure."""

    blocks: tuple[int, ...]
    output: int
    kv: int
    nextn: int  # blocks past num_hidden_layers (GLM-4.5's MTP blocks)


def memory_go_inputs(
    spec: ModelSpec, mapped: InferenceSettings, hardware: Hardware, version: str | None
) -> MemoryGoInputs:
    """The blocks, output layer and KV of ``llm/memory.go`` for the llama runner's settings
    ``mapped`` (its ``ctx`` is num_ctx x num_parallel)."""
    _, bd = estimate_llamacpp_breakdown(spec, mapped, hardware)
    # memory.go walks ``range BlockCount()``: the GGUF block_count, which counts the MTP/nextn
    # blocks a GLM-4.5 GGUF keeps as blk.{n_layer}.. after the main ones
    layers = [t.layer for t in bd.placement.tensors if t.layer is not None and t.layer >= 0]
    n_block = max(spec.num_hidden_layers, max(layers, default=-1) + 1)
    blocks = [0] * n_block
    output = embd = 0
    has_output = False
    for t in bd.placement.tensors:
        if t.layer is not None and t.layer >= 0:
            blocks[t.layer] += t.n_bytes
        elif t.name.startswith(("output.", "output_norm.")):
            output += t.n_bytes
            has_output = has_output or t.name.startswith("output.")
        elif t.name.startswith("token_embd."):
            embd += t.n_bytes
    if not has_output:  # memoryLayerOutput: output_norm + output, else token_embd (tied)
        output += embd
    kv = ollama_kv_bytes(
        spec,
        mapped.ctx or OLLAMA_DEFAULT_NUM_CTX,
        n_block,
        elem_bytes=_kv_elem_bytes(mapped, version),
        embd_per_head=_version_before(version, (0, 1, 45)),
    )
    return MemoryGoInputs(
        blocks=tuple(blocks), output=output, kv=kv, nextn=n_block - spec.num_hidden_layers
    )


def ollama_free_memory(gpus: list[DeviceTarget]) -> list[int]:
    """FreeMemory as Ollama reads it: on CUDA through a context of its own ("To get memory we
    have to set (and release) a context", gpu/gpu_info_nvcuda.c; cudart likewise), so one
    context less than the card holds; ROCm reads sysfs counters."""
    return [
        (d.capacity_bytes or 0)
        - (cuda_context_bytes("llama.cpp", d)[0] if d.backend == "cuda" else 0)
        for d in gpus
    ]


def memory_go_num_gpu(
    spec: ModelSpec,
    mapped: InferenceSettings,
    hardware: Hardware,
    reserve: dict[str, int],
    notes: list[str],
    opts: LlamaCppOptions,
    version: str | None = None,
) -> tuple[int, Estimate] | None:
    """The llama runner's ``-ngl`` and ``--tensor-split`` as ``llm/memory.go`` picks them
    (blocks counted from ``blk.0``), then what llama.cpp allocates with them (the last blocks):
    :mod:`oomkit.estimate.ollama_memory_go`."""
    gpus = [d for d in hardware.devices if d.backend != "cpu"]
    if not gpus or any(d.capacity_bytes is None for d in gpus):
        return None
    inputs = memory_go_inputs(spec, mapped, hardware, version)
    blocks, output, kv, nextn = inputs.blocks, inputs.output, inputs.kv, inputs.nextn
    ctx = mapped.ctx or OLLAMA_DEFAULT_NUM_CTX
    graph = memory_go_graph(
        spec, ctx, min(ctx, mapped.batch_size or OLLAMA_DEFAULT_NUM_BATCH), kv, version
    )
    minimum = max(reserve.values(), default=0)
    free = ollama_free_memory(gpus)
    crossed = nvml_crossed(spec, hardware, version)
    if crossed is not None:
        # Windows 0.1.45-0.3.x: each GPU's free memory is the one NVML lists at its CUDA index;
        # Ollama sorts by it and counts the blocks in that order (oomkit.estimate.ollama_nvml_order)
        order, believed = crossed
        llama_graph = llama_graph_partial(
            spec, ctx, min(ctx, mapped.batch_size or OLLAMA_DEFAULT_NUM_BATCH)
        )
        if llama_graph is not None and spec.model_type in _LLAMA_GRAPH_CASE:
            graph = (llama_graph, llama_graph)
        in_order = estimate_gpu_layers(blocks, output, kv, graph, believed, minimum)
        counts = [0] * len(gpus)
        for pos, dev in enumerate(order):
            counts[dev] = in_order.counts[pos]
        plan = OllamaLayerPlan(layers=in_order.layers, counts=tuple(counts))
        notes.append(
            "Ollama 0.1.45-0.3.x on Windows reads each GPU's free memory through NVML by its "
            "CUDA index (bus order vs CUDA's fastest-first; fixed in 0.4.0, ollama PR #7473): "
            "believed free "
            + ", ".join(
                f"{gpus[d].name} {format_bytes(b)}" for d, b in zip(order, believed, strict=True)
            )
            + f"; split {','.join(map(str, in_order.counts))} in that order"
        )
    else:
        plan = estimate_gpu_layers(blocks, output, kv, graph, free, minimum)
    if plan.layers == 0:
        return None
    split = tuple(float(c) for c in plan.counts) if len(gpus) > 1 else None
    # llama.cpp offloads the last -ngl of its block_count blocks, the nextn ones first; the
    # placement here counts the main blocks only (num_hidden_layers)
    ngl = max(plan.layers - nextn, 0)
    est = estimate_llamacpp(
        spec,
        dataclasses.replace(mapped, n_gpu_layers=ngl, tensor_split=split),
        hardware,
        options=opts,
        default_swa_full=False,
        runtime_name="llama.cpp",
        vision_note=False,
    )
    if len(gpus) > 1:
        notes.append(
            "GPUs in the order Ollama lists them, which is llama.cpp's device order and split "
            "order (ollama#8776 logs it as ROCm1, ROCm2, ROCm0: the ROCm/CUDA names may differ)"
        )
    if plan.layers < len(blocks) + 1:
        uneven = spec.moe is not None and bool(spec.moe.dense_layers)
        notes.append(
            f"llm/memory.go counted blocks from blk.0 (split {','.join(map(str, plan.counts))}) "
            f"with its own KV figure {format_bytes(kv)} (2 x n_ctx x block_count x (key_length "
            f"+ value_length) x head_count_kv) and graph {format_bytes(max(graph))}"
            + (
                "; llama.cpp offloads the last blocks, whose sizes differ (leading dense blocks)"
                if uneven
                else ""
            )
        )
    return ngl, est

"""gpt-oss on Ollama 0.11.x: Ollama's own graph estimate per release, what its scheduler does
with it, and the attention graph its engine really built.

gpt-oss always runs on the Ollama engine (ollamarunner; ``OllamaEngineRequired``), from its
first release, 0.11.0 (PR #11672, commit fa7776fd2), to the 0.12 memory layouts. The releases
differ in four data, kept as effects of the generation rows
(:mod:`oomkit.estimate.generation_rows_ollama`, keys ``gptoss-0.11.*``):

``gptoss_graph`` -- ``GGML.GraphSize``'s ``"gptoss"`` case (fs/ggml/ggml.go). ``kvTotal`` is
the context-sized KV of every block (``n_ctx x (key_length + value_length) x head_count_kv x
bytes``, f16 2) and ``g = heads / heads_kv``:

* ``partial_2x_full`` (0.11.0-0.11.2, fa7776fd2): ``full = 4 g kvTotal / 6``, ``partial = 2
  full`` (ollama#11711's log at 8192: ``memory.graph.full="2.0 GiB"
  memory.graph.partial="4.0 GiB"``);
* ``partial_eq_full`` (0.11.3-0.11.4, PR #11700, fcec04bf4 "gptoss: fix memory calc"):
  ``partial = full`` (ollama#11753's log at 36864: ``memory.graph.full="9.0 GiB"
  memory.graph.partial="9.0 GiB"``);
* ``partial_half`` (0.11.5-0.11.7, PR #11823, 1a19df1f3): ``partial = 2 g kvTotal / 6``, full
  unset so equal to it (ollama#11982's log at 75000 cells: ``memory.graph.full="13.7 GiB"``);
* ``partial_half_fa`` (0.11.8 on, PR #11996, 85ccf7354): the same, but with flash attention
  ``(4 num_parallel + n_ctx / 1024 + 110) MiB``.

Its KV per block: the even (sliding-window) blocks hold ``num_parallel x 4096 + batch`` cells,
the odd ones ``n_ctx``.

``EstimateGPULayers`` (llm/memory.go of 0.11) keeps a GPU only if its free memory holds
``max(partial, full)`` (the partial graph on several GPUs), the 457 MiB minimum and two
``blk.0`` + ``kv[0]``; then walks the blocks from the last one down
(:func:`oomkit.estimate.ollama_memory_go.estimate_gpu_layers`). ``NewLlamaServer``
(llm/server.go): ``estimate.Layers == 0`` on CUDA/ROCm -> ``gpus = discover.GetCPUInfo()``:
the runner starts with the CPU library only, **whatever num_gpu says**, and the model runs on
the CPU (ollama#11790: "Since the graph can't fit, ollama doesn't allocate any layers to the
GPU"); ``num_gpu`` unset -> ``estimate.Layers``; ``num_gpu`` set -> that many layers, split by
memory.go's per-GPU counts (``--tensor-split``) however few it placed.

``gptoss_sinks`` -- the attention of model/models/gptoss/model.go: until 0.11.4
``scores.Concat(ctx, sinks, 0)`` then ``Softmax`` then ``Pad``: the concat and the pad are not
in place (ggml-alloc ``ggml_op_can_inplace`` has neither), so two F32 score tensors of
``heads x n_ubatch x (n_kv + 1)`` are alive where llama.cpp's graph keeps one (its softmax is
in place); from 0.11.5 ``nn.AttentionWithSinks`` puts the sinks in ``ggml_soft_max_ext``
(``ggml_soft_max_add_sinks``), one tensor as in llama.cpp.

``gptoss_flash`` -- ``never`` before 0.11.5 (``SupportsFlashAttention`` returns false for
``gptoss``; ollama#11753: "flash attention enabled but not supported by model"), ``user``
(OLLAMA_FLASH_ATTENTION) in 0.11.5-0.11.7, ``default`` (on) from 0.11.8.

Without flash attention ``value.Mulmat(scores)`` goes through
``ggml_cuda_mul_mat_batched_cublas``, which converts the F32 scores to FP16 in the CUDA pool
(``heads x n_ubatch x n_kv x 2`` bytes; llama.cpp PR #4606's VMM pool keeps its high-water
mark): a buffer that grows with the prompt, not in the graph reserved at load, so it is
reported as ``cuda_pool_growth_bytes`` (a band term of the verdict). ollama#11753 died so,
about 30 s into a 34k-token request, with Ollama's estimate at 22.6 of 23.4 GiB.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate
from oomkit.estimate.generations import Generation
from oomkit.estimate.llamacpp import estimate_llamacpp, estimate_llamacpp_breakdown
from oomkit.estimate.llamacpp_params import LlamaCppOptions
from oomkit.estimate.ollama_memory_go import estimate_gpu_layers
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import format_bytes

__all__ = [
    "GPTOSS_SWA_CELLS",
    "gptoss_engine_generation",
    "gptoss_flash",
    "gptoss_for_ollama",
    "gptoss_graph_size",
    "gptoss_kv_blocks",
    "gptoss_ollama_0_11",
    "scores_bytes",
]

#: GraphSize's sliding-window KV: ``numParallel x 4096 + batch`` cells per even block
GPTOSS_SWA_CELLS = 4096
_MIB = 2**20
_SRC = "ollama/ollama fs/ggml/ggml.go GraphSize 'gptoss', llm/memory.go, llm/server.go (0.11.x)"


#: the first Ollama release with a gpt-oss model (PR #11672, commit fa7776fd2)
_GPTOSS_FIRST = "0.11.0"


def check_gptoss_release(spec: ModelSpec, version: str | None) -> None:
    """Refuse an Ollama release before gpt-oss existed there.

    gpt-oss first loads in Ollama 0.11.0 (PR #11672, the ``gptoss-0.11.0`` generation row);
    earlier releases have no ``gptoss`` model and their vendored llama.cpp (2025-04) no
    ``gpt-oss`` architecture, so the model fails to load rather than running on the llama.cpp
    runner as the estimate would otherwise model it.

    Raises:
        InvalidSettingError: ``spec`` is gpt-oss and ``version`` predates 0.11.0.
    """
    if spec.model_type != "gpt_oss" or version is None or not version.strip():
        return
    from datetime import date

    from oomkit.estimate.generations import parse_runtime_version, resolve_generation

    first = resolve_generation("ollama", _GPTOSS_FIRST)
    asked = parse_runtime_version("ollama", version)
    if isinstance(asked, date):
        before = asked < first.since
    else:
        before = asked < (first.since_version or (0, 11, 0))
    if before:
        raise InvalidSettingError(
            f"Ollama {version} cannot load {spec.name} (gpt-oss first in Ollama "
            f"{_GPTOSS_FIRST}, ollama/ollama PR #11672); use --runtime-version {_GPTOSS_FIRST} "
            "or later",
            setting="runtime_version",
            value=version,
        )


def gptoss_engine_generation(spec: ModelSpec, gen: Generation | None) -> Generation | None:
    """``gen`` when it is a 0.11 gpt-oss generation (effects ``gptoss_*``) and ``spec`` is
    gpt-oss; else None."""
    if gen is None or spec.model_type != "gpt_oss" or "gptoss_graph" not in gen.effects:
        return None
    return gen


def gptoss_for_ollama(
    spec: ModelSpec,
    mapped: InferenceSettings,
    settings: InferenceSettings,
    hardware: Hardware,
    gen: Generation | None,
    reserve: Mapping[str, int],
    notes: list[str],
) -> tuple[Estimate, int | None, bool] | None:
    """:func:`gptoss_ollama_0_11` when ``gen`` is a 0.11 gpt-oss generation and ``spec``
    gpt-oss (the per-GPU minimum is Ollama's reserve); None otherwise."""
    found = gptoss_engine_generation(spec, gen)
    if found is None:
        return None
    minimum = max(reserve.values(), default=0)
    return gptoss_ollama_0_11(spec, mapped, settings, hardware, found, minimum, notes)


def gptoss_flash(gen: Generation, requested: bool | None) -> bool:
    """Flash attention as that release applies it (``gptoss_flash``: never / the user's
    OLLAMA_FLASH_ATTENTION / on by default)."""
    mode = gen.effects.get("gptoss_flash")
    if mode == "never":
        return False
    if mode == "default":
        return True if requested is None else requested
    return bool(requested)


def _kv_row(spec: ModelSpec, elem_bytes: float) -> float:
    return (spec.head_dim + spec.v_head_dim) * spec.num_key_value_heads * elem_bytes


def gptoss_kv_blocks(
    spec: ModelSpec, n_ctx: int, batch: int, parallel: int, n_block: int, elem_bytes: float = 2.0
) -> list[int]:
    """GraphSize's ``kv[i]``: ``(parallel x 4096 + batch)`` cells for even blocks, ``n_ctx``
    for odd ones."""
    row = _kv_row(spec, elem_bytes)
    swa = parallel * GPTOSS_SWA_CELLS + batch
    return [int(row * (swa if i % 2 == 0 else n_ctx)) for i in range(n_block)]


def gptoss_graph_size(
    mode: str,
    spec: ModelSpec,
    n_ctx: int,
    n_block: int,
    *,
    parallel: int = 1,
    flash: bool = False,
    elem_bytes: float = 2.0,
) -> tuple[int, int]:
    """(partial, full) of GraphSize's ``"gptoss"`` case for ``mode`` (see module doc); Go's
    integer order kept (``4 * heads / heads_kv * kvTotal / 6``)."""
    kv_total = int(_kv_row(spec, elem_bytes) * n_ctx) * n_block
    g = spec.num_attention_heads // max(1, spec.num_key_value_heads)
    if mode == "partial_2x_full":
        full = 4 * g * kv_total // 6
        return 2 * full, full
    if mode == "partial_eq_full":
        full = 4 * g * kv_total // 6
        return full, full
    partial = 2 * g * kv_total // 6
    if mode == "partial_half_fa" and flash:
        partial = (4 * parallel + (n_ctx >> 10) + 110) * _MIB
    return partial, partial


def scores_bytes(spec: ModelSpec, n_kv: int, n_ubatch: int, elem_bytes: int = 4) -> int:
    """One attention score tensor: ``heads x n_ubatch x n_kv`` elements."""
    return spec.num_attention_heads * n_ubatch * n_kv * elem_bytes


def _empty(dev: DeviceUsage) -> DeviceUsage:
    return dataclasses.replace(dev, components=(), details={"ollama": "CPU fallback"})


def gptoss_ollama_0_11(
    spec: ModelSpec,
    mapped: InferenceSettings,
    settings: InferenceSettings,
    hardware: Hardware,
    gen: Generation,
    minimum: int,
    notes: list[str],
) -> tuple[Estimate, int | None, bool] | None:
    """What Ollama ``gen`` (a ``gptoss-0.11.*`` generation) loads for gpt-oss: (the estimate,
    the ``num_gpu`` Ollama picked when unset, whether it fell back to the CPU). None for
    Metal, a GPU of unknown capacity or no GPU (those keep the generic path)."""
    gpus = [d for d in hardware.devices if d.backend != "cpu"]
    if not gpus or any(d.backend not in ("cuda", "rocm") for d in gpus):
        return None
    if any(d.capacity_bytes is None for d in gpus):
        return None
    flash = gptoss_flash(gen, settings.flash_attn)
    kv_type = mapped.cache_type_k if flash else None
    # the engine's cache and graph as llama.cpp of today lays gpt-oss out (sliding-window
    # cache of n_swa x n_seq + n_ubatch cells, the sinks in the softmax); the release's own
    # attention is added below
    real = dataclasses.replace(
        mapped, flash_attn=flash, cache_type_k=kv_type, cache_type_v=kv_type, runtime_version=None
    )
    if settings.flash_attn and not flash:
        notes.append("gpt-oss before Ollama 0.11.5: flash attention not supported by the model")
    elif flash and settings.flash_attn is None:
        notes.append("gpt-oss from Ollama 0.11.8: flash attention on by default (PR #11996)")
    opts = LlamaCppOptions(
        reserve_outputs=mapped.parallel or 1, force_mmq=False, cuda_moe_fusion_deps=False
    )
    _, bd = estimate_llamacpp_breakdown(spec, real, hardware, options=opts)
    n_block = spec.num_hidden_layers
    blocks = [0] * n_block
    output = embd = 0
    has_output = False
    for t in bd.placement.tensors:
        if t.layer is not None and 0 <= t.layer < n_block:
            blocks[t.layer] += t.n_bytes
        elif t.name.startswith(("output.", "output_norm.")):
            output += t.n_bytes
            has_output = has_output or t.name.startswith("output.")
        elif t.name.startswith("token_embd."):
            embd += t.n_bytes
    if not has_output:
        output += embd
    parallel = mapped.parallel or 1
    ctx = mapped.ctx or 4096
    batch = min(ctx, mapped.batch_size or 512)
    elem = {"q8_0": 1.0, "q4_0": 0.5}.get((kv_type or "f16").lower(), 2.0)
    kv_blocks = gptoss_kv_blocks(spec, ctx, batch, parallel, n_block, elem)
    graph = gptoss_graph_size(
        str(gen.effects["gptoss_graph"]),
        spec,
        ctx,
        n_block,
        parallel=parallel,
        flash=flash,
        elem_bytes=elem,
    )
    # FreeMemory as Ollama reads it: through a CUDA context of its own (ollama_memory_go)
    free = [
        (d.capacity_bytes or 0)
        - (cuda_context_bytes("llama.cpp", d)[0] if d.backend == "cuda" else 0)
        for d in gpus
    ]
    plan = estimate_gpu_layers(
        blocks,
        output,
        sum(kv_blocks),
        graph,
        free,
        minimum,
        kv_blocks=kv_blocks,
        descending=True,
        num_gpu=settings.n_gpu_layers,
    )
    shown = f"graph {format_bytes(max(graph) if len(gpus) == 1 else graph[0])}"
    if plan.layers == 0:
        notes.append(
            f"{gen.label}: Ollama's own gpt-oss estimate ({shown}, GraphSize 'gptoss') leaves "
            "no GPU room for a layer, so llm/server.go starts the runner on the CPU only "
            "(estimate.Layers == 0 -> discover.GetCPUInfo(), whatever num_gpu says): the "
            "GPUs hold nothing"
        )
        cpu = estimate_llamacpp(
            spec,
            dataclasses.replace(real, n_gpu_layers=0),
            hardware,
            options=opts,
            default_swa_full=False,
            runtime_name="llama.cpp",
            vision_note=False,
        )
        devices = tuple(d if d.device == "cpu" else _empty(d) for d in cpu.devices)
        details = {k: v for k, v in cpu.runtime_details.items() if k != "cuda_pool_growth_bytes"}
        # no CUDA library in that runner: nothing of llama.cpp's GPU placement applies
        kept = tuple(a for a in cpu.assumptions if "op_offload" not in a)
        cpu = dataclasses.replace(cpu, devices=devices, runtime_details=details, assumptions=kept)
        return cpu, 0, True
    ngl = settings.n_gpu_layers if settings.n_gpu_layers is not None else plan.layers
    split = tuple(float(c) for c in plan.counts) if len(gpus) > 1 else None
    est = estimate_llamacpp(
        spec,
        dataclasses.replace(real, n_gpu_layers=ngl, tensor_split=split),
        hardware,
        options=opts,
        default_swa_full=False,
        runtime_name="llama.cpp",
        vision_note=False,
    )
    notes.append(
        f"{gen.label}: Ollama's own gpt-oss estimate ({shown}, GraphSize 'gptoss') placed "
        f"{plan.layers} layers (split {','.join(map(str, plan.counts))})"
        + (
            f"; num_gpu {settings.n_gpu_layers} is used as given, split by those counts"
            if settings.n_gpu_layers is not None
            else ""
        )
    )
    est = _release_attention(spec, est, gen, ctx, min(batch, mapped.ubatch or batch), flash, notes)
    return est, (None if settings.n_gpu_layers is not None else ngl), False


def _release_attention(
    spec: ModelSpec,
    est: Estimate,
    gen: Generation,
    n_kv: int,
    n_ubatch: int,
    flash: bool,
    notes: list[str],
) -> Estimate:
    """Add the release's own attention to every GPU that holds attention layers: the second
    F32 score tensor of the sinks concat (0.11.0-0.11.4), and without flash attention the
    FP16 copy of the scores in the CUDA pool as growth (a band term)."""
    if flash:
        return est
    concat = gen.effects.get("gptoss_sinks") == "concat"
    extra = scores_bytes(spec, n_kv + 1, n_ubatch)
    pool = scores_bytes(spec, n_kv, n_ubatch, elem_bytes=2)
    growth_in = est.runtime_details.get("cuda_pool_growth_bytes")
    growth: dict[str, int] = dict(growth_in) if isinstance(growth_in, Mapping) else {}
    devices: list[DeviceUsage] = []
    for d in est.devices:
        if d.device == "cpu" or d.kv_cache_bytes == 0:
            devices.append(d)
            continue
        if d.device.startswith("cuda"):  # ROCm's pool is not modelled (llamacpp_pool)
            growth[d.device] = growth.get(d.device, 0) + pool
        if concat:
            comp = Component(
                category="activations",
                label="attention sinks concat (second F32 score tensor)",
                n_bytes=extra,
                formula="n_head x n_ubatch x (n_kv + 1) x 4",
                inputs={"n_head": spec.num_attention_heads, "n_ubatch": n_ubatch, "n_kv": n_kv},
                source="ollama/ollama model/models/gptoss/model.go (v0.11.0-v0.11.4): "
                "scores.Concat(sinks).Softmax().Pad(); PR #11823 (v0.11.5) moved the sinks "
                "into the softmax",
            )
            d = dataclasses.replace(d, components=(*d.components, comp))
        devices.append(d)
    if concat:
        notes.append(
            f"{gen.label}: gpt-oss attention concatenates the sinks to the F32 scores, a "
            f"second score tensor of {format_bytes(extra)} per GPU (model/models/gptoss)"
        )
    notes.append(
        "no flash attention: value x scores converts the scores to FP16 in the CUDA pool "
        f"({format_bytes(pool)} per GPU at a full-context prompt; "
        "ggml_cuda_mul_mat_batched_cublas), counted in the verdict's band"
    )
    details = dict(est.runtime_details)
    if growth:
        details["cuda_pool_growth_bytes"] = growth
    return dataclasses.replace(est, devices=tuple(devices), runtime_details=details)

"""SGLang: a static fraction of each GPU holds weights + the KV token pool.

Models ``ModelRunner.profile_max_num_token`` (python/sglang/srt/model_executor/model_runner.py):
``rest = available_after_weights - total x (1 - mem_fraction_static)`` and
``max_total_num_tokens = rest // cell_size`` with ``cell_size = kv_heads_per_rank x head_dim x
layers x 2 x elem`` (MLA: ``(kv_lora_rank + qk_rope_head_dim) x layers x elem``). ``total`` is
the free memory measured once the CUDA context and the distributed group exist
(``init_torch_distributed`` -> ``min_per_gpu_memory``), so ``rest = free0 x frac - weights``.
After the pool, ``init_memory_pool`` allocates the ``ReqToTokenPool``: ``max_num_reqs + 1`` rows
of ``context_len + 4`` int32 with ``max_num_reqs = min(max(tokens / context_len x 512, 2048),
4096)``, or ``--max-running-requests`` (``settings.max_num_seqs``) when given. The
``1 - mem_fraction_static`` rest holds activations and CUDA graphs.

Default ``mem_fraction_static`` (server_args.py ``ServerArgs._handle_gpu_memory_settings``, PR
#10975): ``(gpu_mem - reserved) / gpu_mem`` rounded to 3 places, in MiB of the smallest GPU
(nvidia-smi ``memory.total``), with ``reserved = 512 + max(chunked_prefill_size, 2048) x 1.5 +
cuda_graph_max_bs x 2 + tp x pp / 8 x 1024``, at least 10 GiB on GPUs above 60 GiB; 0.88 when
the GPU is unknown. ``chunked_prefill_size`` / ``cuda_graph_max_bs`` by GPU memory: < 20 GiB
2048 / 8; < 35 GiB 2048 / 24 (80 at tp >= 4); < 60 GiB 4096 / 32 (160); < 90 GiB and < 160 GiB
8192 / 256 (512); larger 16384 / 512. (Earlier releases: a TP table, 0.88, 0.87, 0.85, 0.81,
0.79 for tp 1, 2, 4, 8, 16, then GPU-size rules from v0.4.5.post3 and reserved-memory tiers from
v0.4.8: :func:`dated_mem_fraction_static`, by generation.)
Multimodal models (``multimodal_model_archs`` of python/sglang/srt/configs/model_config.py) by
generation (:func:`multimodal_policy`, read from the runtime generations table): from v0.2.14.post2
``ModelRunner`` lowers ``mem_fraction_static`` (x 0.95; x 0.90 from v0.4.5; only the default
from v0.4.9; from v0.4.10 by the ViT size, not modelled) and turns chunked prefill off (every
VLM until v0.4.0 and again in v0.4.5-v0.4.6.post4; the listed ones in v0.4.1-v0.4.4 and from
v0.4.6.post5). Gemma 3 and Llama 4 run text-only by default from v0.4.6 (``mm_disabled_models``);
Llama 4 was served as multimodal between v0.4.5 and v0.4.5.post3 (v0.4.5.post1's check compares
the ``architectures`` list with a string). With chunked prefill off a request is prefilled in one
forward (managers/schedule_policy.py ``PrefillAdder.add_one_req``: with ``rem_chunk_tokens``
None a request longer than ``max_prefill_tokens`` is still admitted whole when the batch is
empty, v0.4.5.post1 lines 461-494): one request of the context length must fit its activations
(:func:`oomkit.estimate.hf_activations.forward_peak_bytes`, SGLang's layers are vLLM's: the
same gate_up/act/down MLP and ``fused_moe`` 64K-token chunks) in what ``1 - mem_fraction_static``
leaves after the req_to_token pool, or the first such request dies of OOM (sgl-project/sglang
#5212: Llama-4-Scout, 8x H100, a 400K-token request on 2025-04-09 dies in ``forward_extend``
through ``mllama4.py`` ``general_mm_embed_routine``). With chunked prefill on, the chunk is what
that rest is sized for and is not checked.
A token pool below the context length does not stop SGLang: it caps a request at the pool
(``managers/tp_worker.py`` ``max_req_len = min(context_len - 1, max_total_num_tokens - 1)``) and
refuses a longer input with HTTP 400, so that is an assumption, not a blocker
(:func:`pool_below_context_note`); only a pool that holds no request stops it.
Flags: ``--tp``, ``--pp`` (each stage holds its layers: :mod:`oomkit.estimate.pipeline`),
``--mem-fraction-static``, ``--context-length``, ``--kv-cache-dtype``,
``--max-running-requests`` (``max_num_seqs``), ``--disable-cuda-graph`` (``enforce_eager``: no
CUDA-graph attention tables, :mod:`oomkit.estimate.sglang_graph_tables`).
"""

from __future__ import annotations

from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.estimate.hf_kv import kv_bytes_per_token, kv_elem_bytes, kv_layers
from oomkit.estimate.hf_weights import dtype_bytes, model_info, plan_weights, weights_format
from oomkit.estimate.pipeline import stage_layers, stage_spans, stage_tensors
from oomkit.estimate.rope_cache import rope_cache_bytes
from oomkit.estimate.sglang_graph_tables import fa3_graph_tables, graph_max_bs
from oomkit.estimate.sglang_multimodal import MultimodalPolicy, multimodal_policy, sglang_effects
from oomkit.estimate.sglang_outside import dated_chunked_prefill_size
from oomkit.estimate.sglang_pool import (
    PoolInputs,
    pool_below_context_note,
    pool_limit,
    token_pools,
)
from oomkit.estimate.speculative import draft_terms, sglang_cell_size, sglang_reserve_bytes
from oomkit.estimate.speculative_sglang import (
    attention_layers,
    scaled_stages,
    speculative_details,
    speculative_settings,
)
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import model_tensors
from oomkit.units import GiB, MiB

__all__ = [
    "MultimodalPolicy",
    "dated_mem_fraction_static",
    "default_mem_fraction_static",
    "estimate_sglang",
    "legacy_mem_fraction_static",
    "multimodal_policy",
    "pool_below_context_note",
    "sglang_batch_defaults",
    "sglang_context_len",
]

#: NCCL communicator buffers created by ``init_torch_distributed`` before ``free0`` is read:
#: they lower ``free0`` itself (same order as vLLM's TP non-torch growth)
_NCCL_INIT = 256 * MiB


def sglang_batch_defaults(gpu_mem_bytes: int | None, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks for a GPU of this size.

    >>> sglang_batch_defaults(81559 * MiB, 1), sglang_batch_defaults(24 * GiB, 4)
    ((8192, 256), (2048, 80))
    """
    if gpu_mem_bytes is None:
        return 4096, 160
    mem = gpu_mem_bytes
    if mem < 20 * GiB:
        return 2048, 8
    if mem < 35 * GiB:
        return 2048, 24 if tp < 4 else 80
    if mem < 60 * GiB:
        return 4096, 32 if tp < 4 else 160
    if mem < 160 * GiB:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def default_mem_fraction_static(
    tp: int, gpu_mem_bytes: int | None = None, pp: int = 1, *, speculative_mib: int = 0
) -> float:
    """SGLang's default ``--mem-fraction-static`` (``_handle_gpu_memory_settings``);
    ``speculative_mib``: what it reserves more for a draft, after the 10 GiB floor
    (:func:`oomkit.estimate.speculative.sglang_reserve_bytes`).

    >>> default_mem_fraction_static(1), default_mem_fraction_static(1, 81559 * MiB)
    (0.88, 0.835)
    """
    if not gpu_mem_bytes:  # unknown (or a zero-capacity target, which then does not fit)
        return 0.88
    chunked, graph_bs = sglang_batch_defaults(gpu_mem_bytes, tp)
    gpu_mib = gpu_mem_bytes / MiB
    reserved = 512 + max(chunked, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    reserved += speculative_mib  # "eagle draft models and cuda graphs" (after the floor)
    return round((gpu_mib - reserved) / gpu_mib, 3)


def legacy_mem_fraction_static(tp: int) -> float:
    """SGLang <= 0.4 default by TP size (``ServerArgs.__post_init__``)."""
    if tp >= 16:
        return 0.79
    if tp >= 8:
        return 0.81
    if tp >= 4:
        return 0.85
    if tp >= 2:
        return 0.87
    return 0.88


def dated_mem_fraction_static(
    kind: str, tp: int, gpu_mem_bytes: int | None = None, pp: int = 1
) -> float:
    """The default ``mem_fraction_static`` of SGLang's ``ServerArgs.__post_init__`` before PR
    #10975, by the generation's ``mem_fraction`` effect (``gpu_mem``: nvidia-smi
    ``memory.total`` of the smallest GPU, MiB, as ``get_nvgpu_memory_capacity`` reads it):

    * ``tp_table`` (<= v0.4.5.post2): 0.88/0.87/0.85/0.81/0.79 for tp 1/2/4/8/16;
    * ``tp_table_13g`` (v0.4.5.post3 - v0.4.6.post1): the table up to 81920 MiB, above it
      ``(gpu_mem - 13 GiB) / gpu_mem``;
    * ``tp_table_96g`` (v0.4.6.post2 - v0.4.6.post5): the table by tp x pp up to 81920 MiB,
      0.88 above; above 96 GiB ``min(f + 48 GiB x (1 - f) / gpu_mem, (gpu_mem - 18 GiB) /
      gpu_mem)``; ``tp_table_180g`` (v0.4.7): the same, 0.79 above 180000 MiB;
    * ``reserved_tier`` (v0.4.8 - v0.5.2): ``round((gpu_mem - reserved) / gpu_mem, 3)`` with
      ``reserved`` = (2.8 + tp x pp / 10) GiB below 35 GiB, (9.5 + tp x pp / 2) GiB below 90
      GiB, (12 + tp x pp / 2) GiB below 160 GiB, else 32 GiB.

    0.88 when the GPU is unknown (every form's fallback).

    >>> dated_mem_fraction_static("reserved_tier", 8, 24564 * MiB)
    0.85
    >>> round(dated_mem_fraction_static("tp_table_96g", 8, 143771 * MiB), 4)
    0.8718
    """
    par = tp * pp
    if kind == "tp_table":
        return legacy_mem_fraction_static(tp)
    if gpu_mem_bytes is None or gpu_mem_bytes <= 0:
        return 0.88
    mib = gpu_mem_bytes / MiB
    if kind == "tp_table_13g":
        return legacy_mem_fraction_static(tp) if mib <= 81920 else (mib - 13 * 1024) / mib
    if kind in ("tp_table_96g", "tp_table_180g"):
        frac = legacy_mem_fraction_static(par) if mib <= 81920 else 0.88
        if kind == "tp_table_180g" and mib > 180 * 1000:
            return 0.79
        if mib > 96 * 1024:
            frac = min(frac + 48 * 1024 * (1 - frac) / mib, (mib - 18 * 1024) / mib)
        return frac
    if kind == "reserved_tier":
        if mib < 35 * 1024:
            reserved = (2.8 + par / 10) * 1024
        elif mib < 90 * 1024:
            reserved = (9.5 + par / 2) * 1024
        elif mib < 160 * 1024:
            reserved = (12 + par / 2) * 1024
        else:
            reserved = 32 * 1024
        return round((mib - reserved) / mib, 3)
    return default_mem_fraction_static(tp, gpu_mem_bytes, pp)


def sglang_context_len(spec: ModelSpec) -> int | None:
    """SGLang's default context length when ``--context-length`` is not given.

    ``ModelConfig`` takes ``get_context_length(hf_text_config)`` (python/sglang/srt/
    hf_transformers_utils.py, v0.4.4.post3 l.117-134, v0.4.9.post3 l.186-203; utils/
    hf_transformers_utils.py in v0.5.5.post3 l.330-347): ``max_position_embeddings`` x the
    ``rope_scaling`` ``factor``, except for ``rope_type`` "llama3" or a ``rope_scaling`` carrying
    ``original_max_position_embeddings`` (YaRN), whose length already is the scaled one. So
    Gemma 3 (``linear``, factor 8 over 131072) defaults to 1048576 tokens, which sizes the
    ``ReqToTokenPool`` (``max_num_reqs x (context_len + 4)`` int32: 8 GiB at 2048 requests) and
    the attention backends' CUDA-graph tables (0.5.5.post3 configs/model_config.py l.285-314:
    "the derived context_length may differ from max_position_embeddings"; sgl-project/sglang
    PR #4840: Gemma 3 4B had 0.07 GB left after its memory pool at 0.65 without a
    ``--context-length``). None when the config gives no length.

    >>> from oomkit.catalog.models import find_model
    >>> sglang_context_len(find_model("gemma-3-12b").spec())
    1048576
    >>> sglang_context_len(find_model("llama-3.1-8b").spec())
    131072
    """
    n = spec.max_position_embeddings
    if not n:
        return None
    factor = spec.rope_scaling_factor
    if (
        factor is None
        or spec.rope_scaling_type == "llama3"
        or spec.rope_original_max_position_embeddings is not None
    ):
        return n
    return int(factor * n)


def _smi_total(d: DeviceTarget) -> int | None:
    """What ``nvidia-smi --query-gpu=memory.total`` prints for ``d``, which SGLang's defaults
    read (``get_nvgpu_memory_capacity``): a catalog card budgeted at its CUDA total reports
    its NVML total there (:func:`oomkit.hardware.catalog.runtime_capacity_bytes`); any other
    capacity (``--vram``, a live reading) is taken as is."""
    if d.key is None or d.capacity_bytes is None:
        return d.capacity_bytes
    from oomkit.hardware.catalog import all_gpus, linux_cuda_total_bytes

    row = next((g for g in all_gpus() if g.key == d.key), None)
    if row is None or d.capacity_bytes != linux_cuda_total_bytes(row):
        return d.capacity_bytes
    return row.memory_bytes


def estimate_sglang(spec: ModelSpec, settings: InferenceSettings, hardware: Hardware) -> Estimate:
    """Memory per rank for ``python -m sglang.launch_server`` (see module docstring)."""
    tp = settings.tp or 1
    pp = settings.pp or 1
    devices = hardware.devices or (DeviceTarget(name="GPU (capacity unknown)"),)
    # the defaults read nvidia-smi's memory.total (get_nvgpu_memory_capacity); the pool below
    # is a fraction of CUDA's free memory (capacity_bytes, the CUDA total on Linux)
    caps = [_smi_total(d) for d in devices[: tp * pp]]
    smallest = None if any(c is None for c in caps) else min(c for c in caps if c is not None)
    kind = "gpu_memory"
    if settings.runtime_version is not None:
        from oomkit.estimate.generations import resolve_generation

        gen = resolve_generation("sglang", settings.runtime_version)
        kind = str(gen.effects.get("mem_fraction", "gpu_memory"))
    # a draft (EAGLE family 2 GiB, STANDALONE 6 GiB) is reserved outside the default fraction
    spec_mib = sglang_reserve_bytes(settings.speculative_method) // MiB
    frac = settings.mem_fraction_static or (
        dated_mem_fraction_static(kind, tp, smallest, pp)
        if kind != "gpu_memory"
        else default_mem_fraction_static(tp, smallest, pp, speculative_mib=spec_mib)
    )
    if spec_mib and smallest and kind == "reserved_tier" and not settings.mem_fraction_static:
        frac = round(frac - spec_mib * MiB / smallest, 3)  # v0.4.8-v0.5.2: the same +2 GiB
    mm = multimodal_policy(spec, settings.runtime_version)
    # CUDA-graph tables of the fa3 backend (chunked-attention models): sglang_graph_tables
    eff = sglang_effects(settings.runtime_version)
    ctx = settings.ctx or sglang_context_len(spec) or 8192
    graph_bs = graph_max_bs(eff, smallest, sglang_batch_defaults(smallest, tp)[1])
    tables = (
        None
        if settings.enforce_eager
        else fa3_graph_tables(spec, ctx, graph_bs, str(eff.get("fa3_local_table", "")))
    )
    graph_tables = sum(tables) if tables else 0
    if mm.fraction_factor != 1.0 and not (mm.default_only and settings.mem_fraction_static):
        # ModelRunner: "Automatically reduce --mem-fraction-static ... multimodal model"
        frac = round(frac * mm.fraction_factor, 6)
    elem = dtype_bytes(spec.torch_dtype or "bf16")
    elem = 2 if elem == 4 else elem
    kv_elem = kv_elem_bytes(settings.cache_type_k, elem)
    all_tensors = model_tensors(spec)
    all_layers = kv_layers(spec, kv_elem_bytes=kv_elem, state_elem_bytes=elem, tp=tp)
    n_layers = spec.num_hidden_layers
    # per pipeline stage (pp 1: one stage): its weights and its layers' KV cells
    stages = []
    for r in range(pp):
        span = stage_layers(n_layers, r, pp)
        w = plan_weights(
            spec, stage_tensors(all_tensors, r, pp, n_layers), quant=settings.quant, tp=tp
        )
        lay = all_layers if pp == 1 else tuple(x for x in all_layers if x.layer in span)
        stages.append((w, lay, kv_bytes_per_token(lay)))
    weights, layers, cell = stages[0]
    # speculative decoding (oomkit.estimate.speculative): the draft's weights come from the
    # rest, its KV pool is budgeted by scaling the target's cell size
    draft = draft_terms(
        spec,
        settings,
        target_weights_bytes=weights.bytes_per_rank,
        target_layers=layers,
        tp=tp,
        kv_elem=kv_elem,
        elem=elem,
    )
    target_cell = cell
    if draft is not None:
        # mambaish models: num_layers is the full-attention layers (pool_configurator.py)
        cell = sglang_cell_size(cell, attention_layers(layers), draft)
        stages = scaled_stages(stages, draft)
    # layers/rotary_embedding.py get_rope(): one cached RotaryEmbedding per rope config, its
    # cos_sin_cache [max_position_embeddings, rotary_dim] in the model dtype, built with the
    # model (so before free memory is profiled): the config's length, not --context-length
    # (Llama 4: 10M positions x 128 x 2 B = 2.5 GiB per rank); the same as vLLM's estimate
    # (a second rope config, Gemma 3's local layers, has its own cache: counted once)
    rope = rope_cache_bytes(spec, ctx, elem)
    # the vision tower is built with the model (before free memory is profiled) even when the
    # model is served text-only: Gemma 3's HF AutoModel (v0.4.4.post2 - v0.4.6.post4) and
    # Llama 4's transformers Llama4VisionModel (v0.4.5.post1 - v0.4.9.x, when the checkpoint
    # has vision weights) whole on every rank; Gemma 3's SiglipVisionModel (models/siglip.py) from
    # v0.4.6.post5 split over the TP ranks; with --pp on the first stage only
    vision_all = spec.multimodal_params * elem
    vision = vision_all if mm.vision == "replicated" else 0
    if mm.vision == "sharded":
        vision = vision_all // tp
    # --chunked-prefill-size (settings.max_num_batched_tokens) or the generation's default;
    # not modelled for the oldest row (no chunked prefill before v0.3) or when it is off
    chunk = settings.max_num_batched_tokens or dated_chunked_prefill_size(
        kind, smallest, sglang_batch_defaults(smallest, tp)[0]
    )
    check_outside = mm.chunked_prefill is True and eff.get("mm_chunked_off") != "not_modelled"
    pools = token_pools(
        PoolInputs(
            spec=spec,
            settings=settings,
            devices=devices,
            stages=stages,
            tp=tp,
            pp=pp,
            ctx=ctx,
            elem=elem,
            frac=frac,
            rope=rope,
            vision=vision,
            mm=mm,
            graph_bs=graph_bs,
            graph_tables=graph_tables,
            draft=draft,
            chunk=chunk,
            check_outside=check_outside,
        )
    )
    limit = pool_limit(spec, settings, stages[0][1], pools.tokens, ctx, eff)
    usages, reqs, prefill, outside = pools.usages, pools.reqs, pools.prefill, pools.outside
    tokens, swa, pool_note = limit.tokens, limit.swa, limit.notes
    blockers = [*pools.blockers, *limit.blockers]
    weights, _, cell = stages[-1]  # the last stage's weights notes and cell size are reported
    return Estimate(
        model=model_info(spec),
        runtime="sglang",
        settings={
            "runtime": "sglang",
            "quant": weights_format(spec, settings.quant),  # what was priced
            "ctx": ctx,
            "tp": tp,
            **({"pp": pp} if pp > 1 else {}),
            "mem_fraction_static": frac,
            **speculative_settings(draft, settings),
        },
        devices=tuple(usages),
        host=DeviceUsage(device="cpu"),
        runtime_details={
            "max_total_num_tokens": tokens,
            **(
                {"hybrid_swa": {"full_tokens": swa.full_tokens, "swa_tokens": swa.swa_tokens}}
                if swa is not None
                else {}
            ),
            **speculative_details(draft, target_cell),
            "max_num_reqs": reqs,
            "cell_size_bytes": cell,
            "mem_fraction_static": frac,
            **(
                {
                    "cuda_graph_tables": {
                        "max_bs": graph_bs,
                        "context_tables_bytes": tables[0],
                        "local_block_table_bytes": tables[1],
                    }
                }
                if tables
                else {}
            ),
            **({"outside_pool": outside} if outside is not None else {}),
            **(
                {
                    "multimodal": {
                        "fraction_factor": mm.fraction_factor,
                        "chunked_prefill": mm.chunked_prefill,
                        "prefill_peak_bytes": prefill,
                    }
                }
                if mm.multimodal
                else {}
            ),
        },
        assumptions=tuple(weights.assumptions)
        + (draft.notes if draft is not None else ())
        + pool_note
        + (
            (
                f"pipeline parallel {pp} stages x tp {tp}: layers "
                + stage_spans(n_layers, pp)
                + " (get_pp_indices); the token pool is the smallest stage's",
            )
            if pp > 1
            else ()
        ),
        blockers=tuple(dict.fromkeys(blockers)),
    )

"""vLLM (``vllm serve``): profile, then fill the rest of the budget with KV blocks.

Models ``Worker.determine_available_memory`` (vllm/v1/worker/gpu_worker.py): the budget is
``gpu_memory_utilization x total`` per instance (``total`` as ``cudaMemGetInfo`` reports it);
the weights (``model_memory_usage``: parameters and buffers such as the rotary cos/sin cache),
the profile run's torch peak increase and the non-torch increase are subtracted, and, in current
vLLM, the CUDA-graph estimate (``profile_cudagraph_memory``). What remains becomes KV blocks
(vllm/v1/core/kv_cache_utils.py ``get_kv_cache_config``: ``num_blocks = available // page_size
// num_layers`` with ``page_size = block_size x per-layer bytes per token``; with sliding-window
layers the hybrid manager groups layers so that ``num_blocks = available // page_size //
group_size`` and reports ``num_blocks // n_groups x block_size`` tokens,
``_get_kv_cache_config_uniform_page_size``; :mod:`oomkit.estimate.vllm_blocks`). Older
generations are rows of :mod:`oomkit.estimate.vllm_engines` (``plan_vllm(..., engine=...)``).

The profile run (vllm/v1/worker/gpu_model_runner.py ``profile_run`` -> ``_dummy_run(
max_num_tokens)`` + ``_dummy_sampler_run``) peaks at the larger of one layer's live set over
``max_num_batched_tokens`` tokens (:func:`oomkit.estimate.hf_activations.forward_peak_bytes`)
and the sampler over ``min(max_num_seqs, max_num_batched_tokens)`` rows while all hidden
states are still held (:func:`~oomkit.estimate.hf_activations.sampler_peak_bytes`).

Defaults (vllm/engine/arg_utils.py ``EngineArgs.get_batch_defaults``, OpenAI server):
``max_num_batched_tokens`` 8192 and ``max_num_seqs`` 1024 when the GPU has >= 70 GiB and its name
does not contain "a100" (PR #17885), else 2048 and 256 (``--llm-class``, the offline ``LLM`` class:
16384 / 8192 tokens); V0 engines used 256 sequences and, without chunked prefill,
``max(max_model_len, 2048)`` batched tokens. ``block_size`` 16 (CacheConfig
``DEFAULT_BLOCK_SIZE``); KV dtype = model dtype (``--kv-cache-dtype auto``). vLLM downcasts float32
checkpoints to 16 bits by default. Flags: ``--tensor-parallel-size``, ``--gpu-memory-utilization``,
``--max-model-len``, ``--max-num-seqs``, ``--max-num-batched-tokens``, ``--kv-cache-dtype``,
``--cpu-offload-gb``, ``--enforce-eager``, ``--block-size``.
"""

from __future__ import annotations

import dataclasses
from math import ceil

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.estimate.checks import vllm_len_cap
from oomkit.estimate.hf_activations import forward_peak_bytes, sampler_bytes_per_entry
from oomkit.estimate.hf_kv import (
    kv_bytes,
    kv_bytes_per_token,
    kv_elem_bytes,
    kv_layers,
)
from oomkit.estimate.hf_weights import dtype_bytes, model_info, plan_weights, weights_format
from oomkit.estimate.pipeline import stage_layers, stage_spans, stage_tensors
from oomkit.estimate.rope_cache import rope_cache_bytes
from oomkit.estimate.sglang_graph_tables import chunked_attention_size
from oomkit.estimate.speculative import draft_terms
from oomkit.estimate.speculative_vllm import fold_draft
from oomkit.estimate.vllm_awq import awq_split_k_bytes
from oomkit.estimate.vllm_blocks import KvBlocks, kv_blocks, max_len_that_fits, request_bytes
from oomkit.estimate.vllm_compiled_pooling import DETAIL as COMPILED_POOLING
from oomkit.estimate.vllm_compiled_pooling import NOTE as COMPILED_POOLING_NOTE
from oomkit.estimate.vllm_components import estimate_settings, host_usage, rank_components
from oomkit.estimate.vllm_cudagraph import cudagraph_bytes
from oomkit.estimate.vllm_engines import (
    DEFAULT_ENGINE,
    engine_batch_defaults,
    non_torch_bytes,
    vllm_engine,
)
from oomkit.estimate.vllm_lora import lora_details, settings_lora_plan
from oomkit.estimate.vllm_mamba_blocks import (
    MAMBA_SEQS_CHECK_ENGINES,
    mamba_cache_blocks,
    mamba_seqs_blocker,
)
from oomkit.estimate.vllm_mm import vision_profile
from oomkit.estimate.vllm_mm import vision_profile_images as vision_images
from oomkit.estimate.vllm_mxfp4 import mxfp4_backend, mxfp4_weights_extra
from oomkit.estimate.vllm_nvls import nvls_buffer_bytes
from oomkit.estimate.vllm_penalties import request_sampler_extra_bytes
from oomkit.estimate.vllm_plan import VllmPlan
from oomkit.estimate.vllm_profile_kv import profile_kv_check
from oomkit.estimate.vllm_release import release_rules
from oomkit.estimate.vllm_sampler import sampler_path, sampler_peaks
from oomkit.estimate.vllm_v0_chunked import v0_batched_tokens
from oomkit.spec.hardware import DeviceTarget, Hardware, device_label
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import model_tensors
from oomkit.units import GiB, format_bytes

__all__ = ["VllmPlan", "estimate_vllm", "max_len_that_fits", "plan_vllm"]


def plan_vllm(
    spec: ModelSpec,
    settings: InferenceSettings,
    device: DeviceTarget,
    *,
    engine: str = DEFAULT_ENGINE,
    mla_latent_kv: bool = True,
    nccl_record_stream: bool = True,
    pp_rank: int = 0,
    mxfp4_hopper: str = "triton",
    v0_multimodal_chunked: bool = True,
    awq_split_k: bool = False,
    nvls_nccl: str | None = None,
    charge_graphs: bool | None = None,
) -> VllmPlan:
    """The numbers vLLM logs at startup, for one rank (pure).

    ``engine`` picks the profiling rule of a vLLM generation
    (:data:`oomkit.estimate.vllm_engines.VLLM_ENGINES`); the default is current vLLM.
    ``mla_latent_kv=False``: vLLM before 0.7.1 cached DeepSeek-V2/V3 as ordinary attention,
    ``Attention(num_local_heads, 256, num_kv_heads=num_local_heads)`` with q/k/v padded to 256
    (vllm/model_executor/models/deepseek_v2.py of 0.5-0.7.0; SGLang's non-MLA path keeps the
    same "TODO, support head_size 192" layout), not the 576-element latent.
    ``nccl_record_stream=False``: vLLM 0.2.6+ sets ``TORCH_NCCL_AVOID_RECORD_STREAMS=1`` (PR
    #2152), so the reserved-peak engine no longer holds the TP all-reduce inputs.
    ``mxfp4_hopper``: the MXFP4 MoE backend on Hopper (``"marlin"`` in 0.10.x, ``"triton"``
    from 0.11; :mod:`oomkit.estimate.vllm_mxfp4`).
    ``v0_multimodal_chunked=False``: the V0 fallback of 0.8-0.10 never turns chunked prefill
    on for a multimodal model ("Chunked prefill not supported for Multimodal or MLA in V0",
    ``EngineArgs._set_default_args_v0``), so its batch is ``max(max_model_len, 2048)`` even
    above 32K; the other conditions by release: :mod:`oomkit.estimate.vllm_v0_chunked`.
    ``awq_split_k=True``: vLLM before PR #2566 ran every AWQ linear through ``awq_gemm`` and its
    8 split-K output copies (:mod:`oomkit.estimate.vllm_awq`).
    ``nvls_nccl``: the NCCL release whose NVLS buffers a TP > 2 group on an NVSwitch node holds
    (``"2.20"`` for vLLM 0.5.0-0.6.3, :mod:`oomkit.estimate.vllm_nvls`); None: not modelled.
    ``pp_rank``: the pipeline stage (``settings.pp`` stages, :mod:`oomkit.estimate.pipeline`):
    its layers' weights and KV, the embeddings on the first stage, the LM head and the sampler
    on the last. ``charge_graphs``: the CUDA-graph estimate is (not) subtracted from the KV budget
    whatever the engine's default (:func:`~oomkit.estimate.vllm_engines.graph_estimate_charged`).
    """
    eng = vllm_engine(engine)
    charged = eng.charges_cudagraphs if charge_graphs is None else charge_graphs
    tp = settings.tp or 1
    if tp < 1:
        raise InvalidSettingError(f"--tp must be at least 1, got {tp}", setting="tp")
    notes: list[str] = []
    cap = device.capacity_bytes
    util = settings.gpu_memory_utilization or eng.default_util
    max_len = settings.ctx or spec.max_position_embeddings or 8192
    if eng.chunked_prefill:
        seqs, batched = engine_batch_defaults(eng, device, llm_class=bool(settings.llm_class))
        seqs, batched = settings.max_num_seqs or seqs, settings.max_num_batched_tokens or batched
    else:
        seqs = settings.max_num_seqs or 256
        batched, why_whole = v0_batched_tokens(
            spec, settings, max_len, backend=device.backend, multimodal=v0_multimodal_chunked
        )
        notes.extend(why_whole)
    if settings.max_num_seqs and settings.max_num_batched_tokens and batched < seqs:
        # SchedulerConfig._verify_args (vllm/config/scheduler.py): a token per running sequence
        raise InvalidSettingError(
            f"max_num_batched_tokens {batched} is below 'max_num_seqs' ({seqs}): vLLM refuses "
            "it (each running sequence needs a token of the step's budget); raise "
            "max_num_batched_tokens or lower 'max_num_seqs'",
            setting="max_num_batched_tokens",
            value=batched,
        )
    block = settings.block_size or 16
    elem = dtype_bytes(spec.torch_dtype or "bf16")
    if (settings.quant or "").strip().lower() in ("fp32", "float32", "f32"):
        # --dtype float32 (--quant fp32): ModelConfig.dtype is float32, so are the activations
        # and, with --kv-cache-dtype auto, the KV cache (_get_and_verify_dtype)
        elem = 4
    elif elem == 4:
        elem = 2
        notes.append("fp32 checkpoint served in fp16/bf16 (vLLM downcasts float32 by default)")
    pp = settings.pp or 1
    stage = stage_layers(spec.num_hidden_layers, pp_rank, pp)
    last_stage = pp_rank == pp - 1
    tensors = stage_tensors(model_tensors(spec), pp_rank, pp, spec.num_hidden_layers)
    weights = plan_weights(spec, tensors, quant=settings.quant, tp=tp)
    notes.extend(weights.assumptions)
    # get_rope(): one cached RotaryEmbedding shared by all layers (rope_cache)
    rope = rope_cache_bytes(spec, max_len, elem)
    # vLLM maybe_offload_to_cpu (models/utils.py) stops when no parameter is left to move
    offload = min(settings.cpu_offload_bytes or 0, weights.bytes_per_rank)
    w = weights.bytes_per_rank - offload
    extra, why = mxfp4_weights_extra(
        spec, settings.quant, device, hopper=mxfp4_hopper, layers=stage, tp=tp
    )
    w += extra
    notes.extend(why)
    vision_w = 0
    if spec.vision_tower is not None and pp_rank == 0:
        # the vision encoder + projector, in the model dtype and TP-sharded like the text
        # (vllm#9630: "Loading model weights took 19.8557 GB" for Llama 3.2 11B Vision)
        vision_w = spec.multimodal_params * elem // tp
        w += vision_w
        notes.append("vision encoder + projector weights counted (model dtype)")
        if spec.vision_tower.kind == "mllama":
            notes.append("Mllama cross-attention layers: vLLM caches the image tokens in their KV")
    rows = min(seqs, batched)
    fwd = forward_peak_bytes(spec, tokens=batched, elem_bytes=elem, tp=tp).n_bytes
    quant = (settings.quant or (spec.quantization.method if spec.quantization else "")).lower()
    if awq_split_k and quant == "awq":
        fwd += awq_split_k_bytes(spec, tokens=batched, tp=tp)
        notes.append(
            "AWQ before vLLM PR #2566: awq_gemm holds 8 split-K fp16 copies of its output "
            "(profile batch through the widest AWQ linear)"
        )
    hidden = (batched + rows) * spec.hidden_size * elem  # all hidden states + the sampled rows
    sampler, sort_sampler, why_sampler = sampler_peaks(
        spec, eng, rows=rows, tp=tp, elem_bytes=elem, hidden_bytes=hidden
    )
    if settings.pooling:  # profile_run: _dummy_pooler_run, not _dummy_sampler_run (0.25.1 l. 6354)
        why_sampler = (
            f"--pooling: the profile run pools hidden states ({format_bytes(hidden)}) instead of "
            f"sampling ({format_bytes(sampler)} of logits/sampler peak), and no per-request "
            "sampler headroom is held (vLLM gpu_model_runner _dummy_pooler_run)"
        )
        sampler, sort_sampler = hidden, 0
    notes.extend([why_sampler] if why_sampler else [])
    act = max(fwd, sampler) if last_stage else fwd  # only the last stage samples
    # 0.9.1-0.11.0 without FlashInfer: the sort path's larger peak (verdict band)
    sort_extra = max(0, max(fwd, sort_sampler) - act) if last_stage and sort_sampler else 0
    vision, act, why = vision_profile(
        spec, act, fwd, max_num_seqs=seqs, engine=eng.name, elem_bytes=elem, pp_rank=pp_rank
    )
    notes.extend(why)
    pinned = 0
    if eng.reserved_peak and tp > 1 and nccl_record_stream:
        # o_proj and down_proj all-reduce per layer + the vocab-parallel embedding
        pinned = (2 * len(stage) + 1) * batched * spec.hidden_size * elem
        notes.append(
            "TP all-reduce inputs held by record_stream until the NCCL stream syncs "
            "(upper bound: the CPU runs ahead of the whole profile forward)"
        )
    if settings.overhead_bytes is not None:
        non_torch, nt_why = settings.overhead_bytes, "--overhead (user value)"
    else:
        non_torch, nt_why = non_torch_bytes(eng, device, tp)
        nvls = nvls_buffer_bytes(device, tp, nvls_nccl)
        if nvls:
            non_torch += nvls
            nt_why += f"; + NCCL {nvls_nccl} NVLS buffers of 2 communicators x {tp} GPUs"
            notes.append(
                f"NCCL {nvls_nccl} NVLink SHARP buffers: {nvls / GiB:.2f} GiB per GPU for the "
                f"TP-{tp} group's two communicators (charged to the KV budget)"
            )
    graphs = 0
    if not settings.enforce_eager:  # what this generation captures (vllm_cudagraph)
        graphs, _ = cudagraph_bytes(
            spec,
            eng.name,
            layers=len(stage),
            max_num_seqs=seqs,
            max_num_batched_tokens=batched,
            elem_bytes=elem,
            tp=tp,
            hip=device.backend == "rocm",
        )
    lora = settings_lora_plan(
        spec, settings, eng.name, stage, pp_rank == 0, elem, batched, seqs, tp
    )
    if lora is not None:  # loaded in load_model; the shrink buffer in the profile forward
        w, fwd, graphs = w + lora.load_bytes, fwd + lora.profile_bytes, graphs * lora.graph_sets
        act = max(act, fwd)
        notes.extend(lora.notes)
    served = 0
    if last_stage and not eng.name.startswith("v0") and not settings.pooling:  # V1: every TP rank
        per = sampler_bytes_per_entry(
            rows, flashinfer=sampler_path(eng).flashinfer, triton=eng.triton_sampler
        )
        asked = request_sampler_extra_bytes(spec, rows=rows, profiled_per_entry=per)
        served = max(0, sampler + asked - act)
    kv_elem = kv_elem_bytes(settings.cache_type_k, elem)
    kv_spec = spec
    if spec.mla is not None and not mla_latent_kv:
        kv_spec = dataclasses.replace(
            spec,
            mla=None,
            num_key_value_heads=spec.num_attention_heads,
            kv_heads_per_layer=None,
            head_dim=256,
            v_head_dim=256,
        )
        notes.append("DeepSeek MLA cached as full 256-dim K/V heads (vLLM before 0.7.1)")
    layers = kv_layers(kv_spec, kv_elem_bytes=kv_elem, state_elem_bytes=elem, tp=tp)
    if chunked_attention_size(spec) is not None:  # Llama 4: ChunkedLocalAttentionSpec
        layers = tuple(
            dataclasses.replace(lay, chunked=True) if lay.kind == "sliding" else lay
            for lay in layers
        )
    if pp > 1:
        layers = tuple(lay for lay in layers if lay.layer in stage)
    draft = draft_terms(
        spec,
        settings,
        target_weights_bytes=weights.bytes_per_rank,
        target_layers=layers,
        tp=tp,
        kv_elem=kv_elem,
        elem=elem,
    )
    rejection = 0
    if draft is not None:  # loaded with the target, sharing its block budget (speculative_vllm)
        fold = fold_draft(
            spec,
            draft,
            engine=eng.name,
            weights_bytes=w,
            layers=layers,
            stage_layers=len(stage),
            cudagraph_bytes_=graphs,
            graph_sets=lora.graph_sets if lora is not None else 1,
            capture_graphs=not settings.enforce_eager,
            max_num_seqs=seqs,
            max_num_batched_tokens=batched,
            elem_bytes=elem,
            tp=tp,
            hip=device.backend == "rocm",
            samples=last_stage and not settings.pooling,
            rows=rows,
            sampler_bytes=sampler,
            activation_bytes=act,
        )
        w, layers, graphs = fold.weights_bytes, fold.layers, fold.cudagraph_bytes
        act, rejection = fold.activation_bytes, fold.rejection_sampler_bytes
        notes.extend(fold.notes)
    per_tok = kv_bytes_per_token(layers)
    pool = fits_len = None
    conc = None
    b: KvBlocks | None = None
    if cap is not None:
        budget = ceil(cap * util) if eng.ceil_budget else int(cap * util)
        pool = budget - w - rope - act - pinned - non_torch
        if charged:
            pool -= graphs
        b = kv_blocks(layers, pool, block=block, max_len=max_len, batched=batched, eng=eng)
        if b is not None:
            conc = b.num_blocks / max(1, b.blocks_per_request)
        search_len, cap_note = vllm_len_cap(spec, max_len)
        fits_len = max_len_that_fits(layers, max(0, pool), search_len, block, eng, batched)
        if cap_note is not None and fits_len == search_len:
            notes.append(cap_note)
    if any(lay.kind == "sliding" for lay in layers) and not eng.hybrid_kv_groups:
        notes.append(
            "sliding-window layers counted at full size (V0 allocates every layer alike)"
            if eng.name.startswith("v0")
            else "sliding-window layers' blocks counted at full size (vLLM before 0.9.1 turns "
            "them into full-attention specs, unify_hybrid_kv_cache_specs; its start-up check "
            "still counts them at the window)"
        )
    if any(lay.kind == "recurrent" for lay in layers):
        notes.append(
            "recurrent (Mamba/linear-attention) state: vLLM pads attention pages to the state "
            "page size; blocks here count attention layers only"
        )
    return VllmPlan(
        engine=eng.name,
        tp=tp,
        util=util,
        max_model_len=max_len,
        max_num_seqs=seqs,
        max_num_batched_tokens=batched,
        block_size=block,
        kv_elem_bytes=kv_elem,
        weights_bytes=w,
        cpu_offload_bytes=offload,
        rope_cache_bytes=rope,
        activation_bytes=act,
        forward_bytes=fwd,
        sampler_bytes=sampler,
        sampler_sort_extra_bytes=sort_extra,
        sampler_request_extra_bytes=served,
        vision_bytes=vision,
        vision_images=vision_images(spec, max_num_seqs=seqs, engine=eng.name) if vision else 0,
        mxfp4_extra_bytes=extra,
        mxfp4_backend=(mxfp4_backend(device, hopper=mxfp4_hopper) or "") if extra else "",
        vision_weights_bytes=vision_w,
        pinned_allreduce_bytes=pinned,
        non_torch_bytes=non_torch,
        non_torch_why=nt_why,
        cudagraph_bytes=graphs,
        cudagraph_charged=charged,
        charges_other_processes=eng.charges_other_processes,
        other_processes_fix=eng.other_processes_fix,
        default_util=eng.default_util,
        kv_pool_bytes=pool,
        bytes_per_token=per_tok,
        kv_groups=1 if b is None else b.groups,
        num_gpu_blocks=None if b is None else b.num_blocks,
        kv_cache_tokens=None if b is None else b.tokens,
        max_concurrency=conc,
        max_model_len_that_fits=fits_len,
        layers=layers,
        notes=tuple(notes),
        lora=lora,
        speculative=draft,
        rejection_sampler_bytes=rejection,
    )


def estimate_vllm(
    spec: ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    *,
    engine: str = DEFAULT_ENGINE,
) -> Estimate:
    """Memory per rank for ``vllm serve`` (see module docstring; ``engine`` as in plan_vllm).

    ``settings.runtime_version`` (a vLLM release or a date) picks the engine generation through
    :func:`oomkit.estimate.generations.resolve_generation` when ``engine`` is the default.
    """
    rules = release_rules(spec, settings, hardware, engine)
    settings, engine = rules.settings, rules.engine
    support_notes, engine_switch = rules.support_notes, rules.engine_switch
    tp = settings.tp or 1
    pp = settings.pp or 1
    devices = hardware.devices or (DeviceTarget(name="GPU (capacity unknown)"),)
    # rank r = pp_rank x tp + tp_rank, as vLLM lays out its world
    targets = [devices[i] if i < len(devices) else devices[0] for i in range(tp * pp)]
    plans = [rules.plan(spec, d, pp_rank=rank // tp) for rank, d in enumerate(targets)]
    usages = []
    src = "vllm/v1/worker/gpu_worker.py determine_available_memory"
    for rank, (d, p) in enumerate(zip(targets, plans, strict=True)):
        kv_need = kv_bytes(p.layers, seq_len=p.max_model_len)
        kv = p.kv_pool_bytes if p.kv_pool_bytes is not None and p.kv_pool_bytes > 0 else kv_need
        comps = rank_components(spec, p, kv, src)
        usages.append(
            DeviceUsage(
                device=device_label(d, rank), components=comps, capacity_bytes=d.capacity_bytes
            )
        )
    p0 = plans[0]
    details: dict[str, object] = {
        "max_model_len": p0.max_model_len,
        "max_num_seqs": p0.max_num_seqs,
        "max_num_batched_tokens": p0.max_num_batched_tokens,
        "block_size": p0.block_size,
        "kv_bytes_per_token_per_rank": p0.bytes_per_token,
        "num_gpu_blocks": p0.num_gpu_blocks,
        "kv_cache_tokens": p0.kv_cache_tokens,
        "max_concurrency": None if p0.max_concurrency is None else round(p0.max_concurrency, 2),
        "max_model_len_that_fits": p0.max_model_len_that_fits,
        "weights_bytes_per_rank": p0.weights_bytes + p0.rope_cache_bytes,
        "activation_peak_bytes": p0.activation_bytes + p0.pinned_allreduce_bytes,
        "non_torch_bytes": p0.non_torch_bytes,
        "cudagraph_bytes": p0.cudagraph_bytes,
        "cudagraph_charged": p0.cudagraph_charged,
        "charges_other_processes": p0.charges_other_processes,
        "other_processes_fix": p0.other_processes_fix,
        "default_util": p0.default_util,
        "kv_cache_groups": p0.kv_groups,
        "engine": p0.engine,
        "available_kv_cache_bytes": p0.kv_pool_bytes,
    }
    if rules.model_runner_v2:  # 0.22-0.28: V2's estimate is 0; the V1 runner measures it
        details["model_runner_v2"] = True
        details["graph_estimate_env"] = "VLLM_USE_V2_MODEL_RUNNER=0"
    elif rules.profiles_graphs and not p0.cudagraph_charged:  # 0.18-0.19, or ...=0 from 0.20
        details["graph_estimate_env"] = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"
    if rules.compiled_pooling:  # 0.25+: the compiled pooling profile (vllm_compiled_pooling)
        details[COMPILED_POOLING] = True
        support_notes = (*support_notes, COMPILED_POOLING_NOTE)
    if p0.lora is not None:
        details.update(lora_details(p0.lora))
    sort_extra = max(p.sampler_sort_extra_bytes for p in plans)
    if sort_extra:  # 0.9.1-0.11.0: the sort sampler where FlashInfer is not installed
        details["sampler_sort_extra_bytes"] = sort_extra
    served = {
        device_label(d, r): p.sampler_request_extra_bytes
        for r, (d, p) in enumerate(zip(targets, plans, strict=True))
        if p.sampler_request_extra_bytes
    }
    if served:  # V1: penalties / log-probs the profile never samples (vllm_penalties)
        details["sampler_request_bytes"] = served
    if engine_switch is not None:
        details["engine_switch"] = engine_switch
    notes = [*support_notes, *p0.notes]
    if settings.prompt_logprobs:
        from oomkit.estimate.vllm_logprobs import NOTE, prompt_logprobs_details

        details.update(
            prompt_logprobs_details(
                spec,
                engine=p0.engine,
                max_num_batched_tokens=p0.max_num_batched_tokens,
                max_model_len=p0.max_model_len,
                tp=p0.tp,
                labels=[device_label(d, r) for r, d in enumerate(targets)],
            )
        )
        notes.append(NOTE.format(rows=details["prompt_logprobs_rows"]))
    if pp > 1:
        notes.append(
            f"pipeline parallel {pp} stages x tp {tp}: layers "
            + stage_spans(spec.num_hidden_layers, pp)
            + " (vLLM get_pp_indices); embeddings on the first stage, LM head and sampler on "
            "the last"
        )
    # every stage must hold its own KV for max_model_len (the engine keeps the least blocks)
    worst = min(
        plans,
        key=lambda p: (
            -1 if p.kv_pool_bytes is None else p.kv_pool_bytes,
            p.max_model_len_that_fits or 0,
        ),
    )
    fits_len = min(
        (p.max_model_len_that_fits for p in plans if p.max_model_len_that_fits is not None),
        default=None,
    )
    details["max_model_len_that_fits"] = fits_len
    # the start-up check (v1/core/kv_cache_utils.py check_enough_kv_cache_memory): the pool
    # must hold one max_model_len request as vLLM counts it (request_bytes: sliding-window
    # layers at window - 1 + max_num_batched_tokens tokens plus a block). The tightest rank's
    # headroom, in bytes
    room = [
        p.kv_pool_bytes
        - request_bytes(
            p.layers,
            p.max_model_len,
            block=p.block_size,
            batched=p.max_num_batched_tokens,
            eng=vllm_engine(p.engine),
        )
        for p in plans
        if p.kv_pool_bytes is not None
    ]
    details["kv_pool_headroom_bytes"] = min(room) if room else None
    # vLLM gives every worker the smallest block count of all (unify_kv_cache_configs): with
    # pipeline stages or unequal GPUs the pool figures are the tightest rank's
    known = [p for p in plans if p.num_gpu_blocks is not None]
    if known:
        least = min(known, key=lambda p: p.num_gpu_blocks or 0)
        details["num_gpu_blocks"] = least.num_gpu_blocks
        details["kv_cache_tokens"] = least.kv_cache_tokens
        details["max_concurrency"] = (
            None if least.max_concurrency is None else round(least.max_concurrency, 2)
        )
    eng0 = vllm_engine(p0.engine)
    held = details.get("kv_cache_tokens")
    if (
        not eng0.name.startswith("v0")
        and not eng0.hybrid_kv_groups
        and any(lay.kind == "sliding" and not lay.chunked for lay in p0.layers)
        and isinstance(held, int)
        and held < p0.max_model_len
    ):
        # vLLM 0.8-0.9.0: check_enough_kv_cache_memory passes on the sliding layers' window,
        # then unify_hybrid_kv_cache_specs allocates them at full length: it starts with a pool
        # that holds fewer tokens than one max_model_len request (a cap, not a start-up death)
        details["pool_below_request"] = held
    blockers: list[str] = []
    if worst.kv_pool_bytes is not None and worst.kv_pool_bytes <= 0:
        blockers.append(
            "no memory left for the KV cache: vLLM fails with 'No available memory for "
            "the cache blocks'"
        )
    elif fits_len is not None and fits_len < p0.max_model_len and not rules.len_check:
        details["kv_len_check"] = False  # PR #2163 (0.2.7): before it a longer request hangs
        notes.append(
            f"vLLM {settings.runtime_version} does not check max_model_len against the KV "
            f"cache at start-up (PR #2163, 0.2.7): it serves, but a request longer than "
            f"{fits_len} tokens hangs"
        )
    elif fits_len is not None and fits_len < p0.max_model_len:
        blockers.append(
            f"max_model_len {p0.max_model_len} needs more KV than the pool holds; vLLM "
            f"refuses to start (largest that fits: {fits_len})"
        )
    mamba_blocks = (
        mamba_cache_blocks(spec, worst.layers, worst.kv_pool_bytes, tp=worst.tp)
        if eng0.name in MAMBA_SEQS_CHECK_ENGINES
        and not settings.enforce_eager
        and worst.kv_pool_bytes is not None
        and worst.kv_pool_bytes > 0
        else None
    )
    # 0.18+: profile_cudagraph_memory's own KV cache, allocated before the budget exists (it
    # dies before the Mamba-blocks check runs, so it is named first)
    profile_kv = (
        None
        if settings.enforce_eager or not rules.profiles_graphs or rules.model_runner_v2
        else profile_kv_check(spec, settings, targets, plans)
    )
    if profile_kv is not None:
        details["profile_kv_cache_bytes"] = profile_kv[0]
        if profile_kv[1] is not None:
            blockers.append(profile_kv[1])
    if mamba_blocks is not None:
        details["mamba_cache_blocks"] = mamba_blocks
        if p0.max_num_seqs > mamba_blocks:
            blockers.append(mamba_seqs_blocker(p0.max_num_seqs, mamba_blocks))
    return Estimate(
        model=model_info(spec),
        runtime="vllm",
        settings=estimate_settings(settings, p0, pp, weights_format(spec, settings.quant)),
        devices=tuple(usages),
        host=host_usage(settings, plans),
        runtime_details=details,
        assumptions=tuple(notes),
        blockers=tuple(blockers),
    )

"""llama.cpp memory estimate: model, KV/RS, compute and output buffers per device, plus context.

The engine under llama-server/llama-cli, Ollama, LM Studio, koboldcpp and llama-cpp-python. Each
buffer is modelled the way llama.cpp allocates it (late 2025 builds):

* weights: :mod:`oomkit.estimate.llamacpp_placement` (``llama_model::load_tensors``);
* KV/RS cache: :mod:`oomkit.estimate.llamacpp_kv` (``llama_kv_cache``, iSWA, recurrent);
* compute: :mod:`oomkit.estimate.llamacpp_compute` rebuilds the reserve graph and runs ggml-alloc's
  allocator (:mod:`oomkit.estimate.llamacpp_galloc`);
* output: ``llama_context::output_reserve`` (logits ``n_vocab x n_outputs_max`` f32 on the host);
* the per-GPU context overhead from :mod:`oomkit.estimate.overhead` (user override:
  ``settings.overhead_bytes``).

``runtime_details["buffers"]`` lists what llama.cpp itself would log per buffer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from oomkit._gcpause import gc_paused
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate, InputValue, ModelInfo
from oomkit.estimate.llamacpp_buffers import compute_buffers
from oomkit.estimate.llamacpp_components import (
    _compute_component,
    _kv_components,
    _weights_component,
)
from oomkit.estimate.llamacpp_compute import (
    GraphShape,
    graph_shape,
    output_buffer_bytes,
)
from oomkit.estimate.llamacpp_kv import KvPlan, plan_kv
from oomkit.estimate.llamacpp_maxalloc import device_blockers
from oomkit.estimate.llamacpp_metal import metal_blockers, metal_scratch_compute
from oomkit.estimate.llamacpp_outputs import server_outputs
from oomkit.estimate.llamacpp_params import (
    LlamaCppOptions,
    LlamaCppParams,
    resolve_llamacpp_params,
)
from oomkit.estimate.llamacpp_placement import (
    Placement,
    backend_buffer_prefix,
    moved_expert_kinds,
    place_weights,
    row_shares,
)
from oomkit.estimate.llamacpp_pool import attn_pool_growth, pool_component, pool_notes
from oomkit.estimate.llamacpp_sycl import sycl_kq_on_cpu_compute
from oomkit.estimate.llamacpp_unified import with_unified_ram_blocker
from oomkit.estimate.llamacpp_weights import _rows_summary, priced_ftype, weight_tensors
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.quant.llamacpp_ftypes import ftype_case
from oomkit.spec.hardware import DeviceTarget, Hardware, device_label
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING, ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "SWA_ARCHS",
    "LlamaCppBreakdown",
    "estimate_llamacpp",
    "estimate_llamacpp_breakdown",
    "gguf_arch",
    "llamacpp_view",
    "weight_tensors",
]

SRC_OUTPUT = "llama.cpp src/llama-context.cpp llama_context::output_reserve"

#: HF model_type -> GGUF general.architecture where they differ
_GGUF_ARCH: Mapping[str, str] = {
    "mistral": "llama",
    "mixtral": "llama",
    "qwen3_moe": "qwen3moe",
    "qwen2_moe": "qwen2moe",
    "qwen3_next": "qwen3next",
    # llama.cpp llama-arch.cpp LLM_ARCH_QWEN35 "qwen35", LLM_ARCH_QWEN35MOE "qwen35moe"
    "qwen3_5": "qwen35",
    "qwen3_5_text": "qwen35",
    "qwen3_5_moe": "qwen35moe",
    "qwen3_5_moe_text": "qwen35moe",
    "deepseek_v2": "deepseek2",
    "deepseek_v3": "deepseek2",
    "kimi_k2": "deepseek2",
    "gemma3_text": "gemma3",
    "gemma4_text": "gemma4",
    "gpt_oss": "gpt-oss",
    "phi3": "phi3",
    "granitemoehybrid": "granitehybrid",
    "gpt_neox": "gptneox",
    "falcon_h1": "falcon-h1",
}


#: architectures whose llama.cpp graph implements sliding-window attention (hparams.swa_type set
#: in llama_model::load_hparams); others get a full cache for every layer (llama.cpp logs e.g.
#: "Phi SWA is currently disabled"; Mistral-7B-v0.1's window is ignored by the llama arch)
SWA_ARCHS: frozenset[str] = frozenset(
    {
        "gemma2",
        "gemma3",
        "gemma3_text",
        "gemma3n",
        # src/models/gemma4-iswa.cpp: build_attn_inp_kv_iswa (5 sliding : 1 full, n_swa 1024)
        "gemma4",
        "gemma4_text",
        "cohere2",
        "gpt_oss",
        "llama4",
        "llama4_text",
        "exaone4",
        "smallthinker",
        "olmo2",  # OLMo 3's GGUF arch: LLM_ARCH_OLMO2 + window -> set_swa_pattern(4) (gguf_spec)
        "olmo3",
    }
)


def llamacpp_view(spec: ModelSpec) -> ModelSpec:
    """The spec as llama.cpp sees it: sliding layers become full where SWA is not implemented."""
    if LAYER_SLIDING in spec.layer_types and spec.model_type not in SWA_ARCHS:
        full = tuple(LAYER_FULL if t == LAYER_SLIDING else t for t in spec.layer_types)
        return dataclasses.replace(spec, layer_types=full, sliding_window=None)
    return spec


def gguf_arch(spec: ModelSpec) -> str:
    """GGUF ``general.architecture`` for a spec (llama-arch.cpp LLM_ARCH_NAMES)."""
    return _GGUF_ARCH.get(spec.model_type, spec.model_type)


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaCppBreakdown:
    """Everything the estimate was built from (for tests and the oracle)."""

    params: LlamaCppParams
    placement: Placement
    kv: KvPlan
    shape: GraphShape
    compute: dict[str, int]  # buffer name -> bytes
    output_bytes: int
    weights_source: str


def _gpus(hardware: Hardware) -> tuple[DeviceTarget, ...]:
    return tuple(d for d in hardware.devices if d.backend != "cpu")


def _dev_name(dev: DeviceTarget, index: int) -> str:
    return device_label(dev, index)


@gc_paused
def estimate_llamacpp(
    spec: ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    *,
    options: LlamaCppOptions | None = None,
    default_swa_full: bool = False,
    runtime_name: str = "llama.cpp",
    vision_note: bool = True,
) -> Estimate:
    """Per-device memory of running ``spec`` in llama.cpp with ``settings`` on ``hardware``.

    ``vision_note``: say that a vision tower is not counted (:mod:`oomkit.estimate.gguf_vision`;
    Ollama, which counts its projector, passes False)."""
    est = _estimate(spec, settings, hardware, options, default_swa_full, runtime_name)[0]
    seq, train = est.runtime_details.get("n_ctx_seq"), spec.max_position_embeddings
    if runtime_name == "llama.cpp" and isinstance(seq, int) and train and seq > train:
        # llama_context warns and allocates every cell; llama-server then caps each slot
        est = dataclasses.replace(
            est,
            assumptions=(
                *est.assumptions,
                f"n_ctx_seq {seq} > the model's trained context {train}: llama.cpp allocates "
                "the cells ('possible training context overflow'); recent llama-server builds "
                f"cap each slot at {train} ('the slot context ... exceeds the training context "
                "of the model - capping'), so the cells above it are never used",
            ),
        )
    if vision_note and spec.multimodal_params:
        from oomkit.estimate.gguf_vision import gguf_vision

        est = gguf_vision(spec, est, "llama.cpp")
    return est


def estimate_llamacpp_breakdown(
    spec: ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    *,
    options: LlamaCppOptions | None = None,
) -> tuple[Estimate, LlamaCppBreakdown]:
    """:func:`estimate_llamacpp` and the breakdown behind it (placement, KV plan)."""
    return _estimate(spec, settings, hardware, options, False, "llama.cpp")


def _estimate(
    spec: ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    options: LlamaCppOptions | None,
    default_swa_full: bool,
    runtime_name: str,
) -> tuple[Estimate, LlamaCppBreakdown]:
    gpus = _gpus(hardware)
    spec = llamacpp_view(spec)
    n_layer = spec.num_hidden_layers
    if settings.runtime_version is not None:
        from oomkit.estimate.generations import llamacpp_options

        gen_opts = llamacpp_options(settings.runtime_version, options)
        assert gen_opts is None or isinstance(gen_opts, LlamaCppOptions)
        options = gen_opts
    params = resolve_llamacpp_params(
        settings,
        n_layer=n_layer,
        has_gpu=bool(gpus),
        default_swa_full=default_swa_full,
        options=options,
    )
    params = server_outputs(settings, params)  # llama-server's -np output rows (PR #23861)
    split_notes: list[str] = []
    if (
        not params.options.sched_staging
        and len(gpus) > 1
        and settings.split_mode in (None, "layer")
    ):
        # Before PR #4766 (2024-01-12) there was no layer split: llm_load_tensors gave every
        # offloaded matrix llama_backend_offload_split = GGML_BACKEND_GPU_SPLIT (rows over the
        # GPUs by tensor_split) and llama_kv_cache_init put each offloaded layer's K/V on the
        # main GPU (ggml_cuda_assign_buffers_no_scratch): llama.cpp of llama-cpp-python
        # 0.2.24, vendor/llama.cpp/llama.cpp lines 3015-3025 and 1607-1614
        settings = dataclasses.replace(settings, split_mode="row")
        split_notes.append(
            "several GPUs before PR #4766: matrices split by rows over the GPUs, the KV cache "
            "and the compute scratch on the main GPU (the build had no layer split)"
        )
    if (
        spec.mla is not None
        and params.options.mla_cache
        and params.options.mla_kv_types_equal
        and params.type_k != params.type_v
    ):
        # llama_init_from_model since PR #25871 (July 2026): is_mla() models keep V as a view
        # of K. Older builds accepted the pair: separate K and V tensors of their own types
        # until PR #19067, then K only (-ctv set nothing); see plan_kv
        raise InvalidSettingError(
            f"Different K and V cache types for '{spec.name}' (K {params.type_k.lower()}, "
            f"V {params.type_v.lower()}): llama.cpp refuses them for MLA models since PR "
            "#25871 (July 2026: 'model does not support different K and V cache types'). "
            "Use one --kv-dtype for both, or give the --runtime-version of an older build.",
            setting="cache_type_v",
            value=params.type_v.lower(),
        )
    rows, w_source, w_notes = weight_tensors(
        spec, settings.quant, params.options.q2k_mix, params.options.moe_mix
    )
    names = [backend_buffer_prefix(g, i) for i, g in enumerate(gpus)]
    if settings.split_mode == "none" and gpus:
        gpus = gpus[:1]
        names = names[:1]
    placement = place_weights(
        rows,
        n_layer=n_layer,
        params=params,
        gpus=gpus,
        tensor_split=settings.tensor_split,
        n_cpu_moe=settings.n_cpu_moe or 0,
        tied_embeddings=_rows_summary(rows)[0],
        split_mode=settings.split_mode or "layer",
        row_split=row_shares(settings.tensor_split, settings.device_ordinals, len(gpus)),
        cpu_expert_kinds=moved_expert_kinds(settings.override_tensor),
    )
    kv = plan_kv(spec, params)
    sh = graph_shape(params, kv)
    compute, compute_where, c_notes = compute_buffers(
        spec, params, sh, placement, gpus, names, settings.split_mode or "layer"
    )
    c_notes = [*split_notes, *c_notes]
    if params.options.metal_scratch:  # builds before PR #2325 (2023-07-22)
        compute, m_notes = metal_scratch_compute(n_layer, gpus, names, compute)
        c_notes = [*c_notes, *m_notes]
    if params.options.sycl_kq_on_cpu:  # b4069-b4126 (PR #10257 until PR #10385)
        compute, s_notes = sycl_kq_on_cpu_compute(
            spec, sh, placement.layer_device, gpus, names, compute, compute_where
        )
        c_notes = [*c_notes, *s_notes]
    n_out = params.options.n_outputs_max or params.n_seq_max
    out_bytes = output_buffer_bytes(spec, n_out)
    host_buf = "CPU"
    if gpus and not all(g.unified_memory for g in gpus):
        host_buf = f"{names[0].rstrip('0123456789')}_Host"
    # --- KV per device: each layer's cache lives with the layer (offload_kqv)
    kv_by_dev: dict[str, int] = {}
    rs_by_dev: dict[str, int] = {}
    for row in kv.layers:
        dev = placement.layer_device[row.layer]
        target = rs_by_dev if row.cache == "rs" else kv_by_dev
        target[dev] = target.get(dev, 0) + row.n_bytes
    # --- assemble devices
    devices: list[DeviceUsage] = []
    details: dict[str, dict[str, InputValue]] = {}
    all_devs = [(_dev_name(g, i), g, names[i]) for i, g in enumerate(gpus)]
    pool_growth: dict[str, int] = {}  # legacy-pool growth of the batched attention GEMM
    for dev, g, bname in all_devs:
        comps: list[Component] = []
        wb = placement.device_bytes(dev)
        comps.append(_weights_component(wb, dev, placement, w_source))
        comps += _kv_components(kv, params, dev, kv_by_dev.get(dev, 0), rs_by_dev.get(dev, 0))
        cb = sum(b for n, b in compute.items() if compute_where[n] == dev)
        comps.append(_compute_component(cb, sh, params, spec))
        pool = pool_component(placement, dev, g, params, spec)
        if pool is not None:
            comps.append(pool)
        if growth := attn_pool_growth(placement, dev, g, params, spec):
            pool_growth[dev] = growth
        if settings.overhead_bytes is not None:
            ob, why = settings.overhead_bytes, "user-given overhead per GPU (--overhead)"
        else:
            ob, why = cuda_context_bytes(runtime_name, g)
        comps.append(
            Component(
                category="overhead",
                label=f"{g.backend} context",
                n_bytes=ob,
                formula="per-process context on each GPU (not in any llama.cpp buffer log)",
                inputs={"backend": g.backend, "architecture": g.architecture},
                source=why,
            )
        )
        devices.append(
            DeviceUsage(device=dev, components=tuple(comps), capacity_bytes=g.capacity_bytes)
        )
        details[dev] = {
            "buffer": bname,
            "n_ctx": params.n_ctx,
            "model_buffer_bytes": wb,
            "kv_buffer_bytes": kv_by_dev.get(dev, 0),
            "rs_buffer_bytes": rs_by_dev.get(dev, 0),
            "compute_buffer_bytes": cb,
            "output_buffer_bytes": 0,
        }
    host_comps: list[Component] = []
    hw = placement.device_bytes("cpu")
    host_comps.append(
        _weights_component(placement.resident_bytes("cpu"), "cpu", placement, w_source)
    )
    host_comps += _kv_components(
        kv, params, "cpu", kv_by_dev.get("cpu", 0), rs_by_dev.get("cpu", 0)
    )
    hc = sum(b for n, b in compute.items() if compute_where[n] == "cpu")
    host_comps.append(_compute_component(hc, sh, params, spec))
    host_comps.append(
        Component(
            category="activations",
            label="output buffer (logits)",
            n_bytes=out_bytes,
            formula="n_vocab * n_outputs_max * 4 (f32 logits)",
            inputs={"n_vocab": spec.vocab_size, "n_outputs_max": n_out},
            source=SRC_OUTPUT,
        )
    )
    host = DeviceUsage(
        device="cpu", components=tuple(host_comps), capacity_bytes=hardware.host_ram_bytes
    )
    details["cpu"] = {
        "buffer": "CPU",
        "n_ctx": params.n_ctx,
        "model_buffer_bytes": hw,
        "kv_buffer_bytes": kv_by_dev.get("cpu", 0),
        "rs_buffer_bytes": rs_by_dev.get("cpu", 0),
        "compute_buffer_bytes": hc,
        "output_buffer_bytes": out_bytes,
    }
    buffers: dict[str, dict[str, int]] = {
        "model": dict(placement.buffers),
        "kv": {_buf_for(d, all_devs): b for d, b in kv_by_dev.items()},
        "rs": {_buf_for(d, all_devs): b for d, b in rs_by_dev.items()},
        "compute": dict(compute),
        "output": {host_buf: out_bytes},
    }
    assumptions = (
        *params.assumptions,
        *w_notes,
        *c_notes,
        *pool_notes(gpus, params),
        f"weights: {w_source}",
        f"n_ctx {params.n_ctx_requested} -> {params.n_ctx} cells "
        f"({'unified' if params.kv_unified else str(params.n_stream) + ' stream(s)'} KV cache; "
        "the llama.cpp generation modelled is named above)",
    )
    rd: dict[str, object] = {
        "n_ctx": params.n_ctx,
        "n_ctx_seq": params.n_ctx_seq,
        "n_seq_max": params.n_seq_max,
        "n_batch": params.n_batch,
        "n_ubatch": params.n_ubatch,
        "flash_attn": params.flash_attn,
        "type_k": params.type_k.lower(),
        "type_v": params.type_v.lower(),
        "n_gpu_layers": params.n_gpu_layers,
        "offloaded_layers": f"{placement.n_offloaded}/{n_layer + 1}",
        "swa_cells": kv.swa_cells,
        "caches": [
            {
                "label": c.label,
                "cells": c.cells,
                "layers": len(c.layers),
                "streams": c.n_stream,
                "k_bytes": c.k_bytes,
                "v_bytes": c.v_bytes,
            }
            for c in kv.caches
        ],
        "devices": details,
        "buffers": buffers,
        "weights_file_bytes": _rows_summary(rows)[1],
    }
    if pool_growth:  # read by the verdict's band (oomkit.estimate.verdict)
        rd["cuda_pool_growth_bytes"] = pool_growth
    est = Estimate(
        model=ModelInfo(
            name=spec.name,
            architecture=spec.architecture,
            params=spec.declared_params or _rows_summary(rows)[2],
            source=spec.source,
        ),
        runtime=runtime_name,
        settings=_settings_map(settings, params, priced_ftype(spec, w_source)),
        devices=tuple(devices),
        host=host,
        runtime_details=rd,
        assumptions=assumptions,
        blockers=tuple(
            device_blockers(spec, params, sh, placement, kv, gpus, names, compute)
            + metal_blockers(
                params.options.metal_views,
                (gpus, names, placement.layer_device),
                _rows_summary(rows)[1],
                kv_by_dev,
                compute,
                os=hardware.os,
            )
        ),
    )
    est = with_unified_ram_blocker(est, hardware, no_mmap=not params.mmap)  # Apple silicon
    bd = LlamaCppBreakdown(
        params=params,
        placement=placement,
        kv=kv,
        shape=sh,
        compute=compute,
        output_bytes=out_bytes,
        weights_source=w_source,
    )
    return est, bd


def _buf_for(dev: str, all_devs: Sequence[tuple[str, DeviceTarget, str]]) -> str:
    return next((b for d, _, b in all_devs if d == dev), "CPU")


def _settings_map(
    settings: InferenceSettings, params: LlamaCppParams, priced: str | None
) -> dict[str, InputValue]:
    return {
        "quant": ftype_case(settings.quant or priced),  # q4_k_m -> Q4_K_M; none given: priced
        "ctx": params.n_ctx_requested,
        "parallel": params.n_seq_max,
        "batch_size": params.n_batch,
        "ubatch": params.n_ubatch,
        "flash_attn": params.flash_attn,
        "cache_type_k": params.type_k.lower(),
        "cache_type_v": params.type_v.lower(),
        "kv_unified": params.kv_unified,
        "swa_full": params.swa_full,
        "n_gpu_layers": params.n_gpu_layers,
        "mmap": params.mmap,
        "n_cpu_moe": settings.n_cpu_moe or 0,
        "split_mode": settings.split_mode or "layer",
        "tensor_split": (
            None
            if settings.tensor_split is None
            else ",".join(f"{x:g}" for x in settings.tensor_split)
        ),
        # only when --device reorders or picks devices (the key is absent otherwise)
        **(
            {"device_ordinals": ",".join(map(str, settings.device_ordinals))}
            if settings.device_ordinals is not None
            else {}
        ),
        **({"llama_server": True} if settings.llama_server else {}),  # only when given
    }

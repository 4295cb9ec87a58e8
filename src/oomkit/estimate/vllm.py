"""vLLM (V1 engine, ``vllm serve``): profile, then fill the rest of the budget with KV blocks.

Models ``Worker.determine_available_memory`` (vllm/v1/worker/gpu_worker.py): the budget is
``gpu_memory_utilization x total`` per instance; weights, the profile run's torch peak and
non-torch memory are subtracted; what remains becomes KV blocks of ``block_size`` tokens
(vllm/v1/core/kv_cache_utils.py ``get_kv_cache_config``: ``num_blocks = available //
(page_size x num_layers)``). CUDA graphs are captured after the KV cache is allocated, in the
``1 - gpu_memory_utilization`` headroom (0 with ``--enforce-eager``).

Defaults modelled (vllm/engine/arg_utils.py ``EngineArgs._set_default_args``, OpenAI server):
``max_num_batched_tokens`` 8192 and ``max_num_seqs`` 1024 on GPUs with >= 70 GiB that are not
A100, else 2048 and 256; ``gpu_memory_utilization`` 0.9; ``block_size`` 16; KV dtype = model dtype.
Flags: ``--tensor-parallel-size``, ``--gpu-memory-utilization``, ``--max-model-len``,
``--max-num-seqs``, ``--max-num-batched-tokens``, ``--kv-cache-dtype``, ``--cpu-offload-gb``,
``--enforce-eager``, ``--block-size``.
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate, ModelInfo
from oomkit.estimate.hf_activations import forward_peak_bytes, sampler_peak_bytes
from oomkit.estimate.hf_kv import KvLayer, kv_bytes, kv_bytes_per_token, kv_layers
from oomkit.estimate.hf_weights import dtype_bytes, plan_weights
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import count_params, model_tensors
from oomkit.units import GiB, MiB

__all__ = ["VllmPlan", "estimate_vllm", "plan_vllm"]

_BIG_GPU_BYTES = 70 * GiB
#: CUDA context + cuBLAS handles that vLLM counts as non-torch memory on one GPU
#: (~300-400 MB bare context with lazy loading: pytorch/pytorch #107667, #109888)
_NON_TORCH_SINGLE = 384 * MiB
#: extra per rank with TP > 1: NCCL communicators + custom all-reduce buffers (rough: vLLM logs
#: show 0.6-3.6 GiB); override with --overhead
_NON_TORCH_TP_EXTRA = 1 * GiB
#: CUDA-graph pool outside the budget (typical 0.3-0.7 GiB in vLLM logs for dense models)
_CUDAGRAPH = 512 * MiB


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmPlan:
    tp: int
    util: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    kv_elem_bytes: int
    weights_bytes: int
    rope_cache_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    kv_pool_bytes: int | None
    bytes_per_token: int
    num_gpu_blocks: int | None
    kv_cache_tokens: int | None
    max_concurrency: float | None
    max_model_len_that_fits: int | None
    layers: tuple[KvLayer, ...]
    notes: tuple[str, ...]


def _kv_elem_bytes(settings: InferenceSettings, spec: ModelSpec) -> int:
    kv = (settings.cache_type_k or "auto").lower()
    if kv in ("auto", "model"):
        return dtype_bytes(spec.torch_dtype or "bf16") if spec.torch_dtype != "float32" else 2
    if kv.startswith("fp8"):
        return 1
    return dtype_bytes(kv)


def _max_len_that_fits(layers: tuple[KvLayer, ...], pool: int, limit: int) -> int:
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if kv_bytes(layers, seq_len=mid) <= pool:
            lo = mid
        else:
            hi = mid - 1
    return lo


def plan_vllm(spec: ModelSpec, settings: InferenceSettings, device: DeviceTarget) -> VllmPlan:
    """The numbers vLLM logs at startup, for one rank (pure)."""
    tp = settings.tp or 1
    if tp < 1:
        raise InvalidSettingError(f"--tp must be at least 1, got {tp}", setting="tp")
    notes: list[str] = []
    cap = device.capacity_bytes
    big = cap is not None and cap >= _BIG_GPU_BYTES and "a100" not in device.name.lower()
    util = settings.gpu_memory_utilization or 0.9
    max_len = settings.ctx or spec.max_position_embeddings or 8192
    seqs = settings.max_num_seqs or (1024 if big else 256)
    batched = settings.max_num_batched_tokens or (8192 if big else 2048)
    block = settings.block_size or 16
    elem = dtype_bytes(spec.torch_dtype or "bf16")
    if elem == 4:
        elem = 2
        notes.append("fp32 checkpoint served in fp16/bf16 (vLLM downcasts float32 by default)")
    weights = plan_weights(spec, model_tensors(spec), quant=settings.quant, tp=tp)
    notes.extend(weights.assumptions)
    rotary = spec.head_dim if spec.mla is None else spec.mla.qk_rope_head_dim
    rope = (spec.max_position_embeddings or max_len) * rotary * elem
    w = weights.bytes_per_rank - (settings.cpu_offload_bytes or 0)
    if settings.cpu_offload_bytes:
        notes.append("--cpu-offload-gb moves that many weight bytes per rank to host RAM")
    fwd = forward_peak_bytes(spec, tokens=batched, elem_bytes=elem, tp=tp)
    sampler = batched * spec.hidden_size * elem + sampler_peak_bytes(spec, n_seqs=seqs, tp=tp)
    act = max(fwd.n_bytes, sampler)
    if settings.overhead_bytes is not None:
        non_torch = settings.overhead_bytes
    else:
        non_torch = _NON_TORCH_SINGLE + (_NON_TORCH_TP_EXTRA if tp > 1 else 0)
    graphs = 0 if settings.enforce_eager else _CUDAGRAPH
    layers = kv_layers(
        spec, kv_elem_bytes=_kv_elem_bytes(settings, spec), state_elem_bytes=elem, tp=tp
    )
    per_tok = kv_bytes_per_token(layers)
    pool = blocks = tokens = fits_len = None
    conc = None
    if cap is not None:
        pool = int(cap * util) - w - rope - act - non_torch
        if per_tok > 0:
            blocks = max(0, pool) // (per_tok * block)
            tokens = blocks * block
            conc = tokens / max_len
        fits_len = _max_len_that_fits(layers, max(0, pool), max(max_len, 1 << 22))
    if any(lay.kind == "sliding" for lay in layers):
        notes.append(
            "sliding-window layers counted at full size per block (vLLM without the "
            "hybrid KV-cache manager); with it, vLLM reports more tokens"
        )
    return VllmPlan(
        tp=tp,
        util=util,
        max_model_len=max_len,
        max_num_seqs=seqs,
        max_num_batched_tokens=batched,
        block_size=block,
        kv_elem_bytes=_kv_elem_bytes(settings, spec),
        weights_bytes=w,
        rope_cache_bytes=rope,
        activation_bytes=act,
        non_torch_bytes=non_torch,
        cudagraph_bytes=graphs,
        kv_pool_bytes=pool,
        bytes_per_token=per_tok,
        num_gpu_blocks=blocks,
        kv_cache_tokens=tokens,
        max_concurrency=conc,
        max_model_len_that_fits=fits_len,
        layers=layers,
        notes=tuple(notes),
    )


def estimate_vllm(spec: ModelSpec, settings: InferenceSettings, hardware: Hardware) -> Estimate:
    """Memory per rank for ``vllm serve`` (see module docstring)."""
    tp = settings.tp or 1
    devices = hardware.devices or (DeviceTarget(name="GPU (capacity unknown)"),)
    targets = [devices[i] if i < len(devices) else devices[0] for i in range(tp)]
    plans = [plan_vllm(spec, settings, d) for d in targets]
    usages = []
    src = "vllm/v1/worker/gpu_worker.py determine_available_memory"
    for rank, (d, p) in enumerate(zip(targets, plans, strict=True)):
        kv_need = kv_bytes(p.layers, seq_len=p.max_model_len)
        kv = p.kv_pool_bytes if p.kv_pool_bytes is not None and p.kv_pool_bytes > 0 else kv_need
        comps = (
            Component(
                category="weights",
                label="weights",
                n_bytes=p.weights_bytes,
                formula="checkpoint tensors per rank",
                inputs={"tp": p.tp},
                source="vllm/model_executor/layers/linear.py",
            ),
            Component(
                category="weights",
                label="rotary cos/sin cache",
                n_bytes=p.rope_cache_bytes,
                formula="max_position x rotary_dim x dtype",
                source="vllm/model_executor/layers/rotary_embedding.py",
            ),
            Component(
                category="kv_cache",
                label="KV cache pool",
                n_bytes=kv,
                formula=(
                    "util x total - weights - activations - non_torch"
                    if p.kv_pool_bytes is not None and p.kv_pool_bytes > 0
                    else "one sequence of max_model_len (capacity unknown or short)"
                ),
                inputs={
                    "util": p.util,
                    "bytes_per_token": p.bytes_per_token,
                    "block_size": p.block_size,
                },
                source=src,
            ),
            Component(
                category="activations",
                label="profile-run peak",
                n_bytes=p.activation_bytes,
                formula="max(forward live set at max_num_batched_tokens, sampler logits)",
                inputs={
                    "max_num_batched_tokens": p.max_num_batched_tokens,
                    "max_num_seqs": p.max_num_seqs,
                },
                source="vllm/v1/worker/gpu_model_runner.py profile_run",
            ),
            Component(
                category="overhead",
                label="non-torch (CUDA context, cuBLAS, NCCL)",
                n_bytes=p.non_torch_bytes,
                formula="documented default per GPU",
                inputs={"tp": p.tp},
                source="pytorch/pytorch#107667",
            ),
            Component(
                category="overhead",
                label="CUDA graphs",
                n_bytes=p.cudagraph_bytes,
                formula="typical capture pool (0 with --enforce-eager)",
                source="vllm/v1/worker/gpu_model_runner.py capture_model",
            ),
        )
        usages.append(
            DeviceUsage(device=f"cuda:{rank}", components=comps, capacity_bytes=d.capacity_bytes)
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
        "activation_peak_bytes": p0.activation_bytes,
        "available_kv_cache_bytes": p0.kv_pool_bytes,
    }
    notes = list(p0.notes)
    blockers: list[str] = []
    if p0.kv_pool_bytes is not None and p0.kv_pool_bytes <= 0:
        blockers.append(
            "no memory left for the KV cache: vLLM fails with 'No available memory for "
            "the cache blocks'"
        )
    elif p0.max_model_len_that_fits is not None and p0.max_model_len_that_fits < p0.max_model_len:
        blockers.append(
            f"max_model_len {p0.max_model_len} needs more KV than the pool holds; vLLM "
            f"refuses to start (largest that fits: {p0.max_model_len_that_fits})"
        )
    est_settings = {
        "runtime": "vllm",
        "quant": settings.quant,
        "ctx": p0.max_model_len,
        "tp": p0.tp,
        "gpu_memory_utilization": p0.util,
        "max_num_seqs": p0.max_num_seqs,
        "kv_dtype": settings.cache_type_k or "auto",
    }
    return Estimate(
        model=ModelInfo(
            name=spec.name,
            architecture=spec.architecture,
            params=count_params(spec),
            source=spec.source,
        ),
        runtime="vllm",
        settings=est_settings,
        devices=tuple(usages),
        host=DeviceUsage(
            device="cpu",
            components=(
                Component(
                    category="weights",
                    label="CPU-offloaded weights",
                    n_bytes=(settings.cpu_offload_bytes or 0) * p0.tp,
                    formula="--cpu-offload-gb x tp",
                ),
            )
            if settings.cpu_offload_bytes
            else (),
        ),
        runtime_details=details,
        assumptions=tuple(notes),
        blockers=tuple(blockers),
    )

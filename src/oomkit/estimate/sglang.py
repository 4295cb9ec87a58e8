"""SGLang: a static fraction of each GPU holds weights + the KV token pool.

Models ``ModelRunner.profile_max_num_token`` (python/sglang/srt/model_executor/model_runner.py):
``rest = free_after_weights - total x (1 - mem_fraction_static)``; ``max_total_num_tokens =
rest // cell_size`` with ``cell_size = kv_heads_per_rank x head_dim x layers x 2 x elem`` (MLA:
``(kv_lora_rank + qk_rope_head_dim) x layers x elem``). The ``1 - mem_fraction_static`` rest holds
activations and CUDA graphs. Default ``mem_fraction_static`` by TP size (server_args.py,
``ServerArgs.__post_init__``): 0.88 (tp1), 0.87 (tp2), 0.85 (tp4), 0.81 (tp8), 0.79 (tp16).
Flags: ``--tp``, ``--mem-fraction-static``, ``--context-length``, ``--kv-cache-dtype``.
"""

from __future__ import annotations

from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate, ModelInfo
from oomkit.estimate.hf_kv import kv_bytes, kv_bytes_per_token, kv_layers
from oomkit.estimate.hf_weights import dtype_bytes, plan_weights
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import count_params, model_tensors
from oomkit.units import MiB

__all__ = ["default_mem_fraction_static", "estimate_sglang"]

#: CUDA context + NCCL/cuBLAS before the pool is sized (same default as vLLM's non-torch)
_CONTEXT = 384 * MiB


def default_mem_fraction_static(tp: int) -> float:
    if tp >= 16:
        return 0.79
    if tp >= 8:
        return 0.81
    if tp >= 4:
        return 0.85
    if tp >= 2:
        return 0.87
    return 0.88


def estimate_sglang(spec: ModelSpec, settings: InferenceSettings, hardware: Hardware) -> Estimate:
    """Memory per rank for ``python -m sglang.launch_server`` (see module docstring)."""
    tp = settings.tp or 1
    frac = settings.mem_fraction_static or default_mem_fraction_static(tp)
    elem = dtype_bytes(spec.torch_dtype or "bf16")
    elem = 2 if elem == 4 else elem
    kv = (settings.cache_type_k or "auto").lower()
    kv_elem = elem if kv == "auto" else (1 if kv.startswith("fp8") else dtype_bytes(kv))
    weights = plan_weights(spec, model_tensors(spec), quant=settings.quant, tp=tp)
    layers = kv_layers(spec, kv_elem_bytes=kv_elem, state_elem_bytes=elem, tp=tp)
    cell = kv_bytes_per_token(layers)
    ctx = settings.ctx or spec.max_position_embeddings or 8192
    overhead = settings.overhead_bytes if settings.overhead_bytes is not None else _CONTEXT
    devices = hardware.devices or (DeviceTarget(name="GPU (capacity unknown)"),)
    usages = []
    tokens: int | None = None
    blockers: list[str] = []
    for rank in range(tp):
        d = devices[rank] if rank < len(devices) else devices[0]
        cap = d.capacity_bytes
        if cap is not None:
            rest = cap - overhead - weights.bytes_per_rank - int(cap * (1 - frac))
            pool = max(0, rest)
            tokens = pool // cell if cell else None
            reserve = cap - overhead - weights.bytes_per_rank - pool
            reserve = max(0, min(reserve, int(cap * (1 - frac))))
            if rest <= 0:
                blockers.append(
                    "weights exceed mem_fraction_static of the GPU: SGLang has no "
                    "room for the KV pool"
                )
        else:
            pool = kv_bytes(layers, seq_len=ctx)
            reserve = 0
        comps = (
            Component(
                category="weights",
                label="weights",
                n_bytes=weights.bytes_per_rank,
                formula=weights.formula,
                inputs={"tp": tp},
            ),
            Component(
                category="kv_cache",
                label="KV token pool",
                n_bytes=pool,
                formula="total x mem_fraction_static - context - weights",
                inputs={"mem_fraction_static": frac, "cell_size": cell},
                source="sglang/srt/model_executor/model_runner.py profile_max_num_token",
            ),
            Component(
                category="activations",
                label="activations + CUDA graphs (reserved rest)",
                n_bytes=reserve,
                formula="total x (1 - mem_fraction_static)",
                inputs={"mem_fraction_static": frac},
            ),
            Component(
                category="overhead",
                label="CUDA context",
                n_bytes=overhead,
                formula="documented default",
                source="pytorch/pytorch#107667",
            ),
        )
        usages.append(DeviceUsage(device=f"cuda:{rank}", components=comps, capacity_bytes=cap))
    if tokens is not None and tokens < ctx:
        blockers.append(f"the token pool ({tokens}) is smaller than one request of {ctx} tokens")
    return Estimate(
        model=ModelInfo(
            name=spec.name,
            architecture=spec.architecture,
            params=count_params(spec),
            source=spec.source,
        ),
        runtime="sglang",
        settings={
            "runtime": "sglang",
            "quant": settings.quant,
            "ctx": ctx,
            "tp": tp,
            "mem_fraction_static": frac,
        },
        devices=tuple(usages),
        host=DeviceUsage(device="cpu"),
        runtime_details={
            "max_total_num_tokens": tokens,
            "cell_size_bytes": cell,
            "mem_fraction_static": frac,
        },
        assumptions=weights.assumptions,
        blockers=tuple(dict.fromkeys(blockers)),
    )

"""transformers ``from_pretrained(device_map=...)`` + ``generate()``: the peak per device.

Models: weights by dtype/quantization (bitsandbytes 8/4-bit, GPTQ/AWQ via
:mod:`oomkit.quant.hf_formats`); ``device_map="auto"`` filling devices in module order
(embeddings, layers, final norm, lm_head) up to 90% of each GPU, then CPU
(accelerate ``infer_auto_device_map``; the 0.9 factor is transformers' reserve for buffers,
``BnbHfQuantizer.adjust_max_memory``); the KV cache (``DynamicCache`` grows by ``torch.cat``, so
while a layer grows its old and new K/V coexist; ``StaticCache`` preallocates ``max_cache_len``);
prefill activations (eager attention materialises B·a·S² scores plus the fp32 softmax;
SDPA/FlashAttention do not); logits (current ``generate`` keeps only the last position,
``logits_to_keep=1``, then upcasts to fp32: B·V·(e+4); pre-4.45 kept B·S·V plus the fp32 copy);
and the CUDA context.

Settings: ``quant`` (bf16/fp16/fp32/int8/nf4/fp4/gptq/awq/fp8), ``ctx`` = prompt tokens,
``max_new_tokens`` (default 256), ``parallel`` = batch size, ``attn_implementation`` (default sdpa),
``cache_implementation`` (dynamic|static).
"""

from __future__ import annotations

from collections import defaultdict

from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate, ModelInfo
from oomkit.estimate.hf_kv import kv_bytes, kv_layers
from oomkit.estimate.hf_weights import DTYPE_BYTES, plan_weights
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec, TensorInfo
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import count_params, model_tensors
from oomkit.units import MiB

__all__ = ["estimate_transformers", "prefill_activation_bytes"]

_CONTEXT = 384 * MiB  # bare CUDA context with lazy loading (pytorch/pytorch#107667)
_FILL = 0.9
_DEFAULT_NEW = 256


def _elem(spec: ModelSpec, quant: str | None) -> int:
    q = (quant or spec.torch_dtype or "bf16").lower()
    return DTYPE_BYTES.get(q, 2) if q in ("fp32", "float32") else 2


def prefill_activation_bytes(
    spec: ModelSpec, *, batch: int, seq: int, elem: int, attn_impl: str
) -> tuple[int, str]:
    """Largest live set of one decoder layer at prefill, plus the step's logits (bytes)."""
    b, s, h = batch, seq, spec.hidden_size
    stream = 2 * b * s * h * elem
    q = spec.num_attention_heads * spec.head_dim
    kvd = spec.num_key_value_heads * (spec.head_dim + spec.v_head_dim)
    attn = b * s * (q + kvd + q) * elem
    if attn_impl == "eager":
        attn += b * spec.num_attention_heads * s * s * (elem + 4)
    i = (
        spec.moe.expert_intermediate_size
        if spec.moe and not spec.moe.dense_layers
        else (spec.intermediate_size)
    )
    mlp = b * s * i * (3 if spec.mlp_gated else 2) * elem
    logits = b * spec.vocab_size * (elem + 4)
    layer_peak = stream + max(attn, mlp)
    formula = (
        f"2·B·S·h·e + max(attention{' with B·a·S² scores' if attn_impl == 'eager' else ''}, "
        "MLP B·S·3i·e); logits B·V·(e+4) after the last layer"
    )
    return max(layer_peak, b * h * elem + logits), formula


def _place(
    tensors: tuple[TensorInfo, ...], sizes: list[int], caps: list[int | None]
) -> dict[int, int]:
    """Module-order fill: returns bytes per device index (-1 = CPU)."""
    groups: dict[tuple[int, int], int] = defaultdict(int)
    for t, sz in zip(tensors, sizes, strict=True):
        if t.layer is not None:
            key = (1, t.layer)
        elif t.role.startswith("token_embd") or t.role.startswith("pos_embd"):
            key = (0, 0)
        else:
            key = (2, 0)
        groups[key] += sz
    placed: dict[int, int] = defaultdict(int)
    dev = 0
    for key in sorted(groups):
        sz = groups[key]
        while dev < len(caps):
            cap = caps[dev]
            if cap is None or placed[dev] + sz <= int(cap * _FILL):
                break
            dev += 1
        placed[dev if dev < len(caps) else -1] += sz
    return placed


def estimate_transformers(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware
) -> Estimate:
    """Peak memory of ``generate()`` per device (see module docstring)."""
    notes: list[str] = []
    tensors = model_tensors(spec)
    quant = settings.quant
    plan = plan_weights(spec, tensors, quant=quant, tp=1)
    notes.extend(plan.assumptions)
    total_w = plan.total_bytes
    sizes = list(plan.tensor_bytes)
    elem = _elem(spec, quant)
    batch = settings.parallel or 1
    prompt = settings.ctx or 1024
    new = settings.max_new_tokens or _DEFAULT_NEW
    attn_impl = (settings.attn_implementation or "sdpa").lower()
    layers = kv_layers(spec, kv_elem_bytes=elem, state_elem_bytes=elem)
    seq_total = prompt + new
    static = (settings.cache_implementation or "dynamic").lower() == "static"
    kv_final = kv_bytes(layers, seq_len=seq_total, n_seqs=batch)
    per_layer_growth = max((lay.bytes_per_token for lay in layers), default=0) * seq_total * batch
    act, act_formula = prefill_activation_bytes(
        spec, batch=batch, seq=prompt, elem=elem, attn_impl=attn_impl
    )
    transient = 0 if static else per_layer_growth
    gpus = hardware.devices
    caps: list[int | None] = [d.capacity_bytes for d in gpus] if gpus else [None]
    placed = _place(tensors, sizes, caps)
    overhead = settings.overhead_bytes if settings.overhead_bytes is not None else _CONTEXT
    usages = []
    n_gpu = max(1, len(gpus))
    for i in range(n_gpu):
        w = placed.get(i, 0)
        if i > 0 and w == 0:
            continue
        share = w / total_w if total_w else 1.0
        kv_i = int(kv_final * share)
        comps = (
            Component(
                category="weights",
                label="weights",
                n_bytes=w,
                formula=plan.formula,
                source="accelerate infer_auto_device_map",
            ),
            Component(
                category="kv_cache",
                label="StaticCache" if static else "DynamicCache",
                n_bytes=kv_i,
                formula="B x (prompt + new) x per-token KV of its layers",
                inputs={"B": batch, "prompt": prompt, "new": new},
                source="transformers/cache_utils.py",
            ),
            Component(
                category="activations",
                label="prefill peak + cache growth",
                n_bytes=act + (transient if w else 0),
                formula=act_formula
                + ("; + one layer's K/V copied by torch.cat" if transient else ""),
                inputs={"attn_implementation": attn_impl},
                source="transformers/models/llama/modeling_llama.py",
            ),
            Component(
                category="overhead",
                label="CUDA context",
                n_bytes=overhead,
                formula="documented default",
                source="pytorch/pytorch#107667",
            ),
        )
        cap = gpus[i].capacity_bytes if i < len(gpus) else None
        usages.append(DeviceUsage(device=f"cuda:{i}", components=comps, capacity_bytes=cap))
    cpu_w = placed.get(-1, 0)
    host_comps: tuple[Component, ...] = ()
    if cpu_w:
        notes.append(
            "device_map='auto' offloads the layers that do not fit to CPU RAM "
            "(very slow generation)"
        )
        host_comps = (
            Component(
                category="weights",
                label="CPU-offloaded weights",
                n_bytes=cpu_w,
                formula="layers beyond 90% of the GPUs",
            ),
        )
    return Estimate(
        model=ModelInfo(
            name=spec.name,
            architecture=spec.architecture,
            params=count_params(spec),
            source=spec.source,
        ),
        runtime="transformers",
        settings={
            "runtime": "transformers",
            "quant": quant or spec.torch_dtype,
            "ctx": prompt,
            "max_new_tokens": new,
            "batch": batch,
            "attn_implementation": attn_impl,
        },
        devices=tuple(usages),
        host=DeviceUsage(
            device="cpu", components=host_comps, capacity_bytes=hardware.host_ram_bytes
        ),
        runtime_details={
            "kv_cache_bytes_final": kv_final,
            "prefill_activation_bytes": act,
            "offloaded_to_cpu_bytes": cpu_w,
        },
        assumptions=tuple(notes),
    )

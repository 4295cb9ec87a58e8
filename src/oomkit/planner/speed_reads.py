"""Bytes one decoded token reads on each device: weights (MoE: active experts only) and KV cache.

Decode is memory-bound: each generated token streams every weight matrix it multiplies through
the memory bus once, and reads the K and V cells it attends to. What a token reads, per tensor:

* input embeddings (``token_embd``, ``position_embd``, ``token_types``,
  ``per_layer_token_embd``): one row per token (``ggml_get_rows``), counted as 0 bytes;
* routed experts (GGUF names containing ``_exps``): ``experts_per_tok / num_experts`` of the
  tensor (``ggml_mul_mat_id`` reads only the selected experts' rows; llama.cpp
  ``build_moe_ffn`` in src/llama-graph.cpp); shared experts, routers and dense layers: all;
* everything else (attention, dense FFN, norms, the output head): all of it.

Where each tensor lives comes from the runtime's own placement: llama.cpp and Ollama through
:func:`oomkit.estimate.llamacpp_placement.place_weights` over the same (tensor, type, bytes)
rows the memory estimate used, so ``-ngl``, ``--n-cpu-moe`` and ``--tensor-split`` move exactly
the bytes they move in the estimate. Other runtimes (vLLM, SGLang, transformers) shard or map
weights evenly by parameter; for them each device reads its weight bytes times the model-wide
read fraction (active parameters over stored parameters, embeddings excluded).

KV: a token at fill ``f`` of an ``n_ctx`` cache reads ``kv_bytes * f / n_ctx`` on each device
(the cells of every layer on that device; a sliding-window layer's cache is its window).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from oomkit.estimate.breakdown import Estimate
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec, TensorInfo
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "LLAMACPP_RUNTIMES",
    "DeviceReads",
    "ReadPlan",
    "read_plan",
    "tensor_read_fraction",
]

#: runtimes whose placement is llama.cpp's (Ollama runs the llama.cpp loader)
LLAMACPP_RUNTIMES: frozenset[str] = frozenset({"llama.cpp", "ollama"})

_INPUT_PREFIXES = ("token_embd", "position_embd", "token_types", "per_layer_token_embd")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceReads:
    """What one device reads per decoded token."""

    device: str  # "cuda:0", "mps:0", "cpu"
    weight_bytes: int  # weights read per token (active experts only)
    kv_bytes: int  # KV cache read per token at the given fill
    n_layers: int  # repeating layers computed on this device

    @property
    def total_bytes(self) -> int:
        return self.weight_bytes + self.kv_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPlan:
    """Per-device reads, accelerators in estimate order, then the host."""

    devices: tuple[DeviceReads, ...]
    host: DeviceReads
    method: str  # how placement was known: "llama.cpp placement" | "even shards"


def tensor_read_fraction(tensor: TensorInfo, spec: ModelSpec) -> float:
    """Fraction of ``tensor`` one decoded token reads (see the module docstring)."""
    name = tensor.name
    if name.startswith(_INPUT_PREFIXES):
        return 0.0
    if "_exps" in name and spec.moe is not None and spec.moe.num_experts > 0:
        return spec.moe.num_experts_per_tok / spec.moe.num_experts
    return 1.0


def _n_ctx(est: Estimate) -> int | None:
    ctx = est.settings.get("ctx")
    return ctx if isinstance(ctx, int) and ctx > 0 else None


def _kv_read(kv_bytes: int, fill: int, n_ctx: int | None) -> int:
    if n_ctx is None or kv_bytes == 0:
        return 0
    return kv_bytes * min(fill, n_ctx) // n_ctx


def _settings_from(est: Estimate) -> InferenceSettings:
    """Rebuild the settings an estimate was made with from ``est.settings`` (its JSON view)."""
    names = {f.name for f in dataclasses.fields(InferenceSettings)}
    # (the draft model is left out: its JSON view is text, "-devd 1", and its reads are not
    # part of the main model's decode speed)
    kwargs: dict[str, object] = {
        k: v
        for k, v in est.settings.items()
        if k in names and k != "runtime" and not k.startswith("draft_")
    }
    # the JSON view writes these lists as "12,12" / "1,0" (estimate/llamacpp.py); the settings
    # take tuples (a string was refused as a tensor split: every -ts run that did not fit, and
    # every multi-GPU gpt-oss run on Ollama 0.11, ended in a usage error)
    for key, kind in (("tensor_split", float), ("device_ordinals", int)):
        value = kwargs.get(key)
        if isinstance(value, str):
            kwargs[key] = tuple(kind(x) for x in value.split(",") if x.strip())
    return InferenceSettings(runtime="llama.cpp", **kwargs)  # type: ignore[arg-type]


def _llamacpp_reads(
    spec: ModelSpec,
    est: Estimate,
    hardware: Hardware,
    settings: InferenceSettings | None,
    fill: int,
) -> ReadPlan:
    from oomkit.estimate.llamacpp import llamacpp_view, weight_tensors
    from oomkit.estimate.llamacpp_params import resolve_llamacpp_params
    from oomkit.estimate.llamacpp_placement import place_weights

    base = _settings_from(est)
    if settings is not None:
        # knobs est.settings does not echo (n_cpu_moe, tensor_split, split_mode) come from here
        base = dataclasses.replace(
            base,
            n_cpu_moe=settings.n_cpu_moe,
            tensor_split=settings.tensor_split,
            split_mode=settings.split_mode,
        )
    view = llamacpp_view(spec)
    gpus = tuple(d for d in hardware.devices if d.backend != "cpu")
    if base.split_mode == "none" and gpus:
        gpus = gpus[:1]
    params = resolve_llamacpp_params(base, n_layer=view.num_hidden_layers, has_gpu=bool(gpus))
    rows, _, _ = weight_tensors(view, base.quant)
    placement = place_weights(
        rows,
        n_layer=view.num_hidden_layers,
        params=params,
        gpus=gpus,
        tensor_split=base.tensor_split,
        n_cpu_moe=base.n_cpu_moe or 0,
        tied_embeddings=not any(t.name == "output.weight" for t, _, _ in rows),
        split_mode=base.split_mode or "layer",
    )
    fraction = {t.name: tensor_read_fraction(t, view) for t, _, _ in rows}
    weight_by_dev: dict[str, float] = {}
    for p in placement.tensors:
        share = fraction.get(p.name, 1.0)
        weight_by_dev[p.device] = weight_by_dev.get(p.device, 0.0) + p.n_bytes * share
    layers_by_dev: dict[str, int] = {}
    for dev in placement.layer_device[: view.num_hidden_layers]:
        layers_by_dev[dev] = layers_by_dev.get(dev, 0) + 1
    n_ctx = _n_ctx(est)
    devices = tuple(
        DeviceReads(
            device=d.device,
            weight_bytes=round(weight_by_dev.get(d.device, 0.0)),
            kv_bytes=_kv_read(d.kv_cache_bytes, fill, n_ctx),
            n_layers=layers_by_dev.get(d.device, 0),
        )
        for d in est.devices
    )
    host = DeviceReads(
        device=est.host.device,
        weight_bytes=round(weight_by_dev.get("cpu", 0.0)),
        kv_bytes=_kv_read(est.host.kv_cache_bytes, fill, n_ctx),
        n_layers=layers_by_dev.get("cpu", 0),
    )
    return ReadPlan(devices=devices, host=host, method="llama.cpp placement")


def _model_read_fraction(spec: ModelSpec) -> float:
    from oomkit.spec.tensors import is_parameter, model_tensors

    total = 0.0
    read = 0.0
    for t in model_tensors(spec):
        if not is_parameter(t):
            continue
        total += t.n_params
        read += t.n_params * tensor_read_fraction(t, spec)
    return read / total if total else 1.0


def _fill_kv_bytes(spec: ModelSpec, est: Estimate, fill: int) -> int:
    """KV bytes of one sequence at ``fill`` tokens (vLLM/SGLang pools are not context-sized)."""
    from oomkit.estimate.hf_kv import kv_bytes, kv_elem_bytes, kv_layers

    cache = est.settings.get("kv_dtype", est.settings.get("cache_type_k"))
    elem = kv_elem_bytes(cache if isinstance(cache, str) else None, 2)
    layers = kv_layers(spec, kv_elem_bytes=elem, state_elem_bytes=2)
    return kv_bytes([lay for lay in layers if lay.kind != "recurrent"], seq_len=fill)


#: runtimes whose devices run as tensor-parallel shards (every shard computes every layer of its
#: pipeline stage, in parallel); the others split whole layers one device after another
PARALLEL_RUNTIMES = frozenset({"vllm", "sglang"})


def _even_reads(spec: ModelSpec, est: Estimate, fill: int) -> ReadPlan:
    share = _model_read_fraction(spec)
    n_layer = spec.num_hidden_layers
    kv_total = _fill_kv_bytes(spec, est, fill)
    n_dev = max(1, len(est.devices))

    def reads(device: str, weights: int, kv: int, layers: int) -> DeviceReads:
        return DeviceReads(
            device=device, weight_bytes=round(weights * share), kv_bytes=kv, n_layers=layers
        )

    # TP shards heads and a layer-mapped pipeline spreads layers: either way each device holds
    # about 1/n of the cache a token reads
    layers = _layers_per_part(est, n_layer)
    devices = tuple(
        reads(d.device, d.weights_bytes, kv_total // n_dev, n)
        for d, n in zip(est.devices, layers, strict=False)
    )
    host = reads(
        est.host.device,
        est.host.weights_bytes,
        0 if est.devices else kv_total,
        layers[-1],
    )
    return ReadPlan(devices=devices, host=host, method="even shards")


def _layers_per_part(est: Estimate, n_layer: int) -> list[int]:
    """Layers each device computes per token, then the host's (the last entry).

    Tensor parallel (vLLM, SGLang) runs every layer on every shard of a pipeline stage, so a
    device computes ``n_layer / pp`` layers. A layer split (transformers ``device_map``: whole
    decoder layers placed one device after another, then CPU) computes each layer once: a
    device computes its share of the layers, taken here as its share of the weight bytes
    (largest remainders, so the shares add up to ``n_layer``). Layers whose weights accelerate
    keeps in CPU RAM are streamed to the GPU and computed there: the host computes none while a
    GPU is present (its bytes still count at host bandwidth).
    """
    n_dev = len(est.devices)
    if n_dev == 0:
        return [n_layer]
    if est.runtime in PARALLEL_RUNTIMES:
        pp = est.settings.get("pp")
        stages = pp if isinstance(pp, int) and pp > 1 else 1
        return [-(-n_layer // stages)] * n_dev + [0]
    weights = [d.weights_bytes for d in est.devices]
    total = sum(weights)
    if total <= 0:
        return [n_layer] + [0] * n_dev
    exact = [n_layer * w / total for w in weights]
    out = [int(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: exact[i] - out[i], reverse=True)
    for i in by_remainder[: n_layer - sum(out)]:
        out[i] += 1
    return [*out, 0]


def read_plan(
    spec: ModelSpec,
    est: Estimate,
    hardware: Hardware,
    *,
    fill: int,
    settings: InferenceSettings | None = None,
) -> ReadPlan:
    """Bytes each device reads per decoded token at context fill ``fill`` (tokens).

    Args:
        spec: the model the estimate was made for.
        est: its memory estimate (per-device weights and KV bytes).
        hardware: the devices the estimate targeted.
        fill: tokens already in the context when the token is generated.
        settings: the settings the estimate was made with, for knobs ``est.settings`` does not
            echo (llama.cpp ``--n-cpu-moe``, ``--tensor-split``, ``--split-mode``).

    Returns:
        Per-device weight and KV bytes read per token.
    """
    if est.runtime in LLAMACPP_RUNTIMES:
        return _llamacpp_reads(spec, est, hardware, settings, fill)
    return _even_reads(spec, est, fill)

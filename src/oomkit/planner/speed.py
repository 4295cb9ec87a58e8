"""How fast a configuration runs: decode and prefill tokens/s, estimated from bytes and FLOPs.

Decode (one sequence, memory-bound): generating a token reads, on every device, the weights it
multiplies (MoE: the active experts only) and the KV cells it attends to
(:mod:`oomkit.planner.speed_reads`). A device's time per token is

    t_dev = bytes_read / (peak_bandwidth * efficiency) + layers_on_dev * layer_latency

``efficiency`` (achieved / peak bandwidth) and ``layer_latency`` (per-layer kernel launch and
synchronisation cost, which dominates small models on fast GPUs) are two global constants per
backend class (``cuda``, ``metal``, ``cpu``), fitted once on the ``dev`` half of the measured
records in ``tests/fixtures/throughput/records.jsonl`` by ``benchmarks/speed_accuracy.py --fit``
and stored in ``oomkit/data/speed_efficiency.json``; nothing is tuned per record or per GPU.

Devices combine as the runtime runs them: llama.cpp ``--split-mode layer`` (and Ollama,
transformers ``device_map``) run layers one device after another, so times add; the host part
(layers or experts kept in RAM, ``-ngl`` < all, ``--n-cpu-moe``) adds its bytes over host
bandwidth. vLLM/SGLang tensor parallelism runs shards at once: the slowest shard counts, times
the pipeline-parallel stages, plus two NVLink all-reduces per layer
(:data:`TP_ALLREDUCE_LATENCY_S`).

Prefill (compute-bound): ``2 * active_params`` FLOPs per token for the matmuls plus
``4 * n_attn_layers * n_heads * head_dim * mean_fill`` for QK^T and AV, over the device's dense
FP16 tensor throughput times a fitted prefill efficiency. Unknown when the catalog has no FP16
figure (Apple GPUs) or when weights stay in host RAM (llama.cpp then streams them over PCIe for
every batch, which is not modelled).

Bandwidths are the catalog's peak figures (:mod:`oomkit.hardware.catalog`); host RAM defaults
to :data:`DEFAULT_HOST_BANDWIDTH_BYTES_PER_S` (dual-channel DDR5-5600) unless the devices share
unified memory (Apple), where the CPU reads the same memory at the GPU's bandwidth.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from oomkit.estimate.breakdown import Estimate
from oomkit.planner.speed_kernels import unmodelled_kernel
from oomkit.planner.speed_reads import (
    LLAMACPP_RUNTIMES,
    PARALLEL_RUNTIMES,
    DeviceReads,
    ReadPlan,
    read_plan,
)
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import LAYER_FULL, LAYER_SLIDING, ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GB

__all__ = [
    "BACKEND_CLASSES",
    "DEFAULT_HOST_BANDWIDTH_BYTES_PER_S",
    "MIN_POINTS_FOR_LATENCY",
    "TP_ALLREDUCES_PER_LAYER",
    "TP_ALLREDUCE_LATENCY_S",
    "BackendFactors",
    "DecodePoint",
    "DevicePart",
    "SpeedEstimate",
    "backend_class",
    "backend_factors",
    "estimate_speed",
    "fit_decode",
    "fit_prefill",
    "prefill_flops_per_token",
]

#: Dual-channel DDR5-5600: 2 channels x 64 bit x 5600 MT/s = 89.6 GB/s peak, the common desktop
#: configuration of 2024-2025 (JEDEC JESD79-5 DDR5-5600; 8 bytes per transfer per channel).
DEFAULT_HOST_BANDWIDTH_BYTES_PER_S = 2 * 8 * 5600 * 10**6

#: Backend classes with their own fitted factors.
BACKEND_CLASSES: tuple[str, ...] = ("cuda", "metal", "cpu")
#: Device backends without records borrow a class's factors (stated in ``basis``).
_BORROWED = {"rocm": "cuda", "xpu": "cuda"}

_RUNTIMES_PARALLEL = PARALLEL_RUNTIMES

#: Tensor parallelism ends two row-parallel matmuls per layer (attention ``o_proj`` and MLP
#: ``down_proj``) with an all-reduce of the hidden state (vLLM ``RowParallelLinear``,
#: ``reduce_results=True``). A small-message all-reduce over NVLink takes ~6 us
#: (NVIDIA/nccl#1259: 2x H100 HGX, ``all_reduce_perf`` with CUDA graphs, 128 B-64 KiB).
#: A lower bound: PCIe-only cards and larger TP groups take longer.
TP_ALLREDUCES_PER_LAYER = 2
TP_ALLREDUCE_LATENCY_S = 6e-6


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendFactors:
    """Fitted constants of one backend class (see the module docstring)."""

    backend: str
    decode_efficiency: float  # achieved / peak memory bandwidth
    layer_latency_s: float  # fixed cost per layer per decoded token
    prefill_efficiency: float | None  # achieved / peak dense FP16 FLOPS
    n_decode_records: int
    n_prefill_records: int


@cache
def _factors_table() -> dict[str, BackendFactors]:
    text = resources.files("oomkit").joinpath("data/speed_efficiency.json").read_text("utf-8")
    data = json.loads(text)
    out: dict[str, BackendFactors] = {}
    for name, row in data["classes"].items():
        out[name] = BackendFactors(
            backend=name,
            decode_efficiency=float(row["decode_efficiency"]),
            layer_latency_s=float(row["layer_latency_s"]),
            prefill_efficiency=(
                None if row["prefill_efficiency"] is None else float(row["prefill_efficiency"])
            ),
            n_decode_records=int(row["n_decode_records"]),
            n_prefill_records=int(row["n_prefill_records"]),
        )
    return out


def backend_class(backend: str) -> str:
    """The backend class whose factors a device backend uses (``rocm`` borrows ``cuda``)."""
    return _BORROWED.get(backend, backend if backend in BACKEND_CLASSES else "cuda")


def backend_factors(backend: str) -> BackendFactors:
    """Fitted factors for a device backend (``"cuda"``, ``"metal"``, ``"cpu"``, ``"rocm"``...)."""
    return _factors_table()[backend_class(backend)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DevicePart:
    """One device's share of a decoded token."""

    device: str
    weight_bytes: int  # weights read per token
    kv_bytes: int  # KV cache read per token
    bandwidth_bytes_per_s: int | None
    efficiency: float | None
    n_layers: int
    seconds: float | None  # time this device spends per token

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "weight_bytes": self.weight_bytes,
            "kv_bytes": self.kv_bytes,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "efficiency": self.efficiency,
            "n_layers": self.n_layers,
            "seconds": self.seconds,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeedEstimate:
    """Estimated single-sequence throughput; ``None`` where the inputs are unknown."""

    decode_tokens_per_s: float | None
    prefill_tokens_per_s: float | None
    basis: str  # one sentence: what bytes over which bandwidth, which factors
    gpu_bytes_per_token: int  # weights + KV read per token on the accelerators
    host_bytes_per_token: int  # weights + KV read per token from host RAM
    efficiency: float | None  # decode efficiency of the accelerators' backend class
    host_efficiency: float | None  # decode efficiency of the CPU class (host part)
    prefill_efficiency: float | None
    ctx_fill: int  # context tokens already present when the token is decoded
    parts: tuple[DevicePart, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "basis": self.basis,
            "gpu_bytes_per_token": self.gpu_bytes_per_token,
            "host_bytes_per_token": self.host_bytes_per_token,
            "efficiency": self.efficiency,
            "host_efficiency": self.host_efficiency,
            "prefill_efficiency": self.prefill_efficiency,
            "ctx_fill": self.ctx_fill,
            "parts": [p.to_dict() for p in self.parts],
            "notes": list(self.notes),
        }


def _catalog_gpu(dev: DeviceTarget) -> Any:
    from oomkit.errors import UnknownNameError
    from oomkit.hardware.catalog import find_gpu

    for name in (dev.key, dev.name):
        if not name:
            continue
        try:
            return find_gpu(name)
        except UnknownNameError:
            continue
    return None


def _gb_s(n: float) -> str:
    value = n / GB
    return f"{value:.0f} GB/s" if value == round(value) else f"{value:.1f} GB/s"


def _bandwidths(parts: Sequence[DevicePart], parallel: bool) -> str:
    """``"1008 GB/s"``, ``"2 x 936 GB/s one after another"``, ``"8 x 4800 GB/s in parallel"``."""
    values = [_gb_s(p.bandwidth_bytes_per_s or 0) for p in parts]
    if len(values) == 1:
        return values[0]
    how = "in parallel (tensor parallel)" if parallel else "one after another (layer split)"
    if len(set(values)) == 1:
        return f"{len(values)} x {values[0]} {how}"
    return " + ".join(values) + f" {how}"


def _gpu_parts(reads: ReadPlan, gpus: Sequence[DeviceTarget]) -> tuple[list[DevicePart], list[str]]:
    parts: list[DevicePart] = []
    missing: list[str] = []
    for r, dev in zip(reads.devices, gpus, strict=False):
        gpu = _catalog_gpu(dev)
        bw = None if gpu is None else int(gpu.bandwidth_bytes_per_s)
        f = backend_factors(dev.backend)
        seconds = None
        if bw is None:
            missing.append(f"{r.device} ({dev.name})")
        else:
            seconds = r.total_bytes / (bw * f.decode_efficiency) + r.n_layers * f.layer_latency_s
        parts.append(
            DevicePart(
                device=r.device,
                weight_bytes=r.weight_bytes,
                kv_bytes=r.kv_bytes,
                bandwidth_bytes_per_s=bw,
                efficiency=f.decode_efficiency,
                n_layers=r.n_layers,
                seconds=seconds,
            )
        )
    return parts, missing


def _host_part(r: DeviceReads, bandwidth: int) -> DevicePart:
    f = backend_factors("cpu")
    seconds = 0.0
    if r.total_bytes or r.n_layers:
        seconds = r.total_bytes / (bandwidth * f.decode_efficiency) + r.n_layers * f.layer_latency_s
    return DevicePart(
        device=r.device,
        weight_bytes=r.weight_bytes,
        kv_bytes=r.kv_bytes,
        bandwidth_bytes_per_s=bandwidth,
        efficiency=f.decode_efficiency,
        n_layers=r.n_layers,
        seconds=seconds,
    )


def _host_bandwidth(gpus: Sequence[DeviceTarget], override: int | None) -> tuple[int, str]:
    if override is not None:
        return override, "given"
    if gpus and all(g.unified_memory for g in gpus):
        gpu = _catalog_gpu(gpus[0])
        if gpu is not None:
            return int(gpu.bandwidth_bytes_per_s), "unified memory"
    return DEFAULT_HOST_BANDWIDTH_BYTES_PER_S, "dual-channel DDR5-5600 default"


@lru_cache(maxsize=64)
def _matmul_params(spec: ModelSpec) -> float:
    """Parameters one token multiplies through (MoE: the active share of the experts)."""
    from oomkit.planner.speed_reads import tensor_read_fraction
    from oomkit.spec.tensors import is_parameter, model_tensors

    matmul = 0.0
    for t in model_tensors(spec):
        if is_parameter(t) and len(t.shape) >= 2:
            matmul += t.n_params * tensor_read_fraction(t, spec)
    return matmul


def prefill_flops_per_token(spec: ModelSpec, *, mean_fill: int) -> float:
    """FLOPs to prefill one token: ``2 * active params`` (embeddings excluded) + attention.

    Attention adds ``QK^T`` and ``AV``: 2 multiply-adds per head dimension per attended cell,
    ``4 * n_heads * head_dim * cells`` per layer; sliding layers attend at most their window.
    """
    matmul = _matmul_params(spec)
    attn = 0.0
    head = spec.num_attention_heads * max(spec.head_dim, 1)
    for kind in spec.layer_types:
        if kind == LAYER_FULL:
            attn += 4 * head * mean_fill
        elif kind == LAYER_SLIDING:
            attn += 4 * head * min(mean_fill, spec.sliding_window or mean_fill)
    return 2 * matmul + attn


def _prefill(
    spec: ModelSpec,
    est: Estimate,
    reads: ReadPlan,
    gpus: Sequence[DeviceTarget],
    mean_fill: int,
) -> tuple[float | None, float | None, str]:
    if not gpus:
        return None, None, "prefill unknown: no CPU FLOPS figure"
    if reads.host.weight_bytes > 0:
        return None, None, "prefill unknown: host-RAM weights stream over PCIe (not modelled)"
    effs = {backend_factors(g.backend).prefill_efficiency for g in gpus}
    tflops: list[float] = []
    for g in gpus:
        gpu = _catalog_gpu(g)
        if gpu is None or gpu.fp16_tflops is None:
            return None, None, f"prefill unknown: no FP16 TFLOPS for {g.name}"
        tflops.append(float(gpu.fp16_tflops))
    eff = effs.pop() if len(effs) == 1 else None
    if eff is None:
        return None, None, "prefill unknown: no fitted prefill efficiency for this backend"
    flops = prefill_flops_per_token(spec, mean_fill=mean_fill)
    total_w = sum(r.weight_bytes for r in reads.devices) or 1
    times = [
        flops * (r.weight_bytes / total_w) / (tf * 1e12 * eff)
        for r, tf in zip(reads.devices, tflops, strict=False)
    ]
    seconds = max(times) * len(times) if est.runtime in _RUNTIMES_PARALLEL else sum(times)
    if seconds <= 0:
        return None, eff, "prefill unknown: no matmul FLOPs"
    return (
        1.0 / seconds,
        eff,
        (
            f"prefill {flops / 1e9:.1f} GFLOP/token over {min(tflops):.0f}+ dense FP16 TFLOPS "
            f"x {eff:.2f}"
        ),
    )


def estimate_speed(
    spec: ModelSpec,
    est: Estimate,
    hardware: Hardware,
    *,
    host_bandwidth_bytes_per_s: int | None = None,
    ctx_fill: int | None = None,
    settings: InferenceSettings | None = None,
) -> SpeedEstimate:
    """Decode and prefill tokens/s of one sequence for the configuration ``est`` describes.

    Args:
        spec: the model.
        est: its memory estimate on ``hardware`` (any runtime).
        hardware: the devices ``est`` was made for.
        host_bandwidth_bytes_per_s: host RAM bandwidth in bytes/s for weights kept in RAM
            (None: unified memory's bandwidth on Apple, else dual-channel DDR5-5600).
        ctx_fill: tokens in the context when decoding (None: half the estimate's context,
            the mean fill of a session that runs to the full context).
        settings: the settings ``est`` was made with, for llama.cpp knobs the estimate does not
            echo (``--n-cpu-moe``, ``--tensor-split``, ``--split-mode``).

    Returns:
        A :class:`SpeedEstimate` (tokens/s; ``None`` where a bandwidth or FLOPS is unknown).
    """
    ctx = est.settings.get("ctx")
    n_ctx = ctx if isinstance(ctx, int) and ctx > 0 else 0
    fill = ctx_fill if ctx_fill is not None else n_ctx // 2
    gpus = tuple(d for d in hardware.devices if d.backend != "cpu")
    reads = read_plan(spec, est, hardware, fill=fill, settings=settings)
    if est.runtime in LLAMACPP_RUNTIMES and settings is not None and settings.split_mode == "none":
        gpus = gpus[:1]
    parts, missing = _gpu_parts(reads, gpus)
    host_bw, host_why = _host_bandwidth(gpus, host_bandwidth_bytes_per_s)
    host = _host_part(reads.host, host_bw)
    gpu_bytes = sum(p.weight_bytes + p.kv_bytes for p in parts)
    host_bytes = host.weight_bytes + host.kv_bytes
    cls = backend_class(gpus[0].backend) if gpus else "cpu"
    f = backend_factors(cls)
    notes: list[str] = [f"device placement: {reads.method}"]
    if gpus and gpus[0].backend in _BORROWED:
        notes.append(f"no {gpus[0].backend} records: {cls} factors used")
    if est.runtime not in LLAMACPP_RUNTIMES:
        notes.append(f"factors fitted on llama.cpp records, applied to {est.runtime}")
    parallel = est.runtime in _RUNTIMES_PARALLEL
    decode: float | None = None
    if missing:
        basis = (
            f"Decode speed unknown: no memory bandwidth in the GPU catalog for "
            f"{', '.join(missing)}."
        )
    else:
        gpu_times = [p.seconds or 0.0 for p in parts]
        if parallel and gpu_times:
            pp = est.settings.get("pp")
            stages = pp if isinstance(pp, int) and pp > 1 else 1
            gpu_seconds = max(gpu_times) * stages
            if len(gpu_times) > stages:  # more than one shard per stage: all-reduces
                gpu_seconds += (
                    spec.num_hidden_layers * TP_ALLREDUCES_PER_LAYER * TP_ALLREDUCE_LATENCY_S
                )
                notes.append(
                    f"tensor parallel: {TP_ALLREDUCES_PER_LAYER} all-reduces per layer at "
                    f"{TP_ALLREDUCE_LATENCY_S * 1e6:.0f} us (NVLink lower bound)"
                )
        else:
            gpu_seconds = sum(gpu_times)
        seconds = gpu_seconds + (host.seconds or 0.0)
        decode = 1.0 / seconds if seconds > 0 else None
        where = (
            f"{gpu_bytes / GB:.2f} GB/token over {_bandwidths(parts, parallel)} "
            f"({cls} efficiency {f.decode_efficiency:.2f}, "
            f"{f.layer_latency_s * 1e6:.0f} us/layer)"
            if parts
            else ""
        )
        host_text = (
            f"{host_bytes / GB:.2f} GB/token from host RAM at {_gb_s(host_bw)} ({host_why}, "
            f"cpu efficiency {host.efficiency:.2f})"
            if host_bytes
            else ""
        )
        basis = (
            "Decode reads "
            + " and ".join(x for x in (where, host_text) if x)
            + f" at context fill {fill}."
        )
    prefill, pp_eff, pp_text = _prefill(spec, est, reads, gpus, mean_fill=fill)
    notes.append(pp_text)
    unmodelled = unmodelled_kernel(spec, est)
    if unmodelled is not None:  # a bandwidth figure would contradict the kernel's source
        decode, prefill, pp_eff = None, None, None
        basis = f"Decode speed not modelled: {unmodelled}."
        notes.append("speed not modelled for this weight kernel (oomkit.planner.speed_kernels)")
    return SpeedEstimate(
        decode_tokens_per_s=decode,
        prefill_tokens_per_s=prefill,
        basis=basis,
        gpu_bytes_per_token=gpu_bytes,
        host_bytes_per_token=host_bytes,
        efficiency=f.decode_efficiency if gpus else None,
        host_efficiency=host.efficiency if host_bytes or not gpus else None,
        prefill_efficiency=pp_eff,
        ctx_fill=fill,
        parts=(*parts, host),
        notes=tuple(notes),
    )


# --- fitting (used by benchmarks/speed_accuracy.py --fit and by the tests that re-check it)


#: below this many records a class fits its bandwidth efficiency only
MIN_POINTS_FOR_LATENCY = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodePoint:
    """One measured decode: ``ideal_s`` = sum of bytes / peak bandwidth, ``n_layers`` computed."""

    ideal_s: float
    n_layers: int
    measured_s: float


def _sq_log_error(points: Sequence[DecodePoint], eff: float, lat: float) -> float:
    return sum((math.log((p.ideal_s / eff + p.n_layers * lat) / p.measured_s)) ** 2 for p in points)


def fit_decode(points: Sequence[DecodePoint]) -> tuple[float, float]:
    """(efficiency, layer latency in s) minimising the squared log error over ``points``.

    A grid search (efficiency 0.20-1.00 in 0.005 steps, latency 0-500 us in 2 us steps) whose
    first minimum is deterministic, so the tests re-derive the stored factors exactly. With
    fewer than :data:`MIN_POINTS_FOR_LATENCY` points the two constants are not identifiable and
    the latency is held at 0 (bandwidth efficiency only).
    """
    if not points:
        raise ValueError("no decode records to fit")
    best = (math.inf, 1.0, 0.0)
    for i in range(40, 201):
        eff = i / 200
        for j in range(0, 251 if len(points) >= MIN_POINTS_FOR_LATENCY else 1):
            lat = j * 2e-6
            err = _sq_log_error(points, eff, lat)
            if err < best[0] - 1e-12:
                best = (err, eff, lat)
    return best[1], best[2]


def fit_prefill(ratios: Sequence[float]) -> float:
    """Prefill efficiency: geometric mean of (ideal FLOP time / measured time), rounded to 3."""
    if not ratios:
        raise ValueError("no prefill records to fit")
    return round(math.exp(sum(math.log(r) for r in ratios) / len(ratios)), 3)

"""llama.cpp weight placement: which tensors go to which device buffer, and buffer sizes.

Models ``llama_model::load_tensors`` (src/llama-model.cpp, late 2025):

* ``i_gpu_start = max(n_layer - n_gpu_layers, 0)``, ``act_gpu_layers = min(n_gpu_layers,
  n_layer + 1)``; layer ``il`` (the output layer is ``il = n_layer``) goes to a GPU when
  ``i_gpu_start <= il`` and ``il - i_gpu_start < act_gpu_layers``, to device
  ``upper_bound(splits, (il - i_gpu_start) / act_gpu_layers)`` where ``splits`` are the
  cumulative normalised ``--tensor-split`` fractions (default: each device's free memory). So
  ``-ngl n_layer`` leaves the output layer on the CPU; ``-ngl n_layer + 1`` (or 999) offloads all.
* the input layer (token embeddings) always stays on the CPU (``dev_input = cpu_dev``); a tied
  output is loaded a second time (``TENSOR_DUPLICATED``) on the output layer's device.
* ``-ot`` / ``--n-cpu-moe N`` keep ``ffn_*_exps`` of the first N layers in a CPU buffer.
* with mmap, CPU tensors use ``CPU_Mapped`` buffers whose size is the file range from the first to
  the last CPU tensor (``llama_model_loader::get_mapping_range``); without mmap they go to the
  first GPU's pinned host buffer (``CUDA_Host``), or ``CPU`` on a machine without a GPU.
* ``use_extra_bufts``: CPU matmul weights of repackable types go to ``CPU_REPACK``.
* GPU buffers hold ``backend_alloc_bytes`` per tensor (alignment, CUDA row padding).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from oomkit.estimate.llamacpp_params import LlamaCppParams, backend_alloc_bytes
from oomkit.memo import IdentityMemo
from oomkit.spec.hardware import DeviceTarget, device_label
from oomkit.spec.model import TensorInfo

__all__ = [
    "GGUF_ALIGNMENT",
    "REPACK_TYPES",
    "PlacedTensor",
    "Placement",
    "backend_buffer_prefix",
    "device_name",
    "layer_devices",
    "place_weights",
]

GGUF_ALIGNMENT = 32  # general.alignment default (gguf.h GGUF_DEFAULT_ALIGNMENT)
#: types the CPU backend repacks for its matmul kernels (ggml-cpu/repack.cpp on AVX2/NEON)
REPACK_TYPES: frozenset[str] = frozenset({"Q4_0", "Q4_K", "IQ4_NL", "Q8_0"})


class PlacedTensor(NamedTuple):
    """One weight and the buffer it lives in (a tuple: one is made per tensor per placement)."""

    name: str
    type_name: str
    ne0: int
    n_bytes: int
    layer: int | None  # None for input/output tensors
    buffer: str  # buffer name as llama.cpp logs it ("CUDA0", "CPU_Mapped", ...)
    device: str  # "cuda:0" ... or "cpu"


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where every weight lives, and each model buffer's size as llama.cpp logs it."""

    tensors: tuple[PlacedTensor, ...]
    layer_device: tuple[str, ...]  # per repeating layer: "cpu" or "cuda:i"
    output_device: str
    buffers: dict[str, int] = field(default_factory=dict)  # buffer name -> bytes
    buffer_device: dict[str, str] = field(default_factory=dict)  # buffer name -> device
    n_offloaded: int = 0  # "offloaded N/(n_layer+1) layers to GPU"
    #: tensors per device ("cpu", "cuda:0" ...), counted once when the placement is made
    tensor_counts: dict[str, int] = field(default_factory=dict)

    def device_bytes(self, device: str) -> int:
        """Sum of the buffers on ``device`` as llama.cpp logs them."""
        return sum(b for name, b in self.buffers.items() if self.buffer_device[name] == device)

    def resident_bytes(self, device: str) -> int:
        """Memory the weights occupy on ``device``: like :meth:`device_bytes`, except that a
        ``CPU_Mapped`` buffer counts only its own tensors' pages, not the whole file range it
        spans (a range that also covers offloaded tensors when the output layer stays on the
        CPU)."""
        total = 0
        for name, b in self.buffers.items():
            if self.buffer_device[name] != device:
                continue
            if name == "CPU_Mapped":
                b = sum(
                    -(-t.n_bytes // GGUF_ALIGNMENT) * GGUF_ALIGNMENT
                    for t in self.tensors
                    if t.buffer == "CPU_Mapped"
                )
            total += b
        return total


def backend_buffer_prefix(dev: DeviceTarget, index: int) -> str:
    """Name ggml gives a device buffer type (``CUDA0``, ``ROCm0``, ``Vulkan0``, ``MTL0``)."""
    if dev.backend == "cuda":
        return f"CUDA{index}"
    if dev.backend == "rocm":
        return f"ROCm{index}"
    if dev.backend == "metal":
        return f"MTL{index}"
    if dev.backend == "vulkan":
        return f"Vulkan{index}"
    return f"{dev.backend.upper()}{index}"


def layer_devices(
    n_layer: int,
    n_gpu_layers: int,
    gpus: Sequence[DeviceTarget],
    tensor_split: Sequence[float] | None,
) -> tuple[tuple[int | None, ...], int]:
    """GPU index (or None for CPU) of layers ``0..n_layer`` (index n_layer = output layer).

    Returns the per-layer list and the number of offloaded layers.
    """
    if not gpus:
        return (None,) * (n_layer + 1), 0
    if tensor_split and any(x > 0 for x in tensor_split):
        raw = [float(tensor_split[i]) if i < len(tensor_split) else 0.0 for i in range(len(gpus))]
    else:
        # default split: proportional to each device's free memory (equal when unknown)
        raw = [float(g.capacity_bytes or 1) for g in gpus]
    total = sum(raw)
    cum: list[float] = []
    acc = 0.0
    for x in raw:
        acc += x
        cum.append(acc / total)
    i_gpu_start = max(n_layer - n_gpu_layers, 0)
    act = min(n_gpu_layers, n_layer + 1)
    out: list[int | None] = []
    for il in range(n_layer + 1):
        if il < i_gpu_start or il - i_gpu_start >= act:
            out.append(None)
            continue
        k = bisect_right(cum, (il - i_gpu_start) / act)
        out.append(min(k, len(gpus) - 1))
    return tuple(out), sum(1 for x in out if x is not None)


_INPUT_PREFIXES = ("token_embd", "position_embd", "token_types")


def _is_expert(name: str) -> bool:
    return "_exps." in name or name.endswith("_exps")


def _is_output(name: str) -> bool:
    return name.startswith(("output.", "output_norm.", "output_norm_b"))


#: placements of recent (weights table, split) pairs: the planner and the doctor re-estimate
#: one model at many contexts, and the placement does not depend on the context. Keyed by the
#: identity of the (immutable, memoised) weights tuple, which the entry keeps alive.
_PLACEMENTS: IdentityMemo[Placement] = IdentityMemo(256)


def place_weights(
    tensors: Sequence[tuple[TensorInfo, str, int]],
    *,
    n_layer: int,
    params: LlamaCppParams,
    gpus: Sequence[DeviceTarget],
    tensor_split: Sequence[float] | None = None,
    n_cpu_moe: int = 0,
    tied_embeddings: bool = False,
    split_mode: str = "layer",
) -> Placement:
    """Assign each (tensor, ggml type, bytes) to a buffer; sizes as ``load_tensors`` logs them.

    ``tensors`` must be in GGUF file order (the mmap range depends on it). With
    ``split_mode="row"`` every offloaded layer belongs to the main GPU, and its 2-D matmul
    weights go to the ``CUDA_Split`` buffer type, which spreads their rows over the GPUs in
    ``tensor_split`` proportions (ggml-cuda ``ggml_backend_cuda_split_buffer_type``).
    """
    key = (  # memoised: see _PLACEMENTS
        n_layer,
        params.n_gpu_layers,
        params.mmap,
        params.options,
        tuple(gpus),
        None if tensor_split is None else tuple(tensor_split),
        n_cpu_moe,
        tied_embeddings,
        split_mode,
    )
    hit = _PLACEMENTS.get(tensors, key)
    if hit is not None:
        return hit
    row = split_mode == "row" and len(gpus) > 1
    layer_gpus = gpus[:1] if row else gpus
    per_layer, n_off = layer_devices(n_layer, params.n_gpu_layers, layer_gpus, tensor_split)
    # Metal maps the file straight into GPU-visible memory (zero copy): "MTL0_Mapped"
    names = [
        backend_buffer_prefix(g, i) + ("_Mapped" if g.backend == "metal" and params.mmap else "")
        for i, g in enumerate(gpus)
    ]
    out_gpu = per_layer[n_layer]
    use_mmap = params.mmap
    unified = bool(gpus) and all(g.unified_memory for g in gpus)
    if use_mmap:
        cpu_buffer = "CPU_Mapped"
    elif gpus and not params.options.no_host and not unified:
        cpu_buffer = f"{names[0].rstrip('0123456789')}_Host"
    else:
        cpu_buffer = "CPU"
    dev_ids = [f"{_dev_prefix(g)}:{i}" for i, g in enumerate(gpus)]
    dev_backend = {d: g.backend for d, g in zip(dev_ids, gpus, strict=True)}
    dev_backend["cpu"] = "cpu"
    placed: list[PlacedTensor] = []
    offset = 0
    cpu_ranges: list[tuple[int, int]] = []
    for t, type_name, n_bytes in tensors:
        ne0 = t.shape[-1] if t.shape else 1
        start = offset
        offset += -(-n_bytes // GGUF_ALIGNMENT) * GGUF_ALIGNMENT
        if t.layer is not None and t.layer < n_layer:
            gi = per_layer[t.layer]
            if gi is not None and t.layer < n_cpu_moe and _is_expert(t.name):
                gi = None
        elif _is_output(t.name):
            gi = out_gpu
        elif t.name.startswith(_INPUT_PREFIXES):
            gi = None  # input layer: token/position embeddings stay on the CPU
        else:
            # rope_freqs / rope factors: created for every layer (TENSOR_DUPLICATED), first in
            # layer 0's buffer
            gi = per_layer[0]
        if gi is None:
            buf = cpu_buffer
            is_mm = (
                t.shape is not None and len(t.shape) >= 2 and not t.name.startswith("token_embd")
            )
            if params.options.repack and is_mm and type_name.upper() in REPACK_TYPES:
                buf = "CPU_REPACK"
            elif use_mmap:
                cpu_ranges.append((start, start + n_bytes))
            # positional: one tuple per tensor per placement (name, type, ne0, bytes, layer,
            # buffer, device)
            placed.append(PlacedTensor(t.name, type_name, ne0, n_bytes, t.layer, buf, "cpu"))
        else:
            placed.append(
                PlacedTensor(t.name, type_name, ne0, n_bytes, t.layer, names[gi], dev_ids[gi])
            )
        if tied_embeddings and t.name == "token_embd.weight" and out_gpu is not None:
            # the output reuses the embedding matrix, duplicated onto the output device
            placed.append(
                PlacedTensor(
                    name="output.weight(tied)",
                    type_name=type_name,
                    ne0=ne0,
                    n_bytes=n_bytes,
                    layer=None,
                    buffer=names[out_gpu],
                    device=dev_ids[out_gpu],
                )
            )
        elif tied_embeddings and t.name == "token_embd.weight" and not use_mmap:
            placed.append(
                PlacedTensor(
                    name="output.weight(tied)",
                    type_name=type_name,
                    ne0=ne0,
                    n_bytes=n_bytes,
                    layer=None,
                    buffer=cpu_buffer,
                    device="cpu",
                )
            )
    buffers: dict[str, int] = {}
    buffer_device: dict[str, str] = {}
    for p in placed:
        if p.buffer == "CPU_Mapped":
            continue
        backend = dev_backend[p.device]
        buffers[p.buffer] = buffers.get(p.buffer, 0) + backend_alloc_bytes(
            p.type_name, p.ne0, p.n_bytes, backend
        )
        buffer_device[p.buffer] = p.device
    if cpu_ranges:
        buffers["CPU_Mapped"] = max(e for _, e in cpu_ranges) - min(s for s, _ in cpu_ranges)
        buffer_device["CPU_Mapped"] = "cpu"
    if row:
        _split_rows(placed, buffers, buffer_device, gpus, names, tensor_split)
    counts: dict[str, int] = {}
    for p in placed:
        counts[p.device] = counts.get(p.device, 0) + 1
    layer_dev = tuple(
        "cpu" if gi is None else f"{_dev_prefix(gpus[gi])}:{gi}" for gi in per_layer[:n_layer]
    )
    placement = Placement(
        tensors=tuple(placed),
        layer_device=layer_dev,
        output_device="cpu" if out_gpu is None else f"{_dev_prefix(gpus[out_gpu])}:{out_gpu}",
        buffers=buffers,
        buffer_device=buffer_device,
        n_offloaded=n_off,
        tensor_counts=counts,
    )
    _PLACEMENTS.put(tensors, placement, key)
    return placement


def _dev_prefix(dev: DeviceTarget) -> str:
    return device_label(dev, 0).partition(":")[0]


def device_name(dev: DeviceTarget, index: int) -> str:
    """oomkit's device id for GPU ``index`` (``cuda:0``, ``mps:0``)."""
    return f"{_dev_prefix(dev)}:{index}"


def _split_rows(
    placed: list[PlacedTensor],
    buffers: dict[str, int],
    buffer_device: dict[str, str],
    gpus: Sequence[DeviceTarget],
    names: Sequence[str],
    tensor_split: Sequence[float] | None,
) -> None:
    """Move the main GPU's layer matrices into per-device shares of the split buffer."""
    raw = [float(x) for x in (tensor_split or ())][: len(gpus)]
    if not raw or not any(x > 0 for x in raw):
        raw = [float(g.capacity_bytes or 1) for g in gpus]
    raw += [0.0] * (len(gpus) - len(raw))
    total = sum(raw)
    prefix = names[0].rstrip("0123456789")
    for p in placed:
        if p.buffer != names[0] or p.layer is None or "norm" in p.name or p.ne0 <= 1:
            continue
        if not p.name.endswith(".weight"):
            continue
        size = backend_alloc_bytes(p.type_name, p.ne0, p.n_bytes, gpus[0].backend)
        buffers[names[0]] -= size
        for i, frac in enumerate(raw):
            share = int(size * frac / total)
            if share:
                key = f"{prefix}_Split:{i}"
                buffers[key] = buffers.get(key, 0) + share
                buffer_device[key] = device_name(gpus[i], i)

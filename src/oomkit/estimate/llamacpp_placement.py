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

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, repeat
from operator import eq, is_
from typing import NamedTuple

from oomkit.estimate.llamacpp_params import LlamaCppParams, backend_alloc_bytes
from oomkit.estimate.llamacpp_weights import WeightRows
from oomkit.memo import IdentityMemo
from oomkit.spec.hardware import DeviceTarget, device_label
from oomkit.spec.model import ModelSpec, TensorInfo

__all__ = [
    "EXPERT_KINDS",
    "GGUF_ALIGNMENT",
    "REPACK_TYPES",
    "PlacedColumns",
    "PlacedTensor",
    "Placement",
    "backend_buffer_prefix",
    "cpu_matmul_weight_bytes",
    "device_name",
    "layer_devices",
    "moved_expert_kinds",
    "output_head_staging_bytes",
    "place_weights",
    "row_shares",
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


class PlacedColumns(NamedTuple):
    """The placed tensors as parallel tuples, in :class:`PlacedTensor` field order (file order;
    a tied output's duplicate right after the token embeddings)."""

    names: tuple[str, ...]
    type_names: tuple[str, ...]
    ne0s: tuple[int, ...]
    n_bytes: tuple[int, ...]
    layers: tuple[int | None, ...]
    buffers: tuple[str, ...]
    devices: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where every weight lives, and each model buffer's size as llama.cpp logs it."""

    #: the placed tensors as columns; :attr:`tensors` builds one row per tensor
    columns: PlacedColumns
    layer_device: tuple[str, ...]  # per repeating layer: "cpu" or "cuda:i"
    output_device: str
    buffers: dict[str, int] = field(default_factory=dict)  # buffer name -> bytes
    buffer_device: dict[str, str] = field(default_factory=dict)  # buffer name -> device
    n_offloaded: int = 0  # "offloaded N/(n_layer+1) layers to GPU"
    #: tensors per device ("cpu", "cuda:0" ...), counted once when the placement is made
    tensor_counts: dict[str, int] = field(default_factory=dict)

    @property
    def tensors(self) -> tuple[PlacedTensor, ...]:
        """One :class:`PlacedTensor` per placed tensor (built on each access)."""
        return tuple(map(PlacedTensor._make, zip(*self.columns, strict=True)))

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
                c = self.columns
                sizes = Counter(compress(c.n_bytes, map(eq, c.buffers, repeat("CPU_Mapped"))))
                b = sum(-(-n // GGUF_ALIGNMENT) * GGUF_ALIGNMENT * k for n, k in sizes.items())
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


def row_shares(
    tensor_split: Sequence[float] | None,
    device_ordinals: Sequence[int] | None,
    n_gpus: int,
) -> tuple[float, ...] | None:
    """Each GPU's share of a ``-sm row`` matrix when ``--device`` picks or reorders devices.

    One ``-ts``, two readings (ggml-org/llama.cpp ``src/llama-model.cpp`` and
    ``ggml/src/ggml-cuda/ggml-cuda.cu`` at c392e50, 2025-02-21; the same code in b5172):
    ``llama_model::load_tensors`` assigns the layers (their norms, KV cache and compute) by
    ``tensor_split[0 .. n_devices())``, the k-th entry for the k-th ``--device``, while the
    row-split buffer type (``make_gpu_buft_list`` -> ``ggml_backend_cuda_split_buffer_type(
    dev_index, tensor_split)``) normalises ``tensor_split[i]`` over every CUDA device ``i <
    ggml_backend_cuda_get_device_count()``, by ordinal. With ``--device CUDA2,CUDA1 -ts 0,1,1``
    every layer goes to the second listed device (CUDA1: entries ``0,1``) while the rows split
    evenly over CUDA1 and CUDA2 (llama.cpp#13085). None when the two readings agree
    (``device_ordinals`` None: GPU i is ordinal i) or ``-ts`` is unset / all zero (ggml-cuda's
    default split, by total memory).

    >>> row_shares((0, 1, 1), (2, 1), 2)
    (0.5, 0.5)
    >>> row_shares((3, 1), None, 2) is None
    True
    """
    if device_ordinals is None or not tensor_split or not any(x > 0 for x in tensor_split):
        return None
    total = float(sum(tensor_split))
    return tuple(
        float(tensor_split[o]) / total if o < len(tensor_split) else 0.0
        for o in list(device_ordinals)[:n_gpus]
    )


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


#: the routed-expert tensors of a MoE layer (``blk.N.ffn_{kind}_exps.weight`` / ``.bias``)
EXPERT_KINDS = ("up", "down", "gate")
_ALL_KINDS = frozenset(EXPERT_KINDS)


def moved_expert_kinds(rules: Sequence[str] | None) -> frozenset[str]:
    """Which ``ffn_{kind}_exps`` the ``-ot PATTERN=CPU`` rules move (all three when no rules).

    llama.cpp matches each rule's regex against every tensor name (``llama_model_loader``
    ``tensor_buft_overrides``: ``std::regex_search(tensor_name, pattern)``), so
    ``.ffn_(up|down)_exps=CPU`` moves the up and down experts and leaves the gate experts
    (weight and bias) in their layer's buffer: on the GPU with ``-ngl 99``. ``--n-cpu-moe N``
    is the rule for all three kinds (common/arg.cpp ``llm_ffn_exps_block_regex``).
    """
    if not rules:
        return _ALL_KINDS
    rxs = [re.compile(r.rpartition("=")[0]) for r in rules]
    return frozenset(
        k for k in EXPERT_KINDS if any(rx.search(f"blk.0.ffn_{k}_exps.weight") for rx in rxs)
    )


def _expert_kind(name: str) -> str | None:
    """``up`` for ``blk.3.ffn_up_exps.weight``; None for a tensor that is not a routed expert."""
    if not _is_expert(name):
        return None
    stem = name.rpartition("_exps")[0]
    return stem.rpartition("ffn_")[2]


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
    row_split: Sequence[float] | None = None,
    cpu_expert_kinds: frozenset[str] = _ALL_KINDS,
) -> Placement:
    """Assign each (tensor, ggml type, bytes) to a buffer; sizes as ``load_tensors`` logs them.

    ``tensors`` must be in GGUF file order (the mmap range depends on it). With
    ``split_mode="row"`` the 2-D matmul weights of each offloaded layer go to the ``CUDA_Split``
    buffer type, which spreads their rows over the GPUs in ``tensor_split`` proportions
    (ggml-cuda ``ggml_backend_cuda_split_buffer_type``). Which GPU owns the layer itself (its
    norms, its KV cache, its part of the compute graph) depends on the build: before
    llama.cpp PR #10026 (commit c5b0f4b, 2024-10-30; ``params.options.row_main_gpu``) every
    offloaded layer belongs to the main GPU (``llama_model_load``: ``model.buft_layer[i] =
    {split_buft, llama_default_buffer_type_offload(model, main_gpu)}``); from it on
    ``load_tensors``' ``get_layer_buft_list`` gives each layer the GPU that ``--tensor-split``
    picks, as with ``-sm layer``, and the layer's matrices go to that GPU's split buffer type
    (``make_gpu_buft_list``: ``ggml_backend_split_buffer_type(dev_index, tensor_split)`` first,
    then the device's own), whose rows still spread over every GPU. PR #10026's description:
    "Row split mode (-sm row): KV and other non-matrix weights are split among the available
    GPUs in the same way as split by layer mode"; llama.cpp#10152 (b4017, 3x P40) observed it.

    ``row_split``: each GPU's share of a split matrix's rows when it differs from
    ``tensor_split`` read by GPU position (:func:`row_shares`: ``--device`` picking or
    reordering the backend's devices); None = ``tensor_split`` by position, as the layers.
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
        None if row_split is None else tuple(row_split),
        cpu_expert_kinds,
    )
    hit = _PLACEMENTS.get(tensors, key)
    if hit is not None:
        return hit
    row = split_mode == "row" and len(gpus) > 1
    layer_gpus = gpus[:1] if row and params.options.row_main_gpu else gpus
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
    names_col, shapes, layers, types, sizes = _weight_columns(tensors)
    n = len(names_col)
    # GPU index per tensor, column-wise: a layer tensor goes with its layer; the few others
    # (input, output, rope tables, blocks past n_layer) are decided one by one below
    special = -1
    of_layer = {
        il: per_layer[il] if il is not None and il < n_layer else special for il in set(layers)
    }
    gis: list[int | None] = list(map(of_layer.__getitem__, layers))
    for i in compress(range(n), map(eq, gis, repeat(special))):
        name = names_col[i]
        if _is_output(name):
            gis[i] = out_gpu
        elif name.startswith(_INPUT_PREFIXES):
            gis[i] = None  # input layer: token/position embeddings stay on the CPU
        else:
            # rope_freqs / rope factors: created for every layer (TENSOR_DUPLICATED), first in
            # layer 0's buffer
            gis[i] = per_layer[0]
    if n_cpu_moe > 0:  # -ot / --n-cpu-moe: experts of the first N layers stay on the CPU
        for i in compress(range(n), map(is_not_none, gis)):
            il = layers[i]
            if il is None or il >= n_layer or il >= n_cpu_moe:
                continue
            kind = _expert_kind(names_col[i])
            if kind is not None and (kind in cpu_expert_kinds or kind not in _ALL_KINDS):
                gis[i] = None
    buffer_of: dict[int | None, str] = dict(enumerate(names))
    buffer_of[None] = cpu_buffer
    device_of: dict[int | None, str] = dict(enumerate(dev_ids))
    device_of[None] = "cpu"
    bufs = list(map(buffer_of.__getitem__, gis))
    devs = list(map(device_of.__getitem__, gis))
    if params.options.repack:
        # CPU matmul weights of repackable types (not the token embeddings) go to CPU_REPACK
        repack = {
            (sh, ty): len(sh) >= 2 and ty.upper() in REPACK_TYPES
            for sh, ty in set(zip(shapes, types, strict=True))
        }
        for i in compress(range(n), map(is_, gis, repeat(None))):
            if repack[shapes[i], types[i]] and not names_col[i].startswith("token_embd"):
                bufs[i] = "CPU_REPACK"
    last_dim = {sh: sh[-1] if sh else 1 for sh in set(shapes)}
    ne0s = list(map(last_dim.__getitem__, shapes))
    padded = {nb: -(-nb // GGUF_ALIGNMENT) * GGUF_ALIGNMENT for nb in set(sizes)}
    # the CPU_Mapped buffer spans the file range from its first to its last tensor
    mapped = list(compress(range(n), map(eq, bufs, repeat("CPU_Mapped")))) if use_mmap else []
    mapped_range = 0
    if mapped:
        starts = list(accumulate(map(padded.__getitem__, sizes), initial=0))
        mapped_range = starts[mapped[-1]] + sizes[mapped[-1]] - starts[mapped[0]]
    placed = PlacedColumns(names_col, types, tuple(ne0s), sizes, layers, tuple(bufs), tuple(devs))
    if tied_embeddings and (out_gpu is not None or not use_mmap):
        # the output reuses the embedding matrix, duplicated onto the output device
        placed = _with_tied_output(
            placed,
            names[out_gpu] if out_gpu is not None else cpu_buffer,
            dev_ids[out_gpu] if out_gpu is not None else "cpu",
        )
    buffers: dict[str, int] = {}
    buffer_device: dict[str, str] = {}
    # one backend_alloc_bytes per distinct (buffer, type, row length, bytes), in first-seen
    # order (the order llama.cpp logs the buffers in)
    groups = Counter(
        zip(
            placed.buffers,
            placed.devices,
            placed.type_names,
            placed.ne0s,
            placed.n_bytes,
            strict=True,
        )
    )
    for (buf, dev, ty, ne0, nb), count in groups.items():
        if buf == "CPU_Mapped":
            continue
        size = backend_alloc_bytes(ty, ne0, nb, dev_backend[dev]) * count
        buffers[buf] = buffers.get(buf, 0) + size
        buffer_device[buf] = dev
    if mapped:
        buffers["CPU_Mapped"] = mapped_range
        buffer_device["CPU_Mapped"] = "cpu"
    if row:
        _split_rows(
            list(map(PlacedTensor._make, zip(*placed, strict=True))),
            buffers,
            buffer_device,
            gpus,
            names,
            tensor_split,
            row_split,
        )
    counts = dict(Counter(placed.devices))
    layer_dev = tuple(map(device_of.__getitem__, per_layer[:n_layer]))
    placement = Placement(
        columns=placed,
        layer_device=layer_dev,
        output_device="cpu" if out_gpu is None else f"{_dev_prefix(gpus[out_gpu])}:{out_gpu}",
        buffers=buffers,
        buffer_device=buffer_device,
        n_offloaded=n_off,
        tensor_counts=counts,
    )
    _PLACEMENTS.put(tensors, placement, key)
    return placement


def is_not_none(x: object) -> bool:
    return x is not None


def _weight_columns(
    tensors: Sequence[tuple[TensorInfo, str, int]],
) -> tuple[
    tuple[str, ...],
    tuple[tuple[int, ...], ...],
    tuple[int | None, ...],
    tuple[str, ...],
    tuple[int, ...],
]:
    """(names, shapes, layers, ggml types, bytes) of a weights table, in file order."""
    if isinstance(tensors, WeightRows):
        t = tensors.table
        return t.names, t.shapes, t.layers, tensors.types, tensors.n_bytes
    return (
        tuple(t.name for t, _, _ in tensors),
        tuple(t.shape for t, _, _ in tensors),
        tuple(t.layer for t, _, _ in tensors),
        tuple(ty for _, ty, _ in tensors),
        tuple(nb for _, _, nb in tensors),
    )


def _with_tied_output(placed: PlacedColumns, buffer: str, device: str) -> PlacedColumns:
    """``placed`` with the tied output's duplicate after each ``token_embd.weight``."""
    at = list(
        compress(range(len(placed.names)), map(eq, placed.names, repeat("token_embd.weight")))
    )
    for i in reversed(at):
        j = i + 1
        c = placed
        placed = PlacedColumns(
            (*c.names[:j], "output.weight(tied)", *c.names[j:]),
            (*c.type_names[:j], c.type_names[i], *c.type_names[j:]),
            (*c.ne0s[:j], c.ne0s[i], *c.ne0s[j:]),
            (*c.n_bytes[:j], c.n_bytes[i], *c.n_bytes[j:]),
            (*c.layers[:j], None, *c.layers[j:]),
            (*c.buffers[:j], buffer, *c.buffers[j:]),
            (*c.devices[:j], device, *c.devices[j:]),
        )
    return placed


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
    row_split: Sequence[float] | None = None,
) -> None:
    """Move the GPUs' layer matrices into per-device shares of the split buffer."""
    if row_split is not None:
        # already each GPU's fraction of the rows (the rest sit on devices outside the target)
        raw = [float(x) for x in row_split][: len(gpus)]
        raw += [0.0] * (len(gpus) - len(raw))
        total = 1.0
    else:
        raw = [float(x) for x in (tensor_split or ())][: len(gpus)]
        if not raw or not any(x > 0 for x in raw):
            raw = [float(g.capacity_bytes or 1) for g in gpus]
        raw += [0.0] * (len(gpus) - len(raw))
        total = sum(raw)
    prefix = names[0].rstrip("0123456789")
    owner = {name: gpus[i] for i, name in enumerate(names)}
    for p in placed:
        if p.buffer not in owner or p.layer is None or "norm" in p.name or p.ne0 <= 1:
            continue
        if not p.name.endswith(".weight"):
            continue
        size = backend_alloc_bytes(p.type_name, p.ne0, p.n_bytes, owner[p.buffer].backend)
        buffers[p.buffer] -= size
        for i, frac in enumerate(raw):
            share = int(size * frac / total)
            if share:
                key = f"{prefix}_Split:{i}"
                buffers[key] = buffers.get(key, 0) + share
                buffer_device[key] = device_name(gpus[i], i)


def cpu_matmul_weight_bytes(placement: Placement, layers: Sequence[int]) -> int:
    """The most bytes of 2-D matmul weights one of the CPU ``layers`` holds (one pass over the
    tensors, not one per layer: a partial offload of a 20k-layer file was quadratic)."""
    per_layer: dict[int, int] = {}
    c = placement.columns
    for i in compress(range(len(c.names)), map(eq, c.devices, repeat("cpu"))):
        layer = c.layers[i]
        name = c.names[i]
        if layer is not None and name.endswith(".weight") and c.ne0s[i] > 1 and "norm" not in name:
            per_layer[layer] = per_layer.get(layer, 0) + c.n_bytes[i]
    return max(per_layer.get(il, 0) for il in layers)


def output_head_staging_bytes(spec: ModelSpec, placement: Placement, n_outputs: int) -> int:
    """The main GPU's compute buffer at the output head when the output layer stays on the CPU.

    ``ggml_backend_sched_backend_id_from_cur`` (ggml/src/ggml-backend.cpp) sends an op whose
    weight sits in a host buffer of the CPU backend to the first backend whose ``offload_op``
    accepts it, and CUDA's ``ggml_backend_cuda_device_offload_op`` (ggml/src/ggml-cuda/
    ggml-cuda.cu) accepts a ``MUL_MAT`` of ``ne[1] >= 32`` (``min_batch_size``;
    ``GGML_OP_OFFLOAD_MIN_BATCH`` from 2025). The reserve graph's output matmul has
    ``n_outputs = n_tokens`` rows, so with ``-ngl`` = the repeating layers (the output layer,
    ``n_layer + 1``-th, not offloaded) the scheduler's split on the main GPU holds a copy of the
    output weight (``output.weight``, or ``token_embd.weight`` when the embeddings are tied),
    a copy of its input (``n_embd x n_outputs`` f32) and the logits (``n_vocab x n_outputs``
    f32): ollama #8471, command-r7b F16 with 32/33 layers on a 16 GB card, 'allocating
    2508.00 MiB on device 0: cudaMalloc failed' = 2000 MiB (256000 x 4096 f16) + 8 MiB +
    500 MiB, where Ollama 0.5 planned the graph without it. 0 when no output weight is placed.
    """
    c = placement.columns
    found = {
        name: n_bytes
        for name, n_bytes in zip(c.names, c.n_bytes, strict=True)
        if name in ("output.weight", "token_embd.weight")
    }
    weight = found.get("output.weight", found.get("token_embd.weight", 0))
    if not weight:
        return 0
    return weight + (spec.hidden_size + spec.vocab_size) * n_outputs * 4  # f32

"""Ollama 0.1.45-0.3.x on Windows: free memory read through NVML by the CUDA index.

ollama/ollama commit 434dfe30c ("Reintroduce nvidia nvml library for windows", first in
v0.1.45-rc1) refreshes each CUDA GPU's free memory with ``nvml_get_free(nvml, gpu.index,
...)`` (gpu/gpu.go ``GetGPUInfo``; ``nvmlDeviceGetHandleByIndex`` in gpu/gpu_info_nvml.c),
where ``gpu.index`` is the device's index in the CUDA driver's enumeration. The server calls
``GetGPUInfo`` once at start-up (server/routes.go), so every model load after it takes the
refreshed, NVML figure. NVML numbers devices in PCI bus order, while CUDA enumerates them
fastest first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (CUDA's documented default,
``FASTEST_FIRST``). On a machine whose faster card is not first on the bus, Ollama gives each
card the other's free memory. ollama/ollama PR #7473 (commit 29ab9fa7d, "nvidia libs have
inconsistent ordering": "The runtime and management libraries may not always have identical
ordering, so use the device UUID to correlate instead of ID", first in v0.4.0) ended it. NVML
was wired on Windows only (gpu/gpu_linux.go: ``NvmlMgmtName = "" // not currently wired on
linux``).

What follows from the crossed figures (the same releases): ``pickBestFitGPUs`` sorts the GPUs
by that free memory, largest first (server/sched.go), ``EstimateGPULayers`` (commit 6fd04ca92
"Improve multi-gpu handling at the limit", also first in v0.1.45) counts the blocks per GPU in
that order and passes them as ``--tensor-split``, and the runner sees the GPUs in that order
(``CUDA_VISIBLE_DEVICES`` set to their UUIDs, llm/server.go). The smaller card, believed to
hold the larger one's free memory, is listed first and given the larger share. ollama#5239
(0.1.45, Windows, RTX 2080 Ti + RTX 4090, "Mutli-GPU asymmetric VRAM with smaller first causes
ordering bug and incorrect tensor split"): the runner lists the 2080 Ti as device 0 and
allocates "11597" MiB on it, exactly 38 Codestral-22B Q6_K blocks; 0.1.43, which passed no
split (llama.cpp divides by each card's total memory: 18 blocks on the 2080 Ti), loaded.

CUDA's fastest-first heuristic is not published; it is taken here as the higher compute
capability first, ties in bus order (the order the GPUs are given, as ``nvidia-smi`` lists
them). GPUs of one compute capability are never crossed.
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec

__all__ = [
    "NVML_BY_INDEX",
    "crossed_gpu_order",
    "cuda_fastest_first",
    "llama_graph_partial",
    "nvml_by_index",
]

#: Ollama releases that read Windows free memory through NVML by CUDA index: from v0.1.45
#: (commit 434dfe30c) to v0.4.0 (PR #7473, UUID lookup), the end excluded
NVML_BY_INDEX: tuple[tuple[int, ...], tuple[int, ...]] = ((0, 1, 45), (0, 4, 0))


def nvml_by_index(release: tuple[int, ...] | None, os: str | None) -> bool:
    """Whether Ollama ``release`` on ``os`` reads free memory through NVML by CUDA index.

    >>> nvml_by_index((0, 1, 45), "windows"), nvml_by_index((0, 1, 43), "windows")
    (True, False)
    >>> nvml_by_index((0, 3, 14), "windows"), nvml_by_index((0, 4, 0), "windows")
    (True, False)
    >>> nvml_by_index((0, 1, 45), "linux"), nvml_by_index(None, "windows")
    (False, False)
    """
    first, end = NVML_BY_INDEX
    return (os or "").lower() == "windows" and release is not None and first <= release < end


def _capability(d: DeviceTarget) -> tuple[int, int]:
    try:
        major, _, minor = (d.compute_capability or "").partition(".")
        return int(major), int(minor or 0)
    except ValueError:
        return (0, 0)


def cuda_fastest_first(devices: Sequence[DeviceTarget]) -> tuple[int, ...]:
    """Indices of ``devices`` (bus order) in CUDA's default enumeration: the higher compute
    capability first, ties in bus order."""
    return tuple(
        sorted(range(len(devices)), key=lambda i: (_capability(devices[i]), -i), reverse=True)
    )


def crossed_gpu_order(
    devices: Sequence[DeviceTarget], free: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(runner order as indices into ``devices``, the free memory Ollama believes each has, in
    that order) when NVML's bus order and CUDA's enumeration differ; None when they agree.

    ``devices`` and ``free`` are in bus order (NVML index ``i`` is ``devices[i]``); CUDA index
    ``i`` is ``cuda_fastest_first(devices)[i]`` and is read as ``free[i]``. The GPUs are then
    sorted by that figure, largest first (``sort.Reverse(gpu.ByFreeMemory)``)."""
    cuda = cuda_fastest_first(devices)
    if cuda == tuple(range(len(devices))):
        return None
    believed = {dev: free[i] for i, dev in enumerate(cuda)}
    order = tuple(sorted(cuda, key=lambda dev: believed[dev], reverse=True))
    return order, tuple(believed[d] for d in order)


def llama_graph_partial(spec: ModelSpec, n_ctx: int, batch: int) -> int | None:
    """``GGML.GraphSize``'s ``llama`` case (llm/ggml.go, v0.1.45-v0.3.x) for a dense model: the
    partial-offload graph, which ``EstimateGPULayers`` uses for every multi-GPU load
    ("multigpu should always use the partial graph size"). None for the Mixtral sub-cases
    (``ffn_gate_exps`` / ``ffn_gate.0``), not modelled.

    ``4 b E + max(4 b (1 + E + max(C, E)) + E^2 9/16 + 4 C (b H + Dh Hkv), 4 b (E + V) + E V
    105/128)`` with ``b`` the batch, ``E`` the embedding length, ``C`` the context, ``H`` /
    ``Hkv`` the heads, ``Dh`` the head size and ``V`` the vocabulary.

    >>> from oomkit.catalog.models import find_model
    >>> llama_graph_partial(find_model("codestral-22b").spec(), 2048, 512) // 2**20
    256
    """
    if spec.moe is not None:
        return None
    b, e, c = batch, spec.hidden_size, n_ctx
    heads, heads_kv, v = spec.num_attention_heads, spec.num_key_value_heads, spec.vocab_size
    dh = spec.head_dim
    return 4 * b * e + max(
        4 * b * (1 + e + max(c, e)) + e * e * 9 // 16 + 4 * c * (b * heads + dh * heads_kv),
        4 * b * (e + v) + e * v * 105 // 128,
    )

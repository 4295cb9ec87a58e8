"""The main CUDA GPU's compute buffer under partial offload, from PR #6083 (2024-03-18) on.

With a micro-batch of 32 tokens or more, ``ggml_backend_sched_backend_id_from_cur``
(ggml/src/ggml-backend.cpp) sends an op whose weight sits in a host buffer to the first backend
whose ``offload_op`` accepts it (CUDA: ``get_op_batch_size(op) >= 32``, ggml-cuda.cu), and the
scheduler's expansion passes give the GPU the weightless ops around it: a CPU layer runs on the
main GPU. ``ggml_backend_sched_split_graph`` then starts a new split at every node whose weight
lives on another backend ("by starting a new split, the memory of the previously offloaded
weights can be reused", ggml-backend.cpp line 1121 at ggml commit 475e012, January 2025; added by
llama.cpp PR #6083), and with one copy of the inputs (no pipeline parallelism) the weight copy
is an ordinary node of the split, allocated at the split's start and freed by ggml-alloc after
its matmul. So the buffer holds ONE weight copy at a time, not a whole CPU layer, and that copy
reuses the memory the attention freed. What a CPU layer adds over the GPU layers' own graph is
its attention split's inputs: copies of the layer's K and V cache views (``n_kv`` cells each,
the cache stays on the CPU with its layer), live beside the KQ matrix.

Evidence: llama.cpp #11474, DeepSeek-R1 UD-IQ1_S (~2.1 GiB a layer) with 8 of 61 layers on an
RTX 3090 at n_ctx 8192 ran (2025-01-31); a whole staged layer on top of the 2 GiB KQ put it
1.43 GiB over.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import eq

from oomkit.estimate.llamacpp_cuda_fusion import GGML_CUDA_BACKENDS
from oomkit.estimate.llamacpp_kv import KvPlan, plan_kv
from oomkit.estimate.llamacpp_params import LlamaCppParams
from oomkit.estimate.llamacpp_placement import Placement, cpu_matmul_weight_bytes
from oomkit.estimate.llamacpp_unified import NOTE as METAL_NOTE
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec

__all__ = ["largest_cpu_weight_bytes", "offload_split_bytes", "staged_compute_bytes"]

#: the assumption each model of the staging states
WHOLE_LAYER_NOTE = (
    "partial offload: the main GPU also stages one CPU layer's weights "
    "(op_offload of large-batch matmuls)"
)
SPLIT_NOTE = (
    "partial offload: the CPU layers' large-batch ops run on the main GPU (op_offload), one "
    "weight copy at a time; a CPU layer's attention adds copies of its K/V cache views"
)


def largest_cpu_weight_bytes(placement: Placement, layers: Sequence[int]) -> int:
    """The largest single 2-D matmul weight among the CPU ``layers`` (one split's copy)."""
    wanted = set(layers)
    c = placement.columns
    best = 0
    for i in compress(range(len(c.names)), map(eq, c.devices, repeat("cpu"))):
        name = c.names[i]
        if c.layers[i] not in wanted or not name.endswith(".weight") or "norm" in name:
            continue
        if c.ne0s[i] > 1:
            best = max(best, c.n_bytes[i])
    return best


def offload_split_bytes(
    graph_bytes: int, placement: Placement, kv: KvPlan, layers: Sequence[int]
) -> int:
    """The main GPU's compute buffer when the CPU ``layers`` run there split by split.

    The larger of the GPU graph plus one CPU layer's K and V cache views (its attention split)
    and the largest CPU weight copy (a matmul split, after the attention's memory is freed).
    """
    wanted = set(layers)
    views = max(
        (r.k_bytes + r.v_bytes for r in kv.layers if r.layer in wanted and r.cache != "rs"),
        default=0,
    )
    return max(graph_bytes + views, largest_cpu_weight_bytes(placement, layers))


def staged_compute_bytes(
    graph_bytes: int,
    spec: ModelSpec,
    params: LlamaCppParams,
    placement: Placement,
    layers: Sequence[int],
    gpu: DeviceTarget,
) -> tuple[int, str]:
    """(the main GPU's compute buffer, the assumption) under partial offload with a large batch.

    On a discrete CUDA/ROCm GPU from PR #6083 on (``offload_op_splits``), and on Metal from
    llama.cpp PR #15995 on (``metal_op_offload``): :func:`offload_split_bytes`. On Metal before
    it, ggml-metal's ``offload_op`` refuses every op (:mod:`oomkit.estimate.llamacpp_unified`):
    the graph alone. Elsewhere (other backends, whose ``offload_op`` this does not model;
    builds between PR #4766 and PR #6083) the graph plus one whole CPU layer's weights.
    """
    metal = gpu.backend == "metal"
    if metal and not params.options.metal_op_offload:
        return graph_bytes, METAL_NOTE
    cuda = gpu.backend in GGML_CUDA_BACKENDS and not gpu.unified_memory
    if params.options.offload_op_splits and (cuda or metal):
        kv = plan_kv(spec, params)
        return offload_split_bytes(graph_bytes, placement, kv, layers), SPLIT_NOTE
    return graph_bytes + cpu_matmul_weight_bytes(placement, layers), WHOLE_LAYER_NOTE

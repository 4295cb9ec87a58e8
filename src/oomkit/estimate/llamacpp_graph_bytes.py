"""The simulated compute buffer of one llama.cpp reserve (sub-)graph, cached, and the whole-graph
"VRAM scratch buffer" of builds before ggml_backend_sched (PR #4766)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from oomkit.estimate.llamacpp_compute import GraphShape
from oomkit.estimate.llamacpp_cuda_fusion import GGML_CUDA_BACKENDS
from oomkit.estimate.llamacpp_params import BUFFER_ALIGNMENT
from oomkit.estimate.llamacpp_stack import stack_compute_bytes
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec

__all__ = ["graph_bytes", "graph_bytes_inputs", "legacy_scratch"]


# The planner and the doctor re-estimate one model many times with the same graph shape (only
# the quant or the layer split changes): the allocator simulation of one (sub-)graph depends
# only on these arguments, all frozen, so it is computed once.
@lru_cache(maxsize=1024)
def graph_bytes_inputs(
    spec: ModelSpec,
    sh: GraphShape,
    layers: tuple[int, ...] | None,
    with_input: bool,
    with_output: bool,
    alignment: int,
) -> tuple[int, int]:
    """(compute buffer bytes, bytes of the graph's inputs) of one reserve (sub-)graph."""
    if layers is None:
        return stack_compute_bytes(spec, sh, alignment=alignment)
    return stack_compute_bytes(
        spec, sh, layers=layers, with_input=with_input, with_output=with_output, alignment=alignment
    )


def graph_bytes(
    spec: ModelSpec,
    sh: GraphShape,
    layers: tuple[int, ...] | None,
    with_input: bool,
    with_output: bool,
    alignment: int,
) -> int:
    return graph_bytes_inputs(spec, sh, layers, with_input, with_output, alignment)[0]


def legacy_scratch(
    spec: ModelSpec,
    sh: GraphShape,
    gpus: Sequence[DeviceTarget],
    gpu_layers: dict[int, list[int]],
) -> int | None:
    """The main CUDA GPU's compute memory of builds before PR #4766 (2024-01-12), else None.

    ``llama_new_context_with_model`` of those builds (llama.cpp vendored by llama-cpp-python
    0.2.24, vendor/llama.cpp/llama.cpp lines 9407-9445) measured the worst-case graph, CPU and
    GPU nodes alike, with ONE measure allocator (``alloc_size =
    ggml_allocr_alloc_graph(ctx->alloc, gf)``, logged as 'compute buffer total size' with the
    graph structs), resized the host ``buf_alloc`` to it and passed the same size to
    ``ggml_cuda_set_scratch_size``, logged as 'VRAM scratch buffer'; ggml-cuda.cu
    (``ggml_cuda_assign_scratch_offset``, line 9146) ``cudaMalloc``s that whole size once on
    the main device when the first offloaded node is placed. Mixtral-8x7B, n_ctx 512, 22/33
    layers (llama.cpp#4381, 2023-12-13): 'VRAM scratch buffer: 114.54 MiB'."""
    if not gpus or not gpu_layers or not sh.legacy_alloc:
        return None
    if gpus[0].backend not in GGML_CUDA_BACKENDS or gpus[0].unified_memory:
        return None
    return graph_bytes(spec, sh, None, True, True, BUFFER_ALIGNMENT.get(gpus[0].backend, 128))

"""llama.cpp's compute buffers per backend, and which GPU stages the CPU layers' weights.

Moved from :mod:`oomkit.estimate.llamacpp` (one concept: the scheduler's per-backend compute
buffers). The staging device: ``ggml_backend_sched_backend_id_from_cur`` gives an op whose
weight sits in a host buffer to the FIRST backend, in the scheduler's order, whose
``offload_op`` accepts it (``for (int b = 0; b < src_backend_id; b++)``: ggml-backend.c line
1163 at ggml commit 952fb4c, llama.cpp PR #6083; ggml-backend.cpp line 960 at ggml commit
d99724f, 2026). The scheduler's backends are the context's GPU backends in device order, then
the CPU: llama.cpp of March 2024 created one CUDA backend per device for ``-sm layer`` ("with
split_mode LLAMA_SPLIT_MODE_NONE or LLAMA_SPLIT_MODE_ROW, only the main GPU backend is used",
``llama_new_context_with_model``), and from PR #10026 on ``llama_context`` inits one backend
per ``model.devices`` entry (src/llama-context.cpp, "GPU backends"), where only ``-sm none``
keeps just the main GPU (``llama_model_load_from_file_impl``: "if using single GPU mode,
remove all except the main GPU"). So under ``-sm layer`` the staging lands on the first GPU
whether or not it holds layers (``-ts 0,1``), not on the lowest GPU with layers; with
``-sm none`` the one GPU left is the main GPU. oomkit has no ``--main-gpu`` setting: the
first GPU listed is the main one.
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.estimate.llamacpp_compute import GraphShape, backend_graph_shape, host_compute_bytes
from oomkit.estimate.llamacpp_cuda_fusion import GGML_CUDA_BACKENDS
from oomkit.estimate.llamacpp_graph_bytes import graph_bytes, graph_bytes_inputs, legacy_scratch
from oomkit.estimate.llamacpp_offload_splits import staged_compute_bytes
from oomkit.estimate.llamacpp_params import BUFFER_ALIGNMENT, LlamaCppParams
from oomkit.estimate.llamacpp_placement import Placement, output_head_staging_bytes
from oomkit.spec.hardware import DeviceTarget, device_label
from oomkit.spec.model import ModelSpec

__all__ = ["OP_OFFLOAD_MIN_BATCH", "STAGING_GPU", "compute_buffers"]

#: op_offload: the scheduler sends CPU-weight matmuls of big batches to the GPU
#: (ggml-backend.cpp ggml_backend_sched, ``min_batch_size`` of the CUDA backend's offload_op)
OP_OFFLOAD_MIN_BATCH = 32


#: the GPU whose compute buffer stages the CPU weights: the scheduler's backend 0, the first
#: GPU of the context (see the module docstring), whether or not it holds layers
STAGING_GPU = 0


def compute_buffers(
    spec: ModelSpec,
    params: LlamaCppParams,
    sh: GraphShape,
    placement: Placement,
    gpus: Sequence[DeviceTarget],
    names: Sequence[str],
    split_mode: str = "layer",
) -> tuple[dict[str, int], dict[str, str], list[str]]:
    """Compute buffer per backend buffer name; notes on what was modelled. Pipeline copies only
    with ``-sm layer`` (llama-context.cpp ``pipeline_parallel``: ``LLAMA_SPLIT_MODE_LAYER``)."""
    notes: list[str] = []
    out: dict[str, int] = {}
    where: dict[str, str] = {}
    n_layer = spec.num_hidden_layers
    cpu_layers = [i for i, d in enumerate(placement.layer_device) if d == "cpu"]
    host_name = "CPU"
    if gpus and not all(g.unified_memory for g in gpus):
        host_name = f"{names[0].rstrip('0123456789')}_Host"
    if not gpus:
        out["CPU"] = graph_bytes(spec, sh, None, True, True, BUFFER_ALIGNMENT["cpu"])
        where["CPU"] = "cpu"
        return out, where, notes
    gpu_layers: dict[int, list[int]] = {}
    for il, d in enumerate(placement.layer_device):
        if d != "cpu":
            gpu_layers.setdefault(int(d.split(":")[1]), []).append(il)
    out_dev = placement.output_device
    out_gi = None if out_dev == "cpu" else int(out_dev.split(":")[1])
    multi = len(gpu_layers) > 1
    # pipeline parallelism: several GPUs, everything offloaded (llama_context: n_copies = 4)
    full = placement.n_offloaded == n_layer + 1
    n_copies = 4 if multi and full and split_mode == "layer" else 1
    if n_copies > 1:
        notes.append("pipeline parallelism: scheduler inputs kept in 4 copies")
    stager = STAGING_GPU
    legacy = legacy_scratch(spec, sh, gpus, gpu_layers)
    for gi, g in enumerate(gpus):
        layers = gpu_layers.get(gi, [])
        with_output = out_gi == gi
        if not layers and not with_output and not (gi == 0 and cpu_layers):
            continue
        gsh = backend_graph_shape(sh, params, g.backend) if spec.moe is not None else sh
        size, inputs = graph_bytes_inputs(
            spec, gsh, tuple(layers), False, with_output, BUFFER_ALIGNMENT.get(g.backend, 128)
        )
        if n_copies > 1:
            size += (n_copies - 1) * inputs
        if legacy is not None and gi == 0:
            size = legacy
            notes.append(
                "builds before ggml_backend_sched (PR #4766): the main GPU's 'VRAM scratch "
                "buffer' is the whole graph's measured compute buffer, CPU layers and the "
                "output head included"
            )
        staged = params.options.sched_staging  # ggml_backend_sched from PR #4766 (2024-01-12)
        if staged and gi == stager and cpu_layers and sh.n_tokens >= OP_OFFLOAD_MIN_BATCH:
            # one weight copy per split from PR #6083 (llamacpp_offload_splits)
            size, note = staged_compute_bytes(size, spec, params, placement, cpu_layers, g)
            notes.append(note)
        if (
            staged
            and gi == stager
            and out_gi is None
            and (layers or cpu_layers)
            and g.backend in GGML_CUDA_BACKENDS
            and not g.unified_memory
            and sh.n_outputs >= OP_OFFLOAD_MIN_BATCH
        ):
            head = output_head_staging_bytes(spec, placement, sh.n_outputs)
            if head > size:
                size = head
                notes.append(
                    "output layer on the CPU: the main GPU runs its large-batch matmul "
                    "(op_offload), holding a copy of the output weight and the logits"
                )
        out[names[gi]] = size
        where[names[gi]] = device_label(g, gi)
    # host side: graph inputs and the embedding lookup, plus the CPU layers' sub-graph
    if legacy is not None:  # ctx->buf_alloc: the same whole-graph measure, in RAM
        host = graph_bytes(spec, sh, None, True, True, BUFFER_ALIGNMENT["cpu"])
        cpu_layers = []
    elif cpu_layers:
        host = graph_bytes(
            spec, sh, tuple(cpu_layers), True, out_gi is None, BUFFER_ALIGNMENT["cpu"]
        )
    else:
        host = host_compute_bytes(spec, sh)
    out[host_name] = host * (n_copies if n_copies > 1 else 1) if not cpu_layers else host
    where[host_name] = "cpu"
    return out, where, notes

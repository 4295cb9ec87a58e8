"""vLLM's CUDA-graph memory per rank: how many graphs a generation captures, times their cost.

What vLLM captures, by generation (read in the sdists/wheels of the releases named):

* V0 (``v0-*`` engines, 0.2.6-0.10 with the V1 flag off): ``ModelRunner.capture_model``
  (vllm/worker/model_runner.py, 0.6.3 l. 1388-1530) captures ``model.forward`` (not the logits)
  for every ``_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 i]`` up to ``max_num_seqs`` padded to 8
  (``_get_max_graph_batch_size``), largest first, all sharing one memory pool
  (``self.graph_memory_pool = graph_runner.graph.pool()``) and one output buffer sliced per
  size. A capture is one whole-model graph per batch size; the default 256 sequences give 35.
  It runs after ``determine_num_available_blocks`` (vllm/worker/worker.py
  ``_warm_up_model``), so the graphs live in the ``1 - gpu_memory_utilization`` headroom.
* V1 0.8-0.10 (``v1-2025-global``, ``v1-0.8.0``, ``v1-2025``): PIECEWISE graphs via
  torch.compile: one graph per piece between attention ops (``num_layers + 1`` per size; the
  attention runs eager). Sizes ``[1, 2, 4] + range(8, min(2 max_num_seqs, 512) + 1, 8)``
  filtered to ``max_num_batched_tokens`` (0.10.0 vllm/config.py ``SchedulerConfig``: "Default
  set cuda_graph_sizes to [min(max_num_seqs * 2, 512)]"; ``VllmConfig._set_cudagraph_sizes``).
* 0.11.0 (``v1-0.11``): the same sizes (0.11.0 vllm/config/__init__.py l. 551-612) with
  FULL_AND_PIECEWISE by default: also one FULL graph of the whole model per uniform-decode
  size ``<= max_num_seqs`` (vllm/v1/cudagraph_dispatcher.py l. 84-93).
* 0.11.1+ (``v1-0.11.1`` on): FULL_AND_PIECEWISE with the sizes thinned above 256:
  ``[1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16)``, ``max = min(2 max_num_seqs,
  512, max_num_batched_tokens)`` (0.11.1 vllm/config/vllm.py l. 807-811, 852, 887; 0.13.0 l.
  1023-1110). From 0.18 PR #30515's ``profile_cudagraph_memory`` measures them before sizing the
  KV cache, charged to the budget from 0.20.0 (PR #38284; ``VllmEngine.charges_cudagraphs``,
  :func:`~oomkit.estimate.vllm_engines.graph_estimate_charged`).

What each graph costs: vLLM's own estimate (``profile_cudagraph_memory``, gpu_model_runner.py
of 0.18+) is ``first_capture + per_graph x (n - 1)`` per mode: the shared pool is the largest
size's working set, then every further graph adds a roughly constant amount ("Use at least 1
MiB per graph for driver overhead"): the instantiated graph's kernel nodes, so it grows with
the layers the graph spans. Here: the largest capture's one-layer live set (the pool, reused
by every smaller size captured after it) + ``layer_graphs x`` :data:`PER_LAYER_GRAPH`.

On ROCm (``hip=True``) the per-node driver cost is not CUDA's: HIP's ``hipGraphInstantiate``
(ROCm/clr hipamd/src/hip_graph_internal.cpp, ``GraphExec::CaptureAQLPackets``) pre-forms the AQL
packets and allocates ONE kernel-argument pool per instantiated graph, ``sum of the kernel
nodes' kernarg sizes + kKernArgChunkSize`` (``constexpr uint32_t kKernArgChunkSize = 128 * Ki``),
in VRAM when the BAR is large (``GraphKernelArgManager::AllocGraphKernargPool``:
``deviceLocalAlloc``, else pinned host memory). So a graph costs 128 KiB + its kernel arguments
(:data:`HIP_GRAPH_POOL`, :data:`HIP_KERNARG_PER_LAYER`): a PIECEWISE capture (``layers + 1``
graphs per size) pays 128 KiB per piece, a FULL or V0 graph once per size. What the graphs are
does not change on ROCm: vLLM 0.8.5 V1 and 0.11.1 on an MI100 (gfx908) use the Triton backend
(vllm/platforms/rocm.py ``get_attn_backend_cls``: 0.8.5 l. 174-177 "Using Triton Attention backend
on V1 engine"; 0.11.1 l. 255-275, AITER off unless ``VLLM_ROCM_USE_AITER=1``), whose builder
declares ``AttentionCGSupport.ALWAYS`` (0.11.1 vllm/v1/attention/backends/triton_attn.py l. 70),
so 0.11.1 keeps FULL_AND_PIECEWISE (vllm/config/vllm.py l. 462-470; no downgrade in
gpu_model_runner.py ``_check_and_update_cudagraph_mode``), and 0.8.5 V1 captures PIECEWISE
graphs (vllm/config.py l. 3885-3899, sizes l. 4032-4046) as on CUDA. The custom all-reduce is
off below MI300 (rocm.py ``use_custom_allreduce``: gfx94/gfx95 only; 0.8.5 vllm/config.py l.
1802, 0.11.1 vllm/config/parallel.py l. 639), so TP's all-reduces are RCCL kernel nodes inside
the graphs: their arguments are in :data:`HIP_KERNARG_PER_LAYER`.
"""

from __future__ import annotations

from oomkit.estimate.hf_activations import forward_peak_bytes
from oomkit.spec.model import ModelSpec
from oomkit.units import KiB

__all__ = [
    "HIP_GRAPH_POOL",
    "HIP_KERNARG_PER_LAYER",
    "PER_LAYER_GRAPH",
    "capture_sizes",
    "cudagraph_bytes",
    "graph_execs",
    "layer_graphs",
]

#: Memory per layer per captured size. The median (215 KiB) of the development logs' "Graph
#: capturing finished in N secs, took X GiB" and "Estimated CUDA graph memory" figures, less
#: the pool, divided by the layer-graphs this module counts (tests/test_vllm_cudagraph.py lists
#: all nine: 95-397 KiB, dense TP1 182-219 KiB): one figure per model/GPU/version, not one
#: record's. MoE layers (more
#: kernels per layer) and NCCL captured in the graph (TP without the custom all-reduce) sit
#: above it: that span is in the verdict band (``CUDAGRAPH_POOL_MAX``).
PER_LAYER_GRAPH = 216 * KiB

#: ROCm: the kernel-argument pool every instantiated HIP graph allocates on top of its kernels'
#: arguments (ROCm/clr hipamd/src/hip_graph_internal.cpp ``kKernArgChunkSize = 128 * Ki``, "Add
#: a larger initial pool to accomodate for any updates to kernel args").
HIP_GRAPH_POOL = 128 * KiB
#: ROCm: one decoder layer's kernel arguments in a graph's pool (``GetKerArgSize`` of each
#: kernel node): ~15-25 kernels (norms, GEMMs, RoPE, activation, MoE routing, RCCL all-reduces
#: under TP), each its explicit arguments + 256 B of hidden arguments (code object v5): < 1 KiB
#: each; 16 KiB bounds it.
HIP_KERNARG_PER_LAYER = 16 * KiB

_V0 = ("v0-2023-allocated", "v0-2023-total", "v0-2023", "v0-2024", "v0-2025")
_PIECEWISE_ONLY = ("v1-2025-global", "v1-0.8.0", "v1-2025")


def _pad8(n: int) -> int:
    return n if n <= 2 else 4 if n <= 4 else -(-n // 8) * 8


def capture_sizes(engine: str, *, max_num_seqs: int, max_num_batched_tokens: int) -> list[int]:
    """The batch sizes a generation captures by default (ascending).

    >>> len(capture_sizes("v0-2023", max_num_seqs=256, max_num_batched_tokens=4096))
    35
    >>> len(capture_sizes("v1-2025", max_num_seqs=256, max_num_batched_tokens=8192))
    67
    >>> len(capture_sizes("current", max_num_seqs=256, max_num_batched_tokens=8192))
    51
    """
    if engine in _V0:
        top = _pad8(max_num_seqs)
        return [s for s in [1, 2, 4, *range(8, top + 1, 8)] if s <= top]
    top = min(2 * max_num_seqs, 512, max_num_batched_tokens)
    if engine in _PIECEWISE_ONLY or engine == "v1-0.11":
        sizes = [1, 2, 4, *range(8, top + 1, 8)]
    else:
        sizes = [1, 2, 4, *range(8, min(top + 1, 256), 8), *range(256, top + 1, 16)]
    return [s for s in sizes if s <= top]


def layer_graphs(
    engine: str, *, layers: int, max_num_seqs: int, max_num_batched_tokens: int
) -> tuple[int, int]:
    """``(layer x captured-size count, largest captured size)`` for one rank's layers.

    V0 and the FULL graphs of 0.11+ span every layer once per size; PIECEWISE graphs split the
    same layers into ``layers + 1`` graphs (one node set per layer all the same).
    """
    sizes = capture_sizes(
        engine, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens
    )
    n = len(sizes)
    if engine not in _V0 and engine not in _PIECEWISE_ONLY:  # FULL_AND_PIECEWISE (0.11+)
        n += sum(1 for s in sizes if s <= max_num_seqs)
    return n * layers, max(sizes, default=0)


def graph_execs(engine: str, *, layers: int, max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """How many graphs one rank instantiates: one per size for V0 and FULL graphs, ``layers +
    1`` per size for PIECEWISE (torch.compile splits at each attention op).

    >>> graph_execs("v0-2023", layers=32, max_num_seqs=256, max_num_batched_tokens=4096)
    35
    >>> graph_execs("v1-0.11.1", layers=64, max_num_seqs=256, max_num_batched_tokens=2048)
    3350
    """
    sizes = capture_sizes(
        engine, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens
    )
    if engine in _V0:
        return len(sizes)
    full = 0 if engine in _PIECEWISE_ONLY else sum(1 for s in sizes if s <= max_num_seqs)
    return len(sizes) * (layers + 1) + full


def cudagraph_bytes(
    spec: ModelSpec,
    engine: str,
    *,
    layers: int,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    elem_bytes: int,
    tp: int,
    hip: bool = False,
) -> tuple[int, str]:
    """CUDA-graph memory of one rank: (bytes, how it was counted); ``hip``: a ROCm build."""
    n, largest = layer_graphs(
        engine,
        layers=layers,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
    )
    pool = forward_peak_bytes(spec, tokens=largest, elem_bytes=elem_bytes, tp=tp).n_bytes
    graphs = n // max(1, layers)
    if hip:
        execs = graph_execs(
            engine,
            layers=layers,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens,
        )
        why = (
            f"HIP: {execs} graphs x {HIP_GRAPH_POOL // KiB} KiB kernarg pool + {graphs} sizes "
            f"x {layers} layers x {HIP_KERNARG_PER_LAYER // KiB} KiB + the pool of the largest "
            f"({largest} tokens)"
        )
        return execs * HIP_GRAPH_POOL + n * HIP_KERNARG_PER_LAYER + pool, why
    why = (
        f"{graphs} captured sizes x {layers} layers x {PER_LAYER_GRAPH // KiB} KiB "
        f"+ the pool of the largest ({largest} tokens)"
    )
    return n * PER_LAYER_GRAPH + pool, why

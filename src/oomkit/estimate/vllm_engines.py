"""How each generation of vLLM sizes its KV cache, as data, plus its non-torch defaults.

vLLM changed its profiling rule several times; a logged figure can only be checked against the
rule of the version that printed it. Every row cites the code it models.

* ``current`` (vLLM 0.21+): ``Worker.determine_available_memory`` (vllm/v1/worker/
  gpu_worker.py): ``available = requested_memory - non_kv_cache_memory -
  cudagraph_memory_estimate_applied`` with ``requested_memory = ceil(total x
  gpu_memory_utilization)``; the init snapshot is taken after NCCL is initialised, so the CUDA
  context is not charged; the CUDA-graph estimate (PR #30515) is charged to the budget
  (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0`` turns it off); ``gpu_memory_utilization``
  defaults to 0.92; top-k/top-p sampling uses FlashInfer when it is installed (PR #40376: the
  0.21.0 sdist's vllm/envs.py reads ``VLLM_USE_FLASHINFER_SAMPLER`` as ``... else True``).
* ``v1-0.20`` (vLLM 0.20.0-0.20.x): the ``current`` budget with the ``v1-0.17`` sampler. The
  0.20.0 sdist on PyPI (uploaded 2026-04-27; 0.20.1 and 0.20.2 alike) already has PR #38284:
  vllm/envs.py ``os.getenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "1")`` and
  vllm/config/cache.py ``gpu_memory_utilization: float = Field(default=0.92, ...)`` (PR #38284
  raised it from 0.9 "to preemptively address the impact"), although its comments and its
  startup line say "enabled (default since v0.21.0)" (a 0.20.2 log prints that line with the
  estimate charged). ``VLLM_USE_FLASHINFER_SAMPLER`` still reads ``... else None`` (opt-in),
  so top-k/top-p go through the Triton kernel as in 0.17-0.19.
* ``v1-0.17`` (vLLM 0.17.0-0.19.x): the ``v1-0.11.1`` rule, but PR #33538 ("Triton-based
  Top-k and Top-p sampler kernels"; in the 0.17.0 sdist of 2026-03-07, not in 0.16.0's)
  routes ``apply_top_k_top_p`` to ``apply_top_k_top_p_triton`` from 8 rows on: no sort, so the
  profile's dummy sampler holds ~16 B per ``max_num_seqs x vocab`` entry instead of ~38
  (TheBuccaneer/vllm-offload-profiles at 547be90, 0.17.1 on an RTX 3090: ``total x util -
  available KV`` minus "Model loading took" is 0.53-0.56 GiB at 256 sequences, where the sort
  path would need 1.2-1.4 GiB for the sampler alone).
  0.18.0 and 0.19.x run PR #30515's ``profile_cudagraph_memory`` inside
  ``memory_profiling`` (a dummy capture over a ``max_cudagraph_capture_size``-block KV cache:
  "Profiling CUDA graph memory: ...", "Estimated CUDA graph memory: X GiB total"), but
  ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to "0" (0.18.0, 0.19.0 and 0.19.1
  vllm/envs.py), so the estimate is only logged ("In v0.19, CUDA graph memory profiling will
  be enabled by default ... To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"),
  and the torch peak charged is read before that capture (``profile_torch_peak``, 0.19.1
  gpu_worker.py): the budget rule is 0.17.0's (0.17.0 has no graph profiling at all). The
  generation table's ``v1-0.18`` row (0.18.0-0.19.x) runs this engine with the
  ``graph_profiling`` effect: there the variable set to 1 charges the estimate
  (:func:`graph_estimate_charged`).
* ``v1-0.11.1`` (vLLM 0.11.1-0.16.x): the ``v1-0.11`` rule with the PyTorch-native sort
  sampler. PR #26859 ("Disable FlashInfer sampler by default", merged 2025-10-15, after the
  v0.11.0 release) made FlashInfer's top-k/top-p kernel opt-in
  (vllm/v1/sample/ops/topk_topp_sampler.py: ``if envs.VLLM_USE_FLASHINFER_SAMPLER:`` "Users
  must opt in explicitly via VLLM_USE_FLASHINFER_SAMPLER=1", else ``forward_native``); PR
  #40376 ("Enable FlashInfer top-k/top-p sampler by default", merged 2026-04-20) turned it
  back on for the ``current`` generation. ``_dummy_sampler_run`` in the profile run sorts
  ``[max_num_seqs, vocab]`` fp32 logits, so the torch peak is the sort path's: llm-d-benchmark's
  H100 logs of ``vllm/vllm-openai:latest`` in January 2026 (config_explorer/
  empirical-vllm-memory-results.md at 4f4d449) show a peak activation of 4.76-5.64 GiB for
  dense models from Qwen3-0.6B to Llama-3.3-70B, ~38 B per ``max_num_seqs x vocab`` entry.
* ``v1-0.11`` (vLLM 0.11.0): the same rule without the CUDA-graph estimate. PR #30515
  (first in the 0.18.0 sdist: 0.17.0's gpu_worker.py has no ``profile_cudagraph_memory``; a
  0.17.0rc1 log in its thread runs with it "not enabled") added ``profile_cudagraph_memory``
  behind ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``, default 0 until 0.20.0 (``v1-0.20``);
  vllm/envs.py says "Enabled by default as of v0.21.0" (quoted in PR #41099's review,
  2026-04-28, and in the 0.20.0 sdist, whose default is already "1"), and 0.2x startup logs
  print "CUDA graph memory profiling is enabled (default
  since v0.21.0) ... To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0" (gpustack/
  runner#251). Before it the KV cache takes the whole ``total x util`` budget and the graphs
  (FULL_AND_PIECEWISE by default since 0.11.0) are captured afterwards, in the
  ``1 - gpu_memory_utilization`` headroom. FlashInfer's sampler when it is installed (the
  image; the pip wheel requires it only from PR #26443, after 0.11.0): the sort path's extra
  peak goes into the verdict (:mod:`oomkit.estimate.vllm_sampler`).
* ``v1-0.8.0`` (vLLM 0.8.0-0.8.3): the ``v1-2025-global`` rule with ``max_num_seqs`` 1024 on
  every GPU (:func:`engine_batch_defaults`; PR #16158 reverted it for 0.8.4).
* ``v1-2025-global`` (V1 engine, vLLM 0.8.0-0.9.0): ``Worker.determine_available_memory``
  charged ``torch peak + (total - free - torch allocated)`` against ``total x util`` (the V1
  worker of PR #10528): every byte on the GPU that torch did not allocate is charged, the CUDA
  context and the memory of OTHER processes included ("V1's memory profiling incorrectly counts
  memory used by other processes as non_torch_allocations", PR #14419, then PR #19312). Fixed by
  PR #18974 (released in 0.9.1): a second instance at ``util`` 0.4 next to one holding 0.4 of the
  GPU fails with "No available memory for the cache blocks" on 0.8.x V1 and starts on V0
  (vllm#17431).
* ``v1-2025`` (V1 engine, vLLM 0.9.1-0.10): ``memory_profiling(init_snapshot, weights_memory)``
  (vllm/utils ``MemorySnapshot``: non-torch = ``total - free - torch.cuda.memory_reserved()``,
  charged as the increase since the snapshot taken in ``init_device``, so the CUDA context is
  not charged); graphs are captured afterwards in the ``1 - gpu_memory_utilization`` headroom;
  FlashInfer's top-k/top-p sampler whenever FlashInfer is installed (PR #15777 until PR #26859),
  as in the vllm-openai image; a pip install without it sorts (the 5.62 GiB torch peak logged
  for Qwen3-235B in vllm#21429 is the sort path's working set; FlashInfer's is a third of it):
  the difference goes into the verdict (:mod:`oomkit.estimate.vllm_sampler`).

Whether the snapshot precedes the communicator init or follows it (later versions: "Now take
memory snapshot after NCCL is initialized"), NCCL >= 2.22 connects lazily
(``NCCL_RUNTIME_CONNECT=1``): its channel buffers appear during the profile run's first
collectives and are charged as non-torch growth in every generation.
* ``v0-2025`` (V0 ``worker.py`` 0.6.5-0.9, PRs #10511/#12126): the V1 rule above (non-torch
  increase since ``init_device``) with V0's batch defaults.
* ``v0-2024`` (V0 ``worker.py`` 0.6.4, PR #9352; not in 0.6.3.post1, whose worker still
  charges ``init_free - free``): ``peak = allocated_bytes.all.peak +
  (total - free - allocated)`` so every non-torch byte on the GPU is charged, the CUDA context
  included. Without chunked prefill the profile batch is ``max(max_model_len, 2048)`` tokens;
  above 32K ``max_model_len`` the OpenAI server turns chunked prefill on (2048 tokens).
* ``v0-2023-allocated`` (vLLM 0.1.0-0.2.4, ``Worker.profile_num_available_blocks``):
  ``peak_memory = torch.cuda.max_memory_allocated()`` after the profile run, so only the torch
  allocations are charged: no CUDA context, NCCL buffers or other processes, and not the
  caching allocator's reserve (a tensor freed while recorded on the NCCL stream leaves the
  allocated counter at once, ``DeviceCachingAllocator::free``). PR #2031 ("Fix profiling for
  non-torch memory", 0.2.5) replaced it with ``total - free``.
* ``v0-2023-total`` (PR #2031, vLLM 0.2.5-0.3.0): ``peak = total - free`` after the profile
  run (``torch.cuda.mem_get_info``), i.e. the caching allocator's reserve plus every other byte
  on the GPU: the CUDA context and other processes' memory. ``v0-2023`` (PR #2863, "Fix memory
  profiling when GPU is used by multiple processes", 0.3.1-0.6.3.post1): ``peak = init_free - free``
  with ``init_free`` taken in ``Worker.init_device`` once the context exists: the allocator's
  reserve and NCCL's buffers only ("we assume that the other processes using the same GPU did
  not change their memory usage during the profiling"). With TP, ``torch.distributed.all_reduce``
  records its input on the NCCL stream (before ``TORCH_NCCL_AVOID_RECORD_STREAMS=1``, set later in
  ``Worker.init_device``), so every all-reduced ``[T, h]`` activation stays reserved until the
  stream syncs: up to ``(2 L + 1) x T x h x dtype`` per rank.

The V0 engines (``v0-*``) are also selected by the V1 flag being off in 0.7-0.9.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from oomkit.errors import UnknownNameError, close_matches
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

__all__ = [
    "CUDAGRAPH_POOL_MAX",
    "DEFAULT_ENGINE",
    "VLLM_ENGINES",
    "VllmEngine",
    "engine_batch_defaults",
    "graph_estimate_charged",
    "non_torch_bytes",
    "on_nvswitch",
    "v1_batch_defaults",
    "vllm_engine",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmEngine:
    """The profiling rule of one vLLM generation."""

    name: str
    summary: str
    default_util: float
    #: V1 always chunks prefills: the profile batch is ``max_num_batched_tokens``
    chunked_prefill: bool
    #: top-k/top-p through FlashInfer (else the PyTorch sort path)
    flashinfer_sampler: bool
    #: non-torch memory charged includes the CUDA context (0.6.4 rule)
    charges_cuda_context: bool
    #: peak = the caching allocator's reserve (2023 rule): record_stream'd all-reduce inputs
    reserved_peak: bool
    #: the CUDA-graph estimate is subtracted from the KV budget
    charges_cudagraphs: bool
    #: V1 hybrid KV-cache manager: sliding-window layers get their own block groups
    hybrid_kv_groups: bool
    #: ``requested_memory = ceil(total x util)`` (V1 0.11+) rather than ``int(total x util)``
    ceil_budget: bool = False
    #: memory other processes hold on the GPU is charged to this instance's budget
    charges_other_processes: bool = False
    #: the release that stops charging it (the verdict's safe change), when it does
    other_processes_fix: str = ""
    #: non-torch memory (context, NCCL, workspaces) is charged at all (False: the profile peak
    #: is ``torch.cuda.max_memory_allocated()``, vLLM before 0.2.5)
    charges_non_torch: bool = True
    #: top-k/top-p through vLLM's Triton kernel from 8 rows on (0.17-0.20, PR #33538)
    triton_sampler: bool = False
    #: FlashInfer's top-k/top-p whenever FlashInfer is importable (0.9.1-0.11.0): the image
    #: ships it, a pip install may not (:mod:`oomkit.estimate.vllm_sampler`)
    flashinfer_if_installed: bool = False
    #: V1's default ``max_num_seqs`` is 1024 on every GPU and its large-GPU test is "h100" or
    #: "h200" in the device name (0.8.0-0.8.3, before PR #16158); else
    #: :func:`engine_batch_defaults`'s later rule
    seqs_1024_everywhere: bool = False
    #: "GPU KV cache size" is ``int(max_concurrency x max_model_len)`` (0.21.0's
    #: kv_cache_utils.py ``_report_kv_cache_config``); before, ``num_blocks // n_groups x
    #: min_block_size``: a hybrid model's sliding groups then count as if they held every token
    concurrency_tokens: bool = False


VLLM_ENGINES: Mapping[str, VllmEngine] = MappingProxyType(
    {
        "current": VllmEngine(
            name="current",
            summary=(
                "vLLM 0.21+: ceil(total x 0.92) - non-KV - CUDA-graph estimate; FlashInfer sampler"
            ),
            default_util=0.92,
            chunked_prefill=True,
            flashinfer_sampler=True,
            charges_cuda_context=False,
            reserved_peak=False,
            charges_cudagraphs=True,
            hybrid_kv_groups=True,
            ceil_budget=True,
            concurrency_tokens=True,
        ),
        "v1-0.11": VllmEngine(
            name="v1-0.11",
            summary=(
                "vLLM 0.11.0: total x 0.9 - non-KV; CUDA graphs captured afterwards "
                "in the 1 - util headroom (graph estimate opt-in until 0.20); FlashInfer sampler"
            ),
            default_util=0.9,
            chunked_prefill=True,
            flashinfer_sampler=True,
            charges_cuda_context=False,
            reserved_peak=False,
            charges_cudagraphs=False,
            hybrid_kv_groups=True,
            ceil_budget=True,
            flashinfer_if_installed=True,
        ),
        "v1-0.11.1": VllmEngine(
            name="v1-0.11.1",
            summary=(
                "vLLM 0.11.1-0.16: as 0.11.0 with the PyTorch-native sort sampler (FlashInfer's "
                "opt-in from PR #26859 until PR #40376)"
            ),
            default_util=0.9,
            chunked_prefill=True,
            flashinfer_sampler=False,
            charges_cuda_context=False,
            reserved_peak=False,
            charges_cudagraphs=False,
            hybrid_kv_groups=True,
            ceil_budget=True,
        ),
        "v1-0.17": VllmEngine(
            name="v1-0.17",
            summary=(
                "vLLM 0.17-0.19: as 0.11.1 with the Triton top-k/top-p kernel (PR #33538) "
                "instead of the sort from 8 rows on (FlashInfer's still opt-in until PR #40376)"
            ),
            default_util=0.9,
            chunked_prefill=True,
            flashinfer_sampler=False,
            charges_cuda_context=False,
            reserved_peak=False,
            charges_cudagraphs=False,
            hybrid_kv_groups=True,
            ceil_budget=True,
            triton_sampler=True,
        ),
        "v1-0.20": VllmEngine(
            name="v1-0.20",
            summary=(
                "vLLM 0.20: ceil(total x 0.92) - non-KV - CUDA-graph estimate (PR #38284 in the "
                "0.20.0 release); Triton top-k/top-p sampler (FlashInfer's opt-in until 0.21)"
            ),
            default_util=0.92,
            chunked_prefill=True,
            flashinfer_sampler=False,
            charges_cuda_context=False,
            reserved_peak=False,
            charges_cudagraphs=True,
            hybrid_kv_groups=True,
            ceil_budget=True,
            triton_sampler=True,
        ),
        "v1-2025": VllmEngine(
            name="v1-2025",
            summary=(
                "V1 engine 0.9.1-0.10: total x 0.9 - (weights + torch peak + non-torch increase)"
            ),
            default_util=0.9,
            chunked_prefill=True,
            flashinfer_sampler=True,
            charges_cuda_context=False,
            reserved_peak=False,
            charges_cudagraphs=False,
            hybrid_kv_groups=True,
            flashinfer_if_installed=True,
        ),
        "v1-2025-global": VllmEngine(
            name="v1-2025-global",
            summary=(
                "V1 engine 0.8.0-0.9.0: total x 0.9 - (torch peak + every non-torch byte on the "
                "GPU: CUDA context and other processes too)"
            ),
            default_util=0.9,
            chunked_prefill=True,
            flashinfer_sampler=False,
            charges_cuda_context=True,
            reserved_peak=False,
            charges_cudagraphs=False,
            # before PR #17996 (0.9.1): get_kv_cache_config ran unify_hybrid_kv_cache_specs,
            # every SlidingWindowSpec of a model with full layers became a FullAttentionSpec
            # and the pool was split over all layers alike (0.9.0 v1/core/kv_cache_utils.py)
            hybrid_kv_groups=False,
            charges_other_processes=True,
            other_processes_fix="vLLM 0.9.1+ or VLLM_USE_V1=0 (PR #18974: per-instance budget)",
        ),
        "v1-0.8.0": VllmEngine(
            name="v1-0.8.0",
            summary=(
                "V1 engine 0.8.0-0.8.3: as v1-2025-global, with 1024 sequences by default on "
                "every GPU (the profile's dummy sampler warms up 1024 rows)"
            ),
            default_util=0.9,
            chunked_prefill=True,
            flashinfer_sampler=False,
            charges_cuda_context=True,
            reserved_peak=False,
            charges_cudagraphs=False,
            # before PR #17996 (0.9.1): get_kv_cache_config ran unify_hybrid_kv_cache_specs,
            # every SlidingWindowSpec of a model with full layers became a FullAttentionSpec
            # and the pool was split over all layers alike (0.9.0 v1/core/kv_cache_utils.py)
            hybrid_kv_groups=False,
            charges_other_processes=True,
            other_processes_fix="vLLM 0.9.1+ or VLLM_USE_V1=0 (PR #18974: per-instance budget)",
            seqs_1024_everywhere=True,
        ),
        "v0-2025": VllmEngine(
            name="v0-2025",
            summary="V0 0.6.5-0.9 (PRs #10511, #12126): V0 batches, V1-style non-torch increase",
            default_util=0.9,
            chunked_prefill=False,
            flashinfer_sampler=False,
            charges_cuda_context=False,
            reserved_peak=False,
            charges_cudagraphs=False,
            hybrid_kv_groups=False,
        ),
        "v0-2024": VllmEngine(
            name="v0-2024",
            summary="V0 0.6.4: total x 0.9 - torch peak - all non-torch memory (context too)",
            default_util=0.9,
            chunked_prefill=False,
            flashinfer_sampler=False,
            charges_cuda_context=True,
            reserved_peak=False,
            charges_cudagraphs=False,
            hybrid_kv_groups=False,
            charges_other_processes=True,
            other_processes_fix="vLLM 0.6.5+ (PR #10511: per-instance budget)",
        ),
        "v0-2023-total": VllmEngine(
            name="v0-2023-total",
            summary="0.2.5-0.3.0 (PR #2031): total x 0.9 - (total - free after profiling)",
            default_util=0.9,
            chunked_prefill=False,
            flashinfer_sampler=False,
            charges_cuda_context=True,
            reserved_peak=True,
            charges_cudagraphs=False,
            hybrid_kv_groups=False,
            charges_other_processes=True,
            other_processes_fix="vLLM 0.3.1+ (PR #2863: free memory at init as the baseline)",
        ),
        "v0-2023-allocated": VllmEngine(
            name="v0-2023-allocated",
            summary="0.1.0-0.2.4: total x 0.9 - torch.cuda.max_memory_allocated() after profiling",
            default_util=0.9,
            chunked_prefill=False,
            flashinfer_sampler=False,
            charges_cuda_context=False,
            reserved_peak=False,
            charges_cudagraphs=False,
            hybrid_kv_groups=False,
            charges_non_torch=False,
        ),
        "v0-2023": VllmEngine(
            name="v0-2023",
            summary="0.3.1-0.6.3 (PR #2863): total x 0.9 - (init free - free after profiling)",
            default_util=0.9,
            chunked_prefill=False,
            flashinfer_sampler=False,
            charges_cuda_context=False,
            reserved_peak=True,
            charges_cudagraphs=False,
            hybrid_kv_groups=False,
        ),
    }
)

DEFAULT_ENGINE = "current"


def vllm_engine(name: str) -> VllmEngine:
    """The profiling rule named ``name``: a key of :data:`VLLM_ENGINES`.

    Raises:
        UnknownNameError: not a known generation.
    """
    key = name.strip().lower()
    if key not in VLLM_ENGINES:
        raise UnknownNameError(
            kind="vLLM engine generation",
            name=name,
            suggestions=close_matches(name, VLLM_ENGINES),
        )
    return VLLM_ENGINES[key]


#: Non-torch growth of one rank during load + profiling, without TP: kernel modules loaded
#: lazily (CUDA_MODULE_LOADING=LAZY), cuBLAS/attention-backend workspaces. vLLM logged
#: 0.03 GiB (RTX 4060, vllm#13882), 0.16 GiB (H100, vllm#12126), 0.20 GiB (4x RTX 3090 TP4
#: over PCIe, vllm#14447).
_NON_TORCH_GROWTH = 160 * MiB
#: Extra per rank with TP on NVSwitch (SXM5/SXM6) nodes: NCCL communicators with NVLink SHARP
#: (NVLS) buffers and up to 32 channels. vLLM logged non-torch 3.58 GiB at TP2 vs 1.79 GiB at
#: TP1 on H100 (vllm#10511) and 2.04 GiB at TP4 on H200 (vllm#21429).
_NCCL_NVSWITCH = 1792 * MiB
#: Extra per rank with TP elsewhere (PCIe or NVLink bridge): NCCL ring buffers for two peers
#: and vLLM's custom all-reduce buffers (``CustomAllreduce``: 8 MiB + IPC handles).
_NCCL_OTHER = 128 * MiB
#: What a capture can really take per GPU. vLLM's own warning before capturing (V0
#: vllm/worker/model_runner.py ``capture_model``, 0.2.6 to the last V0 release): "CUDA graphs can
#: take additional 1~3 GiB memory per GPU. If you are running out of memory, consider decreasing
#: `gpu_memory_utilization` or enforcing eager mode." Engines that capture AFTER sizing the KV
#: cache (every one but ``current``) have only the ``1 - util`` headroom for it: the span
#: above the modelled pool (:mod:`oomkit.estimate.vllm_cudagraph`) is real variance, carried
#: by the verdict's band (graphs of MoE models with TP, FlashInfer's per-size decode buffers
#: and NCCL captured without the custom all-reduce sit at the top of it: vllm#17469,
#: vllm#2856, vllm#7495).
CUDAGRAPH_POOL_MAX = 3 * GiB


def _on_nvswitch(device: DeviceTarget) -> bool:
    if device.key is None:
        return False
    from oomkit.hardware.catalog import find_gpu

    try:
        link = find_gpu(device.key).interconnect.upper()
    except UnknownNameError:
        return False
    return "SXM5" in link or "SXM6" in link


def on_nvswitch(device: DeviceTarget) -> bool:
    """``device`` is a catalog GPU on an NVSwitch (SXM5/SXM6) node."""
    return _on_nvswitch(device)


def non_torch_bytes(engine: VllmEngine, device: DeviceTarget, tp: int) -> tuple[int, str]:
    """Non-torch memory vLLM charges to one rank: (bytes, explanation)."""
    if not engine.charges_non_torch:
        return 0, "not charged: the profile peak is torch.cuda.max_memory_allocated() (< 0.2.5)"
    n_bytes = _NON_TORCH_GROWTH
    why = "modules and workspaces loaded while profiling (0.03-0.2 GiB logged)"
    if engine.charges_cuda_context:
        ctx, ctx_why = cuda_context_bytes("vllm", device)
        n_bytes = max(n_bytes, ctx)
        why = f"all non-torch memory incl. the CUDA context: {ctx_why}"
    if tp > 1:
        if _on_nvswitch(device):
            n_bytes += _NCCL_NVSWITCH
            why += "; + NCCL/NVLS buffers on an NVSwitch node (1.8-1.9 GiB logged)"
        else:
            n_bytes += _NCCL_OTHER
            why += "; + NCCL ring and custom all-reduce buffers"
    return n_bytes, why


def v1_batch_defaults(*, big: bool, llm_class: bool) -> tuple[int, int]:
    """``(max_num_seqs, max_num_batched_tokens)`` a V1 engine takes when neither is given.

    vllm/engine/arg_utils.py sets them per usage context (``_set_default_args_v1`` from the
    v0.8.0 release, ``get_batch_defaults`` later): the offline ``vllm.LLM`` class
    (``UsageContext.LLM_CLASS``) batches 16384 tokens on a large GPU and 8192 otherwise, the
    OpenAI server 8192 and 2048; both 1024 sequences on a large GPU, else 256 (PR #17885,
    which also made a large GPU ">= 70 GiB and not an A100"; 0.8.x tested "h100"/"h200" in
    the name, which gives the same answer on the A100s and H100s of the records).

    >>> v1_batch_defaults(big=False, llm_class=True), v1_batch_defaults(big=False, llm_class=False)
    ((256, 8192), (256, 2048))
    >>> v1_batch_defaults(big=True, llm_class=True), v1_batch_defaults(big=True, llm_class=False)
    ((1024, 16384), (1024, 8192))
    """
    seqs = 1024 if big else 256
    if llm_class:
        return seqs, 16384 if big else 8192
    return seqs, 8192 if big else 2048


_BIG_GPU_BYTES = 70 * GiB


def engine_batch_defaults(
    eng: VllmEngine, device: DeviceTarget, *, llm_class: bool
) -> tuple[int, int]:
    """``(max_num_seqs, max_num_batched_tokens)`` a chunked-prefill (V1) ``eng`` takes on
    ``device`` when neither is given (:func:`v1_batch_defaults`).

    The large-GPU test: ">= 70 GiB and not an A100" (0.9.0+; oomkit also uses it for
    0.8.4-0.8.5, whose "h100"/"h200"-name and ">= 70 GiB" tests agree with it on the usual
    cards); 0.8.0-0.8.3 (``eng.seqs_1024_everywhere``) tested "h100"/"h200" in the device name
    for the batch and set ``max_num_seqs = 1024`` on every GPU (``_set_default_args_v1`` in the
    0.8.1-0.8.3 wheels: ``default_max_num_seqs = 1024``) until PR #16158 ("[V1] Revert the
    default max_num_seqs to V0 values for most hardware", 0.8.4: "many people have run into OOM
    when using V1", i.e. "CUDA out of memory occurred when warming up sampler with 1024 dummy
    requests").
    """
    name = device.name.lower()
    if eng.seqs_1024_everywhere:
        big = "h100" in name or "h200" in name
        return 1024, v1_batch_defaults(big=big, llm_class=llm_class)[1]
    cap = device.capacity_bytes
    big = cap is not None and cap >= _BIG_GPU_BYTES and "a100" not in name
    return v1_batch_defaults(big=big, llm_class=llm_class)


def graph_estimate_charged(eng: VllmEngine, *, profiles_graphs: bool) -> bool:
    """Whether ``eng`` takes its CUDA-graph estimate out of the KV budget.

    Releases that run PR #30515's ``profile_cudagraph_memory`` (0.18.0 on: ``profiles_graphs``)
    read ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` as ``bool(int(...))`` (vllm/envs.py; default
    "0" in 0.18.0-0.19.1, "1" from 0.20.0) and subtract the estimate only when it is true
    (vllm/v1/worker/gpu_worker.py ``cudagraph_memory_estimate_applied``); 0.18-0.19 log "To try it
    now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1", 0.20+ "To disable, set ...=0". Unset or
    not an integer: the release's default (``eng.charges_cudagraphs``).
    """
    raw = os.environ.get("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "").strip()
    if not profiles_graphs or not raw.lstrip("-").isdigit():
        return eng.charges_cudagraphs
    return int(raw) != 0


def v0_full_profile_batch(spec: ModelSpec, settings: InferenceSettings) -> InferenceSettings:
    """``settings`` with V0's profile batch before chunked prefill was a default.

    Before PR #6666 (vLLM 0.5.3) ``EngineArgs`` never turned chunked prefill on by itself, so
    ``SchedulerConfig`` set ``max_num_batched_tokens = max(max_model_len, 2048)`` at every
    length (0.2.x-0.5.2 ``vllm/config.py``) and the profile run pushed that many tokens
    through the model: a 200K-token model profiles 200K tokens. A value the user set is kept.
    """
    if settings.max_num_batched_tokens is not None:
        return settings
    max_len = settings.ctx or spec.max_position_embeddings or 8192
    return dataclasses.replace(settings, max_num_batched_tokens=max(max_len, 2048))

"""The numbers vLLM logs at startup for one rank: :class:`VllmPlan`, what
:func:`oomkit.estimate.vllm.plan_vllm` returns (re-exported there)."""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.estimate.hf_kv import KvLayer
from oomkit.estimate.speculative import DraftTerms
from oomkit.estimate.vllm_lora import LoraPlan

__all__ = ["VllmPlan"]


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmPlan:
    """The numbers vLLM logs at startup for one rank (bytes per rank)."""

    engine: str
    tp: int
    util: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    kv_elem_bytes: int
    weights_bytes: int
    cpu_offload_bytes: int  # part of the weights on the CPU (--cpu-offload-gb, capped)
    rope_cache_bytes: int
    #: the profile run's torch peak increase: max(forward live set, sampler)
    activation_bytes: int
    forward_bytes: int
    sampler_bytes: int
    #: the sort sampler's extra profile peak where FlashInfer may be missing (0.9.1-0.11.0)
    sampler_sort_extra_bytes: int
    #: a served step's penalties/log-probs over the profiled sampler peak (V1, last stage;
    #: :mod:`oomkit.estimate.vllm_penalties`): outside the budget, in the verdict's band
    sampler_request_extra_bytes: int
    #: V0 encoder-decoder profile: the Mllama vision encoder over max_num_seqs images
    vision_bytes: int
    #: images in that profile (one per dummy sequence)
    vision_images: int
    #: part of ``weights_bytes``: the MXFP4 backend's layout above the checkpoint
    mxfp4_extra_bytes: int
    #: the MXFP4 backend that laid the experts out ("" when none)
    mxfp4_backend: str
    #: part of ``weights_bytes``: the vision encoder + projector
    vision_weights_bytes: int
    #: v0-2023 with TP: all-reduce inputs held by record_stream until the NCCL stream syncs
    pinned_allreduce_bytes: int
    non_torch_bytes: int
    non_torch_why: str
    cudagraph_bytes: int
    #: whether this engine subtracts the CUDA-graph estimate from the KV budget
    cudagraph_charged: bool
    #: memory of other processes on the GPU is charged to this instance (0.6.4, V1 0.8.x)
    charges_other_processes: bool
    other_processes_fix: str
    default_util: float
    kv_pool_bytes: int | None
    bytes_per_token: int
    kv_groups: int
    num_gpu_blocks: int | None
    kv_cache_tokens: int | None
    max_concurrency: float | None
    max_model_len_that_fits: int | None
    layers: tuple[KvLayer, ...]
    notes: tuple[str, ...]
    #: ``--enable-lora``: the adapter slots (part of ``weights_bytes``), graph sets
    lora: LoraPlan | None = None
    #: speculative decoding: the draft's weights (part of ``weights_bytes``) and KV layers
    #: (part of ``layers``) (:mod:`oomkit.estimate.speculative`)
    speculative: DraftTerms | None = None
    #: part of ``activation_bytes``' sampler side: the rejection sampler's dummy logits
    rejection_sampler_bytes: int = 0

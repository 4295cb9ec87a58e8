"""The KV cache vLLM allocates to profile its CUDA graphs, before the KV budget exists.

From 0.18.0 (PR #30515) ``Worker.determine_available_memory`` (vllm/v1/worker/gpu_worker.py)
calls ``GPUModelRunner.profile_cudagraph_memory`` whenever CUDA graphs are on (not
``--enforce-eager``), whatever ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` says (the variable
only decides whether the estimate is subtracted; 0.18.0, 0.19.1, 0.20.0, 0.22.0, 0.24.0, 0.27.0
sdists). Its first step, ``_init_minimal_kv_cache_for_profiling`` (vllm/v1/worker/
gpu_model_runner.py), sets ``num_gpu_blocks_override`` to ``min_blocks`` and allocates a real KV
cache of that many blocks (``get_kv_cache_config_from_groups(..., available_memory=0)`` then
``initialize_kv_cache``), captures graphs with it, and frees it afterwards
(``_cleanup_profiling_kv_cache``). It is therefore no KV-budget term (the budget is
``requested_memory - non_kv_cache_memory - estimate``), but it must fit in the card's free
memory next to the weights: ``--gpu-memory-utilization`` does not bound it.

``min_blocks``:

* 0.18.0-0.25.0: ``compilation_config.max_cudagraph_capture_size or 1``;
* 0.26.0 on (the sdist of 2026-07-25; 0.27.0 too): ``min(max_num_reqs,
  max_cudagraph_capture_size) or 1``.

``max_cudagraph_capture_size`` defaults to ``min(max_num_seqs x (1 + num_speculative_tokens) x
2, 512)``, capped at ``max_num_batched_tokens`` (``VllmConfig._set_cudagraph_sizes``, vllm/config/
vllm.py, 0.18.0, 0.25.0, 0.26.0, 0.27.0).

For a hybrid (attention + Mamba / linear-attention) model a block is one padded page in each of
``group_size`` shared tensors (``get_kv_cache_config_from_groups``' general case; the page as
:mod:`oomkit.estimate.vllm_mamba_blocks` computes it): for Qwen3.8-27B 3,211,264 bytes x 16, so
the 256 blocks of an RTX 5090's default 256 sequences under 0.26+ are 16 tensors of
256 x 3,211,264 B = 784 MiB each (12.25 GiB), the "Tried to allocate 784.00 MiB" of
vllm-project/recipes PR #810 at util 0.80 and 0.93 alike. A dense model's block is
``block_size`` tokens of every layer; its minimal cache (at most 512 x 16 tokens) is below the
pool that one ``max_model_len`` request already needs, so it is not checked here.
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.estimate.vllm_mamba_blocks import mamba_block_bytes
from oomkit.estimate.vllm_plan import VllmPlan
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

__all__ = ["capture_size_max", "profile_kv_blocker", "profile_kv_blocks", "profile_kv_check"]

#: the first release whose ``min_blocks`` is ``min(max_num_reqs, capture size)``
_MIN_SEQS_RELEASE = (0, 26)
#: its sdist's date (vllm-0.26.0.tar.gz, 2026-07-25), for a version given as a date
_MIN_SEQS_DATE = "2026-07-25"


def capture_size_max(*, max_num_seqs: int, spec_tokens: int, max_num_batched_tokens: int) -> int:
    """vLLM's default ``max_cudagraph_capture_size``.

    >>> capture_size_max(max_num_seqs=256, spec_tokens=0, max_num_batched_tokens=2048)
    512
    >>> capture_size_max(max_num_seqs=8, spec_tokens=3, max_num_batched_tokens=8192)
    64
    """
    return max(1, min(max_num_seqs * (1 + spec_tokens) * 2, 512, max_num_batched_tokens))


def _caps_at_seqs(version: str | None) -> bool:
    if version is None:
        return True
    from oomkit.estimate.generations import parse_runtime_version  # as release_rules: lazily

    parsed = parse_runtime_version("vllm", version)
    if isinstance(parsed, tuple):
        return parsed[:2] >= _MIN_SEQS_RELEASE
    return parsed.isoformat() >= _MIN_SEQS_DATE


def profile_kv_blocks(
    version: str | None, *, max_num_seqs: int, spec_tokens: int, max_num_batched_tokens: int
) -> int:
    """``min_blocks`` of ``_init_minimal_kv_cache_for_profiling`` under ``version`` (None:
    current vLLM).

    >>> profile_kv_blocks("0.26.1rc1.dev608", max_num_seqs=256, spec_tokens=0,
    ...                   max_num_batched_tokens=2048)
    256
    >>> profile_kv_blocks("0.24.0", max_num_seqs=256, spec_tokens=0, max_num_batched_tokens=2048)
    512
    """
    cap = capture_size_max(
        max_num_seqs=max_num_seqs,
        spec_tokens=spec_tokens,
        max_num_batched_tokens=max_num_batched_tokens,
    )
    return max(1, min(max_num_seqs, cap)) if _caps_at_seqs(version) else cap


def profile_kv_blocker(
    *, blocks: int, block_bytes: int, resident_bytes: int, capacity_bytes: int, version: str | None
) -> str | None:
    """The start-up death when ``blocks`` profiling blocks do not fit next to what is resident
    (weights, non-torch memory, CUDA context) on a card of ``capacity_bytes``; else None."""
    need = blocks * block_bytes
    if resident_bytes + need <= capacity_bytes:
        return None
    fix = (
        "lower --max-num-seqs"
        if _caps_at_seqs(version)
        else "lower --max-cudagraph-capture-size (or --max-num-seqs)"
    )
    return (
        f"CUDA-graph memory profiling allocates a {blocks}-block KV cache ({need / GiB:.2f} GiB) "
        f"next to the weights before the KV budget exists ({resident_bytes / GiB:.2f} GiB "
        f"resident of {capacity_bytes / GiB:.2f} GiB): vLLM runs out of memory in CUDA graph "
        f"capture at any --gpu-memory-utilization; --enforce-eager, or {fix}"
    )


def profile_kv_check(
    spec: ModelSpec,
    settings: InferenceSettings,
    targets: Sequence[DeviceTarget],
    plans: Sequence[VllmPlan],
) -> tuple[int, str | None] | None:
    """(the profiling KV cache's bytes per rank, the blocker of the first rank it does not fit
    on) for a hybrid model with CUDA graphs on CUDA cards; None otherwise.

    What is resident then: the weights (with the rotary cache), the non-torch memory the
    profile run left (modules, workspaces, NCCL) and the CUDA context; the profile run's
    activations were freed (``memory_profiling`` ends with ``empty_cache``). The graph pools the
    capture adds next are left out, so the check errs towards "fits".
    """
    version = settings.runtime_version
    spec_tokens = (settings.num_speculative_tokens or 0) if settings.speculative_method else 0
    first: tuple[int, str | None] | None = None
    for d, p in zip(targets, plans, strict=True):
        per_block = mamba_block_bytes(spec, p.layers, tp=p.tp)
        if per_block is None or d.backend != "cuda":
            continue
        blocks = profile_kv_blocks(
            version,
            max_num_seqs=p.max_num_seqs,
            spec_tokens=spec_tokens,
            max_num_batched_tokens=p.max_num_batched_tokens,
        )
        blocker = None
        if d.capacity_bytes is not None:
            resident = (
                p.weights_bytes
                + p.rope_cache_bytes
                + p.non_torch_bytes
                + cuda_context_bytes("vllm", d)[0]
            )
            blocker = profile_kv_blocker(
                blocks=blocks,
                block_bytes=per_block,
                resident_bytes=resident,
                capacity_bytes=d.capacity_bytes,
                version=version,
            )
        if first is None or (first[1] is None and blocker is not None):
            first = (blocks * per_block, blocker)
    return first

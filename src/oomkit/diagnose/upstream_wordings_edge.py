"""Upstream wordings added by docrec21 (issue 9): NVIDIA Jetson's NvMap allocation failure, and
two runtimes' memory-pressure warnings that no failure line follows (DeepSpeed ZeRO-3's
allocator cache flushes, Forge's low-VRAM warning).

Part of :mod:`oomkit.diagnose.upstream_wordings`. Recognised by ``parse_accel`` (NvMap, read by
``rules_jetson``) and ``parse_wordings_usage`` (the warnings, read by ``rules_usage`` as memory
pressure, not a failure). ``EDGE_NEAR_MISSES`` are the same words where nothing ran short.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["EDGE", "EDGE_NEAR_MISSES"]

_NVMAP = (
    "NVIDIA L4T (Jetson Linux) libnvrm_mem, closed source: the CUDA driver's NvMap allocation "
    "on Tegra prints the failed call and its errno (12 = ENOMEM); as Jetson users paste it"
)
_DS = (
    "deepspeedai/DeepSpeed:deepspeed/runtime/zero/stage3.py (DeepSpeedZeroOptimizer_Stage3.step: "
    "logger.warning when memory_stats()['num_alloc_retries'] grew, i.e. PyTorch's caching "
    "allocator freed its cache and retried a failed cudaMalloc)"
)
_FORGE = (
    "lllyasviel/stable-diffusion-webui-forge (the sampler's low-VRAM check: free_memory / "
    "(1024.0 * 1024.0) below safe_memory_mb = 1536.0, unless --disable-gpu-warning)"
)

EDGE: tuple[Wording, ...] = (
    _w(
        "jetson",
        _NVMAP,
        "NvMapMemAllocInternalTagged: %d error %d",
        "NvMapMemAllocInternalTagged: 1075072515 error 12",
    ),
    _w(
        "jetson",
        _NVMAP + "; the older handle call",
        "NvMapMemHandleAlloc: error %d",
        "NvMapMemHandleAlloc: error 12",
    ),
    _w(
        "deepspeed",
        _DS,
        "%d pytorch allocator cache flushes since last step. this happens when there is high "
        "memory pressure and is detrimental to performance. ...",
        "[2025-10-09 12:01:31,035] [WARNING] [stage3.py:2160:step] 1 pytorch allocator cache "
        "flushes since last step. this happens when there is high memory pressure and is "
        "detrimental to performance. if this is happening frequently consider adjusting settings "
        "to reduce memory consumption.",
    ),
    _w(
        "forge",
        _FORGE,
        "[Low GPU VRAM Warning] Your current GPU free memory is %.2f MB for this diffusion "
        "iteration.",
        "[Low GPU VRAM Warning] Your current GPU free memory is 223.35 MB for this diffusion "
        "iteration.\n[Low GPU VRAM Warning] This number is lower than the safe value of "
        "1536.00 MB.",
    ),
)

EDGE_NEAR_MISSES: tuple[str, ...] = (
    # NvMap's other errnos (22: EINVAL), and its name in a driver's symbol list
    "NvMapMemAllocInternalTagged: 1075072515 error 22",
    "nm -D libnvrm_mem.so | grep NvMapMemAllocInternalTagged",
    # DeepSpeed's own setting and the allocator statistic, where nothing was retried
    "num_alloc_retries: 0",
    "pytorch allocator cache flushes are logged by DeepSpeed after each step",
    # Forge's option that turns the warning off
    "--disable-gpu-warning: do not print the low VRAM warning",
)

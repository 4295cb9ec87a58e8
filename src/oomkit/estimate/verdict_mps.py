"""PyTorch's MPS allocator limit on Apple silicon, for the verdict of transformers runs.

``aten/src/ATen/mps/MPSAllocator.mm`` (``init_allocator``, ``alloc_buffer``; torch 2.0 to 2.3
and on): ``m_max_total_allowed_size = PYTORCH_MPS_HIGH_WATERMARK_RATIO x max_device_size()``
with ``max_device_size()`` the device's ``recommendedMaxWorkingSetSize``; the default ratio is
1.7 on unified memory (at most 2.0; 0 disables the limit), the low watermark (1.4x) only starts
garbage collection of cached buffers.
"""

from __future__ import annotations

__all__ = ["MPS_HIGH_WATERMARK_RATIO", "MPS_OVER", "within_mps_limit"]

#: PyTorch's MPS allocator on unified memory: ``default_high_watermark_ratio`` (MPSAllocator.h,
#: torch 2.0 to 2.3 and on): allocations are refused past this x recommendedMaxWorkingSetSize
MPS_HIGH_WATERMARK_RATIO = 1.7
MPS_OVER = (
    "over the Metal working set, within PyTorch's MPS limit (PYTORCH_MPS_HIGH_WATERMARK_RATIO "
    "x the working set, 1.7 by default): MPS allocates it, but past the installed RAM macOS "
    "swaps and generation slows sharply"
)


def within_mps_limit(used: int, working_set: int, ratio: float | None) -> bool:
    """PyTorch's MPS allocator refuses an allocation only past ``ratio x
    recommendedMaxWorkingSetSize`` (aten/src/ATen/mps/MPSAllocator.mm ``init_allocator``:
    ``m_max_total_allowed_size``, compared with the device's ``currentAllocatedSize`` in
    ``alloc_buffer``; "MPS backend out of memory (... max allowed: ...)"): 1.7 by default on
    unified memory (at most 2.0; 0 disables it). "max allowed: 163.20 GB" on an M1 Ultra 128 GB
    (accelerate#2778) is 1.7 x its 96 GiB working set, "18.13 GB" on 16 GB Macs
    (Langchain-Chatchat#533) 1.7 x 2/3 x 16 GiB, and that 16 GB Mac had 18.00 GB allocated when
    it stopped: unlike ggml-metal's, MPS buffers go past the working set (and the RAM, into
    swap) until that limit."""
    if ratio is None:
        ratio = MPS_HIGH_WATERMARK_RATIO
    return ratio == 0 or used <= int(ratio * working_set)

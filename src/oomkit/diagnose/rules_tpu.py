"""XLA:TPU's scalar memory (SMEM) running out at compile time (doccause15).

``Ran out of memory in memory space smem. Used 1.00M of 1.00M smem`` is not the device's HBM
(:mod:`oomkit.diagnose.rules_families` reads those) nor one fused kernel's vector memory (VMEM,
a compiler tiling limit): SMEM is the TensorCore's small scalar memory, and what fills it is the
scalar-prefetch operands of Pallas kernels.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["tpu_smem"]


def tpu_smem(e: OomEvent) -> Analysis:
    """SMEM overflow: the paged-attention page table, sized by context x sequences.

    Mechanism. Pallas places a kernel's scalar-prefetch arguments in the ``INDEX`` memory space
    (``jax/_src/pallas/core.py``: "Memory space for scalar prefetch arguments"), lowered to SMEM
    on TPU, so that the kernel can index HBM blocks with them. The TPU paged-attention kernels
    used by vLLM/JAX serving (``jax.experimental.pallas.ops.tpu.paged_attention``, the ragged
    paged-attention kernel of vLLM's TPU backend) pass the page table, ``page_indices`` of shape
    [sequences, pages per sequence] in int32, that way; pages per sequence is the maximum
    context divided by the page size. At 16k tokens, 16-token pages and 256 sequences that is
    256 x 1024 x 4 B = 1 MiB, the whole SMEM of a TPU v5e core: the table, not HBM, overflows,
    and it halves with the maximum context or the number of sequences. ``kv_cache_or_context``
    at 0.45 (another kernel's scalar tables, e.g. grouped-matmul metadata, is the competing
    reading), fixed by ``--max-model-len`` / ``--max-num-seqs``.
    """
    used = size_text(e.requested_bytes)
    total = size_text(e.total_bytes)
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.45,
        explanation=f"XLA:TPU ran out of SMEM, the TensorCore's scalar memory ({used} of "
        f"{total}), while compiling: not the device's HBM. SMEM holds Pallas kernels' "
        "scalar-prefetch operands, and in paged attention that is the page table, sequences x "
        "(maximum context / page size) int32 entries, so it grows with the context length and "
        "the number of concurrent sequences. What would decide: whether it compiles with half "
        "the maximum context (--max-model-len) or half the sequences (--max-num-seqs).",
        fixes=(
            generic(
                "Shorten the maximum context, or run fewer sequences at once",
                "the page table in SMEM is sequences x max context / page size entries.",
                ("--max-model-len 8192", "--max-num-seqs 128"),
            ),
        ),
        open_question=False,
    )

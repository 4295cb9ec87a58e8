"""SGLang: the CUDA-graph metadata tables of the FA3 attention backend (Llama 4 chunked attention).

When CUDA graphs are on (no ``--disable-cuda-graph``), ``CudaGraphRunner`` calls the attention
backend's ``init_cuda_graph_state(max_bs)`` at start-up, after ``init_memory_pool``: these
tables therefore come out of the ``1 - mem_fraction_static`` rest, next to the req_to_token pool.
``FlashAttentionBackend.init_cuda_graph_state``
(python/sglang/srt/layers/attention/flashattention_backend.py, stored commit 003e7b77) allocates,
with page size 1, three int32 tables of ``[max_bs, context_len]`` whatever the request mix
(``page_table``, ``page_table_draft_decode`` and ``encoder_page_table``), and for a model with
chunked local attention (``attention_chunk_size``: Llama 4, which SGLang serves with the fa3
backend on Hopper) ``local_block_table`` of ``[max_bs x ceil(context_len / chunk), chunk]``
int32. Before sgl-project/sglang PR #6273 ("perf: optimize local_block_table memory
allocation", 2025-05-13) that last table was ``[max_virtual_batches, max_blocks_per_seq x
max_pages_per_block]``: ``ceil(context_len / chunk)`` times larger, so it grows with the square
of the context ("with a context length of 512K and attention chunk size of 8192 ... Llama4-
Maverick-FP8 on 8*H100 will OOM as it tries to allocate 20.00 GiB": 160 x 64 x 64 x 8192 x 4 B
= 20.00 GiB). The per-sequence form came with the decode path of local attention (PR #5479,
2025-04-16). A 2M-token Llama-4-Scout server on 8x H200 with v0.5.6.post2 ran only with CUDA
graphs disabled "to avoid OOM with 2M context" (the ``sglang-fuhengwu`` verdict run): 4 tables
of 512 x 2M int32 (16 GiB) do not fit what the 2M-row req_to_token pool leaves of the rest.

``max_bs`` is the CUDA-graph batch limit of the generation: :func:`graph_max_bs`.
"""

from __future__ import annotations

from collections.abc import Mapping

from oomkit.spec.model import ModelSpec
from oomkit.units import GiB

__all__ = ["chunked_attention_size", "fa3_graph_tables", "graph_max_bs"]

_INT32 = 4


def chunked_attention_size(spec: ModelSpec) -> int | None:
    """The ``attention_chunk_size`` of a chunked-local-attention model (Llama 4), else None.

    The catalog carries Llama 4's chunk as its ``sliding_window`` (see the model's assumption).

    >>> from oomkit.catalog.models import find_model
    >>> chunked_attention_size(find_model("llama-4-scout").spec())
    8192
    """
    if spec.architecture.startswith("Llama4") and spec.sliding_window:
        return int(spec.sliding_window)
    return None


def graph_max_bs(effects: Mapping[str, object], gpu_mem_bytes: int | None, newest_bs: int) -> int:
    """The largest captured batch size (``cuda_graph_max_bs``) of a generation.

    ``graph_bs`` ``"160"``: CudaGraphRunner's default of 160 (v0.4.x); ``"160_256"``: 256 on
    GPUs above 80 GiB (sgl-project/sglang PR #5893, 2025-04-29: "we recently increased the CUDA
    graph capture batch size from 160 to 256 for GPUs with more than 80 GB"), carried until PR
    #10975; anything else: ``newest_bs`` (:func:`oomkit.estimate.sglang.sglang_batch_defaults`).

    >>> graph_max_bs({"graph_bs": "160_256"}, 141 * GiB, 512), graph_max_bs({}, None, 512)
    (256, 512)
    """
    kind = str(effects.get("graph_bs", ""))
    if kind == "160":
        return 160
    if kind == "160_256":
        return 256 if gpu_mem_bytes is not None and gpu_mem_bytes > 80 * GiB else 160
    return newest_bs


def fa3_graph_tables(
    spec: ModelSpec, ctx: int, max_bs: int, local_table: str
) -> tuple[int, int] | None:
    """(context-wide tables, local_block_table) bytes the fa3 backend allocates for CUDA graphs
    of a chunked-attention model, or None when the generation does not model them.

    ``local_table``: ``"per_seq"`` (before PR #6273: ``max_bs x nb x nb x chunk`` int32 with
    ``nb = ceil(ctx / chunk)``) or ``"per_chunk"`` (``max_bs x nb x chunk``).

    >>> from oomkit.catalog.models import find_model
    >>> mav = find_model("llama-4-maverick").spec()
    >>> fa3_graph_tables(mav, 524288, 160, "per_seq")[1] / GiB  # PR #6273's 20.00 GiB
    20.0
    """
    chunk = chunked_attention_size(spec)
    if chunk is None or local_table not in ("per_seq", "per_chunk"):
        return None
    nb = -(-ctx // chunk)
    per_block = nb * chunk if local_table == "per_seq" else chunk
    local = max_bs * nb * per_block * _INT32
    context_wide = 3 * max_bs * ctx * _INT32  # page_table, page_table_draft_decode, encoder
    return context_wide, local

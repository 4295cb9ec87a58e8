"""SGLang: what is allocated OUTSIDE ``--mem-fraction-static`` at start-up and per chunk.

``ModelRunner.profile_max_num_token`` sizes the KV pool so that weights + pool fill
``mem_fraction_static`` of the free memory; everything else lives in the ``1 -
mem_fraction_static`` rest (server_args.py ``_handle_gpu_memory_settings`` docstring, v0.5.5.post3:
"GPU memory capacity = model weights + KV cache pool + activations + cuda graph buffers"). Two
terms of that rest are sized here from the source:

* one prefill chunk's activations (``--chunked-prefill-size`` tokens through one layer:
  :func:`oomkit.estimate.hf_activations.forward_peak_bytes`); logits are computed for the last
  position of each request only (layers/logits_processor.py ``_get_pruned_states``), so the
  vocabulary does not scale with the chunk;
* with CUDA graphs, the decode logits of the largest captured batch: ``CudaGraphRunner`` keeps
  ``next_token_logits_buffer`` ``[max_bs, vocab_size]`` fp32 (logits_processor.py v0.5.5.post3
  lines 893-900 copy the gathered logits into it; before it, ``logits[:, :vocab].float()``), a
  lower bound of the graph pool (the bf16 shard and its all-gather come on top).

The default chunk by release (``ServerArgs.__post_init__`` / ``_handle_gpu_memory_settings``,
``gpu_mem`` = nvidia-smi ``memory.total`` in MiB), keyed by the generation's ``mem_fraction``
effect (:func:`dated_chunked_prefill_size`).
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.estimate.hf_activations import forward_peak_bytes
from oomkit.spec.model import ModelSpec
from oomkit.units import MiB

__all__ = ["OutsidePool", "dated_chunked_prefill_size", "outside_pool"]

_FP32 = 4


def dated_chunked_prefill_size(kind: str, gpu_mem_bytes: int | None, newest: int) -> int:
    """SGLang's default ``--chunked-prefill-size`` for a generation (``mem_fraction`` kind).

    * ``tp_table`` .. ``tp_table_96g`` (v0.4.4.post3 server_args.py l.233-236, v0.4.5 l.247-250,
      v0.4.6.post5 l.272-277): 2048 below 25000 MiB, else 8192;
    * ``tp_table_180g`` (v0.4.7 l.287-294): 16384 above 180000 MiB, else as above;
    * ``reserved_tier`` (v0.4.8 l.318-327, v0.4.9.post3 l.354-361): 2048 below 35 GiB, 8192 below
      160 GiB, else 16384; 4096 when the GPU is unknown;
    * anything else (``gpu_memory``, v0.5.3+): ``newest``
      (:func:`oomkit.estimate.sglang.sglang_batch_defaults`).

    >>> dated_chunked_prefill_size("tp_table", 24564 * MiB, 0)
    2048
    >>> dated_chunked_prefill_size("reserved_tier", 32607 * MiB, 0)
    2048
    """
    mib = None if gpu_mem_bytes is None else gpu_mem_bytes / MiB
    if kind in ("tp_table", "tp_table_13g", "tp_table_96g", "tp_table_180g"):
        if kind == "tp_table_180g" and mib is not None and mib > 180_000:
            return 16384
        return 2048 if mib is not None and mib < 25_000 else 8192
    if kind == "reserved_tier":
        if mib is None:
            return 4096
        if mib < 35 * 1024:
            return 2048
        return 8192 if mib < 160 * 1024 else 16384
    return newest


@dataclass(frozen=True, slots=True)
class OutsidePool:
    """Bytes per rank SGLang needs outside ``mem_fraction_static`` (see the module docstring)."""

    chunk_tokens: int
    prefill_chunk_bytes: int
    graph_logits_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.prefill_chunk_bytes + self.graph_logits_bytes


def outside_pool(
    spec: ModelSpec, *, chunk: int, tokens: int | None, graph_bs: int | None, elem: int, tp: int
) -> OutsidePool:
    """The prefill chunk (at most the token pool) and the decode-graph logits buffer.

    >>> from oomkit.catalog.models import find_model
    >>> g = find_model("gemma-3-12b").spec()
    >>> outside_pool(g, chunk=8192, tokens=None, graph_bs=256, elem=2, tp=2).graph_logits_bytes
    268500992
    """
    t = chunk if tokens is None else max(0, min(chunk, tokens))
    prefill = forward_peak_bytes(spec, tokens=t, elem_bytes=elem, tp=tp).n_bytes if t else 0
    logits = (graph_bs or 0) * spec.vocab_size * _FP32
    return OutsidePool(chunk_tokens=t, prefill_chunk_bytes=prefill, graph_logits_bytes=logits)

"""Ollama's own layer estimate for the llama runner (``llm/memory.go`` ``EstimateGPULayers``).

With ``num_gpu`` unset, Ollama's llama runner does not ask llama.cpp what fits: ``memory.go``
walks the blocks **from ``blk.0`` upward**, gives block ``i`` to GPU ``i % j`` of the GPUs that
still have room (``used = allocations + graph``; a GPU that cannot take the block leaves the
list), adds the output layer if it fits, and passes llama.cpp ``-ngl`` = the number of blocks
placed and ``--tensor-split`` = the blocks per GPU. llama.cpp however offloads the **last**
``-ngl`` blocks (``i_gpu_start = n_layer - n_gpu_layers``) in contiguous runs split by those
proportions. When the blocks differ in size the two disagree: DeepSeek-V2/V3 start with dense
blocks (1 in V2-Lite, 3 in V3/R1) that are a twentieth of an MoE block, so Ollama counts a
dense block per GPU where llama.cpp puts an MoE block (ollama#8776: DeepSeek-R1 Q4_K_M on 3x
MI210 64 GB, "allocating 70139.08 MiB on device 0: cudaMalloc failed").

Per block Ollama counts the block's tensors plus ``kv / n_layer`` with its own f16 KV formula
``2 x n_ctx x n_layer x (key_length + value_length) x head_count_kv`` (DeepSeek-V2: full K/V
heads, 192 + 128 per head); ``allocations`` start at ``MinimumMemory`` (457 MiB) plus one
``blk.0`` as a buffer; ``graph`` is ``GraphSize`` of the architecture (DeepSeek-V2 formula
below; architectures without a case fall back to ``GQA x kv / 6``). The llama runner runs
this whenever ``num_gpu`` is unset (llm/server.go: ``NumGPU < 0`` takes ``estimate.Layers``),
also where llama.cpp's own layout would fit (:mod:`oomkit.estimate.ollama`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oomkit.spec.model import ModelSpec

__all__ = ["OllamaLayerPlan", "estimate_gpu_layers", "graph_size", "ollama_kv_bytes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OllamaLayerPlan:
    """What ``EstimateGPULayers`` hands the runner: ``-ngl`` and the blocks per GPU."""

    layers: int  # blocks + the output layer when it was placed
    counts: tuple[int, ...]  # per GPU (the --tensor-split)


def _kv_dims(spec: ModelSpec) -> tuple[int, int, int]:
    """(key_length, value_length, head_count_kv) as the GGUF of that era states them."""
    if spec.mla is not None:
        k = spec.mla.qk_nope_head_dim + spec.mla.qk_rope_head_dim
        return k, spec.mla.v_head_dim, spec.num_attention_heads
    return spec.head_dim, spec.v_head_dim, spec.num_key_value_heads


def ollama_kv_bytes(
    spec: ModelSpec,
    n_ctx: int,
    n_block: int | None = None,
    *,
    elem_bytes: float = 2.0,
    embd_per_head: bool = False,
) -> int:
    """``memory.go``: ``2 x n_ctx x BlockCount x (n_embd_head_k + n_embd_head_v) x n_head_kv``
    (the 2 is f16's bytes; from 0.5.0 ``GraphSize`` multiplies by ``elem_bytes``, the
    ``kvCacheBytesPerElement`` of OLLAMA_KV_CACHE_TYPE: q8_0 1, q4_0 0.5).

    ``BlockCount`` is the GGUF ``block_count`` (``n_block``; ``num_hidden_layers`` when not
    given): it counts the MTP/nextn blocks a GLM-4.5 GGUF keeps as ``blk.{n_layer}..``, not
    those the DeepSeek-V3 converter drops."""
    k, v, heads = _kv_dims(spec)
    blocks = spec.num_hidden_layers if n_block is None else n_block
    if embd_per_head:
        # before 0.1.45 (ollama 8e0641a9b "handle asymmetric embedding KVs"): f16
        # ``2 x 2 x n_ctx x n_layer x n_embd / n_head x n_head_kv``
        k = v = spec.hidden_size // max(1, spec.num_attention_heads)
    return int(n_ctx * blocks * (k + v) * heads * elem_bytes)


def graph_size(
    spec: ModelSpec, n_ctx: int, batch: int, kv: int, *, deepseek2_case: bool = True
) -> tuple[int, int]:
    """(partial, full) offload graph of ``GGML.GraphSize`` (llm/ggml.go): the ``deepseek2``
    and ``qwen2`` cases; other architectures use ``memory.go``'s fallback ``GQA x kv / 6`` for
    both. ``deepseek2_case`` False: a release before the ``deepseek2`` case (ollama commit
    e873841cb "deepseek v2 graph", 2024-06-18, first in v0.1.45), which took the fallback.

    ``qwen2`` (Qwen2 / Qwen2.5 dense; ollama commit 12e923e15 "update graph size estimate",
    2024-04-02, first in v0.1.32; unchanged through v0.12, e.g. llm/ggml.go lines 465-474 of
    v0.5.7): ``full = max(4 b (E + V), 4 b (1 + 2E + C + C H))`` and ``partial = max(4 b (E +
    V) + E V 105/128, 4 (b (1 + 2E + C (1 + H)) + E (1 + C)))`` with ``b`` the batch, ``E``
    the embedding length, ``V`` the vocabulary, ``C`` the context and ``H`` the head count.
    Its first term (the logits of a batch plus, when partially offloaded, a dequantized
    output matrix) is far above the fallback's ``GQA x kv / 6`` at short contexts."""
    k, _, heads_kv = _kv_dims(spec)
    emb, vocab = spec.hidden_size, spec.vocab_size
    if spec.model_type == "qwen2":
        heads = spec.num_attention_heads
        full = max(
            4 * batch * (emb + vocab),
            4 * batch * (1 + 2 * emb + n_ctx + n_ctx * heads),
        )
        partial = max(
            4 * batch * (emb + vocab) + emb * vocab * 105 // 128,
            4 * (batch * (1 + 2 * emb + n_ctx * (1 + heads)) + emb * (1 + n_ctx)),
        )
        return partial, full
    if spec.mla is not None and deepseek2_case:
        full = max(
            4 * batch * (3 * emb + vocab),
            4 * batch * (3 * emb + 2 + n_ctx * (1 + heads_kv) + 2 * k * heads_kv),
        )
        partial = max(
            4 * batch * (3 * emb + vocab) + emb * vocab * 105 // 128,
            4 * batch * (2 * emb + 1 + 2 * k * heads_kv + n_ctx + n_ctx * heads_kv)
            + 4 * k * n_ctx * heads_kv
            + emb * k * heads_kv * 9 // 16,
        )
        return partial, full
    gqa = max(1, spec.num_attention_heads // max(1, spec.num_key_value_heads))
    g = gqa * kv // 6
    return g, g


def estimate_gpu_layers(
    block_bytes: Sequence[int],
    output_bytes: int,
    kv: int,
    graph: tuple[int, int],
    free: Sequence[int],
    minimum: int,
    *,
    kv_blocks: Sequence[int] | None = None,
    descending: bool = False,
    num_gpu: int | None = None,
) -> OllamaLayerPlan:
    """``EstimateGPULayers`` (see module doc). ``block_bytes`` are the tensors of ``blk.0 ..
    blk.{n-1}``; ``free`` the free memory per GPU, in order.

    ``kv_blocks``: the KV of each block as ``GraphSize`` returns it (``kv[i]``; gpt-oss's
    sliding-window blocks are smaller), else ``kv / n`` each. ``descending``: the walk from the
    last block down (``for i := BlockCount()-1; i >= 0; i--``, ollama commit 0478d440f, first
    in v0.7.0; the blocks still go to GPU ``i % j``). ``num_gpu``: the user's ``num_gpu``,
    which stops the walk once that many layers are placed (``opts.NumGPU >= 0 && layerCount
    >= opts.NumGPU``) and keeps the output layer off when reached."""
    n = len(block_bytes)
    per_kv = kv // max(1, n)
    kvs = list(kv_blocks) if kv_blocks is not None else [per_kv] * n
    buffer = block_bytes[0] + kvs[0] if n else 0
    graph_max = max(graph)
    if len(free) > 1:
        graph_max = graph[0]  # multi-GPU: always the partial graph
    alloc = [0] * len(free)
    counts = [0] * len(free)
    with_space: list[int] = []
    for i, f in enumerate(free):
        if f < graph_max + minimum + 2 * buffer:
            continue
        with_space.append(i)
        alloc[i] += minimum + buffer
    placed = 0
    for i in range(n - 1, -1, -1) if descending else range(n):
        size = block_bytes[i] + kvs[i]
        if num_gpu is not None and placed >= num_gpu:
            continue  # the user's target reached: the rest overflow to the CPU
        j = len(with_space)
        while j > 0:
            g = with_space[i % j]
            if free[g] > alloc[g] + graph_max + size:
                alloc[g] += size
                counts[g] += 1
                placed += 1
                break
            with_space.pop(i % j)
            j -= 1
    if output_bytes > 0 and (num_gpu is None or placed < num_gpu):
        j = len(with_space)
        while j > 0:
            g = with_space[placed % j]
            if free[g] > alloc[g] + graph_max + output_bytes:
                counts[g] += 1
                placed += 1
                break
            j -= 1
    return OllamaLayerPlan(layers=placed, counts=tuple(counts))

"""The planner's ranking policy: which change it proposes first when a run does not fit.

Every lever is in one of three cost classes:

* **free** — costs nothing the user can see, or only a little throughput: vLLM's
  ``--gpu-memory-utilization`` raised within the verdict's safe margin (the raise is kept only
  when the verdict at the raised value is "fits", :mod:`oomkit.planner.vllm_util`), flash
  attention on, transformers' sdpa instead of eager or no ``device_map``, and, for training,
  expandable segments, the fused optimizer step, gradient checkpointing, a fused or chunked loss,
  8-bit AdamW, ZeRO/FSDP sharding, a smaller micro-batch with gradient accumulation.
* **throughput** — the model does all it did, more slowly or for fewer users at once: vLLM
  ``--max-num-seqs`` / SGLang ``--max-running-requests`` / transformers' ``generate()`` batch
  below the runtime's own (or the asked) value, MoE experts on the CPU (llama.cpp
  ``--n-cpu-moe`` / ``-ot``), whole layers on the CPU (``-ngl``, Ollama ``num_gpu``,
  transformers ``device_map="auto"`` offload), a training run's optimizer states on the CPU.
* **capability** — what the model can do changes: a shorter context than the one asked, a
  weight quant below the best (or the asked) one, LoRA/QLoRA instead of the asked training
  method.

A quantized KV cache is the one exception to "throughput before capability": its published
quality cost is small (llama.cpp PR #7412, LLaMA-3-8B: a q8_0 K and V cache is +0.0008 KLD,
below every step between weight types) and it keeps the whole model on the GPU, so at one quant
and context it is tried before anything moves to the CPU (an offload costs most of the decode
speed: weights read over PCIe or from system RAM, :mod:`oomkit.planner.speed`). For the same
reason an offload takes a q8_0 cache where it keeps strictly more on the GPU than f16 (ties keep
f16; :meth:`oomkit.planner.search.Searcher._least_on_cpu_free`), and q4_0 only where nothing
better fits.

The order, for ``--prefer quality`` (the default):

1. the weight quant, best first (``--prefer quality`` gives quality up last: a shorter context
   at the better quant ranks above the asked context at a smaller one; quants above the default
   start are proposed only all on the GPU at the asked context, :func:`~oomkit.planner.knobs.
   quant_ladder`);
2. when the user typed the context (``--ctx N``, estimate's ``--ctx`` for its suggestions): the
   context deficit — every throughput lever that keeps the asked context ranks above any plan
   that cuts it, since a user who typed a context wants to keep it (a 70B fp8 on one H100 at
   32768: ``--gpu-memory-utilization 0.97 --max-num-seqs 623`` before ``--max-model-len
   22016``);
3. where the layers live: all on the GPU → MoE experts on the CPU → layers on the CPU;
4. whether the sequence cap was lowered, then (the context, when the planner chose it: no
   ``--ctx``, or ``--ctx max`` where each plan runs the largest its settings fit, so a longer
   context is not worth an offload) the deficit;
5. transformers' attention / device-map changes, then the KV cache type (best first);
6. ties: the larger sequence cap, then the least on the CPU (speed), then the larger memory
   margin on the tightest GPU (safety).

So at one quant a q4_0 cache at the asked context ranks above q8_0 at a shorter one (review 15:
mistral-small-24b got q4_0 at 22272 where q8_0 fits 11776, by design), and above layers on the
CPU at an f16 cache. ``prompt_first`` (transformers without a typed context is the same rule): the
asked prompt ranks above the asked ``generate()`` batch.

``--prefer speed`` puts everything that leaves the GPU last, then as quality; ``--prefer
context`` puts the deficit first, then the quant. Settings the user pinned (``--quant`` as the
ladder's top, ``--gpu-memory-utilization``, ``--max-num-seqs``, ``-ngl``, ``--kv-dtype``, ...)
are never changed: the search does not vary them.

The verdict's "tight" band: an inference plan must clear it (:meth:`oomkit.planner.search.
Searcher._judge` turns a "tight" candidate into a miss with the verdict's summary as the reason,
and a raised vLLM utilization is kept only at "fits"), so every plan shown has a safe margin.
Training changes are ranked "fits" before "tight" (each group in lever order), a tight one
labelled so (:mod:`oomkit.planner.training`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.planner.knobs import Candidate

__all__ = ["rank_key"]

#: the level of a candidate that leaves anything on the CPU (knobs.LEVEL_GPU is 0)
_LEVEL_GPU = 0


def rank_key(
    cand: Candidate,
    *,
    prefer: str,
    ladder: Sequence[str],
    kvs: Sequence[str],
    target_ctx: int,
    n_layer: int,
    prompt_first: bool = False,
    ctx_asked: bool = False,
    margin_bytes: int = 0,
) -> tuple[int, ...]:
    """Sort key (smaller is better) of a fitting candidate under ``prefer`` (the module's
    policy). ``ctx_asked``: the user typed the context, so keeping it outranks every
    throughput lever; ``margin_bytes``: the least free memory on any GPU (the last tie-break)."""
    deficit = max(0, target_ctx - cand.ctx)
    r_q = ladder.index(cand.quant)
    r_kv = kvs.index(cand.kv)
    amount = cand.offload_amount(n_layer)
    seqs = 0 if cand.max_num_seqs is None else 1
    fewer = 0 if cand.max_num_seqs is None else -cand.max_num_seqs
    # transformers eager -> sdpa (same numerics) or device_map=None + .to("cuda"): small changes
    attn = int(cand.attn is not None) + int(cand.device_map is not None)
    ties = (fewer, amount, -margin_bytes)
    if ctx_asked:
        quality = (r_q, deficit, cand.level, seqs, attn, r_kv, *ties)
    elif prompt_first:  # transformers: a shorter prompt drops input, a smaller batch only time
        quality = (r_q, cand.level, deficit, seqs, attn, r_kv, *ties)
    else:
        quality = (r_q, cand.level, seqs, deficit, attn, r_kv, *ties)
    if prefer == "speed":
        return (int(cand.level > _LEVEL_GPU), *quality)
    if prefer == "context":
        return (deficit, r_q, cand.level, r_kv, seqs, attn, *ties)
    return quality

"""The planner's ranking policy: which change it proposes first when a run does not fit.

Every lever is in one of three cost classes:

* **free** — costs nothing the user can see, or only a little throughput: vLLM's
  ``--gpu-memory-utilization`` raised within the verdict's safe margin (the raise is kept only
  when the verdict at the raised value is "fits", :mod:`oomkit.planner.vllm_util`), SGLang's
  ``--mem-fraction-static`` raised as far as its tuning guide's 5-8 GB for activations allows
  (:mod:`oomkit.planner.sglang_fraction`), flash
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

A full fine-tune in pure bf16 (no fp32 master weights, :func:`oomkit.planner.training._pure_bf16`)
is a numeric cost, not one of speed: an update under ~0.4% of a weight rounds away (bf16's
spacing is 2**-7). It comes after every free training lever and before the optimizer states move
to the CPU and before LoRA: it is torchtune's default (``dtype=bf16``, its memory-optimisation
tutorial), keeps the GPU's speed and needs no host RAM, where ZeRO-Offload steps on the CPU and
needs 12 bytes of RAM per parameter, and LoRA changes the method.

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
   quant_ladder`, with at most a q8_0 cache, or q4_0 where the default quant needs q4_0 there
   itself: :func:`~oomkit.planner.knobs.upgrade_kvs`);
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

``--prefer speed`` puts everything that leaves the GPU last, then the context deficit, then the
planner's own decode estimate (tokens/s of one sequence at half the target context,
:func:`oomkit.planner.speed.estimate_speed`), fastest first, then as quality. Its search looks at
the first quant that fits on the GPU and the next one (as ``quality`` looks at alternatives), so
on vLLM/SGLang fp8 weights, which halve the weight bytes read per decoded token, rank above bf16
where both fit (a 70B on 2 x H100 at ``--ctx 32k``: fp8 ~40 tok/s before bf16 ~28), and a GGUF
plan may take the next smaller quant when it decodes faster; ``--prefer
context`` puts the deficit first, then the quant. Settings the user pinned (``--quant`` as the
ladder's top, ``--gpu-memory-utilization``, ``--max-num-seqs``, ``-ngl``, ``--kv-dtype``, ...)
are never changed: the search does not vary them.

FP8 W8A8 at a typed context: on GPUs with FP8 tensor cores (compute capability 8.9 and up:
Ada, Hopper, Blackwell), vLLM and SGLang run ``--quantization fp8`` as FP8 weights and
activations (W8A8), which Kurtic et al., "Give Me BF16 or Give Me Death? Accuracy-Performance
Trade-Offs in LLM Quantization" (ACL 2025, arXiv 2411.02355; Neural Magic / Red Hat, over
500,000 evaluations of the Llama-3.1 family, served with vLLM) find "effectively lossless across
all model scales". So when the user typed the context, fp8 shares bf16's quant tier
(:func:`fp8_tier`): fp8 at the asked context ranks above bf16 at a shorter one (a 70B on 2 x
H100 at ``--ctx 128k``: fp8 at 131072 before bf16 at 81152 with ``--max-num-seqs 1``), and bf16
still wins wherever both keep the context (the exact quant is the next key). Not on older GPUs
(vLLM's FP8 Marlin there is weight-only W8A16, not the format measured), not without a typed
context (the planner's own context choice keeps the best quant first), not for GGUF quants.

Within that tier the KV cache comes before the exact quant: fp8 weights with the checkpoint's
own KV cache rank above bf16 with ``--kv-cache-dtype fp8``. The study's formats quantize weights
and activations (W8A8-FP), not the KV cache; the fp8 cache the plan emits runs uncalibrated
(vLLM docs, "Quantized KV Cache": without calibration "all quantization scales are set to 1.0",
a dataset calibration through llm-compressor is the recommended path; with the FlashAttention 3
backend the queries are quantized to FP8 too), and SGLang's docs give it only "may introduce
minimal accuracy degradation" — no measured figure oomkit holds. So a measured lossless format
(faster, too) beats an unmeasured cost (review 22: a 70B on 2 x H100 at ``--ctx 32k`` with a
draft model got bf16 + fp8 KV + ``--max-num-seqs 31``, fp8 with the 16-bit cache second). The
throughput levers still rank bf16 above fp8 within the tier (a sequence cap or a raised
utilization costs no quality; fp8 W8A8 is "effectively", not exactly, lossless): where both keep
the context at the 16-bit cache, bf16 with a cap is the plan and fp8 the first alternative.

The verdict's "tight" band: an inference plan must clear it (:meth:`oomkit.planner.search.
Searcher._judge` turns a "tight" candidate into a miss with the verdict's summary as the reason,
and a raised vLLM utilization is kept only at "fits"), so every plan shown has a safe margin.
Training changes are ranked "fits" before "tight" (each group in lever order), a tight one
labelled so (:mod:`oomkit.planner.training`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.planner.knobs import Candidate

__all__ = ["FP8_W8A8_CC", "fp8_tier", "rank_key"]

#: the compute capability from which NVIDIA GPUs have FP8 tensor cores (Ada 8.9, Hopper 9.0)
#: and vLLM runs ``--quantization fp8`` as W8A8 (``fp8.py`` uses CUTLASS/torch._scaled_mm
#: there; below it FP8 Marlin, weight-only: :data:`oomkit.planner.knobs._FP8_MARLIN_CC`)
FP8_W8A8_CC = (8, 9)
#: the runtimes whose ``fp8`` quant is FP8 W8A8 on such GPUs
_FP8_RUNTIMES = ("vllm", "sglang")

#: the level of a candidate that leaves anything on the CPU (knobs.LEVEL_GPU is 0)
_LEVEL_GPU = 0


def fp8_tier(
    runtime: str, ladder: Sequence[str], capabilities: Sequence[tuple[int, int] | None]
) -> dict[str, int]:
    """``{"fp8": bf16's ladder index}`` where FP8 W8A8 is documented lossless (the module's
    policy: vLLM/SGLang, every GPU of capability :data:`FP8_W8A8_CC` or above), else ``{}``.
    The caller applies it only when the context was typed."""
    if runtime not in _FP8_RUNTIMES or "fp8" not in ladder or "bf16" not in ladder:
        return {}
    if not capabilities or any(cc is None or cc < FP8_W8A8_CC for cc in capabilities):
        return {}
    return {"fp8": list(ladder).index("bf16")}


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
    quant_tier: Mapping[str, int] | None = None,
    decode_tps: float | None = None,
    kv_tokens: int | None = None,
) -> tuple[float, ...]:
    """Sort key (smaller is better) of a fitting candidate under ``prefer`` (the module's
    policy). ``ctx_asked``: the user typed the context, so keeping it outranks every
    throughput lever; ``margin_bytes``: the least free memory on any GPU (the last tie-break);
    ``quant_tier``: quants ranked at another's tier before the context (:func:`fp8_tier`), their
    KV cache type and then their own place in the ladder coming right after the deficit;
    ``decode_tps``: the planner's decode estimate (:mod:`oomkit.planner.speed`), which ``speed``
    ranks by after "on the GPU or not" and the context deficit; ``kv_tokens``: the KV pool
    the runtime would allocate (vLLM's ``kv_cache_tokens``, SGLang's ``max_total_num_tokens``):
    inside a shared tier, of two candidates equal on everything else the larger pool first,
    before the free margin (a raised utilization leaves every margin near 0)."""
    deficit = max(0, target_ctx - cand.ctx)
    r_q = ladder.index(cand.quant)
    t_q = (quant_tier or {}).get(cand.quant, r_q)
    r_kv = kvs.index(cand.kv)
    amount = cand.offload_amount(n_layer)
    seqs = 0 if cand.max_num_seqs is None else 1
    fewer = 0 if cand.max_num_seqs is None else -cand.max_num_seqs
    # transformers eager -> sdpa (same numerics) or device_map=None + .to("cuda"): small changes
    attn = int(cand.attn is not None) + int(cand.device_map is not None)
    # in a shared tier (fp8 W8A8 at bf16's) the 16-bit KV cache before the exact quant
    shared = {*(quant_tier or {}), *(ladder[t] for t in (quant_tier or {}).values())}
    pool = -(kv_tokens or 0) if cand.quant in shared else 0
    ties = (fewer, amount, pool, -margin_bytes)
    tier_kv = r_kv if cand.quant in shared else 0
    quality: tuple[int, ...]
    if ctx_asked:
        quality = (t_q, deficit, tier_kv, r_q, cand.level, seqs, attn, r_kv, *ties)
    elif prompt_first:  # transformers: a shorter prompt drops input, a smaller batch only time
        quality = (r_q, cand.level, deficit, seqs, attn, r_kv, *ties)
    else:
        quality = (r_q, cand.level, seqs, deficit, attn, r_kv, *ties)
    if prefer == "speed":
        # the fastest decode first among plans that keep the same context on the GPU; a plan
        # without an estimate (no bandwidth known) after those with one, then as quality
        fast = (int(decode_tps is None), -round(decode_tps or 0.0, 1))
        return (int(cand.level > _LEVEL_GPU), deficit, *fast, *quality)
    if prefer == "context":
        return (deficit, r_q, cand.level, r_kv, seqs, attn, *ties)
    return quality

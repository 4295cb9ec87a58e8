"""vLLM V1: the sampler tensors a served request can ask for that the profile run never samples.

The profile's dummy sampler (vllm/v1/worker/gpu_model_runner.py ``_dummy_sampler_run``: v0.8.5
l.1531-1532, v0.10.1 l.2448-2449, v0.11.0 l.3205-3206, v0.33.0 l.5893-5895) builds its
``SamplingMetadata`` with ``max_num_logprobs=None`` and ``no_penalties=True``, so two branches of
``Sampler.forward`` (vllm/v1/sample/sampler.py) never run inside the measured peak:

* penalties (any request of the step with a repetition, frequency or presence penalty sets
  ``no_penalties=False`` for the whole batch): ``Sampler.apply_penalties`` ->
  vllm/v1/sample/ops/penalties.py ``apply_all_penalties`` -> vllm/model_executor/layers/utils.py
  ``apply_penalties`` (v0.11.0 l.52-85; identical in v0.8.5, v0.10.1, v0.33.0), which calls
  ``get_token_bin_counts_and_mask`` (l.35-49) twice: ``torch.zeros((num_seqs, vocab_size + 1),
  dtype=torch.long)`` (8 B) and ``mask = bin_counts > 0`` (bool, 1 B), for the prompt (its
  counts dropped on return, the mask kept) and for the output tokens (both kept); then
  ``logits -= frequency_penalties.unsqueeze(dim=1) * output_bin_counts`` materializes an fp32
  product (4 B). Live at that line: 1 + 8 + 1 + 4 = 14 B per entry, beside the sampler's fp32
  copy of the logits (``logits = logits.to(torch.float32)``, 4 B).
* log-probs (``SamplingParams(logprobs=k)``; ``logprobs_mode`` defaults to ``raw_logprobs``):
  ``raw_logprobs = self.compute_logprobs(logits)`` = ``log_softmax(dim=-1, dtype=torch.float32)``
  (4 B) before anything else, held until ``gather_logprobs`` at the end, so across the
  penalties and the top-k/top-p step (``batched_count_greater_than`` is ``torch.compile``d:
  no mask copy, vllm/v1/sample/ops/logprobs.py).

The rows are the scheduled batch, at most ``min(max_num_seqs, max_num_batched_tokens)`` (the
profile's own row count), every row ``vocab_size`` wide, on every TP rank of the last pipeline
stage (V1's ``LogitsProcessor._gather_logits`` all-gathers: ``Platform.use_all_gather`` is
``envs.VLLM_USE_V1``). Since ``apply_penalties`` returns before top-k/top-p, the step peaks at
``max(4 + 14, profiled path) + 4`` B per entry against the profiled path's bytes (FlashInfer
12, sort 36, Triton 16: :mod:`oomkit.estimate.hf_activations`). The difference lands in the
``1 - gpu_memory_utilization`` headroom. Whether clients send penalties or log-probs is not an
input, so the verdict counts it as a band term ("tight", never "does not fit").

Not modelled: the padded ``prompt_token_ids`` tensor the input batch builds for penalties
(``[num_reqs, longest prompt]`` int64: prompt-dependent); V0 (its own sampler, driver rank
only); Model Runner V2 (vllm/v1/worker/gpu/sample/penalties.py ``PenaltiesState``, default for
dense models from PR #44443, 2026) allocates its ``[max_num_reqs, vocab]`` int32 counts at
start-up, inside the profiled budget, which oomkit does not tell apart from V1's runner.
"""

from __future__ import annotations

from oomkit.spec.model import ModelSpec

__all__ = [
    "FP32_LOGITS",
    "LOGPROBS_BYTES_PER_ENTRY",
    "PENALTIES_BYTES_PER_ENTRY",
    "SOURCE",
    "WHAT",
    "request_sampler_extra_bytes",
    "request_sampler_per_entry",
]

SOURCE = (
    "vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run (no_penalties=True, "
    "max_num_logprobs=None); vllm/model_executor/layers/utils.py apply_penalties"
)
#: the verdict's band-term label
WHAT = (
    "vLLM sampler penalties/log-probs over [max_num_seqs, vocab]: int64 token counts, masks "
    "and fp32 log-probs that the profile's dummy sampler never allocates"
)

#: ``Sampler.forward``: ``logits = logits.to(torch.float32)``
FP32_LOGITS = 4
#: ``apply_penalties`` at ``logits -= frequency_penalties.unsqueeze(1) * output_bin_counts``:
#: prompt mask (bool) + output counts (int64) + output mask (bool) + the fp32 product
PENALTIES_BYTES_PER_ENTRY = 1 + 8 + 1 + 4
#: ``raw_logprobs = log_softmax(logits, dtype=torch.float32)``, held to ``gather_logprobs``
LOGPROBS_BYTES_PER_ENTRY = 4


def request_sampler_per_entry(profiled_per_entry: int) -> int:
    """Bytes per row per vocabulary entry a served step can add over the profiled sampler,
    whose path holds ``profiled_per_entry`` (the fp32 copy included).

    >>> request_sampler_per_entry(12), request_sampler_per_entry(36), request_sampler_per_entry(16)
    (10, 4, 6)
    """
    served = max(FP32_LOGITS + PENALTIES_BYTES_PER_ENTRY, profiled_per_entry)
    return served + LOGPROBS_BYTES_PER_ENTRY - profiled_per_entry


def request_sampler_extra_bytes(spec: ModelSpec, *, rows: int, profiled_per_entry: int) -> int:
    """Bytes one rank can hold beyond the profiled sampler peak for ``rows`` sampled rows."""
    return rows * spec.vocab_size * request_sampler_per_entry(profiled_per_entry)

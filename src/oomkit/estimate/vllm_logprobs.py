"""vLLM prompt log-probs: vocabulary-wide sampler tensors the profile run never allocates (pure).

A request with ``SamplingParams(prompt_logprobs=k)`` (lm-evaluation-harness asks for
``prompt_logprobs=1, max_tokens=1`` for every loglikelihood request,
lm_eval/models/vllm_causallms.py ``_model_generate(generate=False)``) gets one row of logits per
prompt token instead of one per sequence, and every row is ``vocab_size`` wide. The profile run
that sizes the KV pool samples one row per dummy sequence (V0 ``ModelRunner.profile_run``; V1
``_dummy_sampler_run`` over ``max_num_reqs`` rows), so these tensors are not in the budget:
they land in the ``1 - gpu_memory_utilization`` headroom (lm-evaluation-harness#2779:
Qwen2.5-72B on 8x A100 80GB at util 0.8 dies in ``sampler.py get_logprobs``, "Tried to
allocate 7.04 GiB", whatever the util).

Bytes per row (x ``vocab_size``):

* V0 (vllm/model_executor/layers/sampler.py ``Sampler.forward`` + ``get_logprobs``): the
  logits in the model dtype (held by the model runner), ``logits.to(torch.float)``,
  ``probs = softmax(..., dtype=float)``, ``logprobs = log_softmax(..., dtype=float)``, the copy
  ``logprobs[query_indices_gpu]`` passed to ``_get_ranks``, and its ``x > vals[:, None]`` bool
  mask: ``dtype + 4 x 4 + 1``. The logits are gathered to the driver only
  (``tensor_model_parallel_gather``), so only that rank holds them; one step batches up to
  ``max_num_batched_tokens`` prompt tokens (``max(max_model_len, 2048)`` without chunked
  prefill).
* V1 (vllm/v1/worker/gpu_model_runner.py ``_get_prompt_logprobs_dict``, one request at a time:
  ``compute_logits`` of the request's scheduled prompt tokens, ``Sampler.compute_logprobs``
  = ``log_softmax(dtype=float32)``, ``gather_logprobs`` with ``batched_count_greater_than``'s
  ``x >= values`` bool mask): ``dtype + 4 + 1``, on every TP rank (V1 all-gathers the logits),
  for up to ``min(max_num_batched_tokens, max_model_len)`` rows.

``max_num_batched_tokens`` is the server's default unless given; the offline ``LLM`` class that
lm-evaluation-harness drives defaults to more in V1 (``EngineArgs.get_batch_defaults``
``UsageContext.LLM_CLASS``: 16384 on >= 70 GiB GPUs other than A100, else 8192), so pass
``--max-num-batched-tokens`` for such runs.

How many rows a step really holds depends on the prompts sent (a prompt near
``max_model_len``, or in V0 a batch of prompts filling the step), so the verdict counts these
bytes as a band term on the ranks that hold them, like llama.cpp's prompt-length-dependent pool
growth, not in the device total.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oomkit.estimate.hf_weights import dtype_bytes
from oomkit.spec.model import ModelSpec

__all__ = [
    "NOTE",
    "SOURCE",
    "prompt_logprobs_bytes",
    "prompt_logprobs_details",
    "prompt_logprobs_rows",
    "row_bytes",
]

SOURCE = (
    "vllm/model_executor/layers/sampler.py Sampler.forward + get_logprobs (V0); "
    "vllm/v1/worker/gpu_model_runner.py _get_prompt_logprobs_dict (V1); "
    "lm-evaluation-harness#2779"
)

#: the estimate's assumption line (``rows``: prompt tokens per step)
NOTE = (
    "prompt log-probs: the sampler's [prompt tokens, vocab] tensors are outside the "
    "profiled budget (counted in the verdict's band: a step of {rows} prompt tokens)"
)

_FP32 = 4
_BOOL = 1


def prompt_logprobs_rows(*, v0: bool, max_num_batched_tokens: int, max_model_len: int) -> int:
    """The most prompt-logprob rows one step materializes.

    >>> prompt_logprobs_rows(v0=True, max_num_batched_tokens=32768, max_model_len=32768)
    32768
    >>> prompt_logprobs_rows(v0=False, max_num_batched_tokens=8192, max_model_len=4096)
    4096
    """
    if v0:  # every prompt of the step in one flattened logits tensor
        return max_num_batched_tokens
    return min(max_num_batched_tokens, max_model_len)  # one request at a time


def row_bytes(*, v0: bool, logits_elem_bytes: int) -> int:
    """Bytes per row per vocabulary entry live at the sampler's peak (see module docstring).

    >>> row_bytes(v0=True, logits_elem_bytes=2), row_bytes(v0=False, logits_elem_bytes=2)
    (19, 7)
    """
    if v0:
        return logits_elem_bytes + 4 * _FP32 + _BOOL
    return logits_elem_bytes + _FP32 + _BOOL


def prompt_logprobs_bytes(
    spec: ModelSpec,
    *,
    engine: str,
    max_num_batched_tokens: int,
    max_model_len: int,
    logits_elem_bytes: int,
    ranks: Sequence[str],
    tp: int,
) -> Mapping[str, int]:
    """Per device label: the prompt-logprob sampler tensors of one step at most.

    ``ranks``: device labels in vLLM's rank order (``pp_rank x tp + tp_rank``); the last
    pipeline stage samples. V0 engines (``engine`` starting with ``v0``) hold them on that
    stage's first TP rank only, V1 on each of its TP ranks.
    """
    v0 = engine.startswith("v0")
    rows = prompt_logprobs_rows(
        v0=v0, max_num_batched_tokens=max_num_batched_tokens, max_model_len=max_model_len
    )
    n = rows * spec.vocab_size * row_bytes(v0=v0, logits_elem_bytes=logits_elem_bytes)
    last = list(ranks[-tp:]) if tp <= len(ranks) else list(ranks)
    holders = last[:1] if v0 else last
    return {label: n for label in holders}


def prompt_logprobs_details(
    spec: ModelSpec,
    *,
    engine: str,
    max_num_batched_tokens: int,
    max_model_len: int,
    tp: int,
    labels: Sequence[str],
) -> dict[str, object]:
    """The vLLM estimate's ``runtime_details`` for prompt log-probs: bytes per device label
    (``prompt_logprobs_bytes``), rows per step and bytes per row."""
    v0 = engine.startswith("v0")
    elem = min(2, dtype_bytes(spec.torch_dtype or "bf16"))  # vLLM serves fp32 in 16 bits
    per_dev = prompt_logprobs_bytes(
        spec,
        engine=engine,
        max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=max_model_len,
        logits_elem_bytes=elem,
        ranks=labels,
        tp=tp,
    )
    return {
        "prompt_logprobs_bytes": dict(per_dev),
        "prompt_logprobs_rows": prompt_logprobs_rows(
            v0=v0, max_num_batched_tokens=max_num_batched_tokens, max_model_len=max_model_len
        ),
        "prompt_logprobs_row_bytes": spec.vocab_size * row_bytes(v0=v0, logits_elem_bytes=elem),
    }

"""Memory a program keeps by design, named beside an OOM: what it reads as is not what it is.

Read for :func:`oomkit.diagnose.rules_evidence.refine_by_evidence` on the failing event's own
line, before the growth reading (``rules_stated.stated_growth``), only where the runtime rule
left the cause open:

* :func:`stated_replay_buffer`: an off-policy RL replay buffer named as what grows: it fills
  host RAM up to its configured capacity, so the capacity, not a leak, is the lever.
* :func:`stated_graph_kept_in_inference`: inference run without ``torch.no_grad()`` (named as
  missing, or as the fix): autograd keeps every layer's activations for a backward pass that
  never comes, so the activations, not the model, are the lever.
* :func:`stated_full_logits`: logits or log-probs kept for every token (doccause15): batch x
  tokens x vocabulary, freed when the request or step ends, so a "leak" across requests is the
  batch's size.

Each rule states its mechanism in its docstring; docs/doctor-causes.md section "Evidence around
the message" lists them.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback

__all__ = ["stated_full_logits", "stated_graph_kept_in_inference", "stated_replay_buffer"]

# "the problem seem to come from replay buffer, which is always growing", "experience replay",
# "the replay memory"
_REPLAY = re.compile(
    r"(?i)\b(?:replay|experience)[ _-]?(?:buffer|memory)\b|\bexperience\s+replay\b"
)
# a GPU word on the line: a buffer kept on the device (some RL libraries store it there) is not
# host RAM, so the rule does not read it
_DEVICE = re.compile(r"(?i)\b(?:gpu|cuda|vram|device)\b|显存|顯存")


def stated_replay_buffer(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text names an RL replay buffer with the OOM: ``host_ram``, not a leak.

    Mechanism. Off-policy RL (DQN and its extensions, SAC, DrQ, DAgger) stores every
    environment transition in a replay buffer, NumPy arrays or Python lists in host memory,
    until it holds its configured capacity (1e5-1e6 transitions), then overwrites the oldest.
    With image observations a transition is tens of kilobytes (two 4x84x84 uint8 frame stacks
    are 56 KiB; 1e6 of them 53 GiB), so the process's resident memory rises step after step
    for hours, which reads as a leak, until the buffer is full or the kernel kills the process.
    The growth is by design: the buffer's capacity times one transition's size against the
    machine's RAM decides, and the lever is a smaller capacity (or compressed / lazily stacked
    frames, more RAM or swap). ``host_ram`` at 0.45, tried before the growth reading; a buffer
    named beside a GPU word (kept on the device) is not read.
    """
    if not fallback(result) or result.cause == "host_ram":
        return None
    m = _REPLAY.search(e.text)
    if m is None or _DEVICE.search(e.text):
        return None
    return Analysis(
        cause="host_ram",
        confidence=0.45,
        explanation=result.explanation + f" The text names a replay buffer ({m.group(0)!r}): "
        "off-policy RL keeps every transition in host RAM until the buffer holds its configured "
        "capacity, so memory rises for hours by design (it reads as a leak) until the buffer is "
        "full or the kernel kills the process. What would decide: the buffer's capacity x one "
        "transition's size (observations x 2, actions, rewards) against `free -h`; if the sum "
        "fits and memory still rises after the buffer is full, it is a leak instead.",
        fixes=(
            generic(
                "Shrink the replay buffer (or store frames compactly)",
                "a full buffer of image transitions takes tens of GB of host RAM.",
                (
                    "buffer_size = 100_000   # instead of 1_000_000",
                    "store uint8 frames once (lazy frame stacking), not float32 stacks",
                    "free -h; add swap if the buffer must stay this large",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# torch.no_grad() named as missing or as the fix: "without setting 'with torch.no_grad()'",
# "there is not no_grad decorator around the inference script", "should be wrapped in with
# torch.no_grad()", "Add torch.no_grad() in evaluation", "make torch.no_grad effective, avoid out
# of memory", "eval.py里可以加下torch.no_grad()，不然显存撑不住" (add no_grad, else the GPU memory
# cannot hold it). Using it and still failing ("If use `torch.no_grad()` block, the cpu memory
# will continually increase") names nothing missing and is not read.
_NO_GRAD = r"(?:torch\.)?(?:no_grad|inference_mode)\b"
_GRAPH_KEPT = re.compile(
    r"(?i)\b(?:without|not|missing|forg[oe]t\w*|lack\w*|add\w*|wrap\w*)\b"
    r"[^.\n]{0,40}?"
    + _NO_GRAD
    + r"|(?:可以加|加上|加下|加个|没有加|没加|缺少)[^。\n]{0,10}?"
    + _NO_GRAD
    + r"|"
    + _NO_GRAD
    + r"[^.\n]{0,40}?\b(?:effective|avoid\w*|otherwise|or\s+else)\b"
    + r"|"
    + _NO_GRAD
    + r"[^。\n]{0,20}?(?:不然|否则)"
)
_USED_STILL = re.compile(
    r"(?i)\b(?:if|when|even)\s+(?:i\s+)?(?:use|using|with)\b[^.\n]{0,20}?" + _NO_GRAD
)


def stated_graph_kept_in_inference(
    result: Analysis, e: OomEvent, ctx: LogContext
) -> Analysis | None:
    """The text names ``torch.no_grad()`` as missing from inference, or as the fix.

    Mechanism. Outside ``torch.no_grad()`` / ``torch.inference_mode()``, every operation on a
    tensor that requires grad records its inputs for the backward pass (autograd's saved
    tensors), so an evaluation or demo forward pass keeps every layer's activations alive
    until the output is freed, as a training step does, instead of freeing each as soon as the
    next layer has used it. The model's weights are the same either way; what overflows is the
    activations of the input (larger images, longer audio, a bigger evaluation batch make it
    worse), and a loop that keeps outputs also keeps their graphs. ``batch_or_activations`` at
    0.5, fix: wrap inference in ``torch.no_grad()``; tried before the growth reading (a graph
    kept per output grows across inputs but is released by the same fix). Using no_grad and
    still failing is not read.
    """
    if not fallback(result) or result.cause in {"batch_or_activations", "host_ram"}:
        return None
    text = e.text
    m = _GRAPH_KEPT.search(text)
    if m is None or _USED_STILL.search(text):
        return None
    return Analysis(
        cause="batch_or_activations",
        confidence=0.5,
        explanation=result.explanation + f" The text names torch.no_grad() as missing or as "
        f"the fix ({m.group(0)!r}): outside it autograd keeps every layer's activations for a "
        "backward pass that never comes, so an inference pass holds what a training step "
        "holds. What would decide: the same input under `with torch.no_grad():` (if it passes, "
        "the kept activations were the cause).",
        fixes=(
            generic(
                "Run inference under torch.no_grad() / torch.inference_mode()",
                "autograd then frees each layer's activations as soon as the next has used them.",
                (
                    "with torch.no_grad():\n    out = model(x)",
                    "@torch.inference_mode()\ndef predict(x): ...",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# (doccause15) logits or log-probabilities asked for every token: the serving engines' flags
# (TensorRT-LLM ``gather_all_token_logits`` / ``gather_context_logits``, ``return_context_logits``
# / ``return_generation_logits``; vLLM ``prompt_logprobs``; SGLang ``return_logprob``), logits
# said to be full ("the full [B, S, V] logits") or computed without chunking. A kernel whose name
# ends in ``_logits`` (``fp8_paged_mqa_logits``) is not read: ``\b`` does not split ``_logits``.
_FULL_LOGITS = re.compile(
    r"(?i)\b(?:gather_(?:all_token|context|generation)_logits|return_(?:context|generation)_logits"
    r"|prompt_logprobs|return_logprobs?)\b"
    r"|\b(?:full|all|entire|whole)\s+(?:\[?\s*B\s*,\s*S\s*,\s*V\s*\]?\s+)?(?:token\s+)?"
    r"(?:logits|log[- ]?probs?)\b"
    r"|\b(?:logits|logprobs?|log[- ]?probs?)\s+(?:for|of)\s+(?:every|all|each)\s+(?:the\s+)?"
    r"(?:tokens?|positions?)\b"
    r"|\bno\s+chunking\s+for\s+(?:the\s+)?(?:logits|logprobs?)\b"
)


_KV_POOL = re.compile(r"(?i)\bkv[ _-]?cache\b")


def stated_full_logits(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Logits kept for every token: ``batch_or_activations``, even when the title says "leak".

    Mechanism. A logits tensor is tokens x vocabulary: with a 150k vocabulary one token's row is
    about 300 KB in 16 bit (600 KB in fp32), so a 300-token prompt's context logits are about 90
    MB per request, and an engine that keeps them for every request in flight
    (``gather_all_token_logits`` in TensorRT-LLM, ``prompt_logprobs`` in vLLM) or a trainer that
    materialises the full [batch, sequence, vocabulary] tensor for its loss or log-probs holds
    memory that scales with batch x tokens x vocabulary. It is released when the request or step
    ends, so what looks like a leak across requests is the batch's size: ``batch_or_activations``
    at 0.45 (before :func:`oomkit.diagnose.rules_stated.stated_growth`), fixed by fewer requests
    at once, not gathering all logits, or chunked log-prob computation.
    """
    if not fallback(result) or result.cause in {"batch_or_activations", "host_ram"}:
        return None
    m = _FULL_LOGITS.search(e.text)
    if m is None or _KV_POOL.search(e.text):
        return None  # the KV pool named as what took the memory decides (its own rules)
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation=result.explanation + f" The text names logits kept for every token "
        f"({m.group(0)!r}): tokens x vocabulary per sequence (about 300 KB per token at a 150k "
        "vocabulary in 16 bit), for every request or sequence in the batch, freed when it ends. "
        "What would decide: whether memory falls back between requests/steps (the batch's "
        "logits) or keeps rising with them (a leak).",
        fixes=(
            generic(
                "Keep fewer logits alive",
                "full logits scale with batch x tokens x vocabulary.",
                (
                    "do not request all-token logits / prompt_logprobs unless needed",
                    "--max_batch_size 64   # TensorRT-LLM: fewer requests' logits at once",
                    "compute log-probs in chunks (logprob_chunk_size)",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )

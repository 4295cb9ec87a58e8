"""A chat whose memory grows turn by turn: the re-sent history is the context (doccause22).

Chat front ends do not keep a conversation on the device between turns; they send the whole
history again as the next prompt. ChatGLM-6B's ``chat()`` (THUDM/chatglm-6b
``modeling_chatglm.py``, ``ChatGLMForConditionalGeneration.chat``) concatenates every earlier
round (``prompt += "[Round {}]\\n问：{}\\n答：{}\\n".format(i, old_query, response)``) before
tokenizing, and its web demo passes the growing ``history`` to it on every turn; the maintainer
of ChatGLM-6B: the dialogue history is fed to the model, so its input grows longer and longer.
text-generation-webui builds the prompt from the chat history up to its truncation length.
Each turn's prefill therefore holds a KV cache (and, without a fused attention kernel, an
attention matrix) for every token said so far, so the memory rises with the turns until one
prefill does not fit: the context, not a leak and not the batch (``kv_cache_or_context``).

Read only where the runtime rule left the cause open (:func:`~oomkit.diagnose.rules_stated.
fallback`), on the message's line and the sentences around it (rules_evidence.EVIDENCE_RULES,
rules_surroundings.PROSE_RULES), before the generic growth rule (``stated_growth``, which reads
growth across steps as ``leak_or_accumulation``).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback

__all__ = ["stated_conversation_growth"]

# The failure placed in a running conversation or after its turns: "CUDA out of memory - during
# a conversation", "OOM after a few turns", "after 10 rounds of chat"; in Chinese, memory that
# rises "as the interaction goes on" (随着不断交互 / 随着对话), "with every dialogue turn"
# (每次对话 / 每轮对话), or in a multi-turn dialogue (多轮对话). "Interactive evaluation"
# (交互式评测) and a "chat model" name no turns and are not read.
_CONVERSATION = re.compile(
    r"(?i)\b(?:during|in|over|through(?:out)?)\s+(?:a|the|my|one|this|long(?:er)?)?\s*"
    r"(?:long\s+|multi-?turn\s+)?conversations?\b"
    r"|\bafter\s+(?:\d{1,4}|a\s+few|several|many|some|a\s+certain\s+number\s+of)\s+"
    r"(?:conversation\s+|chat\s+|dialog(?:ue)?\s+)?(?:turns|rounds|exchanges)\b"
    r"|\bafter\s+(?:\d{1,4}|a\s+few|several|many|some)\s+rounds?\s+of\s+"
    r"(?:chat|conversation|dialog(?:ue)?)\b"
    r"|随着[^。，,\n]{0,4}(?:交互|对话|聊天)(?!式)|(?:每次|每轮|多轮)(?:对话|交互|聊天)(?!式)"
)


def stated_conversation_growth(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text places the OOM in a conversation's later turns: ``kv_cache_or_context``.

    Mechanism (module docstring): every turn re-sends the history as the prompt, so the
    prefill's KV cache grows with the turns. Over open readings only, at 0.45 (a prose
    reading, as the other stated context rules); the deciding fact is whether a fresh
    conversation (empty history) passes at the same point.
    """
    if not fallback(result) or result.cause in {"kv_cache_or_context", "host_ram"}:
        return None
    m = _CONVERSATION.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.45,
        explanation=result.explanation + f" The text places the failure in a running "
        f"conversation ({m.group(0).strip()!r}): chat front ends send the whole history again "
        "as the next prompt, so each turn's KV cache covers every token said so far and grows "
        "until one prefill does not fit. What would decide: whether a new conversation (empty "
        "history) passes at the same point.",
        fixes=(
            generic(
                "Bound the history sent with each turn",
                "the prompt (and its KV cache) grows with every turn kept in the history.",
                (
                    "keep only the last turns: history = history[-N:]",
                    "lower the truncation length / max context (-c, --max-model-len, num_ctx)",
                    "start a new conversation",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )

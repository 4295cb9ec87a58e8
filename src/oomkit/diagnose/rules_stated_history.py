"""A chat whose memory grows turn by turn: the re-sent history is the context.

Mechanism. A chat built on transformers re-sends the whole conversation each turn: ChatGLM's
``model.chat(tokenizer, query, history)`` builds the prompt from every earlier (query,
response) pair (THUDM/ChatGLM-6B ``modeling_chatglm.py`` ``chat``: ``for i, (old_query,
response) in enumerate(history): prompt += "[Round {}]\\n问：{}\\n答：{}\\n"``), and an
OpenAI-style API server passes the client's ``messages`` list the same way. ``generate``
allocates the KV cache and the attention activations for that prompt on every call, so each
turn's allocation is larger than the last: memory that "grows with every conversation / request"
is the context growing, not tensors kept alive. The threads of the corpus say so where a
maintainer answered ("显存变多是因为历史记录的原因", clear the history; "history的增加会导致显存占
用增加", cap its size).

Precedence (docs/doctor-causes.md section 2): before the growth reading
(:func:`oomkit.diagnose.rules_stated.stated_growth`), at its confidence (0.5), only when the
growth is tied to the turns of a conversation (or to API requests of a chat model or chat UI)
and the text names no engine
that preallocates its KV pool (vLLM, SGLang, TensorRT-LLM, TGI, LMDeploy, OpenLLM: their pool is
sized at start-up, so growth across requests there is not the context; the corpus labels those
leak_or_accumulation). What would decide: whether memory falls back when the history is cleared.

Two statements read the same mechanism, the stronger first:

* growth tied to the turns ("显存随着对话越来越大", "memory grows with every conversation"):
  ``kv_cache_or_context`` at 0.5;
* the failure only placed in a running conversation, with no growth word ("CUDA out of memory
  during a conversation", "after 10 rounds of chat", 多轮对话): at 0.45, over open readings
  only. "Interactive evaluation" (交互式评测) and a "chat model" name no turns and are not read.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import _stated_growth_match, fallback

__all__ = ["stated_chat_history", "stated_conversation_growth"]

# the unit the growth is counted in: a conversation's turns, its history, the interaction
_TURNS = re.compile(
    r"(?i)对话|對話|问答|問答|聊天|交互|互動|多轮|多輪|历史|歷史|会话|會話|"
    r"\bhistory\b|\bconversations?\b|\bdialog(?:ue)?s?\b|\bchat\s+turns?\b|\b(?:each|every|per)\s+"
    r"(?:turn|message|question)\b|\bmulti-turn\b"
)
# API requests count only to a chat model or chat UI (each request carries the history there;
# requests to a stateless server are independent, and growth across them is accumulation)
_REQUESTS = re.compile(r"(?i)请求|請求|调用|調用|\brequests?\b|\bapi\s+calls?\b")
_CHAT_APP = re.compile(r"(?i)chat|gradio|web\s?ui|web\s+demo")
# an engine whose KV pool is preallocated at start-up, or its pool named
_POOL_ENGINE = re.compile(
    r"(?i)vllm|sglang|tensorrt|trt-?llm|text-generation-inference|\btgi\b|lmdeploy|openllm|"
    r"kv\s?cache\s+usage|mem[_-]fraction|gpu[_-]memory[_-]utilization"
)


def stated_chat_history(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Growth stated per conversation turn or request, no preallocating engine named:
    ``kv_cache_or_context`` (the re-sent history lengthens every prompt)."""
    del ctx
    if result.cause in {"kv_cache_or_context", "leak_or_accumulation"}:
        return None
    if not fallback(result) and not (result.cause == "host_ram" and result.confidence < 0.5):
        return None
    words, growth = _stated_growth_match(e.text)
    if words is None or not growth:
        return None
    turns = _TURNS.search(e.text) or (_CHAT_APP.search(e.text) and _REQUESTS.search(e.text))
    if not turns or _POOL_ENGINE.search(e.text):
        return None
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.5,
        explanation=result.explanation + f" The text says memory grows ({words!r}) with the "
        f"conversation ({turns.group(0)!r}): a chat re-sends its history every turn, so each "
        "prompt, its KV cache and attention activations are longer than the last. What would "
        "decide: whether memory falls back when the history is cleared (a leak would not).",
        fixes=(
            generic(
                "Cap the history sent with each turn",
                "every earlier turn is part of the next prompt; keeping the last few bounds it.",
                (
                    "response, history = model.chat(tokenizer, query, history=history[-4:])",
                    "messages = messages[-8:]   # OpenAI-style API clients",
                ),
            ),
            generic(
                "Bound the prompt and the reply",
                "the KV cache and attention grow with prompt + new tokens.",
                ("model.generate(..., max_new_tokens=512)", "max_length=4096"),
            ),
        ),
    )


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
    """The text places the OOM in a conversation's later turns, no growth word:
    ``kv_cache_or_context`` at 0.45 (the weaker of the module's two statements).

    Over open readings only; the deciding fact is whether a fresh conversation (empty
    history) passes at the same point.
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

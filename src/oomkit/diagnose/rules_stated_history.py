"""Memory said to grow turn after turn of a chat served by transformers: the history (docpost19).

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
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import _stated_growth_match, fallback

__all__ = ["stated_chat_history"]

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

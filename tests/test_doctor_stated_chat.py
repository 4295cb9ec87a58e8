"""doccause22: an OOM placed in a running conversation reads as the context (the re-sent history).

Chat front ends send the whole history again as each turn's prompt (ChatGLM-6B's ``chat()``
concatenates every earlier round), so the prefill's KV cache grows with the turns:
``rules_stated_history.stated_conversation_growth`` reads the statement as ``kv_cache_or_context``
where the runtime rule left the cause open. Near misses name a chat model or an interactive
evaluation, not turns.
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_evidence import EVIDENCE_RULES
from oomkit.diagnose.rules_stated import stated_growth
from oomkit.diagnose.rules_stated_history import stated_conversation_growth
from oomkit.diagnose.rules_surroundings import PROSE_RULES

CONVERSATION = (
    "CUDA out of memory - during a conversation",
    "CUDA out of memory after a few turns of chat with the 13B model",
    "The web demo hits CUDA out of memory after 10 rounds of conversation",
    "显存随着对话逐步增加，最后OOM",
    "多轮对话后报 CUDA out of memory",
)


@pytest.mark.parametrize("text", CONVERSATION)
def test_conversation_statements_read_as_context(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "kv_cache_or_context", d.explanation
    assert d.confidence <= 0.45
    assert "new conversation" in d.explanation  # the deciding question
    assert d.fixes[0].title == "Bound the history sent with each turn"


@pytest.mark.parametrize(
    "text",
    [
        "运行交互式评测是正常的，但是运行微调报错了 CUDA out of memory",  # interactive evaluation
        "CUDA out of memory when loading the chat model",
        "CUDA out of memory: the conversation template is wrong",
    ],
)
def test_no_turns_no_context_reading(text: str) -> None:
    assert diagnose_text(text).cause != "kv_cache_or_context"


def test_numbers_that_decide_are_not_overruled() -> None:
    # a request larger than the card: the allocator's own reading stays
    text = (
        "CUDA out of memory. Tried to allocate 30.00 GiB (GPU 0; 23.65 GiB total capacity; "
        "2.00 GiB already allocated; 20.00 GiB free; 2.10 GiB reserved in total by PyTorch) "
        "during a conversation"
    )
    assert diagnose_text(text).cause == "batch_or_activations"


@pytest.mark.parametrize(
    "record_id",
    [
        "h25-textgen-960",  # CUDA out of memory - during a conversation
        "h34-ChatGLM-6B-64",  # 随着不断交互，显存逐步增加直至OOM
    ],
)
def test_development_records_read_as_context(record_id: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.cause == "kv_cache_or_context", d.explanation


def test_read_before_generic_growth_in_both_lists() -> None:
    for rules in (EVIDENCE_RULES, PROSE_RULES):
        assert rules.index(stated_conversation_growth) < rules.index(stated_growth)

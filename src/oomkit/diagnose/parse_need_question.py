"""A question how much memory a model needs, with no failure in it: not an OOM.

"How much VRAM do I need to avoid OOM?", "Is 24GB enough or will it run out of memory?",
"24G显存够不够跑这个模型", "需要多少显存，显存不够怎么办" ask for a requirement; the out-of-memory
words in them are the outcome the asker wants to avoid or asks about, not one that happened. The
generic fallback (``parse_extra.parse_generic``) reads such a line as an OOM keyword only when
some sentence of it states a failure: a clause that says what happened ("CUDA Out of Memory
Error on 32GB V100 - How Much VRAM is Required?", "OOM error with 8GB Vram, what's the minimum
Vram needed?", "单卡60G还报CUDA out of memory呢", "but still oom on 40g, how much vram is
needed"). A quoted runtime message is such a clause, so a question that pastes one stays an OOM.

Linear-time patterns only (bounded repetitions, no nested quantifiers).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from oomkit.diagnose.parse_wordings_report_vetoes import SPLIT

__all__ = ["need_question"]

_I = re.IGNORECASE
_MEM = r"(?:v-?ram|gpu memory|gpu ram|video memory|graphics memory|memory|ram|gpus?)"
# the need asked: "how much VRAM do I need", "minimum VRAM required", "is 24GB enough",
# "需要多少显存", "至少需要多大的显存", "24G显存够不够"
_NEED = re.compile(
    r"\bhow (?:much|many gb|many gigabytes)\b(?: \w{1,15}){0,2}? " + _MEM + r"\b|"
    r"\bhow much (?:does|do|did|will|would|is)\b|"
    r"\b(?:minimum|min|recommended|required) (?:amount of )?"
    + _MEM
    + r"\b|"
    + _MEM
    + r" (?:is |are )?(?:requirements?|needed|required)\b|"
    r"\b(?:is|are|will|would|be) (?:my |the |a |an )?\d{1,4}(?:\.\d)? ?(?:gb?|gib)\b"
    r"(?: of)?(?: " + _MEM + r")? (?:be )?(?:enough|sufficient)\b|"
    r"(?:需要|需|要)(?:多少|多大)|(?:至少|最少|起码)(?:需要|要)|多大(?:的)?(?:显存|内存)|"
    r"多少(?:G|g|GB)?(?:的)?(?:显存|内存)|能跑(?:吗|嗎|么)|够不够|夠不夠|(?:显存|內存|内存)要求",
    _I,
)
# a clause boundary inside a sentence
_CLAUSE = re.compile(r"\s*[,，、:：(（]\s*|\s+[–—-]\s+")
# the out-of-memory clause is the outcome asked about, not one that happened
_HEDGE = re.compile(
    r"\b(?:avoid|avoiding|prevent|preventing|without|will|would|won'?t|might|may|could|to not|"
    r"not to|so that|before|if|or)\b|"
    r"怎么办|怎麼辦|够不够|夠不夠|够吗|夠嗎|会不会|會不會|能不能|吗|嗎|如果|要是|假如|的话|的話",
    _I,
)
# words that say it happened: "I get OOM", "报错", "出现"
_HAPPENED = re.compile(
    r"\b(?:get|gets|got|getting|gotten|having|had|encounter\w{0,3}|hit|hits|hitting|see|saw|"
    r"seeing|throws?|threw|raised?|still|always|keeps?|kept|crash\w{0,4}|fail\w{0,3}|"
    r"error|errors|errored)\b|"
    r"报|報|出现|出現|遇到|提示|显示|顯示|又|一直|总是|總是|还是(?!会)",
    _I,
)
# the question form of a sentence
_ASKS = re.compile(r"[?？]\s*$|吗|嗎|呢|够不够|夠不夠|多少|多大")
# "32G显存能跑吗，还是会显存不足": the alternative of a yes-no question
_OR_CLAUSE = re.compile(r"^(?:还是|還是)(?:会|會)")
_QUESTION_END = re.compile(r"(?:吗|嗎|么|麼|呢)\s*$")

_MAX = 1600


def _hypothetical_clause(clause: str, need: bool, previous: str) -> bool:
    if _HAPPENED.search(clause):
        return False
    if _OR_CLAUSE.match(clause) and _QUESTION_END.search(previous):
        return True
    return need or _HEDGE.search(clause) is not None


def need_question(line: str, is_oom: Callable[[str], bool]) -> bool:
    """``line`` asks how much memory something needs and states no failure: every piece of it
    that reads as an OOM (``is_oom``) is the need question itself, a clause of it that hedges
    ("to avoid OOM", "or will it run out of memory", "显存不够怎么办"), or another question that
    says nothing happened ("12GB is not enough?")."""
    text = line[:_MAX]
    if not _NEED.search(text):
        return False
    sentences = [s.strip() for s in SPLIT.split(text) if s.strip()]
    asked = False
    for s in sentences:
        need = _NEED.search(s) is not None and _ASKS.search(s) is not None
        asked = asked or need
        if not is_oom(s):
            continue
        if need:
            clauses = [c for c in _CLAUSE.split(s) if c]
            previous = ""
            for c in clauses:
                if is_oom(c) and not _hypothetical_clause(c, _NEED.search(c) is not None, previous):
                    return False
                previous = c
        elif not (_ASKS.search(s) and not _HAPPENED.search(s)):
            return False
    return asked

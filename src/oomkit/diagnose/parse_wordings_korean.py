"""Korean morphology the OOM wordings need (docpost19).

Korean writes a verb's ending into the stem's last syllable: 모자라다 (to be short) is
모자란다 (plain statement), 모자랐다 (past), 모자랄 (prospective), 모자랍니다 (formal), so a
grammar that spells the stem "모자라" misses every conjugated form but the -아/-요 ones. The
predicates here list the stem's last syllable in each batchim form (Unicode composes a Hangul
syllable from its initial, vowel and final: the final ㄴ/ㄹ/ㅁ/ㅂ/ㅆ changes the syllable).

Korean negates after the predicate: "-지 않다" / "-지 못하다" (메모리가 부족하지 않습니다, memory
is not short), a nominalised clause with 아니다 (모자란 건 아닌 것 같다, it is not that memory
is short), "-ㄹ 일은 없다" (there will be no shortage). :func:`negated_after` reads the few
characters after a match for these, as the English grammar's negation vetoes read before it.
Linear-time patterns only.
"""

from __future__ import annotations

import re

__all__ = ["KO_SHORT_PREDICATE", "negated_after"]

#: "is short / overflows / blew up / is full" in each conjugated form of its last syllable:
#: 모자라다 (be short), 넘치다 (overflow), 터지다 (burst), plus the nouns 부족 (shortage),
#: 초과 (excess), 바닥 (bottom) and the adverbs 가득 / 꽉 (full)
KO_SHORT_PREDICATE = (
    r"(?:부족|모자[라란랄람랍랐]|넘[쳐친칠침칩쳤치]|터[짐져진질집졌지]|초과|가득|꽉|바닥)"
)

_HANGUL = re.compile(r"[\uac00-\ud7a3]")
# what follows a Korean predicate that negates it: an optional 하/한/해 (the noun's verb), then
# -지 않/못/말 (not), or a topic/subject particle, a nominaliser (건, 게, 것은) and 아니다 in any
# of its syllable forms (아니, 아닌, 아님, 아닙), or "-ㄹ 일/리/걱정 은/이/가 없" (no occasion)
_NEG_AFTER = re.compile(
    r"[하한해할]?(?:지\s?(?:않|안|못|말)|(?:은|는|이|가)?\s?(?:건|게|것은|것이|거는|것도|거)?\s?"
    r"아[니닌님닙닐]|\s?(?:일|리|걱정)[은이가는]?\s?없)"
)


def negated_after(line: str, m: re.Match[str]) -> bool:
    """Whether ``m`` is a Korean predicate that the words right after it negate."""
    if _HANGUL.search(m.group(0)) is None:
        return False
    return _NEG_AFTER.match(line, m.end(), m.end() + 24) is not None

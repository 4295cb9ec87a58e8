"""Sentence-level vetoes of the prose-report grammar (English): advice and docs, release notes,
yes-no questions, advice addressed to the reader, hypotheticals.

Split out of :mod:`oomkit.diagnose.parse_wordings_report` (its section "sentence-level vetoes");
:func:`advice_to_reader` and :func:`hypothetical` also lend narrowed vetoes to the earlier
families (``parse_extra``, ``parse_wordings``). Linear-time patterns only.
"""

from __future__ import annotations

import re

__all__ = [
    "ADVICE",
    "HYPOTHETICAL",
    "RELEASE",
    "SPLIT",
    "TO_READER",
    "YES_NO",
    "advice_to_reader",
    "hypothetical",
]

_I = re.IGNORECASE
#: longest sentence the grammar reads (parse_wordings_report.MAX_SENTENCE)
_MAX_SENTENCE = 400
SPLIT = re.compile(r"(?<=[!?;。！？；])|(?<=[.])(?=\s|$)")

# ---- sentence-level vetoes (English) --------------------------------------------------------
# advice, docs and release notes: "if you run out ...", "to avoid filling ...", "Fixed ..."
ADVICE = re.compile(
    r"\b(?:if|in case|unless) (?:you|your|there|a model|the model is|models?|one)\b|"
    r"\b(?:when|whenever|until|unless|once) (?:you|your)\b|"
    # a property of the method, not an event: "memory usage grows linearly with the context"
    r"\b(?:linearly|quadratically|proportionally|proportional to)\b|"
    # growth that settles is a warm-up, not a leak: "grows during warmup then stays flat"
    r"\b(?:then|and then|but then|before it) (?:stays?|remains?|is|becomes?|gets?) "
    r"(?:flat|stable|constant|steady)\b|\b(?:plateau(?:s|ed)?|stabili[sz](?:es|ed)|"
    r"level(?:s|led|ed)? off|stops? (?:growing|increasing|rising))\b|"
    # the docs address the reader's hardware; a user addresses the maintainer's code
    r"\byour (?:model|gpu|machine|system|device|card|hardware|computer|ram|vram|memory)s?\b|"
    r"\b(?:it'?s possible|possibly|in theory|theoretically|hypothetically|you should|"
    r"please note|note that)\b|"
    # a storage card or a disk, not RAM: "memory card is full", "on my 4GB sd card"
    r"\b(?:memory card|sd[- ]?card|micro ?sd|scheda di memoria|tarjeta de memoria|"
    r"carte m[ée]moire|Speicherkarte|cart[ãa]o de mem[óo]ria|ssd|hdd|disk|storage)\b|"
    # a fix reported, or a use that does not fail
    r"\b(?:was|were|is|are|has been|have been|got|been|now) (?:now )?(?:fixed|resolved|patched)\b|"
    r"\bfixed in\b|\bbut (?:it )?(?:does ?n[o']t|did ?n[o']t|never|no|without) |"
    r"\b(?:to avoid|to prevent|avoid(?:s|ed|ing)?|prevent(?:s|ed|ing)?|so that|in order to|"
    r"to reduce|to save|to limit|no longer|instead of|how to)\b",
    _I,
)
RELEASE = re.compile(
    r"^\W{0,4}(?:fix(?:ed|es)?|resolved?|prevent(?:s|ed)?|avoid(?:s|ed)?|reduce[sd]?|lower(?:s|ed)?|"
    r"decrease[sd]?|improve[sd]?|optimi[sz]e[sd]?|added|adds?|support(?:s|ed)?|allow(?:s|ed)?|"
    r"enable[sd]?|use|try|set|increase|make sure|ensure|note|tip|feature request|"
    r"please add|would be nice)\b",
    _I,
)
# a yes-no question is hypothetical: "Does it run out of memory on 8 GB?" ("Why does my VRAM
# fill up?" reports that it does)
YES_NO = re.compile(
    r"^\W{0,4}(?:does|do|did|will|would|can|could|is|are|should|shall|might|may)\b[^?]{0,400}\?\s*$",
    _I,
)

# (docpost21) a condition that is a duration, "if you run it (for) long enough" (not "a long
# enough context", a size): the failure comes with time, a reproduction rather than advice
_NOT_A_DURATION = r"(?![^.\n]{0,120}?(?<!\ba )(?<!\ban )\blong enough\b)"

TO_READER = re.compile(
    # not a duration as the condition (docpost21; HYPOTHETICAL below): "if you run it for long
    # enough, it will hit an OOM" is a reproduction
    r"\W{0,4}(?:if|when|whenever|in case|unless) you\b" + _NOT_A_DURATION + r"|"
    # the docs' fallback chain: "... then the CPU if there is still not enough RAM"
    r".{0,300}?\bif there(?:'s| is) (?:still )?not enough (?:ram|memory|vram|space)\b|"
    r".{0,300}?\bwhen you don'?t have enough\b|"
    # a condition on the reader's machine inside the sentence: "... can cause serious problems
    # if you'll be running low on RAM"
    r".{0,300}?\bif you(?:'ll| will|'re| are)? (?:be )?(?:running|run) (?:low on|out of)\b",
    re.IGNORECASE,
)
HYPOTHETICAL = re.compile(
    # (docpost21, heldout44) not a duration as the condition: "if you run any model ... for long
    # enough ..., it will overflow and hit an OOM error at some point" states that time alone
    # brings the failure (a reproduction, as "跑久了就爆"), not advice for a reader's setting
    r"^\W{0,4}(?:if|when|whenever|in case|unless) you\b" + _NOT_A_DURATION + r"|"
    r"\bto (?:avoid|prevent)\b|"
    r"\bhow (?:to|do I|can I) (?:avoid|prevent|reduce|limit)\b|\bno longer\b|"
    r"\b(?:that|which) (?:usually |typically |often |otherwise )?(?:do|does|did|would|will)"
    r"(?: not|n't) fit\b|\bsuch as when\b|"
    r"\b(?:was|were|has been|have been|got) fixed\b|"
    r"^\W{0,4}(?:does|do|did|will|would|can|could|is|are|should|shall|might|may)\b[^?]{0,400}"
    r"\?\s*$|"
    # Chinese advice and yes-no questions: "如何避免显存占满" (how to avoid), "是否会爆显存"
    r"(?:如何|怎么|怎樣|怎样)?(?:避免|防止)|是否|会不会|會不會|能否",
    re.IGNORECASE,
)


def advice_to_reader(line: str) -> bool:
    """Every sentence of ``line`` opens as advice to the reader ("If you run out of VRAM, lower
    the batch size."): docs, not a report. The generic fallback's own keywords are silenced
    only by this (a pull request titled "... to avoid OOM" and a question "Is there any chance
    to ... avoid oom errors?" are corpus records of an OOM thread)."""
    sentences = [s.strip() for s in SPLIT.split(line[: 4 * _MAX_SENTENCE]) if len(s.strip()) >= 8]
    return bool(sentences) and all(TO_READER.match(s) for s in sentences)


def hypothetical(line: str) -> bool:
    """Every sentence of ``line`` is advice to the reader, a change that ended a failure or a
    yes-no question ("If you run out of VRAM, lower the batch size.", "SDXL no longer crashes on
    8GB cards.", "Does it run out of memory on 16 GB?", "如何避免显存占满"): the memory words in it
    report no failure. Narrower than this module's own vetoes, because it also silences the
    earlier families: a runtime's hint ("If there is none then your RAM was full") and a pull
    request's "fixes the SIGABRT ... under GPU memory pressure" stay what they were."""
    sentences = [s.strip() for s in SPLIT.split(line[: 4 * _MAX_SENTENCE]) if len(s.strip()) >= 8]
    return bool(sentences) and all(HYPOTHETICAL.search(s) for s in sentences)

"""Memory growth told with its pace before the verb (docpost21, from the retired heldout44).

``rules_stated._GROWTH_WORDS`` reads growth with the adverb after the verb ("grows steadily",
"increases over time") and "keeps increasing"; a report as often puts the pace first: "vram
usage gradually increasing each run until OOM" (llama.cpp issue 23446), "the memory usage will
continuously increase until an OOM occurs" (SGLang issue 9365). The subject must be memory
(memory, RAM, VRAM): "gradually increase the batch size" is a lever, not growth. Growth per
run or request without "with" ("increasing each run") is the same statement as "with each run"
(rules_stated): what one run or request needs is freed when it ends, so memory that rises run
after run is state kept past it.

A run said to fail once it runs "long enough" ("if you run any model ... for long enough ...
it will overflow and hit an OOM error at some point", llama-cpp-turboquant issue 232) is the
English of "跑久了就爆" (rules_stated): what one step needs fit at the start, so time alone
brought the failure.

Every quantifier is bounded.
"""

from __future__ import annotations

import re

__all__ = ["LONG_RUN", "PACE_FIRST_GROWTH", "PROGRESSIVE_UNTIL"]

_VERB = r"(?:increas(?:e|es|ed|ing)|grow(?:s|n|ing)?|grew|ris(?:e|es|ing)|climb(?:s|ed|ing)?)"

# between the subject and the verb: no sentence break and no negation ("memory does not
# gradually increase" rules growth out; rules_stated's own negation check reads only before the
# match)
_GAP = r"(?:(?!\bnot\b|n't\b|\bnever\b|\bno\b)[^.,;:\n])"

#: memory as the subject, then a pace adverb before the verb, or the verb per run / request
PACE_FIRST_GROWTH = re.compile(
    r"(?i)\b(?:memory|ram|vram)\b" + _GAP + r"{0,40}?\b(?:gradually|steadily|slowly|continuously"
    r"|constantly|progressively|incrementally)\s+" + _VERB + r"\b"
    r"|\b(?:memory|ram|vram)\b" + _GAP + r"{0,30}?\b" + _VERB + r"\s+(?:on\s+)?(?:each|every)\s+"
    r"(?:run|iteration|epoch|request|generation|call|query|prompt|turn)\b"
)

#: (docpost28, heldout53) memory in the progressive, rising until the failure: "ram usage is
#: growing to the point it's oomkilled" (unsloth issue 10921). What one step or request needs
#: is there from its start; memory still rising while the process runs is state kept past it.
#: The subject must be memory: "increasing the batch size until OOM" is a lever.
PROGRESSIVE_UNTIL = re.compile(
    r"(?i)\b(?:memory|ram|vram)\b" + _GAP + r"{0,30}?\b(?:is|are|was|were|keeps?|kept)\s+"
    r"(?:growing|increasing|rising|climbing)\s+(?:up\s+)?(?:to\s+the\s+point|until|till|untill)\b"
)

#: a run, a use or a server left running "long enough" (not "the context is not long enough")
LONG_RUN = re.compile(
    r"(?i)\b(?:run|runs|running|ran|use|using|used|leave|left|keep|kept)\b[^.\n]{0,80}?"
    # an adverb of time, not a size: "a long enough context" is not read
    r"(?<!not )(?<!n't )(?<!\ba )(?<!\ban )(?<!\bthe )\b(?:for\s+)?long\s+enough\b"
)

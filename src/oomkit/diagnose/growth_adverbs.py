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

__all__ = [
    "GROWTH_UNTIL_EXHAUSTED",
    "LONG_RUN",
    "PACE_FIRST_GROWTH",
    "PROGRESSIVE_UNTIL",
    "RUN_DURATION",
]

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

#: (docpost31, over the development parts) memory as the subject, rising in any tense, then the
#: end of the run within three words: "the using memory increases all the time until 85% then the
#: process is killed" (EasyOCR issue 211), "the CPU memory usage increases abnormally and
#: eventually occupies the entire available CPU memory" (loco-mujoco issue 90), "cpu memory ...
#: increasing which causes fine-tuning crash" (openpi issue 764). What one step needs is
#: allocated at its start and freed at its end (PyTorch FAQ, "My model reports 'cuda runtime
#: error(2): out of memory'": "Don't accumulate history across your training loop"; the kernel's
#: OOM killer, mm/oom_kill.c, picks the process whose resident set grew), so memory that keeps
#: rising until the run fails is state kept past the steps. A size between the verb and the end
#: ("increases with the batch size until OOM", "as I raise the resolution") is how one step
#: scales, not growth, and is not read.
GROWTH_UNTIL_EXHAUSTED = re.compile(
    r"(?i)\b(?:memory|ram|vram)\b" + _GAP + r"{0,30}?\b" + _VERB + r"\b"
    r"(?:\s+(?!(?:with|as|when|whenever|if|by|for)\b)[\w%]{1,20}){0,3}?,?\s+"
    r"(?:until|till|untill|eventually|which\s+caus(?:es|ed))\b"
)

#: a run, a use or a server left running "long enough" (not "the context is not long enough")
LONG_RUN = re.compile(
    r"(?i)\b(?:run|runs|running|ran|use|using|used|leave|left|keep|kept)\b[^.\n]{0,80}?"
    # an adverb of time, not a size: "a long enough context" is not read
    r"(?<!not )(?<!n't )(?<!\ba )(?<!\ban )(?<!\bthe )\b(?:for\s+)?long\s+enough\b"
)

#: (docpost31) the same statement as "long enough" with the time given: a failure "after 10 hrs of
#: training" (ray issue 21718), "after about 20 minutes of running" (tflite-support issue 269), a
#: session used "for too long" (flutter_gemma issue 37). Hours of a run are many completed steps,
#: and what one step needs fit at the start (rules_stated ``_AFTER_STEPS``), so time alone
#: brought the failure. Loading ("after 10 minutes of loading") is one step and is not read, nor
#: "within" (the failure came early), nor "not ... for too long".
RUN_DURATION = re.compile(
    r"(?i)\bafter\s+(?:about\s+|around\s+|roughly\s+|~\s?|a\s+few\s+|several\s+|some\s+)?"
    r"(?:\d{1,4}(?:\.\d{1,2})?\s?)?(?:hours?|hrs?|minutes?|mins?|days?)\s+(?:of\s+)?"
    r"(?:training|running|inference|serving|generation|use|usage)\b"
    r"|\b(?:run|runs|running|ran|use|using|used|leave|left|keep|kept)\b" + _GAP + r"{0,60}?"
    r"\bfor\s+too\s+long\b"
)

"""An out-of-memory *report in prose*: the grammar users write it in, not one thread's sentence.

Most issue texts the fresh corpus parts missed are sentences without a runtime's message and
without an OOM word ("the process gets killed when loading", "my GPU fills up and it crashes",
"VRAM usage keeps growing until it dies", "it runs out at step 3", "the model doesn't fit on my
3090", "显存撑不住", "会爆内存"). What they share is a grammar, and this module recognises the
grammar, sentence by sentence (``parse_wordings.harvested_match`` runs it last, in the generic
fallback: an event only where no runtime parser and no earlier family found one):

* **a memory noun with a failure or limit predicate**, in either order: the noun (GPU / video /
  system memory, VRAM, RAM, 显存, 内存, メモリ, 메모리, Speicher, mémoire, memoria, memória,
  память) and the predicate (runs out, fills up, is full, exceeds, overflows, explodes, maxes
  out, keeps growing until, is not enough, hits the limit; "uses up all 32 GB of RAM", "takes all
  the RAM", "runs out of all memory"; 不够, 撑不住, 占满, 爆了; 足りない, いっぱい; 부족, 초과;
  reicht nicht, ist voll; insuffisante, pleine; insuficiente, llena, se agota; insuficiente,
  cheia, esgotada; не хватает, закончилась), with nothing between them that negates or hedges
  it ("VRAM does not run out", "memory may fill up");
* **a card that fills up**: "my GPU fills up", "the card is maxed out";
* **a kill or a crash tied to a step or to the memory**: "gets killed when loading", "was killed
  during training" (a kill named with its step is the OOM killer's way; "I killed the process
  while training" is the user's); a crash with the memory or a card's size in the same
  sentence ("crashes if the duration goes above 8 s on an 8 GB VRAM GPU", "the RAM fills and
  the program crashes"), not one named with another cause (segfault, assert, driver);
* **memory that grows until the process dies**: "consuming memory and increasing until killing
  itself";
* **running out at a step**: "it runs out at step 3", "runs out after epoch 2";
* **a model that does not fit**: "the model doesn't fit on my 3090", "can't fit it into 24 GB";
  not the docs' "models that don't fit in memory" (a relative clause) nor advice;
* **a load or a run that cannot happen on the stated memory**: "can not load the model with 8
  RTX3090 (24G)", "unable to fine-tune it on a 16 GB card";
* **a memory error received**: "it always gives a memory error", "I get an Memory error".

What must stay silent, sentence by sentence (``tests/test_doctor_prose_reports.py`` lists them,
and ``benchmarks/doctor_prose_negatives.py`` measures the false-positive rate on runtimes' own
docs, ``tests/fixtures/prose_negatives.jsonl``): advice and docs ("if you run out of VRAM, ...",
"to avoid filling the GPU memory", "models that don't fit in memory"), release notes ("Fixed
VRAM filling up ...", "no longer crashes"), feature requests ("add an option to ..."), yes-no
questions ("Does it run out of memory on 8 GB?"), negations ("the memory never fills up"), and
memory named for something else (bandwidth, access faults, disk).

The other languages' patterns are in :mod:`oomkit.diagnose.parse_wordings_report_i18n`.
:func:`hypothetical` and :func:`advice_to_reader` lend this module's vetoes to the earlier
families (``parse_wordings.harvested_match``, ``parse_extra.parse_generic``), narrowed so that
no corpus record they recognised is lost.

The event is the generic fallback's (``parse_extra.parse_generic``, kind ``oom_keyword``): its
cause is read from the wording alone, at the generic rule's low confidence (at most 0.4), as a
report in prose deserves. Every pattern is behind literal needles, scans one sentence at most
:data:`MAX_SENTENCE` characters long, and has only bounded quantifiers (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.parse_wordings_report_i18n import i18n_match
from oomkit.diagnose.parse_wordings_report_shapes import SHAPE_NEEDLES, lever_match, shape_match
from oomkit.diagnose.parse_wordings_report_vetoes import (
    ADVICE,
    RELEASE,
    SPLIT,
    YES_NO,
    advice_to_reader,
    hypothetical,
)
from oomkit.diagnose.text import needles_re

__all__ = ["CANNOT_BE_FREED", "MAX_SENTENCE", "advice_to_reader", "hypothetical", "report_match"]

_I = re.IGNORECASE
#: (docrec30) memory that cannot be given back: "could not be released", "can't be freed" (the
#: growth reading, ``rules_stated.stated_growth``, reads the same words; doccause20)
CANNOT_BE_FREED = r"(?:could|can|would)(?: ?not|n't) be (?:freed|released|reclaimed)\b"
#: the longest sentence read (a longer one is cut: prose reports are short)
MAX_SENTENCE = 400

# sentences: split after . ! ? ; and their CJK forms (a decimal point "8.5" does not split)
_SPLIT = SPLIT  # sentence boundaries (parse_wordings_report_vetoes)

# ---- memory nouns -------------------------------------------------------------------------
_MEM_EN = (
    r"(?:(?:gpu|cuda|video|graphics|device|system|host|cpu|physical|unified|shared|main|card|"
    r"computer|pc|mac|machine|server|container)(?:'s)? (?:memory|mem|ram)|"
    r"v-?ram|\bram\b|\bmemory\b|\bmem\b)"
)
_USAGE = r"(?: (?:usage|use|consumption|footprint|utili[sz]ation|occupancy|allocation|pressure))?"
_MEM_NOUN = re.compile(_MEM_EN + _USAGE, _I)

# ---- English predicates after the noun ----------------------------------------------------
_PRED_AFTER = re.compile(
    r"\b(?:run(?:s|ning)? out|ran out|run dry|runs dry|over-?committed|"
    # "my vram stay at maximum usage"
    r"(?:stays?|stayed|remains?|remained|stuck|sits?) (?:at|on) (?:the )?(?:max(?:imum)?|100 ?%|"
    r"peak|full)\b|"
    # "the need memory is too large (>250GB)", "memory usage is too high"
    r"(?:is |was |are |gets? |got )?(?:way |far |much )?too (?:large|big|high|huge)\b|"
    # a leak: "VRAM use grows when using X", "memory keeps increasing after each epoch",
    # "memory usage increases a lot after epoch 0" (up to two adverb words before the step)
    r"(?:keeps? |kept )?(?:grows?|growing|grew|increases?|increasing|increased|rises|rising|"
    r"climbs?|climbing|accumulates?|accumulating|builds? up|stacks? up)(?: \w{1,12}){0,2}"
    r" (?:when|after|each|every|over time|per|during|across|between|and never|without|"
    r"with (?:each|every))\b|"
    # "VRAM is not freed when X falls back", "its related memory is not freed"
    r"(?:is |was |are |were )?(?:not|never|\w{1,6}n't) (?:being |getting )?"
    r"(?:free[ds]?|release[ds]?|clear(?:ed|s)?|deallocated?|return(?:ed|s)?|reclaim(?:ed|s)?)\b|"
    # (docrec30) "30mb of gpu memory which could not be released" after every backward
    r"(?:that |which )?" + CANNOT_BE_FREED + "|"
    # "the gpu memory is still occupied by the process" after the program finished (heldout24)
    r"(?:is |was |are |were |remains? )still (?:being )?occupied\b|"
    r"fill(?:s|ed|ing)?(?: up)?\b|fulled|"
    r"(?:is|was|are|were|gets?|got|becomes?|became|being|goes|went|getting|stays?|stayed|"
    r"remains?|almost|nearly|completely|totally|100 ?%) full\b|"
    r"(?:is|was|are|were|gets?|got|being|getting|became|becomes) (?:completely |totally |all |"
    r"quickly |entirely |fully )?(?:used up|exhausted|maxed(?: out)?|saturated|eaten up|"
    r"filled|overloaded)|"
    # "the VRAM gets fully occupied" (occupied alone is also "held by another process": only
    # with the adverb that makes it all of it, and not "occupied by" what is expected to hold it)
    r"(?:is|was|are|were|gets?|got|being|getting|became|becomes) (?:completely|totally|fully|"
    r"entirely|100 ?%) occupied\b(?! by\b)|"
    # "Memory is fully eaten" (eaten without "up" only with the adverb that makes it all)
    r"(?:is|was|are|were|gets?|got|being|getting) (?:completely|totally|entirely|fully|all) "
    r"eaten\b|"
    r"exceed(?:s|ed|ing)?\b(?! (?:the )?bandwidth)|overflow(?:s|ed|ing)?\b|"
    r"explod(?:es|ed|ing)|blow(?:s|n|ing)? up|blew up|skyrocket(?:s|ed|ing)?|"
    r"max(?:es|ed|ing)? out|"
    r"(?:keeps?|kept|continues|continued|is|was) (?:on )?(?:growing|increasing|rising|climbing|"
    r"going up)(?: \w{1,20}){0,3} (?:until|till|and (?:then )?(?:crash|die|dies|kill|freez|oom))|"
    r"(?:grows?|grew|increas(?:es|ed|ing)|ris(?:es|ing)|climb(?:s|ed|ing)) (?:until|till)\b|"
    r"(?:is|was|are|were|still|also)? ?(?:not|n't|isn'?t|wasn'?t|aren'?t) (?:big |large )?enough|"
    r"insufficient|too (?:small|low|little)|"
    r"(?:hits?|hitting|reached|reaches|reaching) (?:the |its |my )?(?:limit|max(?:imum)?|"
    r"100 ?%|ceiling|cap)\b|"
    r"(?:spik(?:es|ed|ing)|goes|went|jumps?|jumped|shoots?|shot) (?:up )?to (?:100 ?%|the max)|"
    r"(?:is|was) (?:all )?gone)",
    _I,
)
_RIGHT_FULL = re.compile(
    r" (?:is )?full\b(?![-\w])(?! (?:precision|model|copy|size|fine|range|list|set|weights?|"
    r"state|parameters?|delta|dequantized))",
    _I,
)
# the memory as a topic: "the documentation on memory is still insufficient"
_TOPIC = re.compile(r"\b(?:on|about|regarding|concerning|docs?|documentation|section)\s$", _I)
# between the noun and its predicate: what negates or hedges it ("VRAM does not run out",
# "memory may fill up"); "not enough" is a predicate, matched before this is read
_GAP_VETO = re.compile(
    r"\b(?:not|never|no|doesn'?t|didn'?t|don'?t|won'?t|wouldn'?t|shouldn'?t|hardly|barely|"
    r"without|might|may|could|would|will|should|can|cannot|can't|if|unless|before|"
    r"bandwidth|speed|access|address|alignment|corrupt\w{0,4}|dump|leak check|disk|storage)\b",
    _I,
)

# ---- English predicates before the noun ---------------------------------------------------
_AMOUNT = (
    r"(?:(?:the|my|our|its|his|her|their|available|free|system|gpu|cuda|video|host|cpu|of) ){0,3}"
)
_SIZE_OF = r"(?:\d{1,4}(?:\.\d{1,2})? ?(?:gb?|gib|tb|mb|mib)\b (?:of )?(?:(?:the|my|our) )?)?"
_CORE = (
    r"(?:(?:gpu |cuda |video |graphics |system |host |cpu |physical |unified )?"
    r"(?:memory|mem|ram)\b|v-?ram\b)"
)
_PRED_BEFORE = re.compile(
    # "runs out of all memory 64G", "ran out of my 24 GB of VRAM"
    rf"\b(?:run(?:s|ning)?|ran) out of (?:all )?{_AMOUNT}{_SIZE_OF}{_CORE}|"
    # "uses up all 32gb of ram", "takes all the RAM", "ate every byte of VRAM"
    # (not "takes all GPU memory": TensorFlow's allocator does that by default)
    r"\b(?:(?:uses?|used|using|takes?|took|taking|consumes?|consumed|consuming|sucks?|sucked) up|"
    r"eats?|ate|eating|fill(?:s|ed|ing)?|fulled|max(?:es|ed|ing)|"
    r"exhausts?|exhausted|exhausting|devours?|devoured|chews?|chewed|blows? through|"
    # (docrec30) "pumps all the RAM", "saturates all of the VRAM"
    r"blew through|pumps?|pumped|pumping|saturates?|saturated|saturating) (?:up )?"
    r"(?:all|the whole|the entire|the full|100 ?%|"
    rf"every (?:bit|byte)|almost all|nearly all)(?: of)? {_AMOUNT}{_SIZE_OF}{_CORE}"
    r"(?! (?:bandwidth|bus|controller|channels?|speed|clock)\b)|"
    # "fulled the GPU memory", "filled up my VRAM", "maxes out the RAM"
    r"\b(?:fulled|filled up|fills up|filling up|maxe[sd] out|maxing out|used up|uses up|"
    r"eats up|ate up|eating up|blows up|blew up|blowing up|overflows|overflowed|overflowing|"
    r"exhausts|exhausted|exhausting|explodes|exploded) (?:all )?"
    rf"(?:(?:the|my|our|its|available|whole|entire) ){{1,3}}{_SIZE_OF}{_CORE}|"
    # "uses too much VRAM", "takes way too much memory"
    r"\b(?:uses?|used|using|takes?|took|taking|consumes?|consumed|consuming|needs?|needed|"
    r"requires?|required|allocates?|allocated|eats?|ate) (?:way |far |much )?too much "
    rf"{_CORE}|"
    # "requires massive memory space (> 100GB)": a stated size after a huge need
    r"\b(?:requires?|required|requiring|needs?|needed|needing|takes?|took|uses?|used) "
    r"(?:massive|huge|enormous|insane|crazy|way too much|too much|a lot of|lots of|tons of) "
    rf"{_CORE}(?: space| usage)? ?\(?(?:[>~≈]|over|above|more than) ?\d|"
    # "the memory error", as received: "it always gives memory error"
    # "pushes the machine past its RAM limit", "went over the memory limit" (a budget passed)
    r"(?P<limit>\b(?:past|over|beyond|above) (?:the|its|my|our|their|his|her|a|the machine's|"
    r"the system's) (?:gpu |system |host |cpu |device |physical |unified )?(?:memory|ram|vram) "
    # (not "the memory limit options": the limit as a modifier of another noun is the setting)
    r"(?:limit|budget|capacity|cap)\b(?! (?:options?|settings?|values?|flags?|parameters?|"
    r"configs?|configuration|docs?|documentation|variables?|field|knob)\b))|"
    r"\b(?:get|gets|got|getting|gives?|gave|giving|throws?|threw|shows?|showed|hits?|having|"
    r"raises?|raised|encounter(?:s|ed)?|see|saw|receiv(?:e|ed|ing)|(?:aborts?|aborted|"
    # (docrec32) the run ends on it: "it'll abort with a vram error on load"
    r"crashes|crashed|fails|failed|dies|died|errors out|errored out|stops|stopped) with) "
    r"(?:always |again |an? |the |this |that |same |a similar ){0,2}"
    r"(?:(?:cuda |gpu |vram |ram |system )?memory|(?:gpu )?vram) errors?\b"
    r"(?! ?(?:handl|disabl|enabl|check|count|correct|detect|inject|test|report|log|code|rate))",
    _I,
)
# the words just before a predicate-first match that hedge or negate it
_BEFORE_VETO = re.compile(
    # ("not only filling up the RAM, but ...": an intensifier, not a negation)
    r"(?:\b(?:not(?! only)|never|no|n't|might|may|could|would|will|should|can|cannot|to|won't|"
    r"doesn't|don't|didn't|without|avoid|prevent|stop|stops|otherwise)\W{1,3}"
    r"(?:\w{1,12}\W{1,3}){0,1})$",
    _I,
)

# ---- cards, kills, crashes, growth, steps, fit, loads --------------------------------------
_CARD_FULL = re.compile(
    r"\b(?:gpu|card|graphics card|video card|vram)s?(?:'s)? "
    r"(?:(?!not\b|never\b|no\b)\w{1,12} ){0,2}?"
    r"(?:fills? up|filled up|is full|was full|gets? full|got full|becomes full|maxes out|"
    r"maxed out|is maxed|was maxed|overflows?|overflowed|is overloaded|runs? out)\b",
    _I,
)
_STEP = (
    r"(?:load|train|infer|generat|quantiz|convert|merg|fine-?tun|finetun|decod|encod|sav|export|"
    r"process|tokeniz|comput|evaluat|valid|test|predict|render|upscal|diariz|transcrib|embed|"
    r"epoch|step|iteration|layer|batch|the \d|the first|the second|the last|startup|start)"
)
_KILLED_STEP = re.compile(
    r"\b(?:gets?|got|was|were|is|are|being|getting|been|be) (?:\w{1,12} )?killed\b"
    r"(?:[^.!?;]{0,40}?)\b(?:when|while|during|at|after|in the middle of|as soon as|on|before|"
    rf"in) (?:\w{{1,14}} ){{0,3}}?{_STEP}|"
    rf"\b(?:process|job|script|program|python|kernel|worker|container|pod|server|app) killed "
    rf"(?:when|while|during|at|after|in the middle of) (?:\w{{1,14}} ){{0,3}}?{_STEP}",
    _I,
)
# (docrec28) the passive "was/were killed" after the memory stated full or used up in the same
# sentence: "the memory was completely (99%+) used during load so it was killed", "RAM filled up
# and the job was killed" (a bare "was killed", or a worker "holding GPU memory" that was killed,
# states no shortage)
_FULL_THEN_KILLED = re.compile(
    r"\b(?:memory|ram|vram|swap)\b[^.!?;]{0,60}?"
    r"(?:\b(?:completely|fully|totally|all) (?:used|filled|consumed|taken|eaten)|"
    r"\b(?:was|is|got|became|were) (?:completely |totally )?full\b|\bfill(?:ed|s)? up\b|"
    r"\bmaxed out\b|\bused up\b|\bexhausted\b|\b(?:9\d|100) ?%)"
    r"[^.!?;]{0,80}?\b(?:was|were) killed\b",
    _I,
)
_CRASH = re.compile(
    r"\b(?:crash(?:es|ed|ing)?|dies|died|froze|gets? killed|got killed|"
    # intransitive only: "the system freezes", not "freezes the projection layer"
    r"freez(?:es|ing)(?! (?:the|a|an|all|its|some|most|layers?|weights?|param\w{0,8}|model|base|"
    r"backbone|embeddings?|encoder|decoder)\b))\b",
    _I,
)
# a card's or a machine's memory, by size: "8gb vram gpu", "24GB GPU", "RTX3090 (24G)",
# "64 GB RAM"; or the memory noun itself
_MEM_OR_SIZE = re.compile(
    r"\d{1,4} ?(?:gb?|gib)\b ?(?:of )?(?:v?ram|vram|memory|gpus?|cards?|video|graphics)\b|"
    # a card named with its size: "L40s 48G", "RTX3090 (24G)", "4090 24GB"
    r"\b(?:rtx ?|gtx ?|rx ?)?(?:[ahlvt]\d{1,3}s?|\d{4}(?: ?ti)?)\b[\s(]{0,2}\d{1,3} ?(?:gb?|gib)\b|"
    + _MEM_EN,
    _I,
)
_CRASH_VETO = re.compile(
    r"segfault|segmentation|illegal|access violation|assert|\bnan\b|driver|memory access|"
    r"\bsignal\b|memory reference|invalid memory|"
    r"corrupt|bandwidth|\bdisk\b|storage|no longer|does ?n[o']t crash|did ?n[o']t crash|"
    r"won'?t crash|never crash|not crash|without crash|stopp?(?:ed|s)? crashing|dump|\bcore\b|"
    # the memory said to be free: the poster reports a crash, not a shortage
    r"\b(?:despite|although|even though|plenty of|lots of free|(?:is|are|was|were|still) free|"
    r"free (?:v?ram|vram|memory|gpu memory))\b|"
    r"crash(?:es|ed)? (?:with|due to|because of) (?:an? |the )?(?!memory|oom|out|vram|ram|"
    r"gpu memory|insufficient|not enough|too)",
    _I,
)
# a need above what the hardware has: "which at high resolutions is more than a 24 GB card has",
# "more than the machine has left once the model is loaded"
_MORE_THAN_HAS = re.compile(
    r"\bmore than (?:a|the|my|this|our|what (?:a|the|my)) (?:\d{1,4} ?gb? )?"
    r"(?:card|gpu|machine|mac|device|system|laptop|computer|pc|node)s? ha(?:s|ve|d)\b",
    _I,
)
# a card or a machine that cannot handle the work, with its memory stated: "I use L40s 48G, it
# can not handle the original config"
_CANT_HANDLE = re.compile(
    r"\b(?:can ?not|can'?t|cannot|could ?n[o']t|unable to|not able to) (?:even )?"
    r"(?:handle|cope with|hold|afford)\b",
    _I,
)
# batch size 1 that still fails: users lower the batch to 1 only for memory ("batch size set as
# 1. always get this error", "I can't even run a batch of 1")
_BATCH_ONE = re.compile(
    r"\bbatch(?:[ _-]?size)?\W{0,3}(?:(?:is|was|set|changed|reduced|lowered|decreased|down)"
    r"\W{1,3}){0,2}(?:(?:as|to|of|=|:)\W{0,3})?1\b(?![.,]\d)",
    _I,
)
_BATCH_ONE_FAILS = re.compile(
    r"\b(?:error|errors|fails?|failed|failing|crash\w{0,3}|still|even|oom|can'?t|cannot|"
    r"can not|unable)\b|"
    # the exception class an OOM raises, received: "I get a RuntimeError. My batch size is 1"
    r"\b(?:get|gets|got|getting|receive[sd]?|throws?|threw|raises?|raised) (?:an? |the )?"
    r"(?:Runtime|OutOfMemory|Memory|ResourceExhausted|Internal|XlaRuntime)Error\b"
)
_BATCH_ONE_FINE = re.compile(r"\b(?:works?|worked|working|fine|ok|okay|succeeds?|passes)\b", _I)
# the shell's report of a SIGKILL (the OOM killer's) as the only output: "it just says Killed",
# "直接显示Killed，没有其他报错"; the word as the shell prints it (capital K, nothing after it but
# punctuation, a quote or the end), after a verb of printing
_SAYS_KILLED_VERB = re.compile(
    r"(?:\b(?:just |only |simply )?(?:says?|said|shows?|showed|shown|prints?|printed|outputs?|"
    r"displays?|displayed|returns?|returned|ends? with|ended with|gives?|gave)|"
    r"显示|顯示|提示|输出|輸出|打印|出现|出現|报|報) ?(?:just |only |a |the |一个|一句|了)?"
    r"[\"'`“「]?$"
)
# the word itself, matched alone (the match is the event's wording, which names the host kill)
_SAYS_KILLED = re.compile(
    r"(?<![A-Za-z])Killed(?:[\"'`”」]|(?=\s{0,3}(?:[,.;:!，。、；）)]|$))|"
    r"(?= and (?:then )?(?:exit|quit|stop|return|die|crash|end)))"
)
# a kill the user made, or another signal: "I pressed Ctrl+C and it printed Killed"
_SAYS_KILLED_OTHER = re.compile(
    r"\b(?:I|we|you) (?:\w{1,12} )?(?:pressed|hit|killed|kill|stopped|interrupted|sent)\b|"
    r"ctrl|signal|segment|manually",
    _I,
)
# a reduction the poster had to make to have the memory: "I had to change frames from 129 to 65
# to be able to have VRAM to run", "had to cut the resolution to 512 to fit in memory"
_HAD_TO_REDUCE = re.compile(
    r"\bhad to (?:reduce|lower|decrease|change|cut|drop|halve|limit|shrink|set)\b"
    r"[^.;!?]{0,80}?\bto (?:be able to )?(?:have|get|fit|stay) (?:enough |some |the )?"
    r"(?:(?:in|into|within|under) )?(?:(?:the|my) )?(?:v?ram|vram|memory|gpu memory)\b",
    _I,
)
# a run that fails on the memory it states: "trying to run the model with the default container
# configuration (with 8gb RAM) fails most of the time", "training fails with only 16 GB of VRAM"
# (the memory itself named: RAM / VRAM / memory, not a card, whose failures have other causes)
_SIZE_MEM = (
    r"\d{1,4} ?(?:gb?|gib)\b (?:of )?(?:(?:system|gpu|video|host|cpu) )?(?:v?ram|vram|memory)\b"
)
_FAILS_ON_SIZE = re.compile(
    r"\b(?:fails?|failed|failing)\b(?: \w{1,12}){0,3}? (?:on|with) (?:only |just |a |an |my |the )?"
    + _SIZE_MEM
    + r"|\b(?:with|on) (?:only |just |a |an |my |the )?"
    + _SIZE_MEM
    + r"\)?(?: \w{1,12}){0,2}? (?:fails?|failed)\b",
    _I,
)
# a failure "to" do something other than run: "failed to download the weights"
_FAIL_TO_OTHER = re.compile(
    r" to (?!load|run|start|allocat|initiali|launch|generat|train|finish|complete|fit)\w", _I
)
_GROW_UNTIL = re.compile(
    r"\b(?:grow|increas|ris|climb|accumulat|go(?:es)? up|going up|build)\w{0,3}"
    r"(?: \w{1,20}){0,4} (?:until|till|untill) (?:it |the \w{1,15} |my \w{1,15} |we |i )?"
    r"(?:\w{1,12} )?(?:crash|die|dies|kill|freez|oom|run|stop|hang|explod|fill|overflow|hit|"
    r"max)",
    _I,
)
_OUT_AT_STEP = re.compile(
    r"\b(?:runs?|ran|running) out (?:again )?(?:at|after|on|during|in|around) (?:the )?"
    r"(?:\d{1,3}(?:st|nd|rd|th) )?(?:step|epoch|iteration|iter|batch|layer|frame|image|sample|"
    r"chunk)\b",
    _I,
)
_NOT_FIT = re.compile(
    r"\b(?:does ?n[o']t|do ?n[o']t|did ?n[o']t|won'?t|can ?not|can'?t|could ?n[o']t|"
    r"unable to|not able to|fail(?:s|ed)? to|no longer) (?:even |quite |really )?fit "
    r"(?:[\w.-]{1,20} ){0,4}?(?:in|into|on|onto|within|inside) "
    r"(?:(?:my|the|a|an|one|our|single|its|his|her|their|two|\d{1,2}x?|only) ){0,3}"
    r"(?:[\w-]{1,20} ){0,2}?(?:gpus?\b|v?ram\b|vram\b|memory\b|cards?\b|rtx ?\d{4}|gtx ?\d{3,4}|"
    r"\d{4}\b|\d{1,3} ?(?:gb?|gib)\b)",
    _I,
)
_CANT_LOAD = re.compile(
    r"\b(?:can ?not|can'?t|could ?n[o']t|unable to|not able to|impossible to) (?:even )?"
    # loading onto cards of a stated size ("can not load the model with 8 RTX3090 (24G)");
    # not "can't run on 16GB Mac: unsupported architecture" (a run fails for other reasons)
    r"load (?:[\w.-]{1,20} ){0,5}?"
    r"(?:on|with|using|in|onto) (?:(?:my|the|a|an|one|our|single|only|\d{1,2}x?|\d{1,2} x) ){0,3}"
    r"(?:[\w-]{1,20} ){0,2}?\(?\d{1,3} ?(?:gb?|gib)\b\)?|"
    # any task that cannot be done with the stated memory: "not able to make a mp4 from these
    # frames with 128Gb of system memory"
    r"\b(?:can ?not|can'?t|could ?n[o']t|unable to|not able to|impossible to) (?:even )?\w{2,15} "
    r"(?:[\w.-]{1,20} ){0,6}?(?:on|with|using|in) (?:only |just |my |the |a )?\d{1,4} ?"
    r"(?:gb?|gib|tb)\b (?:of )?(?:(?:system|gpu|video|host|cpu) )?(?:v?ram|vram|memory)\b",
    _I,
)
# a relative clause or advice before a "doesn't fit" / "can't load": the docs' "models that
# don't fit in memory", "if the model does not fit on your GPU"
_FIT_VETO = re.compile(
    r"\b(?:that|which|who|whose|if|when|whenever|unless|in case|where)\s(?:\w{1,15}\s){0,3}$",
    _I,
)

# another reason named after a "can't load": "... because CUDA 11 is required", ": unsupported"
_OTHER_REASON = re.compile(
    r"\b(?:because|due to|unsupported|not supported|requires?|required|error|timeout)\b|:", _I
)

# the literal words that let a sentence in (one of them must be on the line)
_NEEDLES: tuple[str, ...] = (
    "mem", "ram", "vram", "killed", "had to", "crash", "fit", "gpu", "card", "died", "dies",
    "froze", "freez", "load", "run", "train", "tune", "able to", "out at", "out after", "out on",
    "handle", "cope", "hold", "afford", "batch", "more than",
    "out during", "out in", "out around",
    "显存", "顯存", "内存", "內存", "运存", "運存", "記憶體", "メモリ", "메모리", "램", "speicher",
    "mémoire", "memoria", "memória", "памят", "пам'ят", "озу",
    # (docrec28) swap and the paging file (parse_wordings_report_i18n), Ukrainian "пам’ять"
    "交换空间", "交換空間", "交换分区", "交換分區", "页面文件", "頁面檔", "пам’ят",
)  # fmt: skip


# the words every predicate after a noun holds (a sentence with none of them is skipped)
_PRED_WORDS = needles_re(
    (
        "out", "dry", "commit", "stay", "stuck", "sit", "full", "fill", "used up", "exhaust",
        "max", "satur", "eaten", "overload", "exceed", "overflow", "explod", "blow", "blew",
        "skyrocket", "grow", "grew", "increas", "rise", "rising", "climb", "accumul", "build",
        "stack", "enough", "insufficient", "too ", "hit", "reach", "spik", "goes", "went",
        "jump", "shoot", "shot", "gone", "freed", "releas", "clear", "dealloc", "return",
        "reclaim", "large", "big", "high", "huge", "peak", "occupied",
    )
)  # fmt: skip


def _noun_first(s: str) -> re.Match[str] | None:
    if not _PRED_WORDS.search(s.lower()):
        return None
    for noun in _MEM_NOUN.finditer(s):
        if _TOPIC.search(s, max(0, noun.start() - 30), noun.start()):
            continue
        window_end = min(len(s), noun.end() + 60)
        # "GPU memory full": the noun right before it
        pred = _RIGHT_FULL.match(s, noun.end()) or _PRED_AFTER.search(s, noun.end(), window_end)
        if pred is None:
            continue
        if _GAP_VETO.search(s, noun.end(), pred.start()):
            continue
        return pred
    return None


_BEFORE_WORDS = needles_re(
    (
        "out of", "up", "all", "whole", "entire", "full", "100", "every", "too much", "massive",
        "huge", "enormous", "insane", "crazy", "a lot of", "lots of", "tons of", "memory error",
        " limit", "budget", "capacity", " cap", "vram error",
    )
)  # fmt: skip


# a memory limit passed in a condition, a question or advice: "If it goes past the memory
# limit, the pod is evicted", "How do I go beyond the memory limit?"
_PAST_LIMIT_VETO = re.compile(
    r"\b(?:if|when|whenever|unless|once|how|avoid|prevent|keep|stay|never|not|before|in case)\b",
    _I,
)


def _predicate_first(s: str) -> re.Match[str] | None:
    if not _BEFORE_WORDS.search(s.lower()):
        return None
    for m in _PRED_BEFORE.finditer(s):
        if _BEFORE_VETO.search(s[max(0, m.start() - 30) : m.start()]):
            continue
        if m.group("limit") and _PAST_LIMIT_VETO.search(s, 0, m.start()):
            continue  # a limit passed in a condition or a question, not a report
        return m
    return None


def _crash_with_memory(s: str, before: str) -> re.Match[str] | None:
    """A crash with the memory in its sentence or in the sentence ``before`` it ("my dataset
    is loaded into CPU RAM. ... which leads to the program crashing")."""
    crash = _CRASH.search(s)
    if crash is None or _CRASH_VETO.search(s):
        return None
    lo, hi = max(0, crash.start() - 150), min(len(s), crash.end() + 150)
    if _MEM_OR_SIZE.search(s, lo, hi) is None and (
        _CRASH_VETO.search(before) or _MEM_OR_SIZE.search(before) is None
    ):
        return None
    if _BEFORE_VETO.search(s[max(0, crash.start() - 30) : crash.start()]):
        return None
    return crash


def _fit_or_load(s: str) -> re.Match[str] | None:
    for pattern in (_NOT_FIT, _CANT_LOAD):
        m = pattern.search(s)
        if (
            m is not None
            and not _FIT_VETO.search(s[max(0, m.start() - 60) : m.start()])
            and not _OTHER_REASON.search(s, m.end())
        ):
            return m
    return None


def _english(s: str, low: str, before: str, after: str) -> re.Match[str] | None:
    m = _english_families(s, low, before, after)
    # the sentence-level vetoes, read only when a family matched (most lines match none)
    if m is None or ADVICE.search(s) or RELEASE.search(s) or YES_NO.search(s):
        return None
    return m


def _english_families(s: str, low: str, before: str, after: str) -> re.Match[str] | None:
    if "mem" in low or "ram" in low:
        m = _noun_first(s) or _predicate_first(s)
        if m is not None:
            return m
    if "gpu" in low or "card" in low or "vram" in low:
        m = _CARD_FULL.search(s)
        if m is not None:
            return m
    if "killed" in low:
        m = _KILLED_STEP.search(s) or _FULL_THEN_KILLED.search(s)
        if m is not None:
            return m
    if any(k in low for k in ("crash", "died", "dies", "froze", "freez", "killed")):
        m = _crash_with_memory(s, before)
        if m is not None:
            return m
    if "until" in low or "till" in low:
        m = _GROW_UNTIL.search(s)
        if m is not None and _MEM_NOUN.search(s):
            return m
    if "Killed" in s:
        for m in _SAYS_KILLED.finditer(s):
            if _SAYS_KILLED_VERB.search(s[max(0, m.start() - 24) : m.start()]) and not (
                _SAYS_KILLED_OTHER.search(s, 0, m.start())
            ):
                return m
    if "fail" in low:
        m = _FAILS_ON_SIZE.search(s)
        if (
            m is not None
            and not _OTHER_REASON.search(s, m.end())
            and not _FAIL_TO_OTHER.match(s, m.end())
            and not _FIT_VETO.search(s[max(0, m.start() - 60) : m.start()])
        ):
            return m
    if "had to" in low:
        m = _HAD_TO_REDUCE.search(s)
        if m is not None:
            return m
    if " out " in low:
        m = _OUT_AT_STEP.search(s)
        if m is not None:
            return m
    if "more than" in low:
        m = _MORE_THAN_HAS.search(s)
        if m is not None:
            return m
    if "handle" in low or "cope" in low or "hold" in low or "afford" in low:
        m = _CANT_HANDLE.search(s)
        if m is not None and _MEM_OR_SIZE.search(s) is not None:
            return m
    if "batch" in low:
        m = _BATCH_ONE.search(s)
        if (
            m is not None
            and _BATCH_ONE_FAILS.search(f"{before} {s} {after}") is not None
            and _BATCH_ONE_FINE.search(s) is None
        ):
            return m
    if "fit" in low or "not" in low or "n't" in low or "able to" in low:
        m = _fit_or_load(s)
        if m is not None:
            return m
    return shape_match(s, low)


def _sentence_match(s: str, before: str, after: str) -> re.Match[str] | None:
    low = s.lower()
    if not _NEEDLES_RE.search(low):
        return None
    m = _english(s, low, before, after)
    return m or i18n_match(s)


_NEEDLES_RE = needles_re(_NEEDLES + SHAPE_NEEDLES)


def report_match(line: str, low: str) -> re.Match[str] | None:
    """The first sentence of ``line`` (``low``: ``line.lower()``) that reports an OOM in
    prose, as the match of its predicate, else ``None``."""
    if not _NEEDLES_RE.search(low):
        return None
    sentences = [t.strip()[:MAX_SENTENCE] for t in _SPLIT.split(line)]
    sentences = [t for t in sentences if len(t) >= 8]
    for k, s in enumerate(sentences):
        before = sentences[k - 1] if k else ""
        after = sentences[k + 1] if k + 1 < len(sentences) else ""
        m = _sentence_match(s, before, after)
        if m is not None:
            return m
    # a crash that lowering a memory lever made go away, told over several sentences
    return lever_match(line, low)

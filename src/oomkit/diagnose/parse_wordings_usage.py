"""A *memory-use report*: memory that grows, fills or spikes, told without a failure line.

Issue 9 asks that an obvious memory problem never gets "nothing found". After the runtimes'
messages and the prose-report grammar (:mod:`oomkit.diagnose.parse_wordings_report`, which reads
"it ran out", "it got killed", "it does not fit"), what fresh corpus parts still missed were
reports of memory *use*: "GPU memory accumulates ~1GB per inference iteration", "the pool grows
unbounded", "memory usage spikes to 34 GB", "takes up a significant chunk of the 24 GB of total
system memory (leaving about 1 GB free)", "High Memory Usage for MII compared to HF". They state
how much memory is used, or that it grows, not that an allocation failed. This module recognises
that grammar, sentence by sentence, as the last fallback (``oomkit.diagnose.parse`` runs it only
where nothing else found an event), and reads the numbers the sentence states:

* **growth per unit of work**: a memory (or a cache, pool, buffer, dict that holds it) that
  grows, increases, accumulates or leaks, with an amount or not, per / each / every / after each
  / with subsequent iteration, step, epoch, request, call, load, loop, image, frame... ("memory
  accumulates ~1GB per inference iteration", "increasing memory usage with subsequent load
  attempts", "the dictionary grows larger after each loop"), or without bound ("the pool grows
  unbounded"). The amount, when stated, is the growth per unit (:func:`usage_numbers`);
* **used near the capacity**: a use of a size of a stated capacity ("uses 23 GB of 24 GB",
  "takes up ... of the 24 GB of total system memory (leaving about 1 GB free)", "usage 31.9GB~32GB
  of 32GB"), only where the use is at least 85% of the capacity (or what is left at most 15%):
  "uses 8 GB of 24 GB" is no problem;
* **a spike to a size**: a memory that spikes, surges, jumps, balloons or goes up to or by a
  size ("memory usage spikes to 34 GB", "memory went up by 38GB", "suddenly surges to nearly 30
  GB");
* **a use called excessive**: "high / excessive / abnormal / extreme / huge memory usage", "uses a
  lot of memory", "requires extreme amounts of memory", "显存异常", "显存占用过高",
  "这么高的显存".

What stays silent (``tests/test_doctor_usage_reports.py``; the negative set of
``benchmarks/doctor_prose_negatives.py``): docs and READMEs that state a requirement or a saving
("requires ~18 GB of GPU memory", "uses 30% less VRAM", "fits on 17.5GB VRAM"), a property of a
method ("memory grows linearly with the context"), a use well under the capacity, a use said to
be fine or stable, growth that levels off (a warm-up), benchmark tables, advice, release notes
and yes-no questions (the prose grammar's vetoes, :mod:`oomkit.diagnose.
parse_wordings_report_vetoes`).

The event is ``runtime="generic"``, ``kind="memory_report"``: no allocation is known to have
failed, so :mod:`oomkit.diagnose.rules_usage` states what the numbers say, at low confidence, and
asks the fact that would decide. Every pattern is behind literal needles, reads one sentence of
at most :data:`~oomkit.diagnose.parse_wordings_report.MAX_SENTENCE` characters and has only
bounded quantifiers (linear time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.parse_wordings_report_vetoes import ADVICE, RELEASE, SPLIT, YES_NO
from oomkit.diagnose.scan import admitted
from oomkit.diagnose.sizes import to_bytes
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["UsageNumbers", "parse_usage", "usage_match", "usage_numbers"]

_I = re.IGNORECASE
_MAX_SENTENCE = 400
#: the most lines that name a memory which :func:`parse_usage` reads in one log
MAX_LINES = 1000
#: the share of the capacity at or above which a stated use is a memory problem
NEAR_FULL = 0.85

_NUM = r"(?P<{0}>\d{{1,5}}(?:[.,]\d{{1,3}})?)"
_UNIT = r"(?P<{0}>[GMT]i?B|[GMT]b|gb|mb|tb|gib|mib|G|M|T)(?![A-Za-z])"


def _size(name: str) -> str:
    return _NUM.format(name) + r" ?" + _UNIT.format(name + "_u")


_APPROX = r"(?:(?:about|around|nearly|almost|roughly|over|~|≈|>|~ ?)\s?)?"
_MEM = (
    r"(?:(?:gpu|cuda|video|graphics|device|system|host|cpu|physical|unified|shared)(?:'s)? )?"
    r"(?:memory|mem\b|ram\b|v-?ram|hbm)(?: (?:usage|use|consumption|footprint|utili[sz]ation|"
    r"occupancy|allocation))?"
)
# what holds the memory that grows: the memory itself, or a cache / pool / buffer / dict
_HOLDER = _MEM + r"|\b(?:kv[ -]?cache|cache|pool|buffer|dictionary|dict|list|history)\b"
_GROW = (
    r"(?:keeps? |kept |continues to |continued to |seems to |appears to )?"
    r"(?:grow(?:s|ing|n)?|grew|increas(?:es|ed|ing|e)|accumulat(?:es|ed|ing|e)|leak(?:s|ed|ing)?|"
    r"ris(?:es|ing|e)|rose|climb(?:s|ed|ing)?|creep(?:s|ing)? up|go(?:es)? up|went up|"
    r"going up|balloon(?:s|ed|ing)?|build(?:s|ing)? up)"
)
_UNIT_OF_WORK = (
    r"(?:inference |training |forward |generation |load |new |further |additional )?"
    r"(?:iteration|iter|step|epoch|batch|request|call|inference|load|loop|run|image|frame|"
    r"generation|prompt|query|turn|attempt|pass|sample|chunk|video|round|invocation|job|"
    r"conversation|message|cycle|reload|restart)s?\b"
)
_PER = (
    r"(?:per|each|every|after (?:each|every)|with (?:each|every|subsequent|more|further)|"
    r"between|across|on (?:each|every)|for (?:each|every)|in (?:each|every))"
)
_GROWTH = re.compile(
    # holder ... grows [by ~1GB] per/each/every ... unit ("accumulates ~1GB per inference
    # iteration", "grows larger after each loop")
    rf"(?P<holder>{_HOLDER})[^.;!?,]{{0,60}}?\b{_GROW}\b"
    rf"(?: (?:by |at |of )?{_APPROX}{_size('g')})?(?: (?:larger|bigger|more|steadily|"
    rf"continuously|constantly|linearly|quickly|rapidly|slowly))?"
    rf"(?: (?:\w{{1,12}} ){{0,2}}?{_PER} (?:\w{{1,12}} ){{0,2}}?{_UNIT_OF_WORK}|"
    # or without bound, or a continuing rise ("the memory of `other` increased rapidly")
    r" (?:unbounded(?:ly)?|without (?:a )?(?:bound|limit)|indefinitely|forever|endlessly)|"
    # docpost30: growth that is never given back ("the memory will continue to increase without
    # any release", h55; "increases without being released", h32): what a leak is
    r" without (?:any |being )?(?:release|releasing|being released|being freed|freeing)\b|"
    r"(?<=rapidly)|(?<=steadily)|(?<=continuously)|(?<=constantly)|"
    r" (?:over time|and never (?:goes|went|comes|came) (?:back )?down))|"
    # predicate first: "increasing memory usage with subsequent load attempts"
    rf"\b(?:increasing|growing|rising|accumulating|leaking) {_MEM}[^.;!?]{{0,20}}?"
    rf" {_PER} (?:\w{{1,12}} ){{0,2}}?{_UNIT_OF_WORK}",
    _I,
)
_USED_OF = re.compile(
    # "uses 23 GB of 24 GB", "takes up ... of the 24 GB of total system memory (leaving about
    # 1 GB or so free)", "usage 31.9GB~32GB"
    r"\b(?:uses?|used|using|usage|occup(?:ies|ied|y|ying)|takes?(?: up)?|took(?: up)?|"
    r"taking(?: up)?|consum(?:es|ed|ing|e)|eats?(?: up)?|fill(?:s|ed)?(?: up)?|allocat(?:es|ed)|"
    r"reserv(?:es|ed)|at)\b"
    rf"(?: (?:\w{{1,14}} ){{0,4}}?)?\s?{_APPROX}{_size('u')}(?: ?[~-] ?{_size('u2')})?"
    rf"(?: (?:{_MEM}) )?\s?(?:of|out of|/) (?:the |my |our |its |a |all |total ){{0,2}}"
    rf"{_APPROX}{_size('t')}",
    _I,
)
_CAPACITY_FIRST = re.compile(
    rf"\b(?:with|has|have|having|on) (?:an? |only |just )?{_APPROX}{_size('t')} (?:of )?"
    rf"(?:(?:unified |system |gpu |video )?(?:memory|ram|v-?ram))\)?[^.;!?]{{0,40}}?"
    r"\b(?:hits?|reach(?:es|ed)?|uses?|used|using|consum(?:es|ed|ing)|takes? up|took up|"
    rf"occup(?:ies|ied)|at)\b (?:\w{{1,12}} )?{_APPROX}{_size('u')}",
    _I,
)
_LEFT = re.compile(
    rf"\b(?:leaving|leaves|left with|with only|only) {_APPROX}{_size('f')}"
    r"(?: (?:or so |of (?:it |memory |ram |vram )?)?)?\s?(?:free|left|remaining|available)\b",
    _I,
)
_TOTAL = re.compile(rf"{_APPROX}{_size('t')} (?:of )?(?:total |system |gpu |video )*{_MEM}", _I)
_SPIKE = re.compile(
    rf"(?P<holder>{_MEM})[^.;!?]{{0,80}}?\b(?:spik(?:es|ed|ing|e)|surg(?:es|ed|ing|e)|"
    r"jump(?:s|ed|ing)?|shoot(?:s|ing)?|shot|balloon(?:s|ed|ing)?|skyrocket(?:s|ed|ing)?|"
    r"go(?:es)? up|went up|goes all the way up|rises|rose|climbs|climbed)"
    rf"(?: up)? (?:to|by) {_APPROX}{_size('s')}|"
    rf"(?P<holder2>{_MEM})[^.;!?,]{{0,30}}?\b(?:quickly |soon |immediately |suddenly )?"
    r"(?:go(?:es)? |went |would |shoots? |jumps? )?up to (?:the )?(?:full|max(?:imum)?|100 ?%)",
    _I,
)
_EXCESSIVE = re.compile(
    r"\b(?:high|excessive|abnormal|extreme|huge|massive|enormous|insane|crazy|ridiculous|"
    r"unusual|unexpected(?:ly high)?|abnormally high|very high|extremely high|unreasonable|"
    # one device holding more than the others ("the DataParallel imbalanced memory usage")
    r"imbalanced|unbalanced|uneven)"
    r"(?: amounts? of)? (?:(?:gpu|cuda|video|graphics|device|system|host|cpu) )?"
    r"(?:memory|v-?ram|ram)(?: (?:usage|use|consumption|footprint|utili[sz]ation|occupancy|"
    r"allocation))\b|"
    r"\b(?:requires?|required|needs?|needed|takes?|took|uses?|used|using|consumes?|consumed|"
    r"eats?|ate) (?:extreme|excessive|huge|enormous|insane|crazy|absurd|ridiculous|massive) "
    r"amounts? of (?:(?:gpu|video|system|host) )?(?:memory|v-?ram|ram)\b|"
    r"\b(?:uses?|used|using|takes?|took|consumes?|consumed|eats?|ate|needs?|requires?) "
    r"(?:a lot of|lots of|tons of|so much|this much|way more|an insane amount of|"
    r"a huge amount of|a ton of) (?:(?:gpu|video|system|host) )?(?:memory|v-?ram|ram)\b|"
    r"\b(?:requiring|taking|consuming|eating) (?:a lot of|lots of|tons of|so much|way too much|"
    r"a huge amount of) (?:(?:gpu|video|system|host) )?(?:memory|v-?ram|ram)\b|"
    # a use above what was expected: "the memory used by lm_eval ... is much higher than the
    # peak memory estimated by vllm (10GB vs 50GB)"
    r"\b(?:memory|v-?ram|ram)(?: usage| use| consumption| used)?[^.;!?,]{0,40}?\b(?:is |was |"
    r"are |were )?(?:much|far|way|significantly|substantially|several times|\d{1,2}x) "
    r"(?:higher|more|larger|bigger) than (?:the |what |expected|estimated|reported|"
    r"advertised|before|in |with |on |(?:all |the )?other (?:gpus?|cards?|devices?|ranks?)\b)|"
    r"(?:显存|内存|顯存|記憶體)(?:分配|占用|佔用|使用)?(?:异常|異常)|"
    r"(?:显存|内存|顯存)(?:占用|佔用|使用)(?:率)?(?:过|太|很|非常|特别|異常|异常)(?:高|大|多)|"
    r"这么(?:高|大|多)的?(?:显存|内存)",
    _I,
)
# a use called excessive in a statement of cause or a possibility: the docs' "QLoRA leads to
# high GPU memory consumption", "consumes a lot of memory which can make it difficult to train"
_CAUSAL = re.compile(
    r"\b(?:leads? to|led to|leading to|results? in|resulting in|caus(?:es|ed|ing|e)|"
    r"can(?![‘'’]t|not)|could|may|might|would|will|which makes?|making it)\b",
    _I,
)
# a requirement stated as a spec ("This model requires a lot of memory; use a 24 GB card"; a
# title's "requires extreme amounts of memory" still reports one) and a
# docs heading ("High memory usage and performance tips") describe, they do not report a run
_REQUIREMENT = re.compile(r"(?:requires?|required|needs?|needed) (?:a lot of|lots of)\b", _I)
_SPEC_OR_DOCS = re.compile(r"\b(?:tips?|tricks|guide|best practices|faq|troubleshooting)\b", _I)
# a condition that opens the sentence: "If memory usage keeps increasing every epoch, detach
# ..." (advice); the match must lie in that first clause ("When Jan fails to load a model, ...,
# leading to increasing memory usage ..." reports what followed)
_CONDITION = re.compile(r"^\W{0,4}(?:if|when|whenever|in case|unless|once|should)\b", _I)
# a use said to be fine, a saving, a property of the method, a requirement stated as a spec
_FINE = re.compile(
    r"\b(?:fine|normal|ok|okay|stable|constant|flat|expected|as expected|reasonable|no problem|"
    r"less|lower|fewer|smaller|reduc\w{1,5}|sav(?:e|es|ed|ing)|cut|decreas\w{1,4}|"
    r"linearly|quadratically|proportional\w{0,2}|does ?n[o']t|did ?n[o']t|never|not|no longer)\b",
    _I,
)

# runtimes' own memory-pressure warnings (no allocation failed for good):
# DeepSpeed ZeRO-3 after a step in which PyTorch's caching allocator retried a failed cudaMalloc
# after freeing its cache (deepspeedai/DeepSpeed:deepspeed/runtime/zero/stage3.py, step():
# "%d pytorch allocator cache flushes since last step. this happens when there is high memory
# pressure ..." from memory_stats()["num_alloc_retries"]), and Forge's sampler when the free VRAM
# is under its 1536 MB safe value (lllyasviel/stable-diffusion-webui-forge, the sampler's
# low-VRAM check: "[Low GPU VRAM Warning] Your current GPU free memory is %.2f MB for this
# diffusion iteration.", free_memory / (1024.0 * 1024.0))
_PRESSURE = re.compile(
    r"\b(?P<n>\d{1,6}) pytorch allocator cache flushes since last step\b|"
    r"\[Low GPU VRAM Warning\] Your current GPU free memory is (?P<f>\d{1,7}(?:\.\d{1,3})?) ?MB\b"
)
# DeepSpeed's see_memory_usage (deepspeedai/DeepSpeed:deepspeed/runtime/utils.py): psutil's
# virtual_memory(), used_GB = round((total - available) / 1024**3, 2), printed "CPU Virtual
# Memory:  used = {used_GB} GB, percent = {vm_stats.percent}%" (percent of the total): the host
# RAM near full before ZeRO-3 places its fp32 partitions / offloaded states there
_DS_CPU_VM = re.compile(
    r"CPU Virtual Memory:\s{1,4}used = (?P<u>\d{1,6}(?:\.\d{1,2})?) GB, percent = "
    r"(?P<p>\d{1,3}(?:\.\d{1,2})?)%"
)
# growth told in Chinese: "KV cache usage持续升高", "显存一直在增加", "内存不断上涨"; not
# "显存没有持续增长" (a negation before the verb)
_GROWTH_ZH = re.compile(
    r"(?:显存|内存|顯存|記憶體|(?:kv ?)?cache(?: usage)?|缓存)[^，。,.!?！？;；]{0,12}?"
    r"(?<!不)(?<!没有)(?<!没)(?:持续|一直|不断|逐渐|慢慢|缓慢|逐步)(?:在|地)?"
    r"(?:升高|增长|增加|上涨|上升|变大|增大|累积|积累)",
    _I,
)
# docpost30: a rise told in Chinese with the size it reached: "显存从15G涨到26G" (rose from 15G
# to 26G, h36), "显存会长到78G" (grows to 78G, h39), "显存从37G直接飙升到68G" (h34); the size
# after 到 is required ("显存增加" alone is no report), and not a user's own change ("把显存增加到
# 48G", "将显存...")
_RISE_ZH = re.compile(
    r"(?<!把)(?<!将)(?:显存|内存|顯存|記憶體)[^，。,.!?！？;；]{0,12}?"
    r"(?<!不)(?<!没)(?<!没有)(?<!不会)(?<!未)"
    r"(?:涨|长|升|增加|增长|上涨|上升|飙升|暴涨)到 ?" + _size("s")
)
_NEEDLES = re.compile(
    needles_re(
        (
            "mem", "ram", "vram", "hbm", "cache", "pool", "buffer", "dict", "list", "history",
            "gb", "gib", "显存", "内存", "顯存", "記憶體",
        )
    ).pattern,
    _I,
)  # fmt: skip
# the words one of the families needs (a sentence with none of them is skipped)
_FAMILY_WORDS = needles_re(
    (
        "grow", "grew", "increas", "accumul", "leak", "ris", "rose", "climb", "creep", "up",
        "balloon", "build", " of ", "/", "spik", "surg", "jump", "shoot", "shot", "skyrocket",
        "high", "excessive", "abnormal", "extreme", "huge", "massive", "enormous", "insane",
        "crazy", "ridiculous", "unusual", "unexpected", "unreasonable", "a lot", "lots of",
        "tons of", "so much", "this much", "way more", "amount", "ton of", "异常", "異常",
        "than", "full", "max", "100", "hit", "reach", "rapidly", "steadily", "continuously",
        "constantly", "over time", "never",
        "过高", "太高", "很高", "这么", "leaving", "left", "only",
        "持续", "一直", "不断", "逐渐", "慢慢", "缓慢", "逐步", "balanced", "uneven",
        "到",
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class UsageNumbers:
    """What a memory-use report states: the family that matched and its numbers (bytes)."""

    family: str  # growth | near_full | spike | excessive | pressure
    used_bytes: int | None = None
    total_bytes: int | None = None
    free_bytes: int | None = None
    growth_bytes: int | None = None
    spike_bytes: int | None = None
    unit_of_work: str | None = None


def _bytes(m: re.Match[str], name: str) -> int | None:
    if name not in m.re.groupindex or m[name] is None:
        return None
    label = m[name + "_u"].lower()
    label = {"g": "gb", "m": "mb", "t": "tb"}.get(label, label)
    return to_bytes(m[name].replace(",", "."), label, "generic")


def _near_full(s: str) -> tuple[UsageNumbers, int, int] | None:
    m = _USED_OF.search(s)
    if m is not None:
        used = _bytes(m, "u2") or _bytes(m, "u")
        total = _bytes(m, "t")
        if used is not None and total and used <= total * 1.05 and used >= NEAR_FULL * total:
            return UsageNumbers("near_full", used_bytes=used, total_bytes=total), *m.span()
    c = _CAPACITY_FIRST.search(s)
    if c is not None:
        used, total = _bytes(c, "u"), _bytes(c, "t")
        if used is not None and total and NEAR_FULL * total <= used <= total * 1.05:
            return UsageNumbers("near_full", used_bytes=used, total_bytes=total), *c.span()
    left = _LEFT.search(s)
    total_m = _TOTAL.search(s) if left is not None else None
    if left is not None and total_m is not None:
        free, total = _bytes(left, "f"), _bytes(total_m, "t")
        if free is not None and total and free <= (1 - NEAR_FULL) * total:
            found = UsageNumbers("near_full", total_bytes=total, free_bytes=free)
            return found, min(left.start(), total_m.start()), max(left.end(), total_m.end())
    return None


def _unbounded(match: str) -> str:
    low = match.lower()
    bound = ("unbounded", "without", "indefinitely", "forever", "endlessly")
    return "without bound" if any(w in low for w in bound) else "over time"


# the literal words each family needs (cheap substring tests before its regex)
_GROWTH_WORDS = needles_re(
    ("grow", "grew", "increas", "accumul", "leak", "ris", "rose", "climb", "creep", "up",
     "balloon")
)  # fmt: skip
_SPIKE_WORDS = needles_re(
    ("spik", "surg", "jump", "shoot", "shot", "balloon", "skyrocket", "up", "ris", "rose",
     "climb")
)  # fmt: skip


def _family(s: str) -> tuple[UsageNumbers, int, int] | None:
    low = s.lower()
    g = _GROWTH.search(s) if _GROWTH_WORDS.search(low) else None
    if g is not None and not _FINE.search(s, g.start(), g.end()):
        unit = re.search(_UNIT_OF_WORK, s[g.start() : g.end()], _I)
        found = UsageNumbers(
            "growth",
            growth_bytes=_bytes(g, "g"),
            unit_of_work=unit.group(0).lower() if unit is not None else _unbounded(g.group(0)),
        )
        return found, g.start(), g.end()
    z = _GROWTH_ZH.search(s)
    if z is not None:
        return UsageNumbers("growth", unit_of_work="over time"), z.start(), z.end()
    r = _RISE_ZH.search(s) if "到" in s else None
    if r is not None:
        return UsageNumbers("spike", spike_bytes=_bytes(r, "s")), r.start(), r.end()
    near = _near_full(s) if any(c.isdigit() for c in s) else None
    if near is not None:
        return near
    sp = _SPIKE.search(s) if _SPIKE_WORDS.search(low) else None
    if sp is not None and not _FINE.search(s, sp.start(), sp.end()):
        return UsageNumbers("spike", spike_bytes=_bytes(sp, "s")), sp.start(), sp.end()
    ex = _EXCESSIVE.search(s)
    if (
        ex is not None
        and not _FINE.search(s[max(0, ex.start() - 20) : ex.start()])
        and not _CAUSAL.search(s)
        and not _SPEC_OR_DOCS.search(s)
        and not _REQUIREMENT.match(ex.group(0))
    ):
        return UsageNumbers("excessive"), ex.start(), ex.end()
    return None


def _sentence(s: str) -> UsageNumbers | None:
    low = s.lower()
    if not _NEEDLES.search(low) or not _FAMILY_WORDS.search(low):
        return None
    hit = _family(s)
    if hit is None or RELEASE.search(s) or YES_NO.search(s):
        return None
    found, start, end = hit
    first_comma = s.find(",")
    if _CONDITION.search(s) and (first_comma < 0 or start < first_comma):
        return None
    # advice and docs read in the clause around the match ("..., but doesn't show up in Task
    # Manager" elsewhere in the sentence is another clause)
    clause = max(s.rfind(",", 0, start) + 1, start - 60, 0)
    if ADVICE.search(s[clause : end + 30]):
        return None
    return found


def usage_numbers(text: str) -> UsageNumbers | None:
    """The first sentence of ``text`` that reports a memory use or growth, as its numbers."""
    if "flushes" in text or "VRAM Warning" in text:
        p = _PRESSURE.search(text)
        if p is not None:
            free = to_bytes(p["f"], "mib", "generic") if p["f"] else None
            return UsageNumbers("pressure", free_bytes=free, unit_of_work=p["n"])
    if "CPU Virtual Memory" in text:
        v = _DS_CPU_VM.search(text)
        if v is not None and float(v["p"]) >= 100 * NEAR_FULL:
            used = round(float(v["u"]) * (1 << 30))
            total = round(used * 100 / float(v["p"]))
            return UsageNumbers("near_full", used_bytes=used, total_bytes=total)
    for t in SPLIT.split(text):
        s = t.strip()[:_MAX_SENTENCE]
        if len(s) >= 8:
            found = _sentence(s)
            if found is not None:
                return found
    return None


def usage_match(text: str) -> bool:
    """Whether ``text`` holds a memory-use report (:func:`usage_numbers` found one)."""
    return usage_numbers(text) is not None


def parse_usage(lines: Lines) -> list[OomEvent]:
    """The first line that reports a memory use or growth, as one ``memory_report`` event (or
    none). Never raises. The caller runs this only when no other parser found an event.

    A report is a few sentences; a long log without a failure line is read in its first and
    last :data:`MAX_LINES` // 2 lines that name a memory (a bounded cost on any log)."""
    found_at = list(admitted(lines, _NEEDLES))
    if len(found_at) > MAX_LINES:
        found_at = found_at[: MAX_LINES // 2] + found_at[-(MAX_LINES // 2) :]
    for i in found_at:
        line = lines.cleaned(i)
        found = usage_numbers(line)
        if found is None:
            continue
        return [
            OomEvent(
                runtime="generic",
                kind="memory_report",
                format=f"memory_{found.family}_report",
                line=lines.number[i],
                text=line[:600],
                allocated_bytes=found.used_bytes,
                total_bytes=found.total_bytes,
                free_bytes=found.free_bytes,
                detail=found.family,
            )
        ]
    return []

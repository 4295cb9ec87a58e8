"""Plain ways users say the memory did not suffice, without an OOM keyword (issue 9).

``parse_wordings.harvested_match`` runs these families after the title, prose and paste-damage
families (an event only where no runtime parser and no earlier family found one; the shared
advice / yes-no / release-note veto, ``parse_wordings_report_vetoes.hypothetical``, applies).
Each family is a grammar of "it did not fit", built on the retired even-numbered held-out parts
and the wordings named in issue 9; the neighbours that must stay silent are in
``tests/test_doctor_plain_wordings.py`` and ``tests/fixtures/prose_negatives.jsonl``:

* **a memory taken whole**: "which takes all the RAM", "eats up all my VRAM", "consumes all of
  the system memory", "used up all the GPU memory" (a consuming verb, then *all* of a memory);
  not "maps nearly all of the GPU memory", not "used all the memory tricks" (the memory as a
  modifier), not where no harm is said ("takes all RAM but doesn't crash"), and not where the
  sentence says it is by design ("by default", "pre-allocates", "reserves", "so that", "in
  order to": a serving engine's KV cache fills the VRAM on purpose);
* **a stated need above a stated capacity**: "needs 26 GB but I have 24", "Opens up by using
  52GIG of RAM - I only have 32gb", "requires 14 GB while I only have 8 GB of VRAM": a verb of
  need or use with a size, then "I / we (only) have" a size, fired only where the need is larger
  (the sizes are compared, so "needs 14 GB and I have 24 GB" stays silent);
* **too big for the user's card**: "model too big for my 3060", "too large for my 8GB GPU", "too
  big for my VRAM" (the user's own: "my" / "our"; the object is a memory, a card or a GPU model
  number; not "too big for my screen", not "too large for the 1080 resolution preset");
* **a bigger card as the way out, said by the user**: "I need a better GPU", "we would need a
  bigger card" (first person; not "you need a better GPU", not "... to run it faster");
* **an attempt to allocate something called huge, with its size**: "causes MLX to attempt
  allocating a very large attention matrix (~37 GB)", "it tries to allocate a huge 40GB tensor"
  (the size is read); not an allocator's design ("allocates a large block (2 GB) up front");
* **PyTorch's own OOM advice, applied without effect**: PyTorch's CUDA OOM message ends "If
  reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:
  True to avoid fragmentation" (older: "try setting max_split_size_mb";
  ``pytorch/pytorch:c10/cuda/CUDACachingAllocator.cpp``, the OutOfMemoryError text), so a user who
  says they set ``max_split_size_mb`` / ``expandable_segments`` / ``PYTORCH_CUDA_ALLOC_CONF`` and
  it "didn't help", "still OOMs", "也不行", "也没用", "还是报错" is reporting that OOM; not a
  compatibility note ("expandable_segments is not supported on this platform").

A finding from these families is a generic ``oom_keyword`` event (low confidence, the rules'
generic reading) whose requested size, where the text states one, is read by
``parse_extra.parse_generic``. Every pattern is behind literal needles and has only bounded
quantifiers (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.parse_wordings_report_vetoes import HYPOTHETICAL, SPLIT
from oomkit.diagnose.sizes import to_bytes

__all__ = ["plain_match", "plain_sizes"]

_I = re.IGNORECASE
#: the most characters of one line read (a paste's prose line; longer is a log, not a sentence)
_MAX_LINE = 2000
_MEMORY = (
    r"(?:(?:system|gpu|cuda|video|graphics|device|host|unified|available|free|physical) )?"
    r"(?:ram|v-?ram|memory|mem)\b"
)

# ---- a memory taken whole --------------------------------------------------------------------
_TAKES_ALL = re.compile(
    r"\b(?:takes?|took|taking|eats?|ate|eating|consumes?|consumed|consuming|hogs?|hogged|"
    r"hogging|sucks?|sucked|gobbles?|gobbled|fills?|filled|filling|"
    r"occupies|occupied|occupying|saturates?|saturated|saturating|(?:uses?|used|using)(?= up))"
    r"(?: up)? all (?:of )?(?:the |my |our )?"
    + _MEMORY
    # the memory as a modifier of another noun: "all the memory tricks / settings / savings"
    + r"(?! (?:tricks?|tips?|options?|settings?|savings?|optimi\w{1,9}|management|bandwidth|"
    r"efficien\w{1,5}|features?|modes?|flags?)\b)",
    _I,
)
# the memory taken with no harm said: "takes all RAM but doesn't crash", "... and runs fine"
_HARMLESS = re.compile(
    r"\b(?:does ?n[o']t|did ?n[o']t|never|not|no|without) (?:crash\w{0,3}|fail\w{0,3}|oom\w{0,3}|"
    r"freez\w{1,3}|problems?|issues?)\b|\b(?:runs?|works?|ran|worked) (?:fine|ok|okay|well)\b|"
    r"\bstill (?:works?|runs?)\b",
    _I,
)
_TAKES_ALL_WORDS = ("all the", "all my", "all of", "all our", "all ram", "all vram", "all memory")
_BY_DESIGN = re.compile(
    r"\bby default\b|\bpre-?allocat\w{0,5}|\breserv\w{0,5}|\bso that\b|\bin order to\b|"
    r"\bkv[ -]?cache\b|\bdesigned\b|\bintended\b|\bexpected\b",
    _I,
)
# a size as users type it: "26 GB", "24gb", "52GIG", "8 GiB", "8G"
_SZ = r"(?P<{0}>\d{{1,4}}(?:[.,]\d{{1,2}})?) ?(?P<{0}_u>gi?b|gigs?|g|mi?b|tb)\b"
_SZ_BARE = r"(?P<{0}>\d{{1,4}}(?:[.,]\d{{1,2}})?)(?: ?(?P<{0}_u>gi?b|gigs?|g|mi?b|tb)\b)?"

# ---- a stated need above a stated capacity ---------------------------------------------------
_NEED_HAVE = re.compile(
    r"\b(?:needs?|needed|needing|requires?|required|requiring|wants?|wanted|uses?|using|used|"
    r"takes?|took|asks? for|asked for|allocates?|allocated)\s(?:about |around |roughly |over |"
    r"~|≈)?" + _SZ.format("need") + r"(?: of (?:\w{1,10} ){0,2}?" + _MEMORY + r")?"
    r"[^.?!;]{0,30}?(?:but|while|whereas|yet|and|-|–|,)\s{0,3}(?:i|we)(?: only| just)? "
    r"(?:have|got|has)(?: only| just)?\s(?:about |around |~)?" + _SZ_BARE.format("have"),
    _I,
)
_NEED_WORDS = ("have", "got")

# ---- too big for the user's card -------------------------------------------------------------
_TOO_BIG_FOR = re.compile(
    r"\btoo (?:big|large|heavy|huge) for (?:my|our) (?:(?P<cap>\d{1,3}) ?(?P<cap_u>gb) )?"
    r"(?:(?:nvidia |geforce |amd |radeon |intel |apple )?(?:rtx ?|gtx ?|rx ?|arc ?|m\d )?"
    r"\d{3,4}(?: ?ti| super| xt)?\b|gpus?\b|cards?\b|graphics card\b|vram\b|v-ram\b|ram\b|"
    r"memory\b|mac\b|laptop\b|machine\b)",
    _I,
)

# ---- a bigger card as the way out, said by the user ------------------------------------------
_BETTER_GPU = re.compile(
    r"\b(?:i|we)(?:'d| would| will| just| probably| simply)? (?:need|have to get|must get) "
    r"(?:a |an )?(?:better|bigger|larger|stronger|more powerful|beefier) "
    r"(?:gpu|graphics card|video card|card)\b",
    _I,
)
_SPEED = re.compile(r"\b(?:fast\w{0,3}|speed\w{0,3}|quick\w{0,3}|slow\w{0,3}|real-?time)\b", _I)

# ---- an attempt to allocate something called huge, with its size ----------------------------
_HUGE_ATTEMPT = re.compile(
    r"\b(?:attempts?|attempting|attempted|tries|tried|trying)(?: to)? allocat(?:e|ing) "
    # an excess, not a size class: "a very large matrix", "a huge tensor"; not "a large workspace"
    r"(?:a |an |the )?(?:(?:very|extremely|really|insanely|ridiculously) large|"
    r"(?:very |extremely |really )?(?:huge|massive|enormous|gigantic|giant))\b[^.;]{0,60}?[(~≈ ]"
    + _SZ.format("need"),
    _I,
)
_AT_START = re.compile(r"\bat start(?:up)?\b|\bup ?front\b|\bto reduce\b", _I)

# ---- PyTorch's own OOM advice, applied without effect ----------------------------------------
_ALLOC_CONF = r"(?:max_split_size_mb|expandable_segments|pytorch_cuda_alloc_conf)"
_NO_EFFECT = (
    r"(?:也不行|也没用|也没有用|还是不行|还是报错|还是会?爆|仍然报错|依然报错|没有用|不管用|无效|"
    r"did ?n[o']t help|does ?n[o']t help|did ?n[o']t fix|does ?n[o']t fix|"
    r"not help(?:ing|ed)?|no luck|to no avail|still (?:oom\w{0,3}|fails?|failing|crash\w{0,3}|"
    r"runs? out|ran out|get(?:s|ting)? (?:the same|an?) (?:error|oom)))"
)
_CONF_NO_EFFECT = re.compile(
    _ALLOC_CONF + r"[^.。!?！？]{0,80}?" + _NO_EFFECT + "|" + _NO_EFFECT + r"[^.。!?！？]{0,40}?"
    r"(?:with|after|even with|despite) (?:setting |changing )?" + _ALLOC_CONF,
    _I,
)


def _bytes(m: re.Match[str], name: str, default_unit: str | None = None) -> int | None:
    unit = m[name + "_u"] or default_unit
    if unit is None:
        return None
    label = unit.lower()
    label = {"g": "gb", "gig": "gb", "gigs": "gb", "gib": "gib", "tb": "tb"}.get(label, label)
    return to_bytes(m[name].replace(",", "."), label, "generic")


def _need_over_have(m: re.Match[str]) -> bool:
    need = _bytes(m, "need")
    have = _bytes(m, "have", default_unit=m["need_u"])
    return need is not None and have is not None and need > have


def plain_sizes(m: re.Match[str]) -> tuple[int | None, int | None]:
    """(needed, capacity) in bytes that a :func:`plain_match` match states, else ``None``s."""
    if m.re is _NEED_HAVE:
        return _bytes(m, "need"), _bytes(m, "have", default_unit=m["need_u"])
    if m.re is _HUGE_ATTEMPT:
        return _bytes(m, "need"), None
    if m.re is _TOO_BIG_FOR and m["cap"]:
        return None, _bytes(m, "cap")
    return None, None


def _asked_or_advised(line: str, m: re.Match[str]) -> bool:
    """The sentence that holds ``m`` is a yes-no question or advice ("Is the 13B model too big
    for my 3060?", "How to avoid ..."): it reports nothing."""
    start = 0
    for piece in SPLIT.split(line):
        end = start + len(piece)
        if start <= m.start() < end:
            return bool(HYPOTHETICAL.search(piece.strip()))
        start = end
    return False


def plain_match(line: str, low: str) -> re.Match[str] | None:
    """The first plain "it did not fit" wording in ``line`` (``low`` is ``line.lower()``)."""
    m = _plain(line[:_MAX_LINE], low[:_MAX_LINE])
    return None if m is None or _asked_or_advised(line, m) else m


def _plain(line: str, low: str) -> re.Match[str] | None:
    if any(w in low for w in _TAKES_ALL_WORDS):
        m = _TAKES_ALL.search(line)
        if m is not None and not _BY_DESIGN.search(line) and not _HARMLESS.search(line):
            return m
    if any(w in low for w in _NEED_WORDS) and any(c.isdigit() for c in line):
        for n in _NEED_HAVE.finditer(line):
            if _need_over_have(n):
                return n
    if "too " in low and " for " in low:
        t = _TOO_BIG_FOR.search(line)
        if t is not None:
            return t
    if "need" in low or "get a" in low:
        b = _BETTER_GPU.search(line)
        if b is not None and not _SPEED.search(line):
            return b
    if "allocat" in low:
        h = _HUGE_ATTEMPT.search(line)
        if h is not None and not _BY_DESIGN.search(line) and not _AT_START.search(line):
            return h
    if "max_split" in low or "expandable_seg" in low or "alloc_conf" in low:
        c = _CONF_NO_EFFECT.search(line)
        if c is not None:
            return c
    return None

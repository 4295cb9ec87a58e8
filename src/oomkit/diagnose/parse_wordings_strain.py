"""How users word a memory that ran short, in serving threads' titles and prose (issue 9).

``parse_wordings.harvested_match`` runs these families after ``parse_wordings_plain`` (an event only
where no runtime parser and no earlier family found one; the shared advice / yes-no / release-note
veto, ``parse_wordings_report_vetoes.hypothetical``, applies). Built on the serving threads of the
retired held-out parts 26 and 27 (TensorRT-LLM builders, MLX servers, TF Serving, LM Studio, RL
frameworks); the neighbours that must stay silent are in ``tests/test_doctor_strain_wordings.py``
and ``tests/fixtures/prose_negatives.jsonl``:

* **memory that climbs to a failure**: "memory consumption hits ~333GB before it's killed",
  "Sharp increase in memory usage -> server is killed", "VRAM spikes and the server crashes": a
  climb verb the growth family does not read (hits, reaches, spikes, explodes, balloons, shoots
  up) or a climb noun ("an increase in memory usage"), then within the sentence a failure (killed,
  crash, OOM, dies); not where the failure is denied ("without being killed") or done by the user
  ("until I killed it");
* **no headroom left for the KV cache**: "doesn't leave enough gpu memory for non-kv cache use
  cases", "a model loaded without enough headroom for the KV cache": the serving engines' budget
  (vLLM ``gpu_memory_utilization``, TensorRT-LLM ``kv_cache_free_gpu_mem_fraction``, MLX servers'
  wired limit) taken by one side, named by what it starved; not advice ("make sure to leave
  enough memory for the KV cache");
* **an allocation that fails with memory free**: "a large contiguous allocation fails with plenty
  of free VRAM", "cudaMalloc fails even though 10 GB are free": the fragmentation report, an
  allocation failure stated next to the free memory that did not help;
* **"not enough" misspelled before a memory**: "not enourg VRAM", "not enogh memory" (a word
  within two edits of *enough*; the correct spelling is read by ``parse_wordings``);
* **a model that cannot be loaded into VRAM**: "Unable to load to VRAM", "can't load the model
  into GPU memory" (not where another cause is named: a corrupt file, an unknown architecture, a
  missing driver).

A finding from these families is a generic ``oom_keyword`` event (low confidence), like those of
``parse_wordings_plain``. Every pattern is behind literal needles and has only bounded quantifiers
(linear time).
"""

from __future__ import annotations

import re

__all__ = ["strain_match"]

_I = re.IGNORECASE
#: the most characters of one line read (a paste's prose line; longer is a log, not a sentence)
_MAX_LINE = 2000
_MEM = (
    r"(?:(?:gpu|cuda|video|device|host|system|unified|total|peak|resident) )?"
    r"(?:memory|v?ram|mem)\b"
)

# ---- memory that climbs to a failure ---------------------------------------------------------
_FAILURE = (
    r"(?:(?:oom[- ]?)?killed|crash\w{0,3}|oom\w{0,3}|out of memory|dies|died|segfault\w{0,3}|"
    r"freez\w{1,3}|hangs?|hung)\b"
)
_CLIMB = re.compile(
    r"\b" + _MEM + r"(?: usage| use| consumption| footprint)? (?:\w{1,12} )?"
    r"(?:hits?|reach(?:es|ed)?|spikes?|spiked|spiking|explodes?|exploded|exploding|balloons?|"
    r"ballooned|skyrocket(?:s|ed)?|shoots? up|shot up|jumps? to|jumped to)\b"
    r"(?P<between>[^.;!?]{0,80}?)" + _FAILURE + r"|"
    r"\b(?:increase|spike|growth|surge|rise|explosion|jump|climb) (?:in|of) (?:the )?"
    + _MEM
    + r"(?: usage| use| consumption| footprint)?(?P<between2>[^.;!?]{0,60}?)"
    + _FAILURE,
    _I,
)
_CLIMB_WORDS = (
    "hit",
    "reach",
    "spik",
    "explod",
    "balloon",
    "skyrocket",
    "shoot",
    "shot up",
    "jump",
    "increase in",
    "increase of",
    "growth in",
    "growth of",
    "surge",
    "rise in",
    "explosion",
    "climb in",
)
# the failure denied, or the user's own doing: "without being killed", "until I killed it"
_NOT_FAILED = re.compile(
    r"\b(?:not|never|without|no|n't|nor)\b|n't\b|\b(?:i|we|you) (?:\w{1,8} )?$", _I
)

# ---- no headroom left for the KV cache -------------------------------------------------------
_NO_HEADROOM = re.compile(
    r"\b(?:without|does ?n[o']t leave|did ?n[o']t leave|do ?n[o']t leave|not leaving|"
    r"leaves? no|left no|leaving no|not enough|insufficient)"
    r" (?:enough |sufficient |any )?(?:gpu |vram |free |device )?"
    r"(?:memory|headroom|room|vram|space)(?: left)?"
    r" for (?:the )?(?:non-?[- ]?)?kv[- _]?cache\b",
    _I,
)

# ---- an allocation that fails with memory free -----------------------------------------------
_FAILS_FREE = re.compile(
    r"\b(?:allocation|alloc|c?malloc|cudaMalloc\w{0,8})s?\b[^.;!?]{0,80}?"
    r"\bfail(?:s|ed|ing)?\b (?:\w{1,10} )?(?:with|despite|even though|although|though|while)"
    r"(?: there (?:is|are|was|were|being))? (?:plenty of |lots of |a lot of |ample |"
    r"\d{1,4}(?:\.\d{1,2})? ?(?:gi?b|mi?b) (?:of )?)(?:free |available |unused )?"
    r"(?:gpu |device )?(?:memory|v?ram)\b|"
    r"\b(?:allocation|alloc|c?malloc|cudaMalloc\w{0,8})s?\b[^.;!?]{0,80}?"
    r"\bfail(?:s|ed|ing)?\b[^.;!?]{0,20}? (?:even though|although|though|despite|while) "
    r"(?:there (?:is|are|was|were) )?\d{1,4}(?:\.\d{1,2})? ?(?:gi?b|mi?b) (?:is |are |was |were )?"
    r"(?:still )?(?:free|available|unused)\b",
    _I,
)

# ---- "not enough" misspelled before a memory -------------------------------------------------
_MISSPELT = re.compile(
    r"\bnot (?P<w>en[a-z]{2,6}) (?:gpu |video |free |available |system )?"
    r"(?:v-?ram|memory|ram)\b",
    _I,
)
_ENOUGH = "enough"

# ---- a model that cannot be loaded into VRAM -------------------------------------------------
_NO_LOAD = re.compile(
    r"\b(?:unable|not able|fails?|failed|failing|can[o']?t|can not|cannot|could ?n[o']t|won'?t)"
    r"(?: to)? (?:fully )?load(?: (?:it|them|the model|the weights|model|weights))? "
    r"(?:in)?to (?:the |my )?(?:gpu'?s? )?(?:v-?ram|gpu memory)\b",
    _I,
)
_OTHER_CAUSE = re.compile(
    r"\b(?:corrupt\w{0,4}|architecture|unsupported|not supported|driver\w{0,2} (?:is )?missing|"
    r"no (?:cuda|gpu) (?:device|driver)|version|permission|checksum|tokenizer)\b",
    _I,
)


def _edits(a: str, b: str) -> int:
    """The Levenshtein distance between two short words (at most 8 letters each)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def strain_match(line: str, low: str) -> re.Match[str] | None:
    """The first "memory ran short" wording of these families in ``line`` (``low`` is
    ``line.lower()``), else ``None``."""
    if len(line) > _MAX_LINE:
        line, low = line[:_MAX_LINE], low[:_MAX_LINE]
    if any(w in low for w in _CLIMB_WORDS):
        for c in _CLIMB.finditer(line):
            between = c["between"] if c["between"] is not None else c["between2"]
            if not _NOT_FAILED.search(between or ""):
                return c
    if "kv" in low and " for " in low:
        m = _NO_HEADROOM.search(line)
        if m is not None:
            return m
    if "alloc" in low and "fail" in low:
        # an abbreviation's dots do not end the sentence ("allocation (e.g. X) fails ...")
        m = _FAILS_FREE.search(line.replace("e.g.", "e_g_").replace("i.e.", "i_e_"))
        if m is not None:
            return m
    if "not en" in low:
        for w in _MISSPELT.finditer(line):
            word = w["w"].lower()
            if word != _ENOUGH and _edits(word, _ENOUGH) <= 2:
                return w
    if "load" in low and ("ram" in low or "gpu memory" in low):
        m = _NO_LOAD.search(line)
        if m is not None and not _OTHER_CAUSE.search(line):
            return m
    return None

"""More OOM wordings the fresh corpus parts showed the doctor missing (issue 9, after heldout16
and heldout17): runtimes' own format strings it lacked, and the ways users damage or reword an
OOM (a typo in "memory", a paste elided with "...", a machine translation, a title).

``parse_wordings.harvested_match`` runs these families last, in the generic fallback
(``parse_extra.parse_generic``): an event only where no runtime parser found one. A pattern may
name a ``req_bytes`` group: the request it states in bytes (the generic event reads it).

Runtimes' own wordings (entries with their files in ``upstream_wordings_titles.py``):

* MIOpen / MIGraphX / rocAL's HIP handle (``ROCm/MIOpen:src/hip/handlehip.cpp``
  ``Handle::Create`` / ``default_allocator``; ``ROCm/AMDMIGraphX:src/targets/gpu/hip.cpp``
  ``allocate_gpu``): "Memory not available to allocate buffer: %zu", thrown when the request is
  larger than ``hipMemGetInfo``'s free bytes, before ``hipMalloc`` is tried;
* ManagedCuda's NPP images (``kunzmi/managedCuda:NPP/NPPImage_*.cs``): ``nppiMalloc_*`` returned a
  null pointer, ``throw new NPPException("Device allocation error", null)``;
* the XLA TPU compiler's OOM report (libtpu, closed source; the wording as jax / flax users paste
  it after "Ran out of memory in memory space hbm. Used %sG of %sG hbm. Exceeded hbm capacity by
  %s."): "Total hbm usage >= %s:" and "Program hbm requirement %s:" head the two tables of that
  report, which a paste often keeps without its first line;
* TensorFlow's BFC allocator dump (``tensorflow/tsl:tsl/framework/bfc_allocator.cc``
  ``AllocateRawInternal``: on failure only, "Allocator (%s) ran out of memory trying to allocate
  %s", then ``DumpMemoryLog`` ("Bin (%zu): \tTotal Chunks: %zu, Chunks in use: %zu. ...") and
  ``LOG(WARNING) << RenderOccupancy()``, a map of ``*`` (in use) and ``_`` (free)), kept by a
  paste without its first line;
* (ONNX Runtime's arena message with its last number elided, "Available memory of 0 is smaller
  than requested bytes ...", is read by ``parse_families``' own ONNX Runtime pattern.)

How users damage or word it:

* **a typo in "memory" after "out of"**: "CUDA out of memeory", "out of memroy", "out of
  memmory" (one or two letters swapped, doubled or dropped; not "out of memo / members /
  money / mercy");
* **a misspelt status name**: "RESSOURCE_EXHAUSTED" (French / German "ressource"),
  "RESOURCE_EXHAUSED" (each word within two edits of ``RESOURCE_EXHAUSTED``, upper case with its
  underscore; not "RESOURCE_EXHAUSTED" itself, which the XLA parser reads, nor "RESOURCE_ENABLED");
* **a machine-translated CUDA status**: "CUDA:没有记忆" (word-for-word "no memory" in the sense of
  recollection) and Taiwan's "記憶體不足" after ``CUDA:``, as machine translation renders
  mshadow's "Check failed: e == cudaSuccess: CUDA: out of memory";
* **Chinese: the VRAM collapses**: "训练一会显存就崩", "显存直接崩了", "显存炸了" (显存 /
  内存 then 崩 / 炸 within a few characters; not "显存占用" statistics, not negated "就不会炸了",
  prevented "防止显存炸", or "内存炸弹");
* **a memory that explodes as a consequence**: "causing cuda:0 memory to explode", "makes the
  GPU memory explode" (the cause verb first; "memory will blow up" alone is a prediction);
* **a memory overflow as the error reported**: "the error memory overflow reported on the
  a100", "memory overflow occurred" (not "buffer / stack / integer overflow" and not "a memory
  overflow in the parser was fixed");
* **TensorFlow's status reworded in a title**: "Resource exhaustion when train on own dataset"
  (the title's first words, or a log line's after its prefix, before "when / while / during /
  after"; not "resource exhaustion attack", "prevent resource exhaustion", "resource exhaustion
  on the cluster is monitored");
* **growth with an adverb and its end**: "GPU memory usage keeps ceaselessly growing, and
  finally, it blows up", "memory usage keep increasing up to 30 GB and it exit without any
  message" (not "... and exits normally");
* **a crash put down to memory growth**: "kernel panic (IOGPUMemory crash) due to unbounded
  memory growth";
* **a memory that does not seem to be enough**: "only available memory i got is 8gb and that
  doesnt seem to be enough" (not asked as a question);
* **Chinese: only N GB, cannot run**: "我的GPU只有8G是运行不了的" (not "显存只有8G，够不够？").

Every family is behind literal needles and every quantifier is bounded (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.text import FamilyIndex, needles_gate

__all__ = ["damage_match"]

_I = re.IGNORECASE

_FAMILIES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        # MIOpen / MIGraphX / rocAL: the request (bytes) exceeds hipMemGetInfo's free bytes
        ("memory not available to allocate buffer",),
        re.compile(r"Memory not available to allocate buffer: (?P<req_bytes>\d{1,15})\b"),
    ),
    (
        # ManagedCuda NPPImage_*: nppiMalloc_* returned null
        ("device allocation error",),
        re.compile(r"NPPException\W{0,4}\s{0,4}\W{0,2}Device allocation error"),
    ),
    (
        # the XLA TPU compiler's OOM report, its first line scrolled away
        ("hbm usage", "hbm requirement"),
        re.compile(
            r"\b(?:Total hbm usage >= ?\d{1,5}(?:\.\d{1,3})?[KMGT]?:|"
            r"Program hbm requirement \d{1,5}(?:\.\d{1,3})?[KMGT]?:)"
        ),
    ),
    (
        # TensorFlow's BFC allocator dump, printed only after "Allocator (%s) ran out of memory
        # trying to allocate": its occupancy map and a bin's line, the first line scrolled away
        ("bfc_allocator", "total chunks"),
        re.compile(
            r"bfc_allocator\.cc:\d{1,5}\] {0,4}[*_x]{20,}\s{0,8}$|"
            r"\bBin \(\d{1,20}\): {0,4}\t?Total Chunks: \d{1,12}, Chunks in use: \d{1,12}\."
        ),
    ),
    (
        # machine-translated mshadow / CUDA status "CUDA: out of memory"
        ("没有记忆", "沒有記憶", "记忆体不足", "記憶體不足"),
        re.compile(r"CUDA ?[:：] ?(?:没有记忆|沒有記憶|记忆体不足|記憶體不足)"),
    ),
    (
        # Chinese: the VRAM / RAM collapses ("显存就崩", "显存直接炸了"); not negated ("这样显存就
        # 不会炸了"), prevented ("防止显存炸") or a "memory bomb" (内存炸弹)
        ("崩", "炸"),
        re.compile(
            r"(?<!防止)(?<!避免)(?:显存|顯存|内存|記憶體)[^\n。，,；;]{0,4}?"
            r"(?<![不没別别])(?<!不会)(?<!不會)(?:崩|炸)(?!弹|彈)"
        ),
    ),
    (
        # a cause verb, then a memory that explodes
        ("explod", "blow up"),
        re.compile(
            r"\b(?:caus(?:e|es|ed|ing)|mak(?:e|es|ing)|made|lead(?:s|ing)? to|led to)"
            r"(?: [`'\"\w:.-]{1,20}){0,3} (?:memory|ram|vram|mem)(?: usage)? "
            r"(?:to )?(?:explode|explodes|exploding|blow up|blows up)\b",
            _I,
        ),
    ),
    (
        # a memory overflow as the error reported (the rendering of 显存溢出 / 内存溢出)
        ("memory overflow",),
        re.compile(
            r"\b(?:error|oom)[:,]? memory overflow\b|"
            r"\bmemory overflow (?:reported|occurs|occurred|happens|happened|appears|appeared)\b",
            _I,
        ),
    ),
    (
        # TensorFlow's "Resource exhausted" reworded as a title's first words (or a log
        # line's, after its prefix)
        ("resource exhaust",),
        re.compile(
            r"(?:^|[:|\]>-] {1,4})\W{0,4}resource exhaust(?:ion|ed)(?: error)? "
            r"(?:when|while|during|after) (?!attack)",
            _I,
        ),
    ),
)

# how users word it in prose (heldout16 / heldout17's sentences, each a way of saying it that is
# not tied to one thread)
_FAMILIES += (
    (
        # growth with an adverb, then the end it led to: "GPU memory usage keeps ceaselessly
        # growing, and finally, it blows up", "memory usage keep increasing up to 30 GB and it
        # exit without any message" (not "... and exits normally")
        ("keep", "kept"),
        re.compile(
            r"\b(?:memory|vram|ram)(?: usage| use| consumption| footprint)? (?:keeps?|kept)"
            r"(?: on)?(?: \w{1,14}ly)? (?:growing|increasing|rising|climbing)\b"
            r"(?=.{0,80}?\b(?:blows? up|blew up|blowing up|exits?|exited|panics?|freez\w{0,3}|"
            r"froze|reboots?|rebooted|hangs?|explod\w{1,3})\b"
            r"(?! (?:normally|successfully|cleanly|fine)\b))",
            _I,
        ),
    ),
    (
        # a crash or panic put down to memory growth: "macOS kernel panic (IOGPUMemory crash)
        # due to unbounded memory growth"
        ("memory growth", "memory usage", "memory consumption"),
        re.compile(
            r"\b(?:crash\w{0,4}|panics?|killed|oom)\b[^.\n]{0,60}?\b(?:due to|because of|"
            r"caused by) (?:an? |the )?(?:unbounded|excessive|uncontrolled|runaway|unlimited|"
            r"continuous) (?:gpu |vram |ram |host |system )?memory (?:growth|usage|consumption)\b",
            _I,
        ),
    ),
    (
        # the memory a user has, then that it is not enough: "only available memory i got is
        # 8gb and that doesnt seem to be enough" (not a question: "does 8GB seem to be enough?")
        ("enough",),
        re.compile(
            r"\b(?:memory|vram|ram)\b[^.?!\n]{0,40}?\b(?:doesn'?t|does not|didn'?t|did not|"
            r"don'?t|do not) seems? to be enough\b(?![^.\n]{0,30}\?)",
            _I,
        ),
    ),
    (
        # Chinese: "the GPU has only 8G, it cannot run" (会显示我的GPU只有8G是运行不了的;
        # not "显存只有8G，够不够？", a question)
        ("只有",),
        re.compile(
            r"(?:显存|顯存|显卡|顯卡|GPU|内存|記憶體)只有 ?\d{1,3}(?:\.\d)? ?[GgMm][Bb]?"
            r"[^\n？?]{0,8}?(?:运行不了|跑不了|跑不动|跑不起来|带不动|加载不了|(?<!够)不够)"
            r"(?![^\n]{0,10}[？?])",
        ),
    ),
)

# "out of <word>" where <word> is "memory" misspelt: the word, then the edit distance check
_OUT_OF = re.compile(r"\bout of (?P<w>m[a-z]{3,7})\b", _I)
_NOT_MEMORY = frozenset(
    {"memo", "memos", "member", "members", "mercy", "merry", "memoir", "memoirs", "memory"}
)


_GATE = needles_gate(_FAMILIES)  # a line holding no family's needle tries none
_INDEX = FamilyIndex([needles for needles, _ in _FAMILIES])  # those it holds, in one findall


def _distance(a: str, b: str) -> int:
    """Optimal-string-alignment edit distance (insertions, deletions, substitutions, swaps)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


# gRPC / absl's status name (XLA, TensorFlow) typed by hand, misspelt: "RESSOURCE_EXHAUSTED" (the
# French and German spelling), "RESOURCE_EXHAUSED", "RESOUCE_EXAUSTED"; both words within two
# edits of the name, upper case and joined by "_" as the status is written
_STATUS = re.compile(r"\b(?P<a>R[A-Z]{5,9})_(?P<b>E[A-Z]{6,10})\b")


def _status_typo(line: str) -> re.Match[str] | None:
    for m in _STATUS.finditer(line):
        a, b = m["a"], m["b"]
        if (a, b) != ("RESOURCE", "EXHAUSTED") and (
            _distance(a, "RESOURCE") <= 2 and _distance(b, "EXHAUSTED") <= 2
        ):
            return m
    return None


def damage_match(line: str, low: str) -> re.Match[str] | None:
    """The first wording of this module in ``line`` (``low``: ``line.lower()``), else ``None``."""
    for i in _INDEX.present(low) if _GATE.search(low) else ():
        m = _FAMILIES[i][1].search(line)
        if m is not None:
            return m
    if "_ex" in low or "ce_e" in low:
        m = _status_typo(line)
        if m is not None:
            return m
    if "out of m" in low:
        for m in _OUT_OF.finditer(line):
            word = m["w"].lower()
            if word not in _NOT_MEMORY and _distance(word, "memory") <= 2:
                return m
    return None

"""How users word an OOM in issue titles and prose, and a few runtimes' own wordings (issue 9).

``parse_wordings.harvested_match`` runs these families after its own, in the generic fallback
(``parse_extra.parse_generic``): an event only where no runtime parser found one. Fresh corpus
parts kept missing OOMs that users reported in their own words (titles and sentences); each
family below is a way of saying "the memory ran out" that is not tied to one thread, with the
neighbours that must stay silent listed in ``tests/test_doctor_titles.py``:

* **a memory error or shortage named as such**: "found a CUDA memory error", "GPU memory errors
  when training", "VRAM (is) insufficient", "lack of VRAM", "RAM shortage" (not ECC / Xid
  hardware errors, not "illegal memory access", not "lack of memory safety");
* **a memory exceeded, filled or at 100 %**: "causing GPU RAM to be exceeded", "RAM fills up and
  the PC freezes", "VRAM usage spikes to 100% and crashes", "memory spike causes a crash";
* **a memory used up in an idiom**: "quickly ran through the 32GB RAM", "burns through all my
  VRAM" (not "ran through the memory checks");
* **a crash named with the memory pressure behind it**: "SIGABRT when loading large models
  under GPU memory pressure" (macOS / iOS Metal: the process is aborted or jetsammed when the
  unified memory is short), "crashes due to memory pressure";
* **a card's size that cannot run the job**: "Not enough on 4GB vRAM", "Can't run SDXL on a
  6GB GPU", "crashes on 12gb", "VRAM too small for the model", "only 14 GB free - not enough
  for inference" (not "can it run on 8GB?", not "crashes on 12gb files");
* **an allocator's exception**: "Crash due to unhandled exception from ggml_vk_allocate" (a C++
  exception thrown out of an allocating function is its failure: the Kompute backend's
  ``ggml_vk_allocate`` calls ``vk::Device::allocateMemory``, which throws
  ``vk::OutOfDeviceMemoryError``; nomic-ai/llama.cpp ``ggml-kompute.cpp``), "maximum number of
  memory allocation attempts exceeded";
* **Romance languages with the memory's kind between**: "mémoire GPU insuffisante", "memoria de
  GPU insuficiente", "memória de vídeo insuficiente".
* **a memory usage with its consequence** ("High VRAM usage causes crash", "takes all RAM and
  crashes", "GPU memory at 100% and then crash"; not the whole memory taken alone, which vLLM and
  TF do by design), "memory exhausted", "usage explodes", "no GPU memory available", CUDA's and
  HIP's out-of-memory code 2 by number, Windows' virtual-memory shortage;
* **the shortage in other grammar**: "doesn't have enough memory", "isn't enough VRAM", "exceeds
  my 24GB", "beyond the available memory", "runs out of GPU", "no room left on the GPU", "too
  little VRAM" (not upload / file limits, GPU-hour quotas, ENOSPC, bandwidth);
* **other languages**: Chinese (超出显存, 显存超了, 内存被耗尽, 显存泄漏, 显存一直增长,
  进程被kill了), Japanese, Korean, Spanish / French / German / Russian with VRAM / RAM,
  Polish, Dutch, Czech, Ukrainian, Arabic, Persian, Thai; the leak in Japanese, Korean,
  French, Spanish, Portuguese, Italian, German and Russian, with the English guards (no leak,
  a fixed leak, killed by hand).

A size beside another named error ("Cannot train with 2x 24GB GPUs (NCCL timeout)") is that
error. Families whose first words are common in logs ("all", "100", "exceed") also need a second
word (a memory word, a consequence, a size) before their pattern runs.

Runtimes' own wordings (their entries, with the files, are in
``upstream_wordings_titles.py``): mistral.rs's automatic device mapper
(``mistralrs-core/src/pipeline/loaders/auto_device_map.rs``: "This model does not fit on the
devices %s, and exceeds total capacity by %dMB", "No more devices to map to. The model does not
fit on this system.", "Model weights, activations, and runtime reservations need %.1f GiB, but
only %.1f GiB is available within the unified-memory budget", "Primary device %s cannot fit its
fixed model components"), and XLA's OOM dump (``openxla/xla:xla/service/buffer_assignment.cc``
``BufferAssignment::ToVerboseString``, printed only after "Out of memory while trying to
allocate": "BufferAssignment OOM Debugging.", "preallocated temp allocation:", "Peak buffers:",
each buffer's "XLA Label: <opcode>"; the TPU compiler's "Largest program allocations in hbm"),
which a paste often keeps without its first line.

Every family is behind literal needles and every quantifier is bounded (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.parse_wordings_titles_more import FAMILIES_I18N_MORE, FAMILIES_MORE, SIZE
from oomkit.diagnose.text import FamilyIndex, needles_gate

__all__ = ["title_match"]

_I = re.IGNORECASE
_MEM = r"(?:memory|ram|vram|video memory|gpu memory|gpu ram)"
_SIZE = SIZE

_FAMILIES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        # "found cuda memory error", "GPU memory errors during training"; not ECC / Xid
        # (hardware), "illegal memory access", "memory error correction"
        ("memory error",),
        re.compile(
            r"(?<!ecc )(?<!uncorrectable )(?<!correctable )\b(?:cuda|gpu|vram|video|device)"
            r" memory errors?\b(?! (?:correct|detect|check|code|count|rate|injection))",
            _I,
        ),
    ),
    (
        # a device's memory problem, or a memory problem in a phase that allocates: "CUDA memory
        # issue", "GPU memory problems with batch 8", "the memory issues during loss.backward()";
        # not "memory issue fixed" / "no memory issues", nor a bare "memory issue" (a leak or a
        # usage question as often as an OOM)
        ("memory issue", "memory problem", "vram issue", "vram problem"),
        re.compile(
            r"(?<!no )(?<!without )(?<!fix )(?<!fixed )(?<!fixes )"
            r"(?:\b(?:cuda|gpu|vram|video|device) memory|\bvram) (?:issue|problem)s?\b"
            r"(?! (?:is |was |has been |were )?(?:fixed|resolved|solved|gone))|"
            r"(?<!no )(?<!without )\bmemory (?:issue|problem)s? (?:during|when|while|in|on|at) "
            r"(?:the )?(?:loss\.backwards?\(\)|(?:training|backward|inference|generation|"
            r"generating|loading|fine-?tuning|evaluation|validation|prefill|decoding)\b)",
            _I,
        ),
    ),
    (
        # a memory insufficient / short / lacking, in title form
        ("insufficient", "sufficient", "shortage", "lack of", "too small"),
        re.compile(
            rf"\b(?:vram|ram|{_MEM}) (?:is |was |are |being )?(?:insufficient|not sufficient)\b|"
            r"\b(?:vram|gpu memory|video memory|memory|ram|card|gpu) (?:is |was )?(?:way |much |"
            r"far )?too small (?:for|to (?:run|load|fit|hold))\b|"
            r"\b(?:vram|ram|memory) shortage\b|\bshortage of (?:\w{1,12} )?(?:vram|ram|memory)\b|"
            r"\black of (?:gpu |video |system |free |available )?(?:vram|ram|memory)\b"
            r"(?! (?:safety|bandwidth|management|model|layout|order|info|usage|report|display|"
            r"detection|support|estimat))",
            _I,
        ),
    ),
    (
        # exceeded with an auxiliary, filled up, at 100 %, a spike that ends in a crash
        ("exceeded", "fill", "100", "spike"),
        re.compile(
            r"\b(?:vram|ram|memory)(?: usage| capacity| limit)? (?:is |was |to be |being |gets |"
            r"got |has been |will be |would be )exceeded\b|"
            r"\b(?:vram|ram|memory)(?: usage)? (?:fills|filled|filling|fill) up\b|"
            r"\b(?:vram|ram|memory)(?: usage| use| consumption)? (?:spikes?|spiked|goes|went|"
            r"jumps?|jumped|rises|rose|hits?|reach(?:es|ed)?|climbs?|climbed|shoots?|shot)"
            r" (?:up )?(?:to |at )?100 ?%|"
            r"\b(?:vram|ram|memory)(?: usage)? spik(?:es?|ed|ing)\b.{0,40}?"
            r"\b(?:crash\w{0,3}|oom|killed|freez\w{0,3}|froze)\b",
            _I,
        ),
    ),
    (
        # "ran through the 32GB RAM", "burns through all my VRAM"
        ("through",),
        re.compile(
            r"\b(?:ran|runs?|running|burn(?:s|ed|t|ing)?|blew|blows?|blowing|chew(?:s|ed|ing)?"
            r"|eats?|ate|eating) through (?:all )?(?:of )?(?:the |my |our )?(?:entire |whole |"
            r"available )?(?:" + _SIZE + r" (?:of )?)?(?:gpu |system |host |video )?"
            r"(?:memory|ram|vram)\b(?! (?:check|test|map|controller|bus|address|layout|profil))",
            _I,
        ),
    ),
    (
        # a crash, abort or kill under / due to memory pressure
        ("pressure",),
        re.compile(
            r"(?<!n't )(?<!not )(?<!never )(?<!no )\b(?:crash\w{0,4}|sigabrt|sigkill|abort\w{0,3}|"
            r"killed|terminated|dies|died|panic\w{0,3}|jetsam\w{0,3})\b.{0,80}?"
            r"\b(?:under|due to|because of|from) (?:heavy |high |extreme |severe )?"
            r"(?:gpu |system |unified |vram |ram )?memory pressure\b",
            _I,
        ),
    ),
    (
        # a card's size that cannot run the job
        (
            "not enough",
            "can't",
            "cannot",
            "can not",
            "unable",
            "crash",
            "fail",
            "fit ",
            "died",
            "dies",
            "killed",
            "oom",
        ),
        re.compile(
            r"\bnot enough (?:on|with|for|in) (?:a |an |my |the |only )?" + _SIZE + r" ?"
            r"(?:of )?(?:v?ram|vram|memory|gpu|card|graphics card)\b|"
            r"\b(?:can ?not|can't|cannot|unable to|fail(?:s|ed)? to) (?:run|load|generate|train|"
            r"start|use|fine-?tune|infer|inference|launch)\b(?: [\w.-]{1,20}){0,4}? "
            r"(?:on|with) (?:a |an |my |the |only |single )?(?:[\w-]{1,12} ){0,2}"
            + _SIZE
            + r"(?! ?(?:ssd|disk|hdd|file|model|dataset|download|checkpoint|weights|of (?:disk|"
            r"storage)))|"
            r"\bcrash(?:es|ed|ing)? (?:on|with) (?:a |an |my |only )?" + _SIZE + r""
            r"(?! ?(?:ssd|disk|hdd|files?|models?|datasets?|downloads?|checkpoints?|weights|"
            r"images?|videos?|of (?:disk|storage|data)))|"
            r"\b(?:fails?|failed|failing|dies|died|killed|oom(?:s|ed)?) (?:on|with) (?:a |an |my |"
            r"only )?" + _SIZE + r" ?(?:of )?(?:v?ram|vram|gpu|card|memory)\b|"
            r"(?:can ?not|can't|cannot|unable to|does ?n[o']t|won't|will not) fit (?:[\w.-]{1,20} )"
            r"{0,3}?(?:on|in|into) (?:a |an |my |the |one |single )?(?:[\w-]{1,12} )?"
            + _SIZE
            + r"(?! ?(?:ssd|disk|hdd|sd ?card|drive|usb|partition|file|of (?:disk|storage)))|"
            r"\b(?:only|just) (?:~ ?|about |around )?"
            + _SIZE
            + r" (?:of )?(?:vram |memory |ram )?(?:free|left|"
            r"available)\b.{0,40}?\bnot enough\b",
            _I,
        ),
    ),
    (
        # an exception thrown out of an allocating function; a retry budget of allocations
        ("exception", "allocation attempts", "allocation retries"),
        re.compile(
            r"\bexception (?:thrown )?(?:from|in|at|inside) [\w:]{0,40}(?:_allocate|_alloc|malloc|"
            r"::allocate\w{0,8})(?:_buffer|_memory|_tensor|_device)?\b|"
            r"\b(?:memory )?allocation (?:attempts|retries) (?:exceeded|exhausted)\b",
            _I,
        ),
    ),
    (
        # French, Spanish, Portuguese, Italian with the memory's kind between
        ("mémoire", "memoire", "memoria", "memória"),
        re.compile(
            r"\bm[ée]moire (?:de la |du |de )?(?:gpu|vid[ée]o|graphique|ram|vive|cuda) "
            r"(?:insuffisante|satur[ée]e|pleine|[ée]puis[ée]e)\b|"
            r"\bmem[oó]ria (?:de (?:la |)|da |del |della |di )?(?:gpu|v[íi]deo|gr[áa]fica|ram|"
            r"cuda) (?:insuficiente|insufficiente|esaurita|agotada|esgotada|llena|cheia)\b",
            _I,
        ),
    ),
    (
        # mistral.rs's automatic device mapper (auto_device_map.rs); a paste may wrap the
        # device list to the next line ("does not fit on the devices\n["cpu (avail: 0MB)", ..."):
        # the phrase then ends its line
        ("does not fit on", "unified-memory budget", "cannot fit its fixed"),
        re.compile(
            r"\bmodel does not fit on (?:the devices(?: \[|\s{0,4}$)|this system\b)|"
            r"\bGiB is available within the unified-memory budget\b|"
            r"\bcannot fit its fixed model components\b",
            _I,
        ),
    ),
    (
        # XLA's OOM dump (buffer_assignment.cc ToVerboseString) and the TPU compiler's report
        ("peak buffers", "xla label", "preallocated temp", "largest program allocations"),
        re.compile(
            r"\bPeak buffers:\s{0,4}$|\bXLA Label: [a-z][\w-]{0,40}\s{0,4}$|"
            r"\bpreallocated temp (?:allocation|fragmentation): {0,20}\d|"
            r"\bLargest program allocations in (?:hbm|vmem)\b",
            _I | re.M,
        ),
    ),
)

# a title that names its own, other error beside a card's size ("Cannot train with 2x 24GB GPUs
# (NCCL timeout)", "Can't run on a 16GB Mac: unsupported architecture") is that error: the size
# families stay silent on it (the runtimes' wordings above do not need this)
_OTHER_ERROR = re.compile(
    r"\b(?:nccl|time ?out|timed out|segfault|segmentation|illegal|unsupported|not supported|"
    r"import ?error|modulenotfound|no module|not found|driver|cuda version|compil\w{1,6}|"
    r"permission|syntax|arch(?:itecture)?|installer|install(?:ation)?|dll|symbol|invalid|magic|"
    r"corrupt\w{0,4}|checksum|unrecogni[sz]ed|unknown model|tokenizer|compute capability|"
    r"cuda ?\d{1,2}(?:\.\d)? (?:is )?required|requires cuda)\b",
    _I,
)
_SIZE_PATTERN = next(p for n, p in _FAMILIES if "fit " in n)  # the card's-size family


# a second literal test for the families whose first needles are common words ("all", "100",
# "fail", "exceed"): the line must also hold one of these before the regex runs (a log's lines
# hold the common words often, the pair rarely)
_MEMORY_WORDS = ("memory", "ram", "vram")
_CONSEQUENCES = ("crash", "oom", "kill", "freez", "froze", "dies", "died", "hang", "swap")
_SIZE_HINT = re.compile(r"\d ?(?:[GgMm]|Go)")
_ALSO: dict[tuple[str, ...], tuple[str, ...]] = {
    ("exceeded", "fill", "100", "spike"): _MEMORY_WORDS,
    ("through",): _MEMORY_WORDS,
    ("usage", "consumption", "footprint"): _CONSEQUENCES,
    ("all", "100"): _CONSEQUENCES,
}


def _mib(size: str) -> float:
    """MiB of a size as the user wrote it ("20GB", "12 G", "800MB"); units only compared."""
    m = re.match(r"(\d{1,4}(?:[.,]\d{1,2})?) ?([GgMm])", size)
    if m is None:
        return 0.0
    value = float(m.group(1).replace(",", "."))
    return value * 1024 if m.group(2) in "Gg" else value


def _short(m: re.Match[str]) -> bool:
    """A stated requirement above the stated memory (not "needs 20GB but I have 24GB")."""
    return _mib(m.group("need")) > _mib(m.group("have"))


_ALL = _FAMILIES + FAMILIES_MORE + FAMILIES_I18N_MORE
_GATE = needles_gate(_ALL)  # a line holding no family's needle tries none
_INDEX = FamilyIndex([needles for needles, _ in _ALL])  # those it holds, in one findall


def title_match(line: str, low: str) -> re.Match[str] | None:
    """The first title/prose OOM wording in ``line`` (``low``: ``line.lower()``), else ``None``."""
    if _GATE.search(low) is None:
        return None
    for i in _INDEX.present(low):
        needles, pattern = _ALL[i]
        also = _ALSO.get(needles, ())
        if also and not any(n in low for n in also):
            continue
        sized = pattern is _SIZE_PATTERN or "need" in pattern.groupindex
        if sized and not _SIZE_HINT.search(line):
            continue
        m = pattern.search(line)
        if m is None:
            continue
        if pattern is _SIZE_PATTERN and _OTHER_ERROR.search(line):
            continue
        if "need" in pattern.groupindex and not _short(m):
            continue
        return m
    return None

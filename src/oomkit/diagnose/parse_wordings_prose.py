"""More ways users word an OOM in prose, and quoted runtime wordings that lost their numbers.

``parse_wordings.harvested_match`` runs these families last, in the generic fallback
(``parse_extra.parse_generic``): an event only where no runtime parser and no earlier family found
one. Each family is a grammar of "the memory ran out", not one thread's sentence; the neighbours
that must stay silent are in ``tests/test_doctor_prose_wordings.py``:

* **out of a named memory**: "out of HBM memory", "out of NPU memory", "out of device memory"
  with a memory kind the earlier families did not list (TPU/Gaudi HBM, Ascend NPU, Intel XPU,
  Cambricon MLU); XLA:TPU itself says "Ran out of memory in memory space hbm"
  (``openxla/xla:xla/service/memory_space_assignment``), users shorten it to "out of hbm";
* **a shortage with an adverb between**: "the video memory is still insufficient", "VRAM was
  again not enough" (the English of 显存还是不足 / 显存仍然不够);
* **Chinese with words between the memory and its bursting**: "无论显存多少都会爆" (whatever the
  VRAM, it blows up), "显存一下就爆了"; not "显存不会爆" (will not blow up);
* **a kill named with its memory cause**: "was killed due to memory", "got killed because of
  OOM", "killed for using too much RAM" (not "killed due to timeout", "killed by the user");
* **bash's ``Killed`` quoted in lower case as the error**: 'I get the error "killed"', 'No
  error code just "killed"', "shows killed in line 163" (bash prints ``Killed`` when a child dies
  of SIGKILL, the kernel OOM killer's signal; ``parse_other`` reads the capitalised line; not
  "I killed the process", "shows killed processes");
* **a memory explosion named as a noun**: "GPU memory explosion with default batch size",
  "memory blow-up in run_epoch" (not "avoids memory explosion", "to prevent memory blowup");
* **a continuous rise of a memory, as a noun**: "the continuous rising of gpu memory",
  "constant growth in RAM" (a leak report; not "increase in memory bandwidth");
* **a stated requirement above the stated memory**: "Ollama says I need 33.6 GB of 30.5 GB
  RAM" (the sizes compared: not "I need 8 GB of my 24 GB VRAM"), and Ollama's own
  ``model requires more system memory (%s) than is available (%s)`` (``ollama/ollama:
  llm/server.go``) quoted without its sizes, "requires more system memory than is available";
* **a model that needs more memory**, in a title: "Chinese alpaca need more REQ memory",
  "70B needs more GPU memory" (old llama.cpp's "not enough space in the context's memory pool"
  as users titled it); not a question ("do I need more memory?") nor a plan ("will need more
  memory for ...").

Runtimes' own wordings (their entries are in ``upstream_wordings_limits.py``): kvcached's KV
allocator (``ovg-project/kvcached:kvcached/kv_cache_manager.py`` ``KVCacheManager.alloc``:
``logger.warning("available_size()=%d < need_size=%d", ...)`` and it returns ``None``: the
elastic KV pool has fewer free blocks than the step needs).

Every family is behind literal needles and every quantifier is bounded (linear time).
"""

from __future__ import annotations

import re

__all__ = ["prose_match"]

_I = re.IGNORECASE
_SIZE = r"\d{1,4}(?:[.,]\d{1,2})? ?(?:G|GB|GiB|Go|M|MB|MiB)\b"

# the literal words of the other-language family (one of them must be on the line)
_I18N_NEEDLES: tuple[str, ...] = (
    "reicht", "speicherüberlauf", "zabrak", "brakuje", "došla", "memori", "habis", "penuh",
    "bộ nhớ", "minne", "hukommelse", "muisti", "memória", "пам'ят", "памят", "piena",
    "esaurimento", "pleine", "saturée",
)  # fmt: skip

_FAMILIES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        # out of a memory kind the earlier families do not list: "out of HBM memory", "out of
        # NPU memory", "ran out of hbm" (XLA:TPU's "memory space hbm")
        ("out of", "out-of"),
        re.compile(
            r"\bout[- ]of[- ](?:the )?(?:hbm|npu|xpu|mlu|tpu|hpu|gaudi|ascend)(?:[- ]?\d{1,2})?"
            r"[- ](?:device[- ])?memory\b|"
            r"\b(?:ran|run|runs|running|went|goes|going|got|getting) out[- ]of[- ](?:the )?"
            r"(?:hbm|npu|xpu|mlu|tpu|hpu)\b(?! ?(?:bandwidth|cores?|units?|stack|slots?|quota))",
            _I,
        ),
    ),
    (
        # "the video memory is still insufficient", "VRAM was again not enough"
        ("insufficient", "not enough", "exhausted"),
        re.compile(
            r"(?<!on )(?<!about )(?<!regarding )\b(?:memory|vram|ram)"
            r"(?: is| was| are| were| seems?(?: to be)?)"
            r" (?:still|also|always|again|just|simply|really|very|seriously|clearly|definitely"
            r"|apparently|obviously|totally|completely|quite|far) (?:not enough\b|insufficient\b|"
            r"exhausted\b)(?! (?:information|info|bandwidth))",
            _I,
        ),
    ),
    (
        # Chinese with words between: "无论显存多少都会爆", "显存一下就爆了"; not "显存不会爆"
        ("显存", "内存", "顯存", "內存"),
        re.compile(
            r"(?:显存|内存|顯存|內存)[^，。,.!?！？;；\s]{1,10}?(?<!不)(?<!没)(?<!沒)(?<!不会)(?<!不會)"
            r"(?<!没有)(?<!沒有)(?<!未)(?:爆|炸)(?!发|發|款|料|点|點|弹|彈)"
        ),
    ),
    (
        # "was killed due to memory", "got killed because of OOM", "killed for using too much
        # RAM"; not "killed due to timeout", "killed by the user"
        ("killed",),
        re.compile(
            r"\bkilled (?:due to|because of|for|from|by)(?: the| a| an| its| too| high| huge| low"
            r"| lack of| excessive| insufficient| using| exceeding| much| many)?(?: too| much)?"
            r"(?: the| its)? (?:(?:gpu|cpu|host|system|ram|vram) )?(?:memory|ram|vram|oom|"
            r"out[- ]of[- ]memory|memory pressure|memory usage)\b(?! (?:leak )?(?:fix|check))",
            _I,
        ),
    ),
    (
        # bash's "Killed" quoted in lower case as the error: 'the error "killed"', 'just
        # "killed"', "shows killed in line 163"; not "I killed the process", "shows killed
        # processes"
        ("killed",),
        re.compile(
            r"\b(?:error|message|output|just|only|simply|says?|said|shows?|showed|shown|prints?|"
            r"printed|outputs?|returns?|returned|get|got|gets)(?::| is| was)?"
            r" ?(?:[\"'\u201c`]killed[\"'\u201d`]|killed(?= ?(?:in|at|on|after|when|while)"
            r" (?:line|step|epoch|iteration|the (?:middle|end|start))\b|[.!]? ?$))",
            _I,
        ),
    ),
    (
        # a memory explosion as a noun: "GPU memory explosion with default batch size",
        # "memory blow-up"; not "avoids memory explosion", "to prevent memory blowup"
        ("explosion", "blowup", "blow-up", "blow up"),
        re.compile(
            r"(?<!avoid )(?<!avoids )(?<!avoiding )(?<!prevent )(?<!prevents )(?<!preventing )"
            r"(?<!no )(?<!without )(?<!fix )(?<!fixes )(?<!fixed )"
            r"\b(?:(?:gpu|cuda|video|vram|host|cpu|system|device) )?(?:memory|vram|ram) "
            r"(?:explosion|blow-?up|blow up)s?\b",
            _I,
        ),
    ),
    (
        # a continuous rise as a noun: "the continuous rising of gpu memory", "constant growth
        # in RAM usage"; not "increase in memory bandwidth"
        ("continu", "constant", "steady", "unbounded", "endless", "ever"),
        re.compile(
            r"\b(?:continuous|continual|continuously|constant|constantly|steady|steadily|"
            r"unbounded|endless|ever[- ]?)(?:[- ]?(?:rising|rise|increase|increasing|growth|"
            r"growing)) (?:of|in) (?:the )?(?:(?:gpu|cuda|vram|video|host|cpu|system|device) )?"
            r"(?:memory|vram|ram)\b(?! (?:bandwidth|speed|clock|frequency|efficiency|prices?|"
            r"costs?|market|sales|demand|capacit(?:y|ies)|sizes?|technology)\b)",
            _I,
        ),
    ),
    (
        # Ollama's "model requires more system memory (X) than is available (Y)" quoted
        # without its sizes (ollama/ollama:llm/server.go)
        ("than is available", "than are available"),
        re.compile(
            r"\brequires? more (?:system |gpu |video |device |host )?(?:memory|ram|vram) than "
            r"(?:is|are) available\b",
            _I,
        ),
    ),
    (
        # a model that needs more memory, in a title: "Chinese alpaca need more REQ memory";
        # not a question or a plan
        ("need more", "needs more"),
        re.compile(
            r"(?<!do i )(?<!does it )(?<!will )(?<!would )(?<!might )(?<!may )(?<!i )"
            r"(?<!we )(?<!you )\bneeds? more (?:[A-Za-z]{1,8} )?(?:memory|vram)\b"
            r"(?! (?:for|to|than|if|when)\b)(?![^?\n]{0,80}\?)",
            _I,
        ),
    ),
    (
        # the card lacks memory: "the card lacks memory for this model", "my GPU lacks enough
        # VRAM"; not "lacks memory safety", "lacks memory stats"
        ("lack",),
        re.compile(
            r"\blacks? (?:enough |sufficient |the )?(?:(?:gpu|video|device|system|host) )?"
            r"(?:memory|vram|ram)\b(?! (?:safety|info|information|stats|statistics|profil\w{0,5}|"
            r"usage|management|docs|documentation|support|tracking|reporting|estimat\w{0,5}))",
            _I,
        ),
    ),
    (
        # the kernel as the killer: "the kernel killed my training", "Linux killed the
        # process" (the kernel's OOM killer is what kills a user's process unasked)
        ("killed",),
        re.compile(
            r"\b(?:kernel|linux) (?:has |had |just )?killed (?:it\b|(?:my|the|our|all) "
            r"(?:\w{1,12} )?(?:process\w{0,2}|training|job|run|program|script|python\d?|app\w{0,9}|"
            r"server|workers?|container|model|inference)\b)",
            _I,
        ),
    ),
    (
        # Chinese with an adverb between: "显存还是不够", "显存依然不足", "内存也不够"
        ("显存", "内存", "顯存", "內存"),
        re.compile(
            r"(?:显存|内存|顯存|內存)(?:还是|還是|依然|仍然|仍|也|根本|完全|实在|實在|明显|明顯|"
            r"已经|已經|又|还|還|总是|總是|经常|經常)(?:不足|不够|不夠|溢出|耗尽|耗盡)"
        ),
    ),
    (
        # more languages: German "der VRAM reicht nicht (aus)", "Grafikspeicherüberlauf";
        # Polish "zabrakło pamięci"; Czech "došla paměť"; Indonesian / Malay "memori tidak
        # mencukupi", "VRAM habis"; Vietnamese "bộ nhớ không đủ", "hết bộ nhớ"; Swedish
        # "otillräckligt minne", "slut på minne"; Norwegian / Danish "ikke nok minne"; Finnish
        # "muisti loppui"; Hungarian "nem elég memória"; Ukrainian "закінчилася пам'ять";
        # Russian "переполнение видеопамяти"; Italian "VRAM piena", "esaurimento della
        # memoria"; French "la mémoire est pleine"
        _I18N_NEEDLES,
        re.compile(
            r"\b(?:VRAM|RAM|(?:Grafik|Arbeits|GPU-|Video)?[Ss]peicher)(?: der GPU)? reicht "
            r"(?:nicht|kaum)\b|"
            r"\b(?:grafik|gpu-?|vram-?)speicherüberlauf|speicherüberlauf (?:auf|im|in) (?:der )?"
            r"(?:gpu|grafikkarte)\b|"
            r"(?<!nie )\bzabrakło (?:\w{1,10} )?pamięci|\bpamięci (?:\w{1,10} ){0,2}zabrakło|"
            r"(?<!nie )\bbrakuje (?:\w{1,10} )?pamięci|"
            r"\bdošla (?:\w{1,10} )?paměť|"
            r"\bmemori (?:\w{1,8} ){0,2}(?:tidak|tak) (?:cukup|mencukupi)\b|"
            r"\b(?:VRAM|RAM|memori)(?: GPU)? (?:habis|penuh)\b|"
            r"\bbộ nhớ (?:\w{1,8} ){0,2}không đủ|\bhết (?:bộ nhớ|VRAM|RAM)\b|\btràn bộ nhớ|"
            r"\botillräckligt (?:\w{1,8})?minne|\bslut på (?:\w{1,8})?minne|"
            r"\bikke nok (?:\w{1,8})?(?:minne|hukommelse)|"
            r"\btom for (?:\w{1,8})?(?:minne|hukommelse)|"
            r"\bmuisti (?:loppuu|loppui|ei riitä)|\bmuistin loppuminen|"
            r"\bnem elég (?:a )?(?:\w{1,8} )?memória|\belfogyott a (?:\w{1,8} )?memória|"
            r"(?:закінчилася|закінчилась) (?:\w{1,10} )?пам'ять|пам'ять (?:\w{1,10} )?закінчилас|"
            r"не вистачає (?:\w{1,10} )?пам'яті|"
            r"переполнение (?:видеопамяти|памяти (?:GPU|видеокарты))|"
            r"\b(?:VRAM|RAM|memoria (?:della |di )?(?:GPU|video|scheda video)) (?:è )?piena\b|"
            r"\besaurimento (?:della )?memoria|"
            r"\b(?:la )?(?:mémoire|VRAM|RAM)(?: (?:vidéo|GPU|du GPU))? (?:est |était )?"
            r"(?:pleine|saturée)",
            _I,
        ),
    ),
    (
        # kvcached's KV allocator (kvcached/kv_cache_manager.py KVCacheManager.alloc)
        ("need_size",),
        re.compile(r"available_size\(\)=\d{1,12}(?:\.\d{1,6})? < need_size=\d{1,12}"),
    ),
)

# a stated requirement above the stated memory: "I need 33.6 GB of 30.5 GB ram"
_NEED_OF = re.compile(
    rf"\bneeds? (?P<need>{_SIZE}) (?:of|out of) (?:(?:my|the|only|just|a) )?(?P<have>{_SIZE})"
    r"(?: of)? (?:(?:system|gpu|video|host|available|free|total) )?(?:ram|vram|memory)\b",
    _I,
)


def _mib(size: str) -> float:
    """MiB of a size as the user wrote it ("33.6 GB", "800MB"); only compared, never reported."""
    m = re.match(r"(\d{1,4}(?:[.,]\d{1,2})?) ?([GgMm])", size)
    if m is None:
        return 0.0
    value = float(m.group(1).replace(",", "."))
    return value * 1024 if m.group(2) in "Gg" else value


def prose_match(line: str, low: str) -> re.Match[str] | None:
    """The first prose OOM wording in ``line`` (``low``: ``line.lower()``), else ``None``."""
    for needles, pattern in _FAMILIES:
        if any(n in low for n in needles):
            m = pattern.search(line)
            if m is not None:
                return m
    if "need" in low:
        m = _NEED_OF.search(line)
        if m is not None and _mib(m.group("need")) > _mib(m.group("have")):
            return m
    return None

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
* **a sequence larger than the whole KV cache**: "hangs when a single sequence is larger than the
  system's KV cache size" (not "smaller than the KV cache");
* **a memory that keeps getting bigger** (the verb form): "cuda memory usage becomes bigger and
  bigger", "the memory was keeping getting larger" (not "memory gets larger with the batch");
* **an explosion verb with the memory as object**: "explodes the 24GB of memory", "blows up gpu1
  vram" (not "the GPU exploded", "avoid blowing up memory");
* **a program that cannot get enough memory**: "does not allocate enough GPU memory for the KV
  cache", "I haven't enough VRAM", "CUDA report me that i haven't enough free space" (not
  "enough memory bandwidth", "not enough space on the disk"); **a buffer allocation error** in a
  title (not "buffer allocation error handling"); **a cause that fails the allocations**, the
  transitive verb (docpost18, heldout37: "a large context window which fails GPU memory
  allocations"; not "handles failing memory allocations", "never fails memory allocations", a
  test that fails them on purpose);
* **a memory problem with a big batch or input**: "has a problem with memory when the model runs
  with a huge batch size", "memory problem with large images" (not "a problem with memory
  alignment"; a bare "memory problem" stays silent, as in ``parse_wordings_titles``);
* **a high memory usage and its consequence**: "leads to high memory usage and hanging the
  system";
* **short forms and consequences**: "Out-of-mem on A100", "RAM overflow", "low VRAM crash",
  "limited VRAM causes crash", "crashes because VRAM fills", "exceeds available GPU memory",
  "Stuck at loading then killed" (not "low VRAM mode", "fills the buffer", "exceeds the memory
  bandwidth", "started the server and killed it");
* **PyTorch's "Tried to allocate <size>" translated** (by a browser or a user): Chinese
  "尝试分配 20.00 MiB", Japanese "を割り当てようとしました", Spanish "intentó asignar", French
  "tentative d'allocation de 2,00 Gio", German "versuchte ... zuzuweisen", Portuguese "tentou
  alocar", Russian "попытка выделить", Korean "할당하려고"; a size must follow or precede (not
  "尝试分配任务", assigning tasks);
* **a model that needs more memory**, in a title: "Chinese alpaca need more REQ memory",
  "70B needs more GPU memory" (old llama.cpp's "not enough space in the context's memory pool"
  as users titled it); not a question ("do I need more memory?") nor a plan ("will need more
  memory for ...").

Runtimes' own wordings (their entries are in ``upstream_wordings_limits.py``): vLLM V0's
scheduler when a prompt can never fit the KV blocks (``vllm-project/vllm:vllm/core/scheduler.py``
``_schedule_prefills``, ``AllocStatus.NEVER``: "Input prompt (%d tokens) is too long and exceeds
the capacity of block_manager", later with "+ lookahead slots (%d)"), and kvcached's KV
allocator (``ovg-project/kvcached:kvcached/kv_cache_manager.py`` ``KVCacheManager.alloc``:
``logger.warning("available_size()=%d < need_size=%d", ...)`` and it returns ``None``: the
elastic KV pool has fewer free blocks than the step needs).

Every family is behind literal needles and every quantifier is bounded (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.text import FamilyIndex, needles_gate

__all__ = ["MEMORY_GETS_BIGGER", "prose_match"]

_I = re.IGNORECASE

#: (docrec30) a memory that keeps getting bigger, the verb form of "the continuous rising of gpu
#: memory" (a leak report, as "keeps growing" is): "cuda memory usage becomes bigger and bigger",
#: "the GPU memory will become higher and higher", "the memory was keeping getting larger"; the
#: comparative doubled or kept, not "memory gets larger with the batch size". The growth reading
#: of the cause rules (``rules_stated.stated_growth``) reads the same pattern (doccause20).
MEMORY_GETS_BIGGER = re.compile(
    r"\b(?:memory|vram|ram)(?: (?:usage|use|consumption|footprint|occupation|occupancy))?"
    r"(?: (?:will|would|is|was|are|were|just|also|always|then|seems to|starts? to)){0,2}"
    r" (?:(?:becom(?:e|es|ing)|became|gets?|getting|got|grows?|growing|grew|goes|going|"
    r"went) (?P<cmp>bigger|higher|larger|greater) and (?P=cmp)\b|"
    r"(?:keeps?|kept|keeping) (?:on )?getting (?:bigger|higher|larger|greater)\b)",
    _I,
)
_SIZE = r"\d{1,4}(?:[.,]\d{1,2})? ?(?:G|GB|GiB|Go|M|MB|MiB)\b"
# a size as a translation prints it (decimal comma; French Gio / Mio / Go / Mo; Cyrillic ГБ)
_SIZE_I18N = r"\d{1,6}(?:[.,]\d{1,2})?\s?(?:[GMK]i?B|Gio|Mio|Go|Mo|G|M|ГиБ|МиБ|ГБ|МБ)(?![A-Za-z])"

# the literal words of the other-language family (one of them must be on the line)
_I18N_NEEDLES: tuple[str, ...] = (
    "reicht", "speicherüberlauf", "zabrak", "brakuje", "došla", "memori", "habis", "penuh",
    "bộ nhớ", "minne", "hukommelse", "muisti", "memória", "пам'ят", "памят", "piena",
    "esaurimento", "pleine", "saturée",
)  # fmt: skip

_S = _SIZE_I18N
# (docrec31) a crash, a hang or a kill in Chinese: the consequence a full memory must name
_CRASH_ZH = (
    "崩溃", "崩潰", "崩了", "挂了", "掛了", "死机", "死機", "卡死", "闪退", "閃退", "中断", "中斷",
    "被杀", "被殺",
)  # fmt: skip
# PyTorch's "Tried to allocate <size>" translated (the family's comment is in _FAMILIES)
_TRIED_I18N = re.compile(
    "|".join(
        (
            rf"(?:尝试|试图|嘗試|試圖|企图|企圖)分配\s{{0,2}}{_S}",
            # "突然要分配20G" (it suddenly wants to allocate 20G), not "需要分配" (a need)
            rf"(?<!需)(?<!需要)(?:要|想)分配\s{{0,2}}{_S}",
            rf"{_S}\s{{0,2}}(?:を|の)?\s{{0,2}}割り当てようと",
            rf"割り当てようと(?:した|しました)\s{{0,2}}{_S}",
            rf"\bintent(?:ó|o|aba|ando) asignar {_S}",
            rf"\b(?:tentative d'allocation de|a tenté d'allouer|essay(?:é|ait) d'allouer) {_S}",
            rf"\bversucht(?:e|,)? {_S} zuzuweisen",
            rf"\btent(?:ou|ativa de|ando) alocar {_S}",
            rf"(?:попытка|пытался|попытался|попытке) выделить {_S}",
            rf"{_S}\s{{0,2}}(?:을|를)?\s{{0,2}}할당하려고",
        )
    ),
    _I,
)

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
        # (docrec31) Chinese overflow with words between, in the same sentence: "显存会溢出",
        # "显存应该是有空余的，但是不到1个epoch溢出中断训练"; not negated ("没有溢出", "不会溢出"),
        # prevented ("防止溢出"), nor a number's overflow (数值 / 梯度 / 整数 / 精度 / 栈 / 上溢出).
        # Gated on 溢出; the lookahead first, so the negations are tested only before an 溢出
        ("溢出",),
        re.compile(
            r"(?:显存|内存|顯存|內存)[^。.!?！？;；\n]{0,24}?(?=溢出)(?<!不)(?<!没)(?<!沒)(?<!未)"
            r"(?<!不会)(?<!不會)(?<!没有)(?<!沒有)(?<!无)(?<!無)(?<!防止)(?<!避免)(?<!数值)"
            r"(?<!數值)(?<!梯度)(?<!整数)(?<!整數)(?<!精度)(?<!数据)(?<!數據)(?<!栈)(?<!棧)"
            r"(?<!缓冲区)(?<!上)(?<!下)溢出"
        ),
    ),
    (
        # (docrec31) Chinese "exceeds the memory" with the verb before it: "多卡会超显存",
        # "导致超过板卡的显存挂了"; not negated ("不超显存"), not "超大显存" (a big card), not a
        # need with a size ("需要超过24G的显存") nor a share ("超过显存的一半")
        ("超",),
        re.compile(
            r"(?<!不)(?<!没)(?<!沒)(?<!未)(?<!不会)(?<!不會)(?<!没有)(?<!沒有)"
            r"(?:超过|超出|超過|超)了?"
            r"(?:[^\s\d，。,.;；!?！？的]{1,4}的)?(?:显存|顯存|内存|內存)"
            r"(?!的?(?:一半|\d|百分|%|大小|容量的))"
        ),
    ),
    (
        # (docrec31) Chinese "the memory is fully taken" with its consequence: "内存（RAM）被完全
        # 占用，进而引发程序进程崩溃"; not without the crash ("显存被完全占用" is also vLLM's
        # preallocation), not negated ("没有被完全占用"). Gated on the crash words
        _CRASH_ZH,
        re.compile(
            r"(?:显存|内存|顯存|內存)[^。.!?！？;；\n被]{0,12}?"
            r"(?=被|完全|全部|全都|占|佔|耗|用完|吃光)(?<!不)(?<!没)(?<!沒)(?<!未)被?"
            r"(?:完全|全部|全都)?(?:占用|占满|佔用|佔滿|耗尽|耗盡|用完|吃光)"
            r"[^。.!?！？;；\n]{0,16}?(?:" + "|".join(_CRASH_ZH) + ")"
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
        # a sequence larger than the whole KV cache: "hangs when a single sequence is larger
        # than the system's KV cache size", "the prompt is longer than the KV cache capacity";
        # not "the prefix is smaller than the KV cache"
        ("kv cache", "kv-cache", "kvcache"),
        re.compile(
            r"\b(?:sequences?|prompts?|inputs?|contexts?|requests?)\b.{0,60}?\b(?:is |are |gets? )?"
            r"(?:larger|longer|bigger) than (?:the )?"
            r"(?:system's |available |whole |total |entire )?KV[- ]?cache\b",
            _I,
        ),
    ),
    (
        # a memory problem with a big batch or input, or in a phase that allocates: "has a
        # problem with memory when the model runs with a huge batch size", "memory problem
        # with large images"; not "a problem with memory alignment"
        ("problem", "issue", "trouble"),
        re.compile(
            r"\b(?:problems?|issues?|troubles?) with (?:the )?(?:(?:gpu|cuda|video|vram) )?memory\b"
            r"(?= (?:when|while|during|with|on|for|at)\b.{0,60}?\b(?:(?:huge|large|big|bigger|"
            r"larger|high|long|longer) (?:batch|inputs?|images?|resolution|context|sequences?|"
            r"prompts?|videos?|models?)|training|inference|loading|generation|generating|"
            r"fine-?tuning)\b)|"
            r"(?<!no )\bmemory (?:problem|issue|trouble)s? with (?:a |the )?(?:huge|large|big|"
            r"bigger|larger|high|long|longer) (?:batch|inputs?|images?|resolution|context|"
            r"sequences?|prompts?|videos?|models?)\b",
            _I,
        ),
    ),
    (
        # a high memory usage with its consequence joined by "and": "leads to high memory
        # usage and hanging the system", "huge RAM usage and then a crash"
        ("usage",),
        re.compile(
            r"\b(?:high|excessive|huge|enormous|massive|very high|extreme) (?:(?:gpu|cpu|system|"
            r"host|video) )?(?:memory|ram|vram) usage(?:,| and)(?: then)? (?:a |the )?"
            r"(?:hang\w{0,3}|crash\w{0,2}|freez\w{0,3}|kill\w{0,2}|oom\w{0,2})\b",
            _I,
        ),
    ),
    (
        # the short forms: "Out-of-mem on A100", "RAM overflow", "low VRAM crash", "limited
        # VRAM causes crash"; not "out-of-memo", "integer overflow", "low VRAM mode"
        ("of-mem", "overflow", "low ", "limited", "small "),
        re.compile(
            r"\bout-of-mem\b|\b(?:ram|vram|gpu ram) overflow(?:s|ed)?\b|"
            r"\b(?:low|limited|insufficient|small) (?:(?:gpu|video|system) )?(?:vram|ram|memory)"
            r"(?: (?:causes?|caused|leads? to|led to|results? in|gives?))?(?: an?| the)? "
            r"(?:crash\w{0,2}|oom\w{0,2}|kill\w{0,2}|freez\w{0,3})\b",
            _I,
        ),
    ),
    (
        # a memory that fills, with its consequence on the line: "the webui crashes because
        # VRAM fills", "VRAM filling up then OOM"; not "fills the memory with zeros"
        ("fills", "filled", "filling"),
        re.compile(
            r"\b(?:memory|ram|vram)(?: usage)? (?:fills|filled|filling|gets filled|is filling)"
            r"(?: up)?\b(?=.{0,80}?\b(?:crash|oom|kill|freez|froze|hang|die[sd]?\b))|"
            r"\b(?:crash\w{0,3}|oom\w{0,2}|kill\w{0,2}|freez\w{0,3}|hangs?|dies)\b.{0,40}?"
            r"\b(?:because|as|when|once|after) (?:the )?(?:(?:gpu|video|system) )?"
            r"(?:memory|ram|vram) (?:fills|filled|gets filled|is full)\b",
            _I,
        ),
    ),
    (
        # a job that exceeds the memory there is: "exceeds available GPU memory", "exceeded
        # the free VRAM"; not "exceeds available disk", "exceeds the memory bandwidth"
        ("exceed",),
        re.compile(
            r"\bexceed(?:s|ed|ing)? (?:the |my |your )?(?:available|free|total|remaining|"
            r"physical) (?:(?:gpu|video|system|device|host) )?(?:memory|vram|ram)\b"
            r"(?! (?:bandwidth|budget check))",
            _I,
        ),
    ),
    (
        # the job stops, then killed: "Stuck at loading then killed", "loads to 99% and gets
        # killed"; not "started the server and killed it"
        ("killed",),
        re.compile(
            r"\b(?:then|and|but) (?:got |gets |get |was |is |just )?killed\b"
            r"(?! (?:it|the|my|him|her|them|all|this|that|every|process\w{0,2}|jobs?|tasks?|"
            r"workers?|pods?|containers?|threads?|ones)\b)(?! by (?:the )?(?:user|me|hand))",
            _I,
        ),
    ),
    (
        # PyTorch's "Tried to allocate <size>" as a browser or a user translates it: Chinese
        # "尝试分配 20.00 MiB", Japanese "2.00 GiB を割り当てようとしました", Spanish "se
        # intentó asignar 2,00 GiB", French "tentative d'allocation de 2,00 Gio", German
        # "versuchte 2,00 GiB zuzuweisen", Portuguese "tentou alocar", Russian "попытка
        # выделить"; a size must follow (not "尝试分配任务", assigning tasks)
        (
            "分配",
            "割り当て",
            "asignar",
            "allou",
            "allocation de",
            "zuzuweisen",
            "alocar",
            "выделить",
            "할당",
        ),
        _TRIED_I18N,
    ),
    (
        # (docrec30) a memory that keeps getting bigger (MEMORY_GETS_BIGGER)
        ("bigger", "higher", "larger", "greater"),
        MEMORY_GETS_BIGGER,
    ),
    (
        # (docrec30) a verb of explosion with the memory as its object, the verb form of "memory
        # explosion": "explodes the 24GB of memory in a 4090", "then blows up gpu1 vram"; not
        # "the GPU exploded", "to avoid blowing up memory"
        ("explod", "blow", "blew"),
        re.compile(
            r"(?<!to )(?<!not )(?<!n't )(?<!avoid )(?<!avoids )(?<!without )(?<!prevent )"
            r"(?<!never )\b(?:explod(?:es|ed|ing)|blow(?:s|ing)? up|blew up) (?:the |my |all "
            r"(?:the |of the )?)?(?:\d{1,4}(?:\.\d{1,2})? ?(?:GB|G|GiB) (?:of )?)?"
            r"(?:(?:gpu ?\d{0,2}|cuda|video|host|system|device) )?(?:memory|vram|ram)\b",
            _I,
        ),
    ),
    (
        # (docrec30) a program that cannot get enough memory: "the generated config does not
        # allocate enough GPU memory for the KV cache", "couldn't reserve enough VRAM"; not
        # "enough memory bandwidth"
        ("enough",),
        re.compile(
            r"(?:\b(?:does not|doesn'?t|did not|didn'?t|cannot|can'?t|could not|couldn'?t|unable "
            r"to|failed to|fails to) (?:allocate|reserve|obtain|get|find)|\b(?:haven'?t|hasn'?t)"
            r"(?: got)?) enough (?:free |available )?(?:(?:gpu|cuda|video|device|host|system) )?"
            r"(?:memory|vram|ram)\b(?! (?:bandwidth|info|information)\b)|"
            # CUDA's "out of memory" retold as space: "CUDA report me that i haven't enough free
            # space to complete the operation" (not "not enough space on the disk")
            r"\b(?:cuda|gpu|vram)\b[^.!?\n]{0,80}?\b(?:haven'?t|hasn'?t|have not|has not|"
            r"don'?t have|doesn'?t have|not) (?:got )?enough (?:free )?space\b"
            r"(?! (?:on|in|for) (?:the |my )?(?:disk|drive|ssd|hdd|partition|volume|folder|"
            r"directory|dataset|checkpoint|cache|download))",
            _I,
        ),
    ),
    (
        # (docrec30) a buffer's allocation that failed, as users title llama.cpp's / Ollama's
        # "failed to allocate buffer": "Buffer Allocation Error Without Manual Context Trim"; not
        # "buffer allocation error handling"
        ("buffer allocation",),
        re.compile(
            r"\bbuffer allocation (?:error|errors|fail(?:s|ed|ure|ures)?)\b"
            r"(?! (?:handling|handler|is handled|path|code|test))",
            _I,
        ),
    ),
    (
        # (docpost18) the transitive verb, a cause that fails the allocations: "a large context
        # window which fails GPU memory allocations"; not handled, simulated, injected or
        # negated failures ("handles failing memory allocations", "never fails memory
        # allocations", "fails memory allocations on purpose to test the fallback")
        ("allocation",),
        re.compile(
            r"(?<!never )(?<!not )(?<!n't )(?<!handle )(?<!handles )(?<!handling )(?<!simulate )"
            r"(?<!simulates )(?<!inject )(?<!injects )(?<!test )(?<!tests )"
            r"\b(?:fails|failed|failing) (?:the |all |its |some |many )?"
            r"(?:(?:gpu|cuda|vram|video|device|host|system) )?memory allocations?\b"
            r"(?! (?:on purpose|deliberately|intentionally|for testing|to test)\b)",
            _I,
        ),
    ),
    (
        # vLLM V0's scheduler when a prompt can never fit the KV blocks (vllm-project/vllm:
        # vllm/core/scheduler.py, AllocStatus.NEVER)
        ("block_manager",),
        re.compile(
            r"Input prompt \(\d{1,9} tokens\)(?: \+ lookahead slots \(\d{1,6}\))? is too long "
            r"and exceeds the capacity of block_manager"
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


_GATE = needles_gate(_FAMILIES)  # a line holding no family's needle tries none
_INDEX = FamilyIndex([needles for needles, _ in _FAMILIES])  # those it holds, in one findall


def _mib(size: str) -> float:
    """MiB of a size as the user wrote it ("33.6 GB", "800MB"); only compared, never reported."""
    m = re.match(r"(\d{1,4}(?:[.,]\d{1,2})?) ?([GgMm])", size)
    if m is None:
        return 0.0
    value = float(m.group(1).replace(",", "."))
    return value * 1024 if m.group(2) in "Gg" else value


def prose_match(line: str, low: str) -> re.Match[str] | None:
    """The first prose OOM wording in ``line`` (``low``: ``line.lower()``), else ``None``."""
    for i in _INDEX.present(low) if _GATE.search(low) else ():
        m = _FAMILIES[i][1].search(line)
        if m is not None:
            return m
    if "need" in low:
        m = _NEED_OF.search(line)
        if m is not None and _mib(m.group("need")) > _mib(m.group("have")):
            return m
    return None

"""More ways users word an OOM in issue titles and prose (issue 9; pure).

Split out of :mod:`oomkit.diagnose.parse_wordings_titles`, which runs these after its own
families (see its docstring for what each family is and the neighbours that must stay silent:
``tests/test_doctor_titles.py``): a memory usage named together with its consequence, and the
same shortage in more languages.
"""

from __future__ import annotations

import re

__all__ = [
    "CJK_KILLED_BY_SYSTEM",
    "CJK_MEMORY_RISING",
    "CJK_SHOWN_KILLED",
    "FAMILIES_I18N_MORE",
    "FAMILIES_MORE",
    "SIZE",
]

_I = re.IGNORECASE
#: a stated size as titles write it ("24GB", "16 Go", "8.5 GiB")
SIZE = r"\d{1,4}(?:[.,]\d{1,2})? ?(?:G|GB|GiB|Go|M|MB|MiB)\b"
_SIZE = SIZE

# a memory usage named together with its consequence, and the same shortage in more languages
_NOT_BEFORE = r"(?<!no )(?<!not )(?<!without )(?<!never )(?<!n't )"
_FAMILIES_MORE: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        # "High VRAM usage causes crash", "System freezes due to high RAM usage"; not "high
        # memory usage but no crash", not "memory usage is high" alone (a statement of use)
        ("usage", "consumption", "footprint"),
        re.compile(
            r"\b(?:high|huge|excessive|massive|heavy|too much|increased|increasing|growing|"
            r"abnormal|insane|enormous) (?:gpu |cuda |video |system |host |cpu )?(?:memory|vram|"
            r"ram) (?:usage|consumption|use|footprint)\b.{0,40}?"
            + _NOT_BEFORE
            + r"\b(?:crash\w{0,3}|"
            r"oom\b|oom-?killed|killed|freez\w{0,3}|froze|dies|died)|"
            r"\b(?:crash\w{0,3}|freez\w{0,3}|froze|killed|dies|died|fail\w{0,3}|hang\w{0,3}) "
            r"(?:due to|because of|caused by|from) (?:the |a |very )?(?:high |huge |excessive |"
            r"massive |too much |full |increased |insane )?(?:gpu |cuda |video |system |host )?"
            r"(?:memory|vram|ram) (?:usage|consumption)\b|"
            # "killed on local machine due to over consumption of RAM"
            r"\b(?:crash\w{0,3}|killed|dies|died) [^.;!?]{0,30}?(?:due to|because of|caused by) "
            r"(?:the |an? )?(?:over[- ]?consumption|overuse|excessive use) of (?:the )?"
            r"(?:gpu |cuda |video |system |host )?(?:memory|vram|ram)\b",
            _I,
        ),
    ),
    (
        # all of a memory taken, or at 100 %, with the consequence: "takes all RAM and crashes",
        # "uses 100% of RAM and freezes", "GPU memory at 100% and then crash"; not "takes all GPU
        # memory" alone (vLLM / TF preallocate by design)
        ("all", "100"),
        re.compile(
            r"(?:\b(?:takes?|took|taking|uses?|used|using|eats?|ate|consumes?|consumed|hogs?|"
            r"fills?|filled) (?:up )?(?:all|100 ?%) (?:of )?(?:the |my )?(?:available )?(?:gpu |"
            r"system |video |cpu |host )?(?:memory|ram|vram)\b|"
            r"\b(?:memory|ram|vram)(?: usage)? (?:at|is at|was at|of) 100 ?%)"
            r".{0,40}?" + _NOT_BEFORE + r"\b(?:crash\w{0,3}|freez\w{0,3}|froze|killed|oom\b|dies|"
            r"died|hang\w{0,3}|swap\w{0,3})",
            _I,
        ),
    ),
    (
        # exhausted / explodes / none available, in title form: "GPU memory exhausted", "memory
        # usage explodes" (not "memory will blow up", a prediction), "no GPU memory available"
        ("exhausted", "explod", "memory available", "memory is available"),
        re.compile(
            r"\b(?:gpu |cuda |device |video |system |host |cpu )?memory exhausted\b|"
            r"\b(?:memory|ram|vram)(?: usage| use| consumption)? (?:explodes|exploded|exploding)"
            r"\b|"
            r"\bno (?:free )?(?:gpu |device |video |cuda )?memory (?:is )?available\b",
            _I,
        ),
    ),
    (
        # CUDA's and HIP's out-of-memory code by number: cudaErrorMemoryAllocation = 2
        # (driver_types.h), CUDA_ERROR_OUT_OF_MEMORY = 2 (cuda.h), hipErrorOutOfMemory = 2
        # (hip_runtime_api.h): "CUDA error 2 when loading"; not "CUDA error 209" or "CUDA 12.2"
        # (also glog's CHECK_EQ from Caffe's CUDA_CHECK, "error == cudaSuccess (2 vs. 0)", and an
        # allocating call's return code: "cudaMalloc returned error 2"; and the CUDA samples'
        # checkCudaErrors, NVIDIA/cuda-samples Common/helper_cuda.h check(): "CUDA error at
        # %s:%d code=%d(%s) \"%s\"", older releases without the "(%s)" enum name)
        ("cuda error", "cuda failure", "cuda status", "hip error", "cudasuccess (2", "alloc"),
        re.compile(
            r"\b(?:cuda|hip) (?:error|failure|status)(?: code)?:? ?(?:=|#)? ?2\b(?![.,]?\d)|"
            r"\bCUDA error at [^\n]{1,240}?:\d{1,7} code=2\b(?![.,]?\d)|"
            r"== ?cudaSuccess \(2 vs\. 0\)|"
            r"\b(?:cuda|hip|cu)(?:Malloc|MemAlloc)\w{0,12}(?:\([^)]{0,80}\))? (?:returned|failed "
            r"with)(?: error)?(?: code)?:? 2\b(?![.,]?\d)",
            _I,
        ),
    ),
    # the shortage in other grammar: "my GPU doesn't have enough memory", "there isn't enough
    # VRAM", "insufficient amount of memory", "it exceeds my 24GB", "goes beyond the available
    # memory", "more than the available VRAM", "runs out of GPU", "my RAM isn't big enough", "no
    # room left on the GPU", "too little VRAM"; not "exceeds the 5GB upload limit" (a file), "run
    # out of GPUs / GPU hours" (a cluster quota), "No space left on device" (a disk), "uses too
    # little memory". One small pattern per form, each behind its own words (a log's lines hold
    # "exceed", "space" or "than the" often)
    (
        ("have enough", "have sufficient", "have the"),
        re.compile(
            r"\b(?:does ?n[o']t|do ?n[o']t|did ?n[o']t|does not|do not|did not|won't) have "
            r"(?:enough|sufficient|the) (?:free |available )?(?:gpu |video |system )?(?:memory|"
            r"vram|ram)\b(?! (?:bandwidth|info))",
            _I,
        ),
    ),
    (
        ("n't enough", "not enough", "nt enough"),
        re.compile(
            r"\b(?:is ?n[o']t|is not|was ?n[o']t|was not|are ?n[o']t|are not) enough (?:free |"
            r"available )?(?:gpu |video |system )?(?:memory|vram|ram)\b",
            _I,
        ),
    ),
    (
        ("insufficient amount",),
        re.compile(
            r"\binsufficient amounts? of (?:free )?(?:gpu |video |system )?(?:memory|vram|ram)\b",
            _I,
        ),
    ),
    (
        ("exceed",),
        re.compile(
            r"(?<!not )(?<!n't )(?<!never )\bexceed(?:s|ed|ing)? (?:my|the|its|our|your|a) "
            r"(?:available |total )?" + _SIZE + r"(?: (?:of )?(?:vram|ram|gpu memory|memory|"
            r"card|gpu)\b| ?$|(?! (?:upload|file|disk|storage|quota|plan|data|download|limit)))",
            _I,
        ),
    ),
    (
        ("beyond",),
        re.compile(
            r"\b(?:goes|go|went|going|is|are|was) beyond (?:the |my |its )?(?:available |free |"
            r"total )?(?:gpu |video |system )?(?:memory|vram|ram)\b",
            _I,
        ),
    ),
    (
        ("than the available", "than the free", "than my available", "than available", "than free"),
        re.compile(
            r"\bmore than (?:the |my )?(?:available|free) (?:gpu |video |system )?(?:memory|vram|"
            r"ram)\b",
            _I,
        ),
    ),
    (
        ("out of gpu", "out of vram"),
        re.compile(r"\bruns? out of (?:gpu|vram)\b(?!s| hours| quota| credits| time)", _I),
    ),
    (
        ("big enough", "large enough"),
        re.compile(
            r"\b(?:ram|vram|memory|gpu|card) (?:is ?n[o']t|is not|was ?n[o']t|was not) (?:big|"
            r"large) enough\b",
            _I,
        ),
    ),
    (
        ("room", "space left", "space in", "space on"),
        re.compile(
            r"\b(?:not enough|no|insufficient) (?:room|space) (?:left )?(?:in|on) (?:the |my )?"
            r"(?:vram|gpu|gpu memory|video memory|ram)\b",
            _I,
        ),
    ),
    (
        ("too little",),
        re.compile(
            r"(?<!uses )(?<!using )(?<!used )\btoo little (?:free )?(?:gpu |video |system )?"
            r"(?:memory|vram|ram)\b",
            _I,
        ),
    ),
    (
        # a requirement stated against a smaller memory: "needs 20GB but I only have 12GB",
        # "requires ~40 GB of VRAM while my card has 24 GB"; not "needs 20GB and I have 24GB"
        (" but ", " while ", " whereas "),
        re.compile(
            r"\b(?:needs?|requires?|required|wants?|asks? for|uses?|used|takes?|took) (?:about |"
            r"around |~ ?|over |more than |at least )?(?P<need>" + _SIZE + r")(?: of (?:vram|ram|"
            r"memory|gpu "
            r"memory|video memory))?(?: (?:vram|ram))?,? (?:but|while|whereas) (?:i|my "
            r"[\w-]{1,12}|the [\w-]{1,12}|it|we|this [\w-]{1,12}|mine|there) (?:only )?(?:have|has|"
            r"had|got|provides?|is|are)(?: only)? (?:about |around |~ ?|just )?(?P<have>"
            + _SIZE
            + r")",
            _I,
        ),
    ),
    (
        # the swap full as well (the last reserve before the OOM killer)
        ("swap",),
        re.compile(
            r"\bswap(?: space| memory)? (?:is |was |gets |got |becomes )?(?:completely |totally )?"
            r"(?:full|exhausted|used up)\b|\bout of swap(?: space)?\b",
            _I,
        ),
    ),
    (
        # status names and fatal errors of a failed allocation not covered elsewhere: CANN's
        # ACL_ERROR_BAD_ALLOC (acl_base.h, 200000: ACL_CHECK_MALLOC_RESULT), HIP's deprecated
        # hipErrorMemoryAllocation (= hipErrorOutOfMemory = 2, hip_runtime_api.h), CPython's
        # Py_FatalError after a MemoryError while normalizing (Python/errors.c)
        ("acl_error_bad_alloc", "hiperrormemoryallocation", "cannot recover from memoryerrors"),
        re.compile(
            r"\bACL_ERROR_BAD_ALLOC\b|\bhipErrorMemoryAllocation\b|"
            r"Cannot recover from MemoryErrors while normalizing exceptions"
        ),
    ),
    (
        # Windows' virtual-memory shortage (the Resource Exhaustion Detector's dialog)
        ("virtual memory",),
        re.compile(
            r"\bout of virtual memory\b|\blow on virtual memory\b|"
            r"\blow virtual memory condition\b",
            _I,
        ),
    ),
    (
        # Chinese beyond parse_wordings': "超出显存", "显存超了", "内存被耗尽", "显存用完了";
        # not "不会超出显存" (will not exceed)
        ("显存", "内存", "顯存", "內存", "記憶體"),
        re.compile(
            r"(?<!不会)(?<!不會)(?<!没有)(?<!沒有)(?<!不)(?:超出|超过|超過)了?(?:显存|内存|顯存|內存|"
            r"記憶體)|"
            r"(?:显存|内存|顯存|內存|記憶體)(?:被|已|都|又|直接|就|全|全部)?(?:超了|超限|超出了|耗尽|"
            r"耗盡|用尽|用盡|用完了|用光|吃光|撑爆|撐爆|炸了)"
        ),
    ),
    (
        # Japanese "メモリが溢れる" (not "オーバーヘッド", overhead), Korean "메모리가 모자라"
        ("メモリ", "vram", "메모리", "램"),
        re.compile(
            r"(?:メモリー?|VRAM)(?:が|の)?(?:溢れ|あふれ|オーバー(?!ヘッド)|枯渇)|"
            r"(?:메모리|램|VRAM)(?:가|이)? ?(?:모자라|모자람|터짐|터져)",
            _I,
        ),
    ),
    (
        # VRAM / RAM in the Romance, Germanic, Slavic forms of "not enough", "full", "ran out"
        ("vram", "ram", "видеопамят", "память gpu"),
        re.compile(
            r"\bno hay (?:suficiente )?(?:vram|ram)\b|\b(?:vram|ram) (?:insuficiente|"
            r"insufficiente|insuffisante)\b|\b(?:pas assez|manque|[àa] court) de (?:vram|ram)\b|"
            r"\b(?:nicht genug|nicht gen[üu]gend|zu wenig) (?:vram|ram)\b|"
            r"(?:не хватает|не хватило|недостаточно|нехватка) (?:vram|ram|озу)|"
            r"\b(?:qued\w{0,6}|fic\w{0,5}|acab\w{0,5}|rimast\w{0,3}) (?:sin|sem|senza) (?:vram|ram)"
            r"\b|\b(?:vram|ram) (?:esaurita|agotada|esgotada|llena|cheia|pleine|satur[ée]e|voll|"
            r"[ée]puis[ée]e|piena|pe[łl]na)\b(?! (?:de|di|mit)\b)|"
            r"\b(?:brak|za ma[łl]o|brakuje) (?:vram|ram)\b|"
            r"(?:закончилась|кончилась|исчерпана) (?:\w{1,12} )?видеопамять|"
            r"(?:видеопамять|память gpu|vram) (?:закончилась|кончилась|заполнена|переполнена)",
            _I,
        ),
    ),
    (
        # Polish, Dutch, Czech / Slovak, Ukrainian (not Polish "pamięci podręcznej", a cache)
        ("pamięci", "pamięć", "geheugen", "paměti", "pamäte", "пам"),
        re.compile(
            r"\b(?:brak|za ma[łl]o|zbyt ma[łl]o|brakuje|niewystarczaj\w{1,4} (?:ilo[śs][ćc] )?)"
            r" ?(?:\w{1,12} )?pami[ęe]ci\b(?! podr[ęe]cznej)|\bpami[ęe][ćc] (?:jest )?"
            r"(?:pe[łl]na|wyczerpana)\b|"
            r"\b(?:onvoldoende|te weinig|niet genoeg) (?:\w{1,12} )?geheugen\b|"
            r"\bgeheugen (?:is |was )?vol\b|"
            r"\bnedostatek (?:\w{1,12} )?pam[ěe]ti\b|\bnedostatok (?:\w{1,12} )?pam[äa]te\b|"
            r"(?:недостатньо|не вистачає|не вистачило|нестача) (?:\w{1,12} )?(?:відео)?"
            r"пам['’ʼ]?яті",
            _I,
        ),
    ),
    (
        # Arabic, Persian, Thai
        ("الذاكرة", "ذاكرة", "حافظه", "หน่วยความจำ"),
        re.compile(
            r"(?:نفاد|نفدت|نقص) (?:في )?الذاكرة|(?:ال)?ذاكرة (?:\S{1,12} )?غير كافية|"
            r"حافظه(?: \S{1,10})? کافی نیست|کمبود حافظه|"
            r"หน่วยความจำ(?:ไม่พอ|ไม่เพียงพอ|เต็ม)"
        ),
    ),
)


#: memory said to keep rising in Chinese: "显存占用不断增加" (keeps increasing), "内存越来越大"
#: (bigger and bigger); the growth reading of the cause rules (``rules_stated.stated_growth``)
#: reads the same pattern (doccause20)
#: (docpost19) also a parenthesis after the noun ("显存（单个模型）越用越大"), the verb between
#: 越…越 ("越用越大", the more it is used the larger), accumulating growth ("显存累积增长"), and
#: growth told per turn or request ("每次对话显存占用都会增加几百Mb"); a negation ("显存没有越用越
#: 大", "都不会增加") or a quantity reached ("累积到16G") does not match
CJK_MEMORY_RISING = (
    r"(?:显存|内存|顯存|內存)(?:[（(][^）)\n]{1,12}[）)])?(?:占用|佔用|使用)?"
    r"(?:(?:不断|不斷|一直|持续|持續|累积|累積|逐渐|逐漸|逐步)(?:地)?"
    r"(?:增加|增长|增長|上涨|上漲|上升|变大|變大|增大)|越[来來用跑聊训訓]越(?:大|高|多))|"
    r"每(?:次|轮|輪)(?:对话|對話|问答|問答|请求|請求|推理|调用|調用|提问|提問|迭代)"
    r"[^，。,.!?！？\n]{0,6}?(?:显存|内存|顯存|內存)(?:占用|佔用|使用)?(?:都|也)?(?:会|會)?"
    r"(?:增加|增长|增長|上涨|上漲|变大|變大|增大)"
)
#: "进程被kill了", "程序被系统杀死"; not "被我kill" (by me) or "手动" (by hand); the host-RAM
#: reading (``rules_extra.names_host_memory``) reads the same pattern (doccause20)
CJK_KILLED_BY_SYSTEM = re.compile(
    r"(?<!手动)(?<!手動)(?:进程|進程|程序|训练|訓練|任务|任務|容器|服务|服務|python|"
    r"Python)?被(?:系统|系統|内核|內核|操作系统|OS|os)?(?:kill|Kill|KILL|杀死|杀掉|杀了|"
    r"殺死|殺掉|强制结束|強制結束)"
)
#: (docrec30) bash's "Killed" quoted inside CJK prose as what appeared: "运行解冻后的epoch会出现
#: killed的现象" (the phenomenon "killed" appears), "终端显示Killed", "报killed"; not "我kill了进程"
#: (an active kill: no shown / appeared before it); read for host RAM by
#: ``rules_extra.names_host_memory`` too (doccause20)
CJK_SHOWN_KILLED = re.compile(
    r"(?:出现|出現|显示|顯示|提示|报错|報錯|报|報|遇到)\s?[\"'“「]?(?:killed|Killed|KILLED)"
    r"(?![A-Za-z])"
)

# The leak and the OOM killer in the languages users write titles in, as parse_wordings reads
# them in English ("memory leak", "keeps growing", "the process gets killed"); the same guards:
# no leak, a fixed leak, a process killed by hand stay silent
_FAMILIES_I18N_MORE: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("泄漏", "泄露", "洩漏", "洩露", "增", "越", "上涨", "上漲", "上升"),
        re.compile(
            r"(?<!没有)(?<!沒有)(?<!无)(?<!無)(?<!修复)(?<!修復)(?<!修正)(?<!解决)(?<!解決)"
            r"(?<!修复了)(?<!修復了)(?<!解决了)(?<!解決了)"
            r"(?:显存|内存|顯存|內存|記憶體)(?:泄漏|泄露|洩漏|洩露)|" + CJK_MEMORY_RISING
        ),
    ),
    (
        # "进程被kill了", "程序被系统杀死"; not "被我kill" (by me) or "手动" (by hand)
        ("被",),
        CJK_KILLED_BY_SYSTEM,
    ),
    (
        # (docrec30) bash's "Killed" quoted inside CJK prose as what appeared: "运行解冻后的epoch会
        # 出现killed的现象" (the phenomenon "killed" appears), "终端显示Killed", "报killed"; not
        # "我kill了进程" (an active kill: no shown / appeared before it)
        ("kill",),
        CJK_SHOWN_KILLED,
    ),
    (
        # Japanese, Korean, French, Spanish, Portuguese, Italian, German, Russian "memory leak"
        (
            "メモリ",
            "메모리",
            "fuite",
            "pérdida",
            "perdida",
            "fuga",
            "vazamento",
            "perdita",
            "speicherle",
            "утечк",
        ),
        re.compile(
            r"メモリー?リーク(?!は(?:ない|ありません|なし))|메모리 ?누수(?! ?(?:없|수정|해결))|"
            r"(?<!pas de )(?<!aucune )\bfuites? de m[ée]moire\b|"
            r"(?<!sin )(?<!no hay )\b(?:p[ée]rdidas?|fugas?) de memoria\b|"
            r"(?<!sem )\bvazamentos? de mem[oó]ria\b|\bperdit[ae] di memoria\b|"
            r"\bSpeicherle(?:ck|cks|cke)\b|"
            r"(?<!нет )(?<!без )утечк[аиуе] (?:видео)?памяти",
            _I,
        ),
    ),
)

FAMILIES_MORE = _FAMILIES_MORE
FAMILIES_I18N_MORE = _FAMILIES_I18N_MORE

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

__all__ = ["title_match"]

_I = re.IGNORECASE
_MEM = r"(?:memory|ram|vram|video memory|gpu memory|gpu ram)"
_SIZE = r"\d{1,4}(?:[.,]\d{1,2})? ?(?:G|GB|GiB|Go|M|MB|MiB)\b"

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
        # mistral.rs's automatic device mapper (auto_device_map.rs)
        ("does not fit on", "unified-memory budget", "cannot fit its fixed"),
        re.compile(
            r"\bmodel does not fit on (?:the devices \[|this system\b)|"
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
            r"(?:memory|vram|ram) (?:usage|consumption)\b",
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


# The leak and the OOM killer in the languages users write titles in, as parse_wordings reads
# them in English ("memory leak", "keeps growing", "the process gets killed"); the same guards:
# no leak, a fixed leak, a process killed by hand stay silent
_FAMILIES_I18N_MORE: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("泄漏", "泄露", "洩漏", "洩露", "增", "越来越", "越來越", "上涨", "上漲", "上升"),
        re.compile(
            r"(?<!没有)(?<!沒有)(?<!无)(?<!無)(?<!修复)(?<!修復)(?<!修正)(?<!解决)(?<!解決)"
            r"(?<!修复了)(?<!修復了)(?<!解决了)(?<!解決了)"
            r"(?:显存|内存|顯存|內存|記憶體)(?:泄漏|泄露|洩漏|洩露)|"
            r"(?:显存|内存|顯存|內存)(?:占用|佔用|使用)?(?:不断|不斷|一直|持续|持續)(?:地)?"
            r"(?:增加|增长|增長|上涨|上漲|上升|变大|變大)|"
            r"(?:显存|内存|顯存|內存)(?:占用|佔用|使用)?越[来來]越(?:大|高|多)"
        ),
    ),
    (
        # "进程被kill了", "程序被系统杀死"; not "被我kill" (by me) or "手动" (by hand)
        ("被",),
        re.compile(
            r"(?<!手动)(?<!手動)(?:进程|進程|程序|训练|訓練|任务|任務|容器|服务|服務|python|"
            r"Python)?被(?:系统|系統|内核|內核|操作系统|OS|os)?(?:kill|Kill|KILL|杀死|杀掉|杀了|"
            r"殺死|殺掉|强制结束|強制結束)"
        ),
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


def title_match(line: str, low: str) -> re.Match[str] | None:
    """The first title/prose OOM wording in ``line`` (``low``: ``line.lower()``), else ``None``."""
    for needles, pattern in _FAMILIES + _FAMILIES_MORE + _FAMILIES_I18N_MORE:
        if any(n in low for n in needles):
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

"""Out-of-memory wordings harvested from the runtimes' own sources, for the generic fallback.

``parse_extra.parse_generic`` recognises an obvious OOM that no runtime parser knows. Its original
keyword regex covers "out of memory", "failed to allocate" and the like; the families here come
from reading what runtimes print when an allocation fails (the table, with a source per entry, is
``oomkit.diagnose.upstream_wordings``; ``tests/test_doctor_upstream_wordings.py`` checks every
entry):

* other verbs of a failed allocation, where a size or memory follows ("Could not allocate tensor
  with 4915840 bytes", "Fail to alloc memory", "Failed to CUDA calloc N bytes"; "Could not
  allocate tensor with 0 dims" is a shape error and stays out);
* an allocating API named in the failure (``vkAllocateMemory failed``, ``bm_malloc_device_byte
  failed``, ``aclrtMalloc failed``) and allocation status names (``CL_MEM_OBJECT_ALLOCATION_
  FAILURE``, ``miopenStatusAllocFailed``, ``rocblas_status_memory_error``, ``ENOMEM``);
* memory phrases ("memory isn't enough", "not enough GPU video memory", "too large for the
  available VRAM", "does not fit in GPU memory", "exceeded job memory limit", "running beyond
  physical memory limits", "low on resource: memory", "ran out of application memory");
* OS and scheduler texts (Windows' "paging file is too small" / "Not enough storage is
  available", PBS "job killed: mem", torchrun "exitcode: -9", systemd "status=9/KILL", zsh
  "killed", libmalloc "can't allocate region", MSVC "bad allocation", Rust "memory allocation of N
  bytes failed");
* localized UIs: 显存/内存 不足 (Chinese), 記憶體不足, メモリ不足, 메모리 부족.

Each family is its own regex behind literal needles (``str.__contains__`` runs in C), so a line
pays only for the families whose words it contains; every quantifier is bounded (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.parse_wordings_codes import code_match
from oomkit.diagnose.parse_wordings_damage import damage_match
from oomkit.diagnose.parse_wordings_exits import exit_match
from oomkit.diagnose.parse_wordings_kills import kill_match
from oomkit.diagnose.parse_wordings_korean import negated_after
from oomkit.diagnose.parse_wordings_plain import plain_match
from oomkit.diagnose.parse_wordings_prose import prose_match
from oomkit.diagnose.parse_wordings_report import hypothetical, report_match
from oomkit.diagnose.parse_wordings_strain import strain_match
from oomkit.diagnose.parse_wordings_titles import title_match
from oomkit.diagnose.text import FamilyIndex, needles_gate

__all__ = ["PROSE_HEAD", "PROSE_TAIL", "harvested_match"]

_I = re.IGNORECASE

# (needles, regex): the regex runs only on a line whose lower-case text holds a needle
_FAMILIES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("could", "cannot", "can't", "fail"),
        re.compile(
            r"(?:could ?n[o']t|cannot|can't|fail(?:ed)? to) (?:[A-Za-z]{1,12} ){0,2}"
            r"(?:[cm]?alloc|allocate|reserve)\b"
            r"(?=.{0,80}?(?:\d ?(?:[KMGT]i?B|bytes|B)\b|memory|buffer))",
            _I,
        ),
    ),
    (
        ("malloc", "allocate"),
        re.compile(
            r"\b\w{0,30}(?:[Mm]alloc|Allocate)\w{0,30}(?:\([^)]{0,80}\))? (?:failed|fail|error)\b|"
            r"malloc\w{0,20}(?: \w{1,20}){0,3} failed",
            _I,
        ),
    ),
    (
        ("alloc",),
        re.compile(
            r"alloc(?:ation)?[_ ]?fail|memory object allocation|MEMORY_ALLOCATION|"
            r"can't allocate region|memory allocation of \d{1,20} bytes failed|\bbad allocation\b",
            _I,
        ),
    ),
    (
        ("memory", "ram"),
        re.compile(
            r"memory (?:is ?n[o']t|is not|not) enough|"
            r"not enough (?:\w{1,12} ){1,3}memory\b(?! info| bandwidth)|NotEnough\w{0,10}Memory|"
            r"(?:in|un)sufficient_?memory|memory (?:is|was) (?:insufficient|exhausted)\b|"
            r"memory_error|"
            r"r[au]n(?:ning)? out of (?:[a-z]{1,12} ){1,2}(?:memory|ram|vram)\b|"
            r"(?:using|used) all (?:the )?available (?:ram|memory|vram)\b|"
            r"too (?:large|big) for (?:the )?(?:available |free )?(?:gpu |device |system )?"
            r"(?:memory|vram|ram)\b|"
            r"exceed(?:s|ed|ing)? (?:[a-z]{1,10} ){0,2}memory limit|"
            r"exceed(?:s|ed)? (?:the |its )?(?:allowed |internal |available |device |system |"
            r"unified )?memory\b(?! (?:bandwidth|clock|speed|frequency|controller|bus)\b)|"
            r"low on (?:resource: )?memory|"
            r"beyond (?:the )?'?(?:physical|virtual)'? memory limit|"
            r"at the bottom of memory\. That was not possible",
            _I,
        ),
    ),
    (
        ("fit ",),
        re.compile(
            r"(?:does ?n[o']t|do ?n[o']t|won't|will not|can ?not|could ?n[o']t) fit (?:in|into|on)"
            r"(?: the)? (?:available )?(?:gpu|device|vram|memory)\b",
            _I,
        ),
    ),
    (
        (
            "nomem",
            "resources",
            "paging file",
            "storage is",
            "job killed",
            "exitcode",
            "9/kill",
            "zsh: killed",
            "dst tensor",
        ),
        re.compile(
            r"(?:\bE|_)NOMEM\b|OUT_OF_RESOURCES|out of (?:gpu |device )?resources\b|"
            r"paging file is too small|not enough storage is available|job killed: v?mem\b|"
            r"exitcode\s{0,4}: -9\b|status=9/KILL\b|\bzsh: killed\b|Dst tensor is not initialized",
            _I,
        ),
    ),
    # how users word an OOM in prose and titles (issue 9: heldout10 was mostly titles): "leads
    # to memory overflow" (the usual rendering of 显存溢出 / 内存溢出), "the memory will be used
    # up", "killed by the OS", Xcode's "Terminated due to memory issue", "tried to allocate
    # >192 GB"; not "stack/buffer/integer overflow" and not a memory "usage"
    # "memory overflow" alone also names a memory-safety bug ("a memory overflow in the parser
    # was fixed"): only the GPU's memory, a consequence ("leads to", "got") or a failure noun
    # after it make it the OOM
    (
        ("overflow",),
        re.compile(
            r"\b(?:gpu|cuda|video|device|vram) memory overflow|\bvram overflow|"
            r"\b(?:leads?|led|leading|causes?|caused|causing|results?|resulted|due|because|"
            r"gets?|got|getting|hit|hits|hitting|occurs?|occurred|encounter(?:s|ed)?|"
            r"reports?|reported)(?: to| in| of)? (?:a |an |the )?memory overflow(?:s|ed)?\b|"
            r"\bmemory overflow(?:s|ed)? (?:error|issue|problem|crash|when|while|during|after)\b|"
            r"^\s{0,8}memory overflow\s{0,8}$",
            _I | re.M,
        ),
    ),
    (
        ("used up",),
        re.compile(
            r"\b(?:memory|vram|ram) (?:is |was |will be |gets |got |has been |being |are |were )?"
            r"(?:all |completely |quickly )?used up\b|"
            r"\bused up (?:all )?(?:of )?(?:the |my )?(?:available )?(?:[a-z]{1,12} )?"
            r"(?:memory|vram|ram)\b",
            _I,
        ),
    ),
    (
        ("killed", "terminated"),
        re.compile(
            r"\b(?:killed|terminated) (?:by the (?:os|operating system|kernel|oom[ -]?killer)\b|"
            r"(?:due to|because of|for) (?:the |a )?(?:low memory|memory pressure|memory issue|"
            r"(?:insufficient|excessive|high) memory|lack of memory|out of memory|oom)\b)",
            _I,
        ),
    ),
    (
        ("to allocate",),
        re.compile(
            r"\b(?:tried|trying|tries|attempted|attempting|attempts) to allocate "
            r"(?:more than |over |about |around |~ ?|> ?|>= ?|≈ ?){0,2}\d{1,9}(?:[.,]\d{1,4})? ?"
            r"(?:[KMGT]i?B|[KMGT]\b|bytes\b|B\b)",
            _I,
        ),
    ),
    (
        # candle's Metal backend (huggingface/candle:candle-metal-kernels/src/err.rs
        # FailedToCreateResource): MTLDevice newBuffer returned nil
        ("metal resource",),
        re.compile(r"Failed to create metal resource: Buffer\b", _I),
    ),
    (
        ("vram",),
        re.compile(r"\bvram (?:is ?n[o']t|is not|not) enough\b", _I),
    ),
    (
        # a card's size that cannot run / start / load the model: "16G显存无法启动"
        ("显存", "顯存"),
        re.compile(
            r"\d{1,4}(?:\.\d{1,2})? ?[GgMm][Bb]? ?的?(?:显存|顯存)(?:也|都)?"
            r"(?:无法|無法|不能|跑不|带不|帶不)"
        ),
    ),
    (
        ("显存", "内存", "顯存", "記憶體", "メモリ", "메모리"),
        re.compile(
            r"(?:显存|内存|顯存|記憶體)(?:不足|不够|不夠|溢出|耗尽)|爆显存|"
            r"メモリ(?:が)?不足|메모리 ?부족"
        ),
    ),
    (
        # "显存爆了" (the VRAM blew up), "VRAM不足" / "VRAMが足りない", "VRAM 부족"
        ("显存", "内存", "顯存", "vram"),
        re.compile(
            # not prevented or avoided: "为了防止显存炸" (to keep the VRAM from blowing up)
            r"(?<!防止)(?<!避免)(?<!以防)(?<!防)(?:显存|内存|顯存)(?:又|直接|就)?(?:爆|炸)(?!弹|彈)|"
            r"VRAM ?(?:が|은|이)?(?:不足|不够|足りな|足りま|부족)",
            _I,
        ),
    ),
    (
        # the same in English: "GPU RAM exploding on validation", "VRAM blows up" (a device's
        # memory as the subject: "memory will blow up" alone is a warning's prediction)
        ("explod", "blow", "blew"),
        re.compile(
            r"\b(?:gpu (?:ram|memory|mem)|vram|cuda memory|video memory)(?: usage| use)? "
            r"(?:explodes|exploding|exploded|blows up|blew up|blowing up)\b",
            _I,
        ),
    ),
)


# issue 9, heldout12: TF's allocator dump and a Windows HRESULT (OOM texts that name no
# memory), and how users word an OOM in prose (titles and sentences) beyond the phrases above
_FAMILIES_MORE: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        # TF's BFC allocator (tensorflow/core/common_runtime/bfc_allocator.cc, later
        # tensorflow/tsl/framework/bfc_allocator.cc DumpMemoryLog) prints its chunk summary only
        # when an allocation failed ("ran out of memory trying to allocate ... Current allocation
        # summary follows."); a paste often keeps the summary and loses the first line
        ("in-use chunks", "chunks of size"),
        re.compile(
            r"Summary of in-use Chunks by size|Sum Total of in-use chunks:|"
            r"\b\d{1,12} Chunks of size \d{1,20} totalling \d",
            _I,
        ),
    ),
    (
        # an HRESULT E_OUTOFMEMORY (winerror.h 0x8007000E) in a WIL failure line, the form
        # DirectML / ONNX Runtime's DML EP / D3D12 apps print (microsoft/wil:include/wil/
        # result_macros.h: "%hs(%d) tid(%x) %08X %ws"); the text after the code is localized
        ("8007000e",),
        re.compile(
            r"\btid\([0-9A-Fa-f]{1,8}\) 8007000E\b|"
            r"\b(?:hr|hresult|error|code|failed with)\s{0,2}[:=]?\s{0,2}0x8007000E\b",
            _I,
        ),
    ),
    (
        # the same WIL line with paste damage (docrec23, heldout20): the code cut by a space and
        # moved before the tid ("Exception(1) 800 7000E to enough memory resources tid(4790)"):
        # the HRESULT right after WIL's "Exception(%d)", one stray space allowed inside it
        ("exception(",),
        re.compile(
            r"\bException\(\d{1,4}\)\s{1,3}(?=[0-9A-Fa-f ]{8,9}\b)8 ?0 ?0 ?7 ?0 ?0 ?0 ?E\b", _I
        ),
    ),
    (
        # "out of my 64G ram", "until out of GPU memory", "an out-of-CPU-memory error": the
        # memory's owner or kind between "out of" and the memory word (bare "out of memory" is
        # parse_extra's); not "copy the tensor out of CPU memory" (no running out before it)
        ("out of", "out-of"),
        re.compile(
            r"\bout-of-(?:cpu|gpu|host|system|device|video|main)-(?:memory|ram)\b|"
            r"\b(?:until|till|went|go(?:es)?|going|gets?|getting|got|is|are|was|were|being|be)"
            r" (?:completely |almost |nearly |quickly )?out of (?:my |the |all |our )?"
            r"(?:\d{1,4}(?:\.\d{1,2})? ?(?:G|GB|GiB|M|MB|MiB|T|TB) )?"
            r"(?:cpu |gpu |system |host |main |physical |video |unified |device )?"
            r"(?:memory|ram|vram)\b",
            _I,
        ),
    ),
    (
        # issue 9, heldout21: the runtimes' own "Out of CPU memory" / "Out of system memory" as a
        # message, where the host's kind is named (VkResult strings, IronicallySerious/alimer:
        # third_party/vgpu/vgpu_vk.cpp VK_ERROR_OUT_OF_HOST_MEMORY -> "Out of CPU memory"; a KV
        # block manager's RuntimeError("Out of CPU memory")); "out of GPU/device memory" is
        # parse_extra's. Only at the start of a message or a title (after a line start, a
        # bracket, a colon or an error word): not "copy the tensor out of CPU memory"
        ("out of cpu", "out of system", "out of main", "out of physical", "out of shared"),
        re.compile(
            r"(?:^\s{0,8}|[\[\](){}<>:;|\"'`*#=-]\s{0,4}|\b(?:error|exception|fatal|failed|failure|"
            r"oom)\b\W{0,4})out of (?:cpu|system|main|physical|shared) (?:memory|ram)\b",
            _I | re.M,
        ),
    ),
    (
        # the Vulkan spec's text for its two allocation failures, as VkResult-to-string helpers
        # print it (KhronosGroup/Vulkan-Docs:chapters/fundamentals.adoc, Return Codes:
        # VK_ERROR_OUT_OF_HOST_MEMORY "A host memory allocation has failed.",
        # VK_ERROR_OUT_OF_DEVICE_MEMORY "A device memory allocation has failed."; e.g.
        # relgukxilef/hello-emscripten:source/utility/vulkan_resource.cpp vulkan_error::what)
        ("allocation has failed",),
        re.compile(
            r"(?<!\bno )(?<!\bif )(?<!whether )(?<!\bno a )(?<!\bif a )(?<!whether a )"
            r"(?<!\bif the )(?<!whether the )\b(?:host|device) memory allocation has failed\b",
            _I,
        ),
    ),
    (
        # exhaustion verbs with all of a memory as the object: "fills up the memory and gets
        # killed", "consumes all RAM", "eats up all the VRAM", "until all memory is reserved";
        # not "fill the buffer", "consumes less memory", "takes all GPU memory" (a runtime's
        # preallocation, e.g. TF or vLLM by design)
        ("fill", "consum", "eat", "ate ", "exhaust", "until"),
        re.compile(
            r"\b(?:fill(?:s|ed|ing)?|eat(?:s|ing)?|ate) up (?:all )?(?:of )?(?:the |my |our )?"
            r"(?:available |entire |whole )?(?:\w{1,12} )?(?:memory|ram|vram)\b|"
            r"\b(?:consum(?:es?|ed|ing)|eat(?:s|ing)?|ate|exhaust(?:s|ed|ing)?) (?:up )?all"
            r" (?:of )?(?:the |my |our )?(?:available )?(?:\w{1,12} )?(?:memory|ram|vram)\b|"
            r"\buntil (?:all )?(?:of )?(?:the |my )?(?:\w{1,12} )?(?:memory|ram|vram) "
            r"(?:is|was|gets|got|has been) (?:all )?(?:reserved|used|consumed|exhausted|full|"
            r"taken|gone)\b",
            _I,
        ),
    ),
    (
        # "a compute buffer that can't be allocated in the free VRAM", "cannot be allocated
        # on the GPU (not enough memory)"; not "cannot be allocated on a meta device"
        ("be allocated",),
        re.compile(
            r"(?:can ?not|can't|could ?n[o']t|cannot) be allocated\b"
            r"(?=.{0,80}?(?:vram|free|headroom|enough|left\b|\d ?[KMGT]i?B\b))",
            _I,
        ),
    ),
    (
        # a memory full, maxed out, exhausted or over its limit, in titles: "GPU memory full
        # when loading", "VRAM runs full", "RAM maxed out", "VRAM exhaustion", "hits the memory
        # limit", "exceeds VRAM"; not "full precision", "full of zeros", "does not exceed VRAM"
        ("full", "maxed", "max out", "maxes out", "exhaust", "limit", "exceed"),
        re.compile(
            r"\b(?:memory|ram|vram)(?: is| was| gets| got| becomes| became| runs?| ran| goes| went|"
            r" being)?(?: completely| totally| almost| already)? full\b(?!-)(?!\s?(?:of|precision|"
            r"model|size|speed|offload|load|fine|power|rank|weights?)\b)|"
            r"\b(?:memory|ram|vram) (?:is |was |gets |got )?maxed out\b|"
            r"\bmax(?:es|ed|ing)? out (?:my |the |all )?(?:\w{1,12} )?(?:memory|ram|vram)\b|"
            r"\b(?:memory|ram|vram) exhaustion\b|"
            r"\b(?:ram|vram) (?:is |was |gets |got |being )?exhausted\b|"
            r"\bexhaust(?:s|ed|ing)? (?:the |all )?(?:\w{1,12} )?(?:ram|vram)\b|"
            r"\b(?:memory|ram|vram) limit (?:was |is )?(?:reached|exceeded|hit)\b|"
            r"\bhit(?:s|ting)? (?:the |my |its |a )?(?:\w{1,12} )?(?:memory|ram|vram) limit\b|"
            r"\b(?:memory|ram|vram) (?:usage )?exceeded\b|"
            r"(?<!not )(?<!n't )(?<!never )\bexceed(?:s|ed|ing)? (?:the |my |its )?(?:available |"
            r"free |gpu |total )?(?:vram|ram)\b",
            _I,
        ),
    ),
    (
        # running low, nothing left, more than there is: "crashes due to low memory", "running
        # low on VRAM", "no VRAM left", "requires more VRAM than available"
        ("low", "left", "more vram", "more ram", "more gpu"),
        re.compile(
            r"\b(?:crash\w{0,4}|fail\w{0,4}|killed|dies|died|freez\w{0,3}|froze) (?:due to|"
            r"because of|from|with|on) (?:the |a )?low (?:gpu |system |video |host )?"
            r"(?:memory|vram|ram)\b|"
            r"\b(?:running|runs?|ran) low on (?:gpu |system |video |host )?(?:memory|vram|ram)\b|"
            r"\bno (?:free |available )?(?:vram|ram|gpu ram|video memory) left\b|"
            r"\bmore (?:gpu |video )?(?:vram|ram|gpu memory) than (?:is )?(?:available|"
            r"there is|i have|my|the|it has)\b",
            _I,
        ),
    ),
    (
        # a model or card named against the GPU: "model too big for my GPU", "doesn't fit on a
        # 24GB GPU" (the fit family above names only memory words)
        ("too big", "too large", "fit "),
        re.compile(
            r"\btoo (?:large|big) (?:to fit )?(?:for|on|in|into) (?:my |the |a |an |this |your |"
            r"one |single |a single )?(?:\d{1,4} ?G[Bi]?B? )?"
            # the card's model before the noun: "too large to fit in one 1080ti card"
            r"(?:(?:rtx ?|gtx ?|rx ?)?\d{3,4}(?: ?ti| ?super| ?xt)?s? |[ahlvt]\d{2,3}s? )?"
            r"(?:gpu|card|graphics card|vram)\b|"
            r"(?:does ?n[o']t|do ?n[o']t|won't|will not|can ?not|could ?n[o']t) fit (?:in|into|on)"
            r" (?:my |a |one |single |a single |two |2 ?x ?)(?:\d{1,4} ?G[Bi]?B? )?"
            r"(?:\w{1,12} )?(?:gpus?|cards?|vram)\b",
            _I,
        ),
    ),
    (
        # a device's per-buffer limit in prose: "exceeded device buffer limits (1.94GB)", "exceeds
        # the OpenCL max buffer size limit"; not a log's or a socket's buffer
        ("buffer",),
        re.compile(
            r"\bexceed(?:s|ed|ing)? (?:the )?(?:device|gpu|opencl|vulkan|metal|cuda|max(?:imum)?|"
            r"allocation)(?: \w{1,12})? buffer (?:size )?limits?\b",
            _I,
        ),
    ),
    (
        # the Chinese-English "memory out" (显存溢出 word for word): "CUDA memory out", a line
        # that ends "memory out of"; not "read the memory out of order" or "out of the device"
        ("memory out",),
        re.compile(
            r"\b(?:gpu|cuda|video|device|vram) memory out\b"
            r"(?! of (?:the|a|an|order|bounds|range|sync|place|date)\b)|"
            r"\bmemory out(?: of)?\s{0,4}[.!。]?\s{0,4}$",
            _I,
        ),
    ),
)

# issue 9, heldout13: how users word the two OOMs whose message they did not paste. (1) Memory
# that grew until it ran out, i.e. the leak they report ("memory usage keeps growing", "cuda
# memory increased with the iteration", "after every epoch the memory increase ... until run
# out", "VRAM increases to 39.9GB (maxed out)", "more and more gpu memory", "Memory leak with
# cifar10"): growth alone ("memory usage increases with batch size", a scaling statement) is not
# an OOM, so a verb of growth counts only where it persists ("keeps") or ends in exhaustion or
# repeats per step; "no memory leak" and "fixed a memory leak" do not fire. (2) The kernel's OOM
# killer in prose: the shell prints "Killed" for SIGKILL (the OOM killer's signal,
# mm/oom_kill.c), so "the training process is being killed", "ends with Killed error"; not
# "killed by signal: Segmentation fault" (a crash) or a process killed by the user.
_FAMILIES_GROWTH: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("leak",),
        re.compile(
            r"(?<!\bno )(?<!not a )(?<!fix )(?<!fixes )(?<!fixed )(?<!fix a )(?<!fixes a )"
            r"(?<!fixed a )(?<!without )(?<!without a )(?<!indicate a )(?<!indicates a )"
            # "Memory (CPU and GPU) leaks during the 1st epoch": a parenthetical after the noun
            r"\b(?:(?:gpu|cuda|vram|video|device|host|system) )?memory(?: \([\w ,/&+-]{1,30}\))?"
            r" (?:is |was )?leak(?:s|ing|ed|age)?\b",
            _I,
        ),
    ),
    (
        ("grow", "grew", "increas", "rise", "rising", "climb", "more and more"),
        re.compile(
            r"\b(?:memory|vram|ram)(?: usage| use| consumption| footprint)?"
            # (docrec27) "will continue to rise until": "continue to" persists as "keeps" does
            r"(?: keeps?(?: on)?| kept| (?:will |would )?continu(?:es|ed|e) to)?"
            r" (?:grows?|grew|growing|increas(?:es|ed|ing|e)|ris(?:es|e)|rose|"
            r"rising|climbs?|climbing)\b"
            r"(?=.{0,80}?(?:\buntil\b|\bmaxed\b|\bcrash|\boom\b|out of memory|\bkilled\b|"
            r"\bdie[sd]?\b|"
            r"\bduring (?:the )?(?:training|validation|evaluation|inference|generation)\b|"
            r"\bfull\b|\bwith (?:the )?(?:iterations?|steps?|epochs?)\b|"
            r"\bwith (?:each|every) (?:iteration|step|epoch|batch|run)\b|"
            r"\bafter (?:\w{1,8}\.? )?\d{1,7}(?:-\d{1,7})? (?:iterations?|steps?|epochs?|runs)\b|"
            r"\bper (?:iteration|step|epoch|batch|run)|\bafter (?:each|every)\b|"
            r"\b(?:and|&) (?:growing|increasing)\b))|"
            r"\bmore and more (?:gpu |cuda |video |host |system )?(?:memory|vram|ram)\b(?!-)",
            _I,
        ),
    ),
    (
        # a memory stated too small for the job or a job that takes too much of it: "40GB is
        # not enough for llama-2-7b", "uses too much gpu memory"; not "uses less memory", "does
        # not use too much memory", nor "requires a lot of memory" (a model card's statement)
        ("not enough", "too much", "to much", "excessive"),
        re.compile(
            r"\b\d{1,4}(?:\.\d{1,2})? ?(?:G|GB|GiB|M|MB|MiB)(?: of (?:gpu |video )?(?:memory|"
            r"vram|ram))?"
            # "4 gpus with 20GB per gpu are not enough", "24GB is still not enough"
            r"(?: (?:per|on each|for each|of each|each) (?:gpu|card|device|node|rank))?"
            r" (?:is|are|was|were) (?:still |also |just |simply )?not enough\b|"
            r"(?<!n't )(?<!not )(?<!never )\b(?:uses?|using|used|takes?|taking|took|consumes?|"
            r"consuming|consumed|requires?|requiring|required|needs?|needing|allocates?|"
            r"allocating) (?:way |far |much )?(?:too? much|excessive) "
            r"(?:gpu |cuda |video |system |host |cpu )?(?:memory|vram|ram)\b",
            _I,
        ),
    ),
    (
        ("killed",),
        re.compile(
            r"\b(?:process|training|job|program|script|python|run|trainer|worker|container|"
            r"it|build)(?: \w{1,12}){0,2}? (?:is|gets?|got|being|be|been)"
            r"(?: \w{1,12})? killed\b"
            r"(?! by (?:signal:? (?!killed|9\b|sigkill)|the user|me\b|ctrl|keyboard|hand))|"
            r"\b(?:always|often|sometimes|eventually|keeps? getting|kept getting) "
            r"(?:be |is |gets? |got )?"
            r"killed\b(?! by (?:signal|the user|me\b|ctrl|keyboard|hand))|"
            r"\b(?:ends?|ended|ending|exits?|exited|fails?|failed|stops?|stopped) with "
            r"(?:a |the |an )?"
            r"[\"'`]?killed\b",
            _I,
        ),
    ),
)


# issue 9: "not enough memory" in the languages users write titles in (beyond the CJK families
# above), each with its own guard: German "Speicher" is also disk storage ("Speicherplatz"), a
# Spanish/Portuguese model "sin/sem memória" is memoryless, so only the failure forms count
_FAMILIES_I18N: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        # Spanish, Portuguese, Italian, French
        ("memori", "memóri", "mémoire", "memoire"),
        re.compile(
            r"\bmem[oó]ria (?:insuficiente|insufficiente|esaurita|agotada|esgotada|llena|cheia)\b|"
            r"\bno hay (?:suficiente )?memoria\b(?! de sobra)|"
            r"\b(?:qued\w{0,6}|fic\w{0,5}|acab\w{0,5}|rimast\w{0,3}) (?:sin|sem|senza) "
            r"mem[oó]ria\b|"
            r"\bfalta de mem[oó]ria\b|"
            r"\bm[ée]moire (?:insuffisante|satur[ée]e|pleine|[ée]puis[ée]e)\b|"
            r"\b(?:manque|[àa] court|pas assez) de m[ée]moire\b",
            _I,
        ),
    ),
    (
        # German (not "Speicherplatz", disk space)
        ("speicher",),
        re.compile(
            r"\b(?:nicht (?:gen[üu]gend|genug)|zu wenig) (?:Arbeits|Grafik|GPU-?|Video|Haupt)?"
            r"speicher(?:ressourcen)?\b|"
            r"\b(?:Arbeits|Grafik|GPU-?|Video)speicher (?:ist |war )?(?:voll|ersch[öo]pft|"
            r"reicht nicht|zu klein|l[äa]uft voll)\b",
            _I,
        ),
    ),
    (
        # Russian
        ("памят",),
        re.compile(
            r"(?:недостаточно|не хватает|не хватило|нехватка|нехватки) (?:\w{1,12} )?"
            r"(?:видео)?памяти|"
            r"памяти (?:недостаточно|не хватает|не хватило)|"
            r"(?:закончилась|кончилась|исчерпана) (?:\w{1,12} )?память|"
            r"память (?:закончилась|кончилась|исчерпана|переполнена)",
            _I,
        ),
    ),
    (
        # Turkish, Vietnamese, Indonesian
        ("bellek", "hafıza", "bộ nhớ", "memori", "ram"),
        re.compile(
            # (docrec28) "tükendi": glibc tr "Memory exhausted" "Bellek tükendi"
            r"\b(?:bellek|hafıza) (?:yetersiz|doldu|yetmiyor|tükendi)|"
            r"\byetersiz (?:bellek|hafıza)\b|"
            r"(?:hết|không đủ|thiếu) (?:bộ nhớ|ram\b|vram\b)|"
            r"\bkehabisan (?:memori|ram|vram)\b|\bmemori (?:tidak cukup|habis|penuh)\b",
            _I,
        ),
    ),
    (
        # Chinese "VRAM fully taken / not enough to use", traditional 內存; Japanese メモリー /
        # が足りない; Korean with its subject particle (메모리가 부족)
        ("显存", "内存", "顯存", "內存", "メモリ", "메모리", "램"),
        re.compile(
            r"(?:显存|内存|顯存|內存)(?:被|已|都|又)?(?:占满|佔滿|满了|滿了|吃满|吃滿|跑满|"
            r"不够用|不夠用|爆满|不足|不夠|不够)|"
            r"メモリー?(?:が|の)?(?:不足|足りな|足りま|枯渇)|"
            r"(?:메모리|램)(?:가|이)? ?(?:부족|초과)"
        ),
    ),
)


def harvested_match(line: str, low: str, *, prose: bool = True) -> re.Match[str] | None:
    """The first harvested OOM wording in ``line`` (``low`` is ``line.lower()``), else ``None``.
    ``prose=False`` reads only the runtimes' own wordings, paste damage and runtime codes: the
    grammars of how a person words an OOM (titles, prose, plain wordings, a report) are skipped
    (the middle of a long machine log, see :data:`PROSE_HEAD`)."""
    # a runtime's own death line (parse_wordings_exits): Ollama's "no longer running: -1" reads
    # like a change that ended a failure to hypothetical(), so it is returned before that veto
    m = _own_match(line, low)
    if m is None and (own := exit_match(line, low, prose=False)) is not None:
        return own
    if not prose:
        m = m or damage_match(line, low) or code_match(line, low)
        return None if m is not None and hypothetical(line) else m
    # how users word an OOM in titles and prose, and a few runtimes' own (parse_wordings_titles,
    # then parse_wordings_prose), then runtimes' wordings and paste damage found later
    # (parse_wordings_damage), last the grammar of a report in prose (parse_wordings_report)
    m = m or title_match(line, low) or prose_match(line, low) or damage_match(line, low)
    # a process the kernel killed, as posters quote the shell's "Killed" (parse_wordings_kills)
    m = m or kill_match(line, low)
    # plain "it did not fit" wordings without an OOM keyword (parse_wordings_plain)
    m = m or plain_match(line, low)
    # runtime codes of a failed allocation (parse_wordings_codes), then serving threads' wordings
    # of a memory that ran short (parse_wordings_strain)
    m = m or code_match(line, low) or strain_match(line, low)
    # verdicts without the usual words: RAM named short, more RAM ended it (parse_wordings_exits)
    m = m or exit_match(line, low)
    if m is not None and hypothetical(line):
        # the wording inside advice, a release note or a yes-no question reports nothing
        return None
    m = m or report_match(line, low)
    # (docpost19) a Korean predicate negated after it: 메모리가 부족하지 않습니다
    return None if m is not None and negated_after(line, m) else m


#: a person's words (a title, a question, a report) sit at the head or the tail of what they
#: paste; in the middle of a long machine log (a training run's 10,000 step lines) the generic
#: fallback reads only the runtimes' own wordings, so a 100 MB log with no OOM stays within the
#: doctor's time budget (benchmarks/bench_doctor.py "training log, no OOM")
PROSE_HEAD = 500
PROSE_TAIL = 2000

_OWN = _FAMILIES + _FAMILIES_MORE + _FAMILIES_GROWTH + _FAMILIES_I18N
#: any needle of any family: a line holding none tries no family (one C-speed search, where the
#: per-family any() costs ~40 us a line on a long log with no OOM in it)
_OWN_GATE = needles_gate(_OWN)
#: the families whose needles a line holds, in one findall (text.FamilyIndex): a line of a CJK
#: log holding "显存" passes the gate and tried ~130 any() before (docperf17: 75 us a line)
_OWN_INDEX = FamilyIndex([needles for needles, _ in _OWN])


def _own_match(line: str, low: str) -> re.Match[str] | None:
    if _OWN_GATE.search(low) is None:
        return None
    for i in _OWN_INDEX.present(low):
        m = _OWN[i][1].search(line)
        if m is not None:
            return m
    return None

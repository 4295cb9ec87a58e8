"""Families outside the main runtimes' parsers, and the generic fallback (issue 9).

* FlashInfer workspace: ``Buffer overflow when allocating memory for batch_prefill_tmp_v with size
  N and alignment A, but only M bytes available in AlignedAllocator`` and the older ``Failed to
  allocate memory for X with size N and alignment A in AlignedAllocator``
  (``flashinfer/include/flashinfer/allocator.h``): the fixed attention workspace (SGLang
  ``SGLANG_FLASHINFER_WORKSPACE_SIZE``) is too small for the batch's tokens.
* transformers / bitsandbytes dispatch: ``Some modules are dispatched on the CPU or the disk. Make
  sure you have enough GPU RAM to fit the quantized model`` (``quantizer_bnb_4bit.py``): the
  device map put weights off the GPU because they do not fit.
* SGLang memory pool (``model_runner.py`` / ``mem_cache/pool_configurator.py``): ``Load weight
  end. ... avail mem=X GB, mem usage=Y GB`` (GiB), ``max_total_tokens=N is larger than the
  profiled value P`` (P <= 0: no KV pool at all), ``Prefill out of memory. Try to lower your batch
  size. Try to allocate N tokens.`` and ``Decode out of memory`` (KV pool exhausted at run time).
* Vulkan through TVM/MLC and other hosts: ``VK_ERROR_OUT_OF_DEVICE_MEMORY``.
* :func:`parse_generic`: any line with an out-of-memory keyword that no parser recognised becomes
  a ``generic`` event with the numbers it states (a request size after "allocate"), so an obvious
  OOM is never reported as "nothing found".
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.parse_need_question import need_question
from oomkit.diagnose.parse_wordings import PROSE_HEAD, PROSE_TAIL, harvested_match
from oomkit.diagnose.parse_wordings_kills import not_memory_reason
from oomkit.diagnose.parse_wordings_plain import plain_sizes
from oomkit.diagnose.parse_wordings_report import advice_to_reader
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.scan_middle import generic_lines
from oomkit.diagnose.sizes import absurd_tactic_request, to_bytes, to_int
from oomkit.diagnose.text import Lines, needles_re, size_of, sz, window

__all__ = ["parse_extra", "parse_generic"]

_FI_OVERFLOW = re.compile(
    r"allocating memory for (?P<name>\w{1,80}) with size (?P<n>\d{1,20}) and alignment "
    r"\d{1,6}, but only (?P<avail>\d{1,20}) bytes available in AlignedAllocator"
)
_FI_FAIL = re.compile(
    r"Failed to allocate memory for (?P<name>\w{1,80}) with size (?P<n>\d{1,20}) and alignment "
    r"\d{1,6} in AlignedAllocator"
)
# cut or re-worded pastes: "only 0 bytes available in AlignedAllocator", "Out of workspace memory
# in AlignedAlloactor" (sic, an older FlashInfer spelling)
_FI_LOOSE = re.compile(
    r"(?:only (?P<avail>\d{1,20}) bytes available in|workspace memory in) AlignedAllo\w{0,6}"
)
_SGL_LOAD = re.compile(
    r"Load weight end\..{0,200}?avail mem=(?P<avail>\d{1,7}(?:\.\d{1,4})?) ?GB, "
    r"mem usage=(?P<used>\d{1,7}(?:\.\d{1,4})?) ?GB"
)
_SGL_PROFILED = re.compile(
    r"max_total_tokens=(?P<want>\d{1,12}) is larger than the profiled value (?P<got>-?\d{1,12})"
)
_PHASES = ("Prefill", "Decode")  # the words _SGL_PREFILL needs (clean() makes none up)
_PHASE_IN = needles_re(_PHASES).search  # one search of the three lines joined (no newline in one)
_SGL_PREFILL = re.compile(
    r"(?P<phase>Prefill|Decode) out of memory(?:.{0,120}?Try to allocate (?P<tok>\d{1,12}) tokens)?"
)
# pool_configurator.py (2025-26): "Loaded weights leave no GPU memory for the KV cache under
# --mem-fraction-static=0.88"
_SGL_NO_KV = re.compile(
    r"leave no GPU memory for the KV cache(?: under --mem-fraction-static=(?P<mfs>\d?\.\d{1,4}|1))?"
)
# ggml-metal: "allocated buffer, size = X MiB, ( A / B)" then "current allocated size is greater
# than the recommended max working set size" (A, B in MB = MiB: size / 1024.0 / 1024.0)
_METAL_WS = re.compile(
    r"size = {0,8}(?P<req>\d{1,9}(?:\.\d{1,4})?) MiB, \( {0,8}(?P<a>\d{1,9}(?:\.\d{1,4})?) / "
    r"{0,8}(?P<t>\d{1,9}(?:\.\d{1,4})?)\)"
)
# XLA's autotuner (xla/service/gpu/conv_algorithm_picker.cc, PickBestAlgorithm): "Failed to
# determine best cudnn convolution algorithm for: <hlo> Original error: ..."; TensorFlow's
# conv kernels (tensorflow/core/kernels/conv_ops.cc): "Failed to get convolution algorithm. This
# is probably because cuDNN failed to initialize" -- no algorithm's workspace could be had
_CUDNN = re.compile(
    r"Failed to determine best cudnn convolution algorithm|"
    r"Failed to get convolution algorithm\. This is probably because cuDNN failed to initiali|"
    r"Unable to find a valid cuDNN algorithm|cuDNN isn't found \w{2,8} algo|"
    r"CUDNN_STATUS_EXECUTION_FAILED|"
    r"CUDNN_STATUS_INTERNAL_ERROR|CUDNN_STATUS_NOT_INITIALIZED"
)
# MLC-LLM (cpp/serve/config.cc): "Insufficient GPU memory error: The available single GPU memory
# is A MB, which is less than the sum of model weight size (W MB) and temporary buffer size (T MB)"
_MLC = re.compile(
    r"available single GPU memory is (?P<a>\d{1,9}(?:\.\d{1,4})?) MB, which is less than the sum "
    r"of model weight size \((?P<w>\d{1,9}(?:\.\d{1,4})?) MB\) and temporary buffer size "
    r"\((?P<t>\d{1,9}(?:\.\d{1,4})?) MB\)"
)
# XLA:TPU compile-time: "Ran out of memory in memory space hbm. Used 63.80G of 30.75G hbm."
_HBM = re.compile(
    r"Ran out of memory in memory space (?P<space>\w{1,20})\. Used (?P<u>\d{1,9}(?:\.\d{1,4})?)"
    r"(?P<uu>[KMGT]) of (?P<t>\d{1,9}(?:\.\d{1,4})?)(?P<tu>[KMGT])"
)
_HLO_TEMP = re.compile(r"HLO temp\s{1,20}(?P<v>\d{1,9}(?:\.\d{1,4})?)(?P<u>[KMGT])")
# ggml-cuda without the "CUDA error 2 at" prefix, and the bare cudaMalloc message Ollama forwards
_GGML_BARE = re.compile(r"ggml-cuda\.cu:\d{1,6}: out of memory|^cudaMalloc failed: out of memory")
# exllamav2 model.py load_autosplit_gen; exllamav3 (loader placement) adds "in split"
_EXL2 = re.compile(r"Insufficient VRAM (?P<split>in split )?for model and cache")
# old ggml (2023): fixed context / scratch pools sized at model load
_GGML_POOL = re.compile(
    r"not enough space in the (?P<pool>context's|scratch) memory pool \(needed (?P<n>\d{1,20}), "
    r"available (?P<a>\d{1,20})\)"
)
# TensorRT-LLM TLLM_CHECK_WITH_INFO in the batch manager: "maxTokensInPagedKvCache (%d) must be
# large enough to process at least 1 sequence to completion (i.e. must be larger than
# beam_width (%d) * tokensPerBlock (%d) * maxBlocksPerSeq (%d))"; older releases print no count
_TRT_KV = re.compile(r"maxTokensInPagedKvCache(?: \(\d{1,12}\))? must be large enough")
_SGL_MFS = re.compile(r"mem[_-]fraction[_-]static[= ](?P<v>0?\.\d{1,4}|1\.0{0,4})\b")
# SGLang's start-up ``server_args=ServerArgs(model_path='...', ..., tp_size=2, ...)`` line
# (python/sglang/srt/server_args.py dataclass repr): the model and TP size its pool was sized for
_SGL_ARGS_MODEL = re.compile(r"\bmodel_path='(?P<v>[^'\s]{1,200})'")
_SGL_ARGS_TP = re.compile(r"[(, ]tp_size=(?P<v>\d{1,3})\b")
_SGL_ARGS_CTX = re.compile(r"[(, ]context_length=(?P<v>\d{1,9})\b")  # None: the model's own
_NEEDLES = (
    "AlignedAllo",
    "leave no GPU memory for the KV cache",
    "recommended max working set size",
    "cuDNN algorithm",
    "best cudnn convolution",
    "get convolution algorithm",
    "cuDNN isn't found",
    "memory pool (needed",
    "maxTokensInPagedKvCache",
    "Error in memory profiling",
    "available single GPU memory",
    "Ran out of memory in memory space",
    "HLO temp",
    "ggml-cuda.cu:",
    "cudaMalloc failed",
    "Insufficient VRAM",
    "failed to find a memory slot",
    "failed to find free space in the KV cache",
    "failed to find KV cache slot",
    "llama_decode",
    "NoKvSlot",
    "could not find a KV slot",
    "prompt is too big compared to KV size",
    "CUDNN_STATUS_",
    "dispatched on the CPU or the disk",
    "fp32_cpu_offload=True",
    "Load weight end",
    "profiled value",
    "out of memory",
    "VK_ERROR_OUT_OF_DEVICE_MEMORY",
    "mem_fraction_static",
    "mem-fraction-static",
)
_PREFILTER = needles_re(_NEEDLES)

# Generic fallback: out-of-memory wording of any runtime (case-insensitive, literal alternation).
_GENERIC = re.compile(
    # (docrec27) 显存 comes out of translation as video, graphics or display memory (see
    # parse_wordings_report_shapes); "mem" is memory's short form in titles ("server outofmem",
    # "GPU out of mem when ..."; not "out of mem0", "out of mem-mapped storage")
    r"out[ _-]?of[ _-]?(?:the[ _-]?)?"
    r"(?:device[ _-]?|gpu[ _-]?|cuda[ _-]?|host[ _-]?|video[ _-]?|graphics[ _-]?|display[ _-]?|v)?"
    r"(?:memory|memoy|memroy|memmory|ram\b|mem(?![\w-]))|"
    # OOM, OOMs, OOMing, OOMed, OOM'd, OOMKilled (Kubernetes), OOM followed by CJK text
    # (not the kernel's oom_score_adj / cgroup v1 oom_control settings)
    # (nor the compound adjectives that say there is none: "OOM-free", "OOM-safe", "OOM-proof")
    r"(?<![A-Za-z0-9_])OOM(?:s|ing|ed|'d|[ _-]?kill(?:ed|er)?)?"
    r"(?![A-Za-z]|_score|_adj|_control|-(?:free|safe|proof)\b)|"
    r"exhaust(?:ed|ing|s)? (?:the |all )?(?:\w{1,12} ){0,2}memory|"
    r"(?:fail(?:ed|ing|s)?|faled|faild|failled|unable) to al{1,2}ocate|爆显存|炸显存|显存溢出|"
    # (a bare "memory pool" was an alternative until docrec23: it fired on docs such as CuPy's
    # "The memory pool holds allocated blocks ..." and recognised no development record alone)
    r"ran out of memory|not enough (?:free )?space in|"
    r"exceeds? (?:the )?(?:available |device |gpu )?memory"
    r"(?! (?:bandwidth|clock|speed|frequency|controller|bus)\b)|memory (?:limit|budget) exceeded|"
    r"no (?:free |available )?(?:gpu )?memory left|(?:more|enough) memory than|"
    r"Error in memory profiling|"
    r"(?:in|un)sufficient (?:gpu |device |system |host |video |graphics |display )?"
    r"(?:memory|vram|resources)|"
    # (docrec28) "enough" as non-native writers spell it ("enought", "enogh", "enaugh", "enouth"),
    # as "memory" is read with its usual typos above
    r"not en(?:ough|ought|ogh|augh|aught|outh|uogh) "
    r"(?:gpu |device |system |host |video |graphics |display )?(?:memory|vram|ram)\b|"
    # "No enough memory" is a runtime's own wording too: Spark's generated aggregation code
    # (HashAggregateExec: OutOfMemoryError("No enough memory for aggregation")), PlaidML's
    # scheduler ("No enough memory for the current schedule: required %1%, available %2%")
    r"\bno en(?:ough|ought|ogh|augh|aught|outh|uogh) "
    r"(?:gpu |device |system |host |video |graphics |display )?(?:memory|vram|ram)\b|"
    # (docrec28) "out of memory" with its "of" dropped, as non-native writers do, only after the
    # device or the verb it goes with ("CUDA out memory", "ran out memory", "为什么会out memory")
    # so "read out memory values" or "swap out memory pages" stay out
    r"(?:\b(?:cuda|gpu|vram|run|runs|ran|running)|[\u4e00-\u9fff])[ _-]?out memory\b"
    r"(?! (?:pages?|values?|contents?|regions?|maps?|layout)\b)|"
    r"can ?not allocate memory|memory allocation (?:failed|error)|failed to allocate|"
    r"unable to allocate|resource[ _]?exhausted|alloc(?:ation)?_failed|ERROR_OUT_OF|"
    r"\bMemoryError\b|std::bad_alloc|malloc(?:Async|Managed|Host)? failed|SIGKILL|"
    r"signal:? 9\b|signal:? killed",
    re.IGNORECASE,
)
# every _GENERIC alternative contains one of these (lower-case) literals
_GENERIC_KEYS = (
    "memory",
    "memoy",
    "memroy",
    "of mem",
    "of_mem",
    "of-mem",
    "ofmem",
    "oom",
    "显存",
    "alocate",
    "ram",
    "space in",
    "resources",
    "alloc",
    "exhausted",
    "error_out_of",
    "memoryerror",
    "bad_alloc",
    "sigkill",
    "signal",
)
_GENERIC_GATE = needles_re(_GENERIC_KEYS)
_PASSED_MEMO = 4096  # distinct lines parse_generic remembers having passed over
_GENERIC_NEGATIVE = (
    "not a failure",  # TF BFC warning: "The caller indicates that this is not a failure"
    "no out of memory",
    "without out of memory",
    # a failed allocation whose stated reason is not memory: cudaErrorInsufficientDriver's text,
    # Triton's pinned pool switched off (triton-inference-server/core pinned_memory_manager.cc)
    "driver version is insufficient",
    "no pinned memory pool",
    # gRPC's RESOURCE_EXHAUSTED (status 8) is also a cloud API's quota or rate limit (HTTP 429)
    # and a message above the channel's size limit: an LLM app's API call, not memory
    "quota exceeded",
    "exceeded quota",
    "check quota",
    "rate limit",
    "received message larger than max",
    # SGLang's healthy start (model_runner.py: "Memory pool end. avail mem=%.2f GB")
    "memory pool end",
    # ggml-backend's debug-build note before it reserves and retries the graph allocation
    "failed to allocate graph, reserving",
    # kubelet starting its OOM watcher (pkg/kubelet/oom): nothing was killed
    "oom watcher",
    # docpost30: llama.cpp's mlock warning (src/llama-mmap.cpp llama_mlock raw_lock): ENOMEM
    # from mlock(2) is the RLIMIT_MEMLOCK lock limit; parse_wordings_warnings reads it
    "failed to mlock",
)
# a status that says nothing was killed: cgroup memory.events / memory.oom_control counters
# (mm/memcontrol.c; a count above zero is parse_hosts' event), Docker's State.OOMKilled false
_GENERIC_ZERO = re.compile(
    r"^\s{0,8}(?:under_oom|oom(?:_kill|_group_kill|_kill_disable)?) {1,4}\d{1,12}\s{0,8}$|"
    r"OOMKilled\W{0,4}\s{0,4}[:=]\s{0,4}\W{0,2}false\b",
    re.IGNORECASE,
)
# TFLite's Java binding wraps every failed Interpreter::AllocateTensors() in "Cannot allocate memory
# for the interpreter: <the error reporter's text>" (tensorflow/lite/java/src/main/native/
# nativeinterpreterwrapper_jni.cc, earlier tensorflow/contrib/lite/java/...). AllocateTensors runs
# every op's Prepare before it plans the arena, so the text after the colon is often an op that
# rejected its shape or scale ("kernels/conv.cc:191 input->dims->size != 4 (0 != 4)", "Node 28
# failed to prepare"): the model's error, not memory (docrec19). contrib/lite's run() spells it "Can
# not allocate memory for the given inputs: %s" (docrec32: so the keyword reads "can ?not")
_TFLITE_PREPARE = re.compile(
    r"memory for the (?:interpreter|given inputs): .{0,200}?(?:kernels/\w{1,40}\.cc:\d|"
    r"failed to prepare|was not true)",
    re.IGNORECASE,
)
_REQ_UNITS = "bytes|KiB|MiB|GiB|TiB|KB|MB|GB|TB|B"
_REQUEST = re.compile(
    r"(?:allocat\w{0,6}|[cm]?alloc\b|[Rr]equest(?:ed)?|need(?:ed|s)?)(?: [A-Za-z_]{1,30}){0,4} "
    r"(?:of )?" + sz("req", _REQ_UNITS)
)
# MindSpore / Ascend: "alloc size: 1073741824B", "Request memory size: 2147483648B",
# "Malloc device memory failed, size[536870912]"
_REQUEST_RAW = re.compile(
    r"(?:[Aa]lloc|[Rr]equest|[Mm]alloc)\w{0,10}(?: [\w,]{1,20}){0,4} size(?: ?[:=\[]{1,2} ?| )"
    r"(?P<n>\d{1,15}) ?(?:B\b|bytes\b|\]|(?=['.,;)\s]|$))"
)
# macOS libmalloc prints the size a line above "*** error: can't allocate region"
# llama_decode's return 1 ("could not find a KV slot for the batch", include/llama.h) as the
# bindings and older llama.cpp print it: src/llama-context.cpp "llama_decode: failed to decode,
# ret = 1", llama-cpp-python (llama_cpp/llama.py) "llama_decode returned 1", LLamaSharp
# (LLama/Exceptions/RuntimeError.cs LLamaDecodeError, DecodeResult.NoKvSlot = 1) "llama_decode
# failed: 'NoKvSlot'"
_DECODE_1 = re.compile(
    r"failed to decode, ret = 1(?![\d.])|llama_decode returned 1(?![\d.])|'NoKvSlot'"
)
_MACH_SIZE = re.compile(r"mach_vm_map\(size=(?P<n>\d{1,20})")


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:800], **kw)


def _event(lines: Lines, i: int, line: str, facts: dict[str, Any]) -> OomEvent | None:
    n = lines.number[i]
    if "AlignedAllo" in line:
        w = window(lines, i - 1 if i else 0, max_lines=3)
        m = _FI_OVERFLOW.search(w)
        if m is not None:
            return _ev(
                "flashinfer",
                "workspace_overflow",
                "flashinfer_workspace",
                m.group(0),
                n,
                requested_bytes=to_int(m.group("n")),
                free_bytes=to_int(m.group("avail")),
                total_bytes=to_int(m.group("avail")),
                detail=m.group("name"),
                stage="compute",
            )
        m2 = _FI_FAIL.search(w)
        if m2 is not None:
            return _ev(
                "flashinfer",
                "workspace_overflow",
                "flashinfer_workspace",
                m2.group(0),
                n,
                requested_bytes=to_int(m2.group("n")),
                detail=m2.group("name"),
                stage="compute",
            )
        m2b = _FI_LOOSE.search(w)
        if m2b is not None:
            avail = m2b.group("avail")
            return _ev(
                "flashinfer",
                "workspace_overflow",
                "flashinfer_workspace",
                m2b.group(0),
                n,
                free_bytes=to_int(avail) if avail else None,
                detail="a workspace scratch tensor",
                stage="compute",
            )
    if "dispatched on the CPU or the disk" in line or "fp32_cpu_offload=True` and pass" in line:
        return _ev(
            "transformers", "dispatch_offload", "bnb_dispatch_cpu_disk", line, n, stage="weights"
        )
    if "Load weight end" in line:
        m3 = _SGL_LOAD.search(line)
        if m3 is not None:
            facts["weights_bytes"] = to_bytes(m3.group("used"), "GB", "sglang")
            facts["avail_after_weights_bytes"] = to_bytes(m3.group("avail"), "GB", "sglang")
        return None
    if "profiled value" in line:
        m4 = _SGL_PROFILED.search(line)
        if m4 is not None:
            got = int(m4.group("got"))
            return _ev(
                "sglang",
                "kv_pool_profiled",
                "sglang_profiled_tokens",
                line,
                n,
                kv_capacity_tokens=got,
                detail=f"max_total_tokens={m4.group('want')}, profiled {got}",
                stage="kv_cache",
            )
    if "out of memory" in line and _PHASE_IN("\n".join(lines.text[i : i + 3])) is not None:
        # (the window only where a phase word is: every line of a log can say out of memory)
        m5 = _SGL_PREFILL.search(window(lines, i, max_lines=3))
        if m5 is not None:
            tok = m5.group("tok")
            return _ev(
                "sglang",
                "kv_pool_full",
                "sglang_" + m5.group("phase").lower() + "_oom",
                line,
                n,
                prefill_tokens=int(tok) if tok else None,
                stage="runtime",
            )
    if "leave no GPU memory for the KV cache" in line:
        m7 = _SGL_NO_KV.search(line)
        mfs = m7.group("mfs") if m7 else None
        return _ev(
            "sglang",
            "no_kv_pool",
            "sglang_no_kv_memory",
            line,
            n,
            mem_fraction_static=float(mfs) if mfs else None,
            stage="kv_cache",
        )
    if "recommended max working set size" in line:
        m8 = _METAL_WS.search(line)
        return _ev(
            "llama.cpp",
            "working_set_exceeded",
            "metal_working_set",
            line,
            n,
            buffer_name="MTL0",
            requested_bytes=to_bytes(m8.group("req"), "MiB", "llama.cpp") if m8 else None,
            allocated_bytes=to_bytes(m8.group("a"), "MiB", "llama.cpp") if m8 else None,
            allowed_bytes=to_bytes(m8.group("t"), "MiB", "llama.cpp") if m8 else None,
        )
    if "cuDNN" in line or "CUDNN_STATUS_" in line or "best cudnn convolution" in line:
        m9 = _CUDNN.search(line)
        if m9 is not None:
            return _ev(
                "cudnn",
                "library_alloc_failed",
                "cudnn_workspace",
                line,
                n,
                detail=m9.group(0),
                stage="library_workspace",
            )
    if (
        "failed to find a memory slot" in line
        or "failed to find free space in the KV" in line
        or "failed to find KV cache slot" in line
        or "could not find a KV slot" in line
        or "prompt is too big compared to KV size" in line
        or _DECODE_1.search(line) is not None
    ):
        # llama.cpp llama_decode returns 1: no free KV cells for the batch (src/llama-context.cpp;
        # 2024 releases: "failed to find KV cache slot for ubatch of size N", koboldcpp prints it);
        # the server (tools/server/server.cpp, ik_llama.cpp) sends the client "Input prompt is
        # too big compared to KV size. Please try increasing KV size." when even n_batch 1 fails;
        # bindings print llama.h's own text for that return code: "could not find a KV slot for
        # the batch (try reducing the size of the batch or increase the context)" (llama.h
        # llama_decode; LLamaSharp, llama-cpp-python, node-llama-cpp)
        return _ev("llama.cpp", "kv_slots_full", "llama.cpp_kv_slot", line, n, stage="kv_full")
    if "available single GPU memory" in line:
        m10 = _MLC.search(line)
        if m10 is not None:
            mb = "MB"  # MLC divides by 1024 * 1024 (cpp/serve/config.cc) and labels it MB
            return _ev(
                "mlc-llm",
                "insufficient_gpu_memory",
                "mlc_insufficient_gpu_memory",
                line,
                n,
                free_bytes=to_bytes(m10.group("a"), mb, "sglang"),
                allocated_bytes=to_bytes(m10.group("w"), mb, "sglang"),
                requested_bytes=to_bytes(m10.group("t"), mb, "sglang"),
                stage="startup",
            )
    if "Ran out of memory in memory space" in line:
        m11 = _HBM.search(line)
        if m11 is not None:
            # (doccause15) SMEM, the TensorCore's scalar memory, is not the device's HBM
            smem = m11.group("space") == "smem"
            return _ev(
                "jax",
                "xla_smem" if smem else "xla_compile_oom",
                "xla_tpu_smem" if smem else "xla_tpu_hbm",
                line,
                n,
                requested_bytes=to_bytes(m11.group("u"), m11.group("uu") + "iB", "jax"),
                total_bytes=to_bytes(m11.group("t"), m11.group("tu") + "iB", "jax"),
                stage="compile",
            )
    if "HLO temp" in line:
        m12 = _HLO_TEMP.search(line)
        if m12 is not None:
            temp = to_bytes(m12.group("v"), m12.group("u") + "iB", "jax")
            facts["activation_peak_bytes"] = temp
        return None
    if (
        "out of memory" in line
        and ("ggml-cuda.cu:" in line or "cudaMalloc failed" in line)
        and "error" not in line.split("ggml-cuda.cu:")[0]
        and _GGML_BARE.search(line)
        and "current device" not in line
    ):
        return _ev("llama.cpp", "cuda_oom", "ggml_cuda_bare", line, n, stage=None)
    m_exl = _EXL2.search(line) if "Insufficient VRAM" in line else None
    if m_exl is not None:
        v3 = m_exl.group("split") is not None
        return _ev(
            "exllamav3" if v3 else "exllamav2",
            "insufficient_vram",
            "exllamav3_split" if v3 else "exllamav2_autosplit",
            line,
            n,
            stage="weights",
        )
    if "memory pool (needed" in line:
        m13 = _GGML_POOL.search(line)
        if m13 is not None:
            return _ev(
                "llama.cpp",
                "ggml_pool_exhausted",
                "ggml_memory_pool",
                line,
                n,
                requested_bytes=to_int(m13.group("n")),
                free_bytes=to_int(m13.group("a")),
                buffer_name=m13.group("pool").rstrip("'s"),
            )
    if "maxTokensInPagedKvCache" in line and _TRT_KV.search(line):
        # TensorRT-LLM: the paged KV pool holds less than one max-length sequence
        return _ev(
            "tensorrt-llm", "kv_capacity", "trtllm_paged_kv_too_small", line, n, stage="kv_cache"
        )
    if "Error in memory profiling" in line:
        # vLLM determine_num_available_blocks: free memory changed during profiling
        return _ev(
            "vllm", "profiling_error", "vllm_memory_profiling_assert", line, n, stage="startup"
        )
    if "VK_ERROR_OUT_OF_DEVICE_MEMORY" in line:
        return _ev("vulkan", "gpu_alloc_failed", "vulkan_out_of_device_memory", line, n)
    if "fraction" in line:
        m6 = _SGL_MFS.search(line)
        if m6 is not None:
            facts.setdefault("mem_fraction_static", float(m6.group("v")))
        if "ServerArgs(" in line:
            m7, m8 = _SGL_ARGS_MODEL.search(line), _SGL_ARGS_TP.search(line)
            if m7 is not None:
                facts.setdefault("model_name", m7.group("v"))
            if m8 is not None:
                facts.setdefault("tensor_parallel_size", int(m8.group("v")))
            m9 = _SGL_ARGS_CTX.search(line)
            if m9 is not None:
                facts.setdefault("max_model_len", int(m9.group("v")))
    return None


def parse_extra(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """Find FlashInfer, bitsandbytes-dispatch, SGLang pool and Vulkan/TVM failures.

    Returns:
        Events and context facts (``weights_bytes``, ``mem_fraction_static``). Never raises.
    """
    facts: dict[str, Any] = {}
    events = scan_events(lines, _PREFILTER, lambda ls, i: _event(ls, i, ls.cleaned(i), facts))
    return events, facts


def _oom_words(s: str) -> bool:
    """``s`` holds out-of-memory wording the generic fallback reads."""
    low = s.lower()
    if _GENERIC_GATE.search(low) and _GENERIC.search(s):
        return True
    return harvested_match(s, low, prose=True) is not None


def _with_wrapped_list(lines: Lines, i: int, line: str, m: re.Match[str]) -> str:
    """The line, or the line with the next one where the wording ends it and the runtime's
    argument list was wrapped below it.

    mistral.rs's automatic device mapper (``mistralrs-core/src/pipeline/loaders/
    auto_device_map.rs``) prints ``This model does not fit on the devices {:?}, and exceeds
    total capacity by {}MB``: the Rust ``Debug`` list of the devices (``["cpu (avail: 0MB)",
    ...]``) carries what decides the cause (``rules_stated_levers.mistralrs_device_map``), and a
    paste may break the line before its ``[``. Only a next line that opens a list is joined."""
    if m.end() < len(lines.text[i].rstrip()) or i + 1 >= len(lines.text):
        return line
    nxt = lines.cleaned(i + 1)
    return f"{line} {nxt}" if nxt.startswith("[") else line


def parse_generic(lines: Lines) -> list[OomEvent]:
    """Fallback: the first line with out-of-memory wording (and what it states), when no parser
    recognised anything. At most one event; ``runtime`` is ``generic``."""
    n = len(lines.text)
    # a line passed over depends on its text and ``prose`` only: a repeat of it is passed over
    # unread (a hostile log of one near-miss line 200,000 times; bounded memo, docperf17)
    passed: set[tuple[bool, str]] = set()
    # the middle of a long log: only the lines holding a needle of what is read there
    # (a line of the middle is read as its first occurrence is: ``first_only``)
    for i in generic_lines(lines, PROSE_HEAD, PROSE_TAIL, _GENERIC_KEYS, first_only=True):
        raw = lines.text[i]
        # wordings harvested from the runtimes' own sources (parse_wordings.py); a person's
        # wordings only at the head and tail of a long log (PROSE_HEAD / PROSE_TAIL)
        prose = i < PROSE_HEAD or i >= n - PROSE_TAIL
        if len(passed) >= _PASSED_MEMO:
            passed.clear()
        if (prose, raw) in passed:
            continue
        passed.add((prose, raw))
        low = raw.lower()
        # cheap literal prefilter (one C-speed search)
        m = _GENERIC.search(raw) if _GENERIC_GATE.search(low) else None
        if m is None:
            m = harvested_match(raw, low, prose=prose)
        if m is None:
            continue
        line = lines.cleaned(i)
        low = line.lower()
        if any(neg in low for neg in _GENERIC_NEGATIVE) or _GENERIC_ZERO.search(line):
            continue
        if "tactic" in low and absurd_tactic_request(line):  # revfix18e: no real shortage
            continue
        if "memory for the " in low and _TFLITE_PREPARE.search(line):
            continue
        if not_memory_reason(line, m.group(0)):
            # "cudaMalloc failed: invalid argument", "killed by the scheduler (time limit)"
            continue
        if advice_to_reader(line):
            # docs: "If you run out of VRAM, lower the batch size." (parse_wordings_report)
            continue
        if prose and need_question(line, _oom_words):
            # (docfix22) "How much VRAM do I need to avoid OOM?", "24G显存够不够": a need
            # asked, no failure stated (parse_need_question)
            continue
        w = window(lines, i, max_lines=3)
        r = _REQUEST.search(w)
        # a ggml function's line prints MB for size/1024/1024 (ggml.c ggml_aligned_malloc)
        units = "llama.cpp" if line.startswith("ggml_") else "generic"
        requested = size_of(r, "req", units) if r else None
        if requested is None:
            raw_m = _REQUEST_RAW.search(w)
            if raw_m is None and i > 0:
                raw_m = _MACH_SIZE.search(lines.text[i - 1])
            requested = to_int(raw_m["n"]) if raw_m else None
        if requested is None and "req_bytes" in m.re.groupindex and m["req_bytes"]:
            # a harvested wording that states its request in bytes (parse_wordings_damage)
            requested = to_int(m["req_bytes"])
        # a plain "needs 26 GB but I have 24" / "too big for my 8GB GPU" (parse_wordings_plain)
        needed, capacity = plain_sizes(m)
        requested = requested if requested is not None else needed
        return [
            _ev(
                "generic",
                "oom_keyword",
                "generic_oom",
                _with_wrapped_list(lines, i, line, m),
                lines.number[i],
                requested_bytes=requested,
                total_bytes=capacity,
                detail=m.group(0),
            )
        ]
    return []

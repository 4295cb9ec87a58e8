"""Other frameworks' own OOM wordings (issue 9, heldout6), read when no richer parser matched.

The dispatcher runs this module after ``parse_recognise`` and before ``parse_apps`` and the
keyword fallback, only when no other parser found an event. Every family is the framework's own
message, cited from its source; the numbers it states are kept so that the rules
(``rules_frameworks``) can decide from them:

* ONNX Runtime: the BFC arena's ``Failed to allocate memory for requested buffer of size N``
  (``onnxruntime/core/framework/bfc_arena.cc``, ``BFCArena::AllocateRawInternal``) when the
  paste cuts it after ``Failed to alloc`` or inside the thrower's signature (``bfc_arena.cc:N void*
  onnxruntime::BFCArena::AllocateRawInternal(``; the full wording is ``parse_families``'); the CUDA
  provider's ``CUDA failure 2: out of memory ; GPU=N ; hostname=H ; file=F ; line=L ;
  expr=<call>`` (``core/providers/cuda/cuda_call.cc``, ``CudaCall``: the call that failed is
  named in ``expr``; older releases print ``%s failure %d: %s ; GPU=%d ; hostname=%s ; expr=%s;
  %s``, without ``file=`` / ``line=``).
* TensorRT builder and runtime: ``Requested amount of GPU memory (N bytes) could not be
  allocated`` (tactic workspace; TRT 7 ``Requested amount of memory (N bytes)`` from
  ``rtSafe/WeightsPtr.cpp``), ``Cuda Error in nvinfer1::internal::DefaultAllocator::allocate: 2
  (out of memory)`` (TRT 7) and ``[defaultAllocator.cpp::allocate::N] Error Code 1: Cuda Runtime
  (out of memory)`` (TRT 8+), ``[virtualMemoryBuffer.cpp::resizePhysical::N] Error Code 2:
  OutOfMemory (no further information | Requested size was N bytes.)``, ``GPU memory allocation
  error during getBestTactic: <node>`` / ``Out of memory error during getBestTactic``, and
  ``OutOfMemory Error in allocate`` from ``WeightsPtr.cpp`` (the weights copy).
* MXNet: ``cudaMalloc failed: out of memory`` / ``cudaMalloc retry failed: out of memory``
  (``src/storage/pooled_storage_manager.h``: the pool released its cached blocks and retried),
  ``gpu_device_storage.h:N: Check failed: e == cudaSuccess || e == cudaErrorCudartUnloading CUDA:
  out of memory`` (0.x), mshadow ``Check failed: err == cudaSuccess (2 vs. 0) : Name: <Kernel>
  ErrStr:out of memory`` (a kernel launch on a full device).
* PaddlePaddle's CPU allocators: ``ResourceExhaustedError: Fail to alloc memory of N size``
  (``memory/allocation/cpu_allocator.cc`` and ``memory/detail/system_allocator.cc``:
  ``posix_memalign`` / ``_aligned_malloc`` of host RAM).
* MindSpore: the dynamic memory pool's ``TotalUsedMemStatistics : U [plus
  TotalUsedByEventMemStatistics : E and] plus alloc size : X is more than total mem size : T``
  (``backend/common/mem_reuse/mem_dynamic_allocator.cc``, ``AddMemBlockAndMemBufByEagerFree``),
  ``Malloc for kernel output failed, Memory isn't enough, node:<op>`` (``runtime/pynative``
  ``MallocForKernelOutput``: an op's output tensor), ``<cudaCall> failed, ret[2], out of memory``
  (``plugin/device/gpu/hal/device/cuda_driver.cc`` and minddata's ``arena.cc``
  ``cudaHostAlloc``: pinned host memory).
* Sophgo bmlib: ``bm_alloc_gmem failed, dev_id = D, size = 0xN`` (``bmlib/src/bmlib_memory.cpp``
  ``bm_malloc_device_byte_heap``: a device-memory heap has no room for the buffer).
* Caffe ``syncedmem.cpp:N] Check failed: error == cudaSuccess`` with ``(2 vs. 0) out of memory``
  wrapped onto the next line (the one-line wording is ``parse_apps``').
* TensorFlow 1.x: ``EigenAllocator for GPU ran out of memory when allocating N``
  (``common_runtime/gpu/gpu_device.cc``) and ``Ran out of GPU memory when allocating N bytes for
  <op>`` (``framework/op_kernel.cc``).
* ggml's own allocators when a buffer sized in advance is too small (not device memory):
  ``not enough space in the buffer (needed N, largest block available M)`` (``ggml-alloc.c``
  ``ggml_tallocr_alloc`` / dynamic allocator), ``not enough space in the context's memory pool``
  (``ggml.c`` ``ggml_new_object``) and ``not enough space in the scratch memory pool``
  (``ggml_new_tensor_impl``, cut before `` pool`` in pastes), ``GGML_ASSERT ... "out of free
  blocks"`` (``ggml-alloc.c`` free-block table), and ggml-cuda's ``allocating X MiB on device
  N: cudaMalloc failed: out of memory`` without its function prefix (koboldcpp).
* SGLang ``alloc_req_slots runs out of memory`` (``managers/schedule_batch.py``: the request
  slot pool, ``--max-running-requests`` slots).
* Ultralytics AutoBatch ``error detected: <exception>,  using default batch-size N``
  (``utils/autobatch.py``: the exception caught while profiling batch sizes), read only when the
  exception is an out-of-memory one.
* LM Studio's ``Failed to load model`` JSON report (``"ram_capacity"`` / ``"ram_unused"``,
  ``"vram_recommended_capacity"`` / ``"vram_unused"``): printed for any load failure, so it is
  read as an OOM only when the memory it reports was used up (unused < 1% of the capacity).
* PyTorch's caching-allocator wording cut short: the legacy statistics in parentheses without
  the ``Tried to allocate`` head (``(GPU 0; X total capacity; Y already allocated; Z free; R
  reserved in total by PyTorch)``), and ``CUDA out of memory`` in any case without the rest.

Every pattern is anchored on a literal and bounded: linear time on any line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import admitted, read_ends
from oomkit.diagnose.sizes import stated_request, to_bytes, to_int
from oomkit.diagnose.text import Lines, has_any, needles_re, size_of, sz, window

__all__ = ["parse_frameworks"]

_INT = r"\d{1,20}"
# ORT_THROW prefixes its message with "file:line function-signature"; the only throw in
# BFCArena::AllocateRawInternal is the one after Extend() failed ("We searched all bins ... This
# means we must have run out of memory", bfc_arena.cc): a paste cut inside the signature is still
# that failure (not FindChunkPtr's / Extend's ORT_ENFORCE, which name their own function)
_ORT_CUT = re.compile(
    r"bfc_arena\.cc:\d{1,6} (?:.{0,400}?Failed to alloc|"
    r"void ?\* ?onnxruntime::BFCArena::AllocateRawInternal\()"
)
_ORT_CUDA = re.compile(
    r"(?P<lib>CUDA|CUBLAS|CUDNN|CUFFT|CURAND) failure (?P<code>\d{1,4}): (?P<err>[^;]{0,80}?) ?; "
    r"GPU=(?P<dev>\d{1,3}) ; hostname=[^;]{0,120}; (?:file=(?P<file>[^;]{0,300}?) ; "
    r"line=\d{1,6} ; )?expr=(?P<expr>[^;]{0,200})"
)
_TRT_REQ = re.compile(
    r"Requested amount of (?P<gpu>GPU )?memory \((?P<x>" + _INT + r") bytes\) could not be "
    r"allocated"
)
_TRT_DEFAULT = re.compile(
    r"DefaultAllocator::allocate: 2 \(out of memory\)|"
    r"defaultAllocator\.cpp::allocate::\d{1,6}\] Error Code 1: Cuda Runtime \(out of memory\)",
    re.IGNORECASE,
)
_TRT_VMB = re.compile(
    r"virtualMemoryBuffer\.cpp::resizePhysical::\d{1,6}\] Error Code 2: Out ?of ?Memory"
    r"(?: \((?:Requested size was (?P<x>" + _INT + r") bytes\.?|no further information)\))?",
    re.IGNORECASE,
)
_TRT_TACTIC = re.compile(
    r"(?:GPU memory allocation error|Out of memory error) during getBestTactic: ?(?P<node>.{0,120})"
)
_TRT_WEIGHTS = re.compile(r"WeightsPtr\.cpp \(\d{1,6}\) - OutOfMemory Error in allocate")
_MX_POOL = re.compile(r"cudaMalloc (?P<retry>retry )?failed: out of memory")
_MX_STORAGE = re.compile(
    r"gpu_device_storage\.h:\d{1,6}: Check failed: e == cudaSuccess \|\| "
    r"e == cudaErrorCudartUnloading CUDA: out of memory"
)
_MX_MSHADOW = re.compile(
    r"Check failed: err == cudaSuccess \(2 vs\. 0\) ?:? ?Name: (?P<k>\w{1,80}) ErrStr: ?"
    r"out of memory"
)
_PADDLE_CPU = re.compile(r"Fail to alloc memory of (?P<x>" + _INT + r") size")
_MS_POOL = re.compile(
    r"TotalUsedMemStatistics : (?P<u>" + _INT + r")(?: plus TotalUsedByEventMemStatistics : "
    r"(?P<e>" + _INT + r") and)? plus alloc size : (?P<x>" + _INT + r") is more than total mem "
    r"size : (?P<t>" + _INT + r")"
)
_MS_KERNEL = re.compile(
    r"Malloc for kernel output failed, Memory isn't enough, node: ?(?P<n>\S{1,200})"
)
_MS_CUDA = re.compile(
    r"(?:The )?(?P<call>cuda\w{1,40}|cuMem\w{1,40}) failed, ret\[2\], out of memory"
)
_BM = re.compile(
    r"bm_alloc_gmem failed, dev_id ?= ?(?P<d>\d{1,3}), size ?= ?0x(?P<x>[0-9a-fA-F]{1,16})"
)
_CAFFE_HEAD = re.compile(r"syncedmem\.cpp:\d{1,6}\] Check failed: error == cudaSuccess\s{0,4}$")
_CAFFE_TAIL = re.compile(r"^\(2 vs\. 0\)\s{1,8}out of memory")
_TF_EIGEN = re.compile(
    r"EigenAllocator for GPU ran out of memory when allocating (?P<x>" + _INT + r")"
)
_TF_RAN_OUT = re.compile(r"Ran out of GPU memory when allocating (?P<x>" + _INT + r") bytes")
_GGML_TALLOC = re.compile(
    r"not enough space in the buffer(?: to allocate (?P<t>\S{1,120}))? \(needed (?P<x>"
    + _INT
    + r"), (?:largest block )?available (?P<f>"
    + _INT
    + r")\)|not enough space in the buffer to allocate (?P<x2>"  # ggml_dyn_tallocr_alloc (2024-)
    + _INT
    + r") bytes, largest block available (?P<f2>"
    + _INT
    + r") bytes"
)
_GGML_POOL = re.compile(r"not enough space in the (?P<pool>context's|scratch) memory")
_GGML_BLOCKS = re.compile(
    r'GGML_ASSERT: \S{0,200}ggml-alloc\.c:\d{1,6}: .{0,120}"out of free blocks"'
)
_GGML_CUDAMALLOC = re.compile(
    r"(?:^|: )allocating (?P<mib>\d{1,12}(?:\.\d{1,4})?) MiB on device (?P<d>\d{1,3}): "
    r"(?P<api>cudaMalloc|hipMalloc) failed: ?out of memory"
)
_SGL_SLOTS = re.compile(r"alloc_req_slots runs out of memory")
# Ultralytics utils/autobatch.py: the exception while profiling batch sizes, then the fallback
_AUTOBATCH = re.compile(
    r"AutoBatch: .{0,24}error detected: (?P<e>.{0,300}?), {1,2}using default batch-size "
    r"(?P<b>\d{1,6})"
)
# LM Studio's load-failure report (JSON): the memory it saw when the load failed
_LMS_MEM = re.compile(
    r'"(?P<k>ram_capacity|ram_unused|vram_recommended_capacity|vram_unused)": ?'
    r'"(?P<v>\d{1,9}(?:\.\d{1,4})?) ?(?P<u>[KMGT]?B)"'
)
_LMS_NCTX = re.compile(r'"n_ctx": ?(?P<v>\d{1,9})')
_LMS_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_EXHAUSTED = 0.01  # unused below 1% of the capacity: the memory was used up when it failed
_LMS_MAX_REPORTS = 16  # lines with an "..._unused" key read per log (each reads 24 lines around)
_METAL_KV = re.compile(r"Paged attention: not enough Metal memory for KV cache")
_METAL_TERM = re.compile(
    r"\b(?P<k>metal_limit|usable_metal|model_memory|overhead|kv_budget)=(?P<v>-?\d{1,9}(?:\.\d{1,4})?)GB"
)
_OLLAMA_SERVER = re.compile(r"llama-server reported out-of-memory during (?P<when>\w{1,20})")
_OLLAMA_BUF = re.compile(
    r"ggml_backend_(?P<b>cpu|cuda|rocm|vk|metal|sycl)\w{0,20}_buffer_type_alloc_buffer|"
    r"failed to allocate "
    r"(?P<b2>CPU|CUDA_Host|CUDA\d{1,2}|ROCm\d{1,2}|Vulkan\d{1,2}|Metal|MTL\d) buffer"
)
_OLLAMA_SIZE = re.compile(r"buffer of size (?P<x>" + _INT + r")")
_TORCH_OLD_TAIL = re.compile(
    r"^\(GPU (?P<dev>\d{1,3}); "
    + sz("total")
    + r" total capacity; "
    + sz("alloc")
    + r" already allocated; "
    + sz("free")
    + r" free(?:\)|; "
    + sz("resv")
    + r" (?P<what>reserved in total by PyTorch|cached))"
)
_TORCH_BARE = re.compile(
    r"\bCUDA out of memory\b(?:[.,]? ?Tried to allocate " + sz("req") + r")?", re.IGNORECASE
)

_PREFILTER = needles_re(
    (
        "bfc_arena.cc",
        " failure ",
        "Requested amount of",
        "llocator",
        "resizePhysical",
        "getBestTactic",
        "WeightsPtr.cpp",
        "cudaMalloc",
        "hipMalloc",
        "gpu_device_storage.h",
        "ErrStr",
        "Fail to alloc memory of",
        "TotalUsedMemStatistics",
        "Malloc for kernel output failed",
        "ret[2]",
        "bm_alloc_gmem failed",
        "syncedmem.cpp",
        "Ran out of GPU memory when allocating",
        "not enough space in the",
        "out of free blocks",
        "alloc_req_slots",
        "AutoBatch",
        '"ram_unused"',
        '"vram_unused"',
        "not enough Metal memory",
        "llama-server reported out-of-memory",
        "total capacity;",
        "out of memory",
        "Out of memory",
        "OUT OF MEMORY",
        "Out Of Memory",
    )
)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _gb(v: str | None) -> int | None:
    """vllm-metal prints ``{bytes / 1e9:.2f}GB``: decimal gigabytes."""
    if v is None:
        return None
    return round(float(v) * 1e9)


def _ort(line: str, n: int) -> OomEvent | None:
    if _ORT_CUT.search(line):
        return _ev("onnxruntime", "gpu_alloc_failed", "onnxruntime_bfc_arena_cut", line, n)
    m = _ORT_CUDA.search(line)
    if m is not None and (m["code"] == "2" or "out of memory" in m["err"].lower()):
        return _ev(
            "onnxruntime",
            "cuda_error_oom",
            "onnxruntime_cuda_failure_oom",
            line,
            n,
            device=int(m["dev"]),
            detail=m["expr"].strip()[:120],
        )
    return None


def _tensorrt(line: str, n: int) -> OomEvent | None:
    m = _TRT_REQ.search(line)
    if m is not None:
        x, bad = stated_request(m["x"])  # an absurd figure (~2**64) is refused and named
        return _ev(
            "tensorrt",
            "workspace_alloc_failed" if m["gpu"] else "weights_alloc_failed",
            "trt_requested_gpu_memory" if m["gpu"] else "trt_requested_memory",
            line,
            n,
            requested_bytes=x,
            ignored_sizes=bad,
            stage="compile" if m["gpu"] else "weights",  # tactics are timed in the build
        )
    if _TRT_WEIGHTS.search(line):
        return _ev(
            "tensorrt", "weights_alloc_failed", "trt_weights_ptr_oom", line, n, stage="weights"
        )
    m2 = _TRT_VMB.search(line)
    if m2 is not None:
        return _ev(
            "tensorrt",
            "workspace_alloc_failed",
            "trt_virtual_memory_buffer",
            line,
            n,
            requested_bytes=to_int(m2["x"]) if m2["x"] else None,
        )
    m3 = _TRT_TACTIC.search(line)
    if m3 is not None:
        return _ev(
            "tensorrt",
            "workspace_alloc_failed",
            "trt_get_best_tactic",
            line,
            n,
            stage="compile",
            detail=m3["node"].strip()[:120] or None,
        )
    if _TRT_DEFAULT.search(line):
        return _ev("tensorrt", "cuda_error_oom", "trt_default_allocator_oom", line, n)
    return None


def _mxnet(line: str, n: int) -> OomEvent | None:
    m = _MX_POOL.search(line)
    if m is not None and ("storage" in line or "MXNet" in line or "mxnet" in line):
        return _ev(
            "mxnet",
            "gpu_alloc_failed",
            "mxnet_cudamalloc_failed",
            line,
            n,
            detail="retry after releasing the pool" if m["retry"] else None,
        )
    if _MX_STORAGE.search(line):
        return _ev("mxnet", "gpu_alloc_failed", "mxnet_device_storage", line, n)
    m2 = _MX_MSHADOW.search(line)
    if m2 is not None:
        return _ev("mxnet", "cuda_error_oom", "mxnet_mshadow_kernel", line, n, detail=m2["k"])
    return None


def _mindspore(line: str, n: int) -> OomEvent | None:
    m = _MS_POOL.search(line)
    if m is not None:
        used = (to_int(m["u"]) or 0) + ((to_int(m["e"]) or 0) if m["e"] else 0)
        total = to_int(m["t"])
        return _ev(
            "mindspore",
            "gpu_alloc_failed",
            "mindspore_mem_pool",
            line,
            n,
            requested_bytes=to_int(m["x"]),
            allocated_bytes=used,
            total_bytes=total,
            free_bytes=total - used if total is not None and total >= used else None,
        )
    m2 = _MS_KERNEL.search(line)
    if m2 is not None:
        return _ev(
            "mindspore",
            "kernel_output_failed",
            "mindspore_kernel_output",
            line,
            n,
            detail=m2["n"],
        )
    m3 = _MS_CUDA.search(line)
    if m3 is not None:
        host = m3["call"] in {"cudaHostAlloc", "cudaMallocHost", "cuMemHostAlloc"}
        return _ev(
            "mindspore",
            "host_alloc_failed" if host else "cuda_error_oom",
            "mindspore_cuda_host_alloc" if host else "mindspore_cuda_call_oom",
            line,
            n,
            detail=m3["call"],
        )
    return None


def _ggml(line: str, n: int) -> OomEvent | None:
    m = _GGML_TALLOC.search(line)
    if m is not None:
        return _ev(
            "llama.cpp",
            "fixed_buffer_full",
            "ggml_tallocr_not_enough_space",
            line,
            n,
            requested_bytes=to_int(m["x"] or m["x2"]),
            free_bytes=to_int(m["f"] or m["f2"]),
            detail=m["t"],
        )
    m0 = _GGML_POOL.search(line)
    if m0 is not None:
        # parse_extra's ggml_memory_pool cut before "(needed N, available M)" or " pool" (scratch)
        pool = "context" if m0["pool"] == "context's" else "scratch"
        return _ev(
            "llama.cpp", "ggml_pool_exhausted", "ggml_memory_pool", line, n, buffer_name=pool
        )
    if _GGML_BLOCKS.search(line):
        return _ev("llama.cpp", "fixed_buffer_full", "ggml_alloc_out_of_free_blocks", line, n)
    m2 = _GGML_CUDAMALLOC.search(line)
    if m2 is not None:
        return _ev(
            "llama.cpp",
            "buffer_alloc_failed",
            "llama.cpp_cudamalloc_bare",
            line,
            n,
            device=int(m2["d"]),
            requested_bytes=to_bytes(m2["mib"], "MiB", "llama.cpp"),
            buffer_name=("CUDA" if m2["api"] == "cudaMalloc" else "ROCm") + m2["d"],
        )
    return None


def _lmstudio(lines: Lines, i: int, n: int) -> OomEvent | None:
    """LM Studio's ``Failed to load model`` JSON reports the memory it saw at the failure, for
    any cause; it is an OOM only when that memory was used up (unused < 1% of capacity)."""
    lo = i - 12 if i >= 12 else 0
    block = "\n".join(lines.text[lo : i + 12])
    mem = {m["k"]: round(float(m["v"]) * _LMS_UNITS[m["u"]]) for m in _LMS_MEM.finditer(block)}
    nctx = _LMS_NCTX.search("\n".join(lines.text[i - 39 if i >= 39 else 0 : i + 1]))
    for kind, cap_key, unused_key in (
        ("host_oom", "ram_capacity", "ram_unused"),
        ("gpu_alloc_failed", "vram_recommended_capacity", "vram_unused"),
    ):
        cap, unused = mem.get(cap_key), mem.get(unused_key)
        if cap and unused is not None and unused < _EXHAUSTED * cap:
            return _ev(
                "lmstudio",
                kind,
                "lmstudio_load_failed_memory",
                block,
                n,
                total_bytes=cap,
                free_bytes=unused,
                detail=f"n_ctx {nctx['v']}" if nctx is not None else None,
            )
    return None


def _other(lines: Lines, i: int, line: str, n: int) -> OomEvent | None:
    m = _PADDLE_CPU.search(line) if "Fail to alloc" in line else None
    if m is not None:
        return _ev(
            "paddle", "host_oom", "paddle_cpu_alloc_failed", line, n, requested_bytes=to_int(m["x"])
        )
    m2 = _BM.search(line) if "bm_alloc_gmem" in line else None
    if m2 is not None:
        return _ev(
            "sophgo",
            "gpu_alloc_failed",
            "bmlib_alloc_gmem_failed",
            line,
            n,
            device=int(m2["d"]),
            requested_bytes=int(m2["x"], 16),
        )
    wrapped = (
        "syncedmem.cpp" in lines.text[i]
        and _CAFFE_HEAD.search(lines.text[i]) is not None
        and i + 1 < len(lines.text)
    )
    if wrapped and _CAFFE_TAIL.search(lines.cleaned(i + 1)):
        return _ev("caffe", "gpu_alloc_failed", "caffe_check_failed_oom", line, n)
    m3 = (_TF_EIGEN.search(line) or _TF_RAN_OUT.search(line)) if "when allocating" in line else None
    if m3 is not None:
        return _ev(
            "tensorflow",
            "gpu_alloc_failed",
            "tf_eigen_allocator_oom" if "EigenAllocator" in line else "tf_ran_out_of_gpu_memory",
            line,
            n,
            requested_bytes=to_int(m3["x"]),
        )
    if "Metal memory" in line and _METAL_KV.search(line):
        w = window(lines, i, max_lines=4)
        terms = {t["k"]: t["v"] for t in _METAL_TERM.finditer(w)}
        return _ev(
            "vllm",
            "no_kv_pool",
            "vllm_metal_kv_budget",
            w,
            n,
            stage="kv_cache",
            total_bytes=_gb(terms.get("metal_limit")),
            allowed_bytes=_gb(terms.get("usable_metal")),
            allocated_bytes=_gb(terms.get("model_memory")),
            reserved_bytes=_gb(terms.get("overhead")),
            available_kv_bytes=_gb(terms.get("kv_budget")),
        )
    m6 = _OLLAMA_SERVER.search(line) if "llama-server" in line else None
    if m6 is not None:
        rest = line[m6.end() : m6.end() + 1000]
        buf = _OLLAMA_BUF.search(rest)
        size = _OLLAMA_SIZE.search(rest)
        name = (buf["b"] or buf["b2"] or "") if buf is not None else ""
        host = name.lower() in {"cpu", "cuda_host"}
        return _ev(
            "ollama",
            "host_oom" if host else "startup_oom",
            "ollama_llama_server_startup_oom",
            line,
            n,
            buffer_name=name or None,
            requested_bytes=to_int(size["x"]) if size is not None else None,
            stage="kv_cache" if "kv cache" in rest else None,
            detail=m6["when"],
        )
    m7 = _AUTOBATCH.search(line) if "AutoBatch" in line else None
    if m7 is not None and re.search(r"out ?of ?memory", m7["e"], re.IGNORECASE):
        return _ev(
            "ultralytics",
            "autobatch_fallback",
            "ultralytics_autobatch_error",
            line,
            n,
            stage="warmup",
            detail=f"batch {m7['b']}",
        )
    if "alloc_req_slots" in line and _SGL_SLOTS.search(line):
        return _ev("sglang", "req_slots_full", "sglang_alloc_req_slots", line, n)
    m4 = _TORCH_OLD_TAIL.search(line) if line.startswith("(GPU ") else None
    if m4 is not None:
        w = window(lines, i, max_lines=2)
        return _ev(
            "pytorch",
            "cuda_oom",
            "pytorch_old_fragment",
            w,
            n,
            device=int(m4["dev"]),
            total_bytes=size_of(m4, "total", "pytorch"),
            allocated_bytes=size_of(m4, "alloc", "pytorch"),
            free_bytes=size_of(m4, "free", "pytorch"),
            # PyTorch <= 1.3 printed "cached" (reserved but unallocated), later "reserved"
            reserved_bytes=size_of(m4, "resv", "pytorch") if m4["what"] != "cached" else None,
            reserved_unallocated_bytes=size_of(m4, "resv", "pytorch")
            if m4["what"] == "cached"
            else None,
        )
    m5 = _TORCH_BARE.search(line)
    if m5 is not None:
        return _ev(
            "pytorch",
            "cuda_oom",
            "pytorch_bare",
            line,
            n,
            requested_bytes=size_of(m5, "req", "pytorch") if m5["req"] else None,
        )
    return None


# cheap literal gates, so that a line runs only the regexes of the framework it names
_READERS: tuple[tuple[re.Pattern[str], Callable[[str, int], OomEvent | None]], ...] = (
    (needles_re(("bfc_arena.cc", " failure ")), _ort),
    (
        needles_re(
            ("Requested amount of", "llocator", "resizePhysical", "getBestTactic", "WeightsPtr")
        ),
        _tensorrt,
    ),
    (needles_re(("cudaMalloc", "gpu_device_storage.h", "ErrStr")), _mxnet),
    (needles_re(("TotalUsedMemStatistics", "Malloc for kernel output", "ret[2]")), _mindspore),
    (needles_re(("not enough space in the", "out of free blocks", "MiB on device")), _ggml),
)


def _event(lines: Lines, i: int) -> OomEvent | None:
    line = lines.cleaned(i)
    n = lines.number[i]
    for gate, reader in _READERS:
        if gate.search(line):
            ev = reader(line, n)
            if ev is not None:
                return ev
    return _other(lines, i, line, n)


def parse_frameworks(lines: Lines) -> list[OomEvent]:
    """Events of the families in the module docstring (every match, in log order). Never raises.

    The caller runs this only when no specific parser found an event.
    """
    return frameworks_ends(lines, head=len(lines.text), tail=0)[0]


#: a line that reads the lines around it (Caffe, vllm-metal, old PyTorch, LM Studio)
_NEIGHBOURS = ("syncedmem", "Metal", "(GPU", '_unused"')


def frameworks_ends(lines: Lines, *, head: int, tail: int) -> tuple[list[OomEvent], int]:
    """:func:`parse_frameworks`' first ``head`` and last ``tail`` events and the number of the
    others (:func:`oomkit.diagnose.scan.read_ends`: the dispatcher keeps 200)."""
    idx = list(admitted(lines, _PREFILTER))
    lms = [i for i in idx if '_unused"' in lines.text[i]]  # LM Studio: the first few reports
    read_lms = set(lms[:_LMS_MAX_REPORTS])

    def read(i: int) -> OomEvent | None:
        if '_unused"' in lines.text[i]:
            return _lmstudio(lines, i, lines.number[i]) if i in read_lms else None
        return _event(lines, i)

    def key(i: int) -> str | None:  # what an event depends on but its line number
        return None if has_any(lines.text[i], _NEIGHBOURS) else lines.text[i]

    return read_ends(idx, read, head=head, tail=tail, key=key)

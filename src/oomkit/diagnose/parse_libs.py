"""GPU data libraries' and browser/Apple GPU back ends' own failure wordings (issue 9, heldout8).

Read when no other parser found an event, before the keyword fallback. Each family is the
library's own format, with the numbers it carries (sources cited per family):

* faiss GPU (``faiss/gpu/StandardGpuResources.cpp`` ``allocMemory``): ``StandardGpuResources:
  alloc fail type <AllocType> dev <d> space <MemorySpace> stream <s> size <n> bytes (cudaMalloc
  error <str> [<code>])``; the same file's ``Failed to cudaMalloc <n> bytes on device <d> (error
  <code> <str>`` and the 2017-2019 ``gpu/utils/MemorySpace.cpp`` ``failed to cudaMalloc <n> bytes
  (error <code> <str>)``; and the 2017 ``StackDeviceMemory::Stack::Stack`` assertion, whose only
  CUDA call is the ``cudaMalloc`` of the temporary-memory reservation. The ``AllocType`` says
  which memory failed: ``TemporaryMemoryBuffer`` is the scratch reservation made when faiss first
  uses the device (``getDefaultTempMemForGPU``: 512 MiB on <= 4 GiB cards, 1 GiB on <= 8 GiB,
  else 1.5 GiB); ``FlatData`` / ``IVFLists`` / ``Quantizer*`` are the index itself;
  ``TemporaryMemoryOverflow`` is a search's scratch beyond that reservation.
* XGBoost ``dh::safe_cuda`` (``src/common/device_helpers.cuh``): ``<file>(<line>): out of
  memory`` (a ``thrust::system_error`` whose text is the file and line then
  ``cudaGetErrorString``); Thrust's own ``cuda_cub::throw_on_error(status, "<algo> failed")``
  (``thrust/system/cuda/detail/*.h``): ``parallel_for failed: out of memory``.
* CatBoost's GPU memory pool (``catboost/cuda/cuda_lib/memory_pool/stack_like_memory_pool.h``):
  ``NCudaLib::TOutOfMemoryError ... Error: Out of memory. Requested <r> MB; Free <f> MB`` (older
  builds omit "MB"); ``MB`` is ``1024.0 * 1024.0`` there. The pool is allocated once at start
  (``gpu_ram_part`` of the free memory), so "Free" is the pool's, not the device's.
* OpenCL status names and Boost.Compute's ``opencl_error::to_string`` (LightGBM's GPU learner):
  ``CL_MEM_OBJECT_ALLOCATION_FAILURE`` / ``Memory Object Allocation Failure`` (device buffer),
  ``CL_OUT_OF_HOST_MEMORY`` / ``Out of Host Memory`` (host RAM).
* RAPIDS Memory Manager (``rmm/mr/device/*.hpp``, ``rmm/detail/error.hpp``):
  ``RMM_ERROR_OUT_OF_MEMORY`` (the 0.x C API), ``out_of_memory: CUDA error at: ...`` and ``RMM
  failure at: ...pool_memory_resource.hpp:<n>: Maximum pool size exceeded`` (the pool's cap).
* PaddlePaddle legacy (``paddle/cuda/src/hl_cuda_device.cc``): ``Check failed: cudaSuccess ==
  cudaStat (0 vs. 2) Cuda Error: out of memory``.
* PyTorch's exception class alone, ``torch.OutOfMemoryError`` / ``torch.cuda.OutOfMemoryError``
  (``torch/cuda/__init__.py``), and titles that recase the driver's ``cuda runtime error (2) :
  out of memory`` / ``CUDA error: out of memory`` (``Cuda Runtime Error: out of memory``).

* MLX (``mlx/backend/metal/allocator.cpp``): ``[malloc] Unable to allocate N bytes.``
  (``[malloc_or_wait]`` in older releases, ``[malloc_async]`` / ``[vulkan::malloc]`` in the
  CUDA / Vulkan back ends),
  ``Attempting to allocate N bytes which is greater than the maximum allowed buffer size of M
  bytes.`` (one buffer above Metal's ``maxBufferLength``), and ``[METAL] Command buffer execution
  failed: Insufficient Memory`` without the IOGPU code.
* Tenstorrent tt-metal (``tt_metal/impl/allocator/bank_manager.cpp``): ``Out of Memory: Not enough
  space to allocate S B <DRAM|L1> buffer across N banks, where each bank needs to store P B[, but
  bank size is B B (allocated: A B, free: F B, largest free block: L B)]``.
* TPU runtime via XLA (``Error loading program`` / ``Error allocating device buffer``, sizes
  by ``tsl::strings::HumanReadableNumBytes``: 1024-based ``K``/``M``/``G``): ``Attempting to
  reserve X at the bottom of memory. That was not possible. There are F free, R reserved, and V
  reservable.``
  and ``Attempting to allocate X. That was not possible. There are F free.[ The largest contiguous
  region of free memory is L due to fragmentation.]``

* oMLX's prefill memory guard (``omlx/.../scheduler.py`` / ``prefill_guard``, sizes with
  ``format_bytes`` in GB of 1024**3): ``Prefill would require ~X peak (current C + KV+SDPA P[ +
  safety S]) but [<binding> ]ceiling is L`` (``limit is L`` in early releases).
* oMLX's load guard (``omlx/exceptions.py`` ``ModelTooLargeError``, sizes by
  ``model_discovery.format_size``: ``%.2f`` with B/KB/MB/GB/TB steps of 1024): ``Model 'ID' (S)
  exceeds max-model-memory (L)``: the model's estimated weights above the memory it may use.
* wgpu (Rust; ``wgpu-core/src/device/mod.rs`` ``DeviceError::OutOfMemory``: ``Not enough memory
  left.``; older releases lower-case) and OpenGL's ``GL_OUT_OF_MEMORY`` description (``There is
  not enough memory left to execute the command.``).

Recognised but not a lack of memory (cause ``unknown``, like Triton's shared-memory limit):

* tt-metal ``Statically allocated circular buffers on core range R grow to N B which is beyond max
  L1 size of M B`` / ``... clash with L1 buffers`` (``tt_metal/impl/program/program.cpp``): one
  op's kernel buffers exceed a core's L1 SRAM -- a program configuration limit.
* ggml's fixed-size arenas (``ggml.c`` ``ggml_new_object``: ``not enough space in the context's
  memory pool (needed N, available M)``; ``ggml-alloc.c`` ``ggml_tallocr_alloc: not enough space in
  the buffer``): sized by the program at start, so overflowing one is a sizing bug of that build.

* TensorFlow.js WebGL (``tfjs-backend-webgl/src/webgl_util.ts`` ``validateTextureSize``):
  ``Requested texture size [WxH] greater than WebGL maximum on this browser / GPU [MxM]``, a
  per-texture size limit; ``Failed to compile fragment shader.`` and the browser's
  ``CONTEXT_LOST_WEBGL`` (the context was dropped: GPU memory exhaustion or a GPU reset).
* Apple Metal command-buffer errors other than ``kIOGPUCommandBufferCallbackErrorOutOfMemory``
  (MLX ``[METAL] Command buffer execution failed: <localizedDescription>``; ggml-metal prints
  the same description): ``Impacting Interactivity``, ``Caused GPU Timeout Error``, ``Caused GPU
  Hang Error``, ``PageFault`` — the display watchdog or a fault, not memory.
* GPT4All ``GPU loading failed (out of VRAM?)`` (``gpt4all-chat/src/chatllm.cpp``: set whenever
  the GPU ``loadModel`` returned false, then it loads on the CPU): GPT4All's own guess.

Every pattern is a literal or a bounded repetition: linear time on any line.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.sizes import decimal_to_bytes, to_int
from oomkit.diagnose.text import Lines, needles_re, window

__all__ = ["FAISS_TEMP_MAX", "parse_libs"]

_MIB = 1 << 20
#: faiss ``getDefaultTempMemForGPU``'s reservation on cards over 8 GiB (``kMaxTempMem``,
#: ``StandardGpuResources.cpp``): 1.5 GiB, a size few other buffers have; the 512 MiB / 1 GiB
#: of smaller cards are powers of two that any buffer may be, so an untyped request of that size
#: is not read as the reservation.
FAISS_TEMP_MAX = 1536 * _MIB

_FAISS_STD = re.compile(
    r"alloc fail type (?P<type>\w{1,40}) dev (?P<dev>\d{1,3}) space (?P<space>\w{1,20})"
    r"\s{1,8}stream \S{1,40} size (?P<n>\d{1,20}) bytes \(cudaMalloc error (?P<err>[\w ]{1,40})"
)
_FAISS_MALLOC = re.compile(
    r"[Ff]ailed to cudaMalloc (?P<n>\d{1,20}) bytes(?: on device (?P<dev>\d{1,3}))? \(error "
    r"(?P<code>\d{1,3}) (?P<err>[\w ]{1,40})"
)
# docpost24 (heldout48): faiss 1.0-1.3's gpu/utils/MemorySpace.cpp states no error code:
# ``FAISS_ASSERT_FMT(cudaMalloc(p, size) == cudaSuccess, "Failed to cudaMalloc %zu bytes",
# size)``, printed as ``Faiss assertion 'cudaMalloc(p, size) == cudaSuccess' failed in void
# faiss::gpu::allocMemorySpace(...) at utils/MemorySpace.cpp:20; details: Failed to cudaMalloc
# N bytes``. The assertion is on the allocation itself, so the failed call is a device
# allocation of N bytes (the sentence alone, with no assertion and no code, is not read)
_FAISS_ASSERT = re.compile(
    r"cudaMalloc\(p, size\) == cudaSuccess'? failed[^\n]{0,300}?[Ff]ailed to cudaMalloc "
    r"(?P<n>\d{1,20}) bytes\b"
)
_FAISS_STACK = re.compile(r"StackDeviceMemory::Stack::Stack")
_XGB = re.compile(r"device_helpers\.cuh\((?P<line>\d{1,6})\): out of memory")
_XGB_ALLOC = re.compile(r"Memory allocation error on worker (?P<dev>\d{1,3}): ")
_XGB_FREE = re.compile(r"- Free memory: (?P<n>\d{1,20})")
_XGB_REQ = re.compile(r"- Requested memory: (?P<n>\d{1,20})")
# Thrust's own algorithm names (``throw_on_error(status, "<algo> failed...")``), not any word
_THRUST = re.compile(
    r"\b(?P<algo>parallel_for|radix_sort|merge_sort|reduce_by_key|reduce|scan|transform|copy_if"
    r"|unique|partition|for_each|uninitialized_fill|fill|set_operations|trivial_copy|sort):? "
    r"failed(?: on \w{1,10} step)?: (?:cudaErrorMemoryAllocation: )?out of memory"
    # (docpost23, heldout47's cupoch) CCCL's cuda_category().message is the error's name then its
    # string ("cudaErrorMemoryAllocation: out of memory"); thrust's device malloc throws
    # thrust::system::detail::bad_alloc with that message, prefixed "std::bad_alloc: "
    # (thrust/system/cuda/detail/malloc_and_free.h: bad_alloc(cuda_category().message(status)))
    r"|\bstd::bad_alloc: (?P<bad>cudaErrorMemoryAllocation: )out of memory"
)
# (docpost23) CuPy's runtime error (cupy_backends/cuda/api/runtime.pyx CUDARuntimeError: '%s: %s'
# of cudaGetErrorName and cudaGetErrorString), raised by cupy.cuda.runtime.malloc outside the pool
_CUPY_RT = re.compile(r"\bCUDARuntimeError: cudaErrorMemoryAllocation: out of memory")
_CATBOOST = re.compile(
    r"[Oo]ut of memory\. [Rr]equested (?P<req>\d{1,9}(?:\.\d{1,9})?) ?(?:MB)?; [Ff]ree "
    r"(?P<free>\d{1,9}(?:\.\d{1,9})?)"
)
_CATBOOST_CLASS = "TOutOfMemoryError"
_CL_DEVICE = re.compile(r"CL_MEM_OBJECT_ALLOCATION_FAILURE|Memory Object Allocation Failure", re.I)
_CL_HOST = re.compile(r"CL_OUT_OF_HOST_MEMORY|\bOut of Host Memory\b", re.I)
_RMM_POOL = re.compile(r"Maximum pool size exceeded")
_RMM_OOM = re.compile(
    r"RMM_ERROR_OUT_OF_MEMORY|out_of_memory: (?:CUDA error|RMM failure) at:|rmm::out_of_memory"
    r"|CUDA error at: \S{0,200}rmm/mr/\S{1,200} cudaErrorMemoryAllocation"
)
_PADDLE_OLD = re.compile(r"cudaSuccess == cudaStat \(0 vs\. 2\)\s{0,4}Cuda Error: out of memory")
_MLX_MALLOC = re.compile(
    r"\[(?P<where>malloc_or_wait|malloc|metal::malloc|malloc_async|vulkan::malloc)\] Unable to "
    r"allocate (?P<n>\d{1,20}) bytes"
)
_MLX_MAXBUF = re.compile(
    r"Attempting to allocate (?P<n>\d{1,20}) bytes which is greater than the maximum allowed "
    r"buffer size of (?P<m>\d{1,20}) bytes"
)
_MLX_CB_OOM = re.compile(r"\[METAL\] Command buffer execution failed: Insufficient Memory")
_TT_OOM = re.compile(
    r"Not enough space to allocate (?P<size>\d{1,20}) B (?P<kind>[A-Z_1]{1,16}) buffer across "
    r"(?P<banks>\d{1,6}) banks, where each bank needs to store (?P<per>\d{1,20}) B(?:, but bank "
    r"size is (?P<bank>\d{1,20}) B \(allocated: (?P<alloc>\d{1,20}) B, free: (?P<free>\d{1,20}) B, "
    r"largest free block: (?P<largest>\d{1,20}) B\))?"
)
# tt-metal's 2024 ``tt::assert::tt_throw`` (``tt_metal/common/assert.hpp``, ``tt_assert_message``:
# ``os << t << std::endl`` for each argument) printed the format string as given and then each
# argument on its own line: ``Out of Memory: Not enough space to allocate {} B {} buffer across {}
# banks, where each bank needs to store {} B`` then the size, the buffer type, the banks and the
# per-bank bytes, one a line (the bank manager's TT_THROW in ``allocator.cpp`` of that time)
_TT_TEMPLATE = re.compile(
    r"Not enough space to allocate \{\} B \{\} buffer across \{\} banks, where each bank needs "
    r"to store \{\} B\s{1,4}(?P<size>\d{1,20})\s{1,4}(?P<kind>[A-Z_1]{1,16})\s{1,4}"
    r"(?P<banks>\d{1,6})\s{1,4}(?P<per>\d{1,20})\b"
)
# the same failure without its numbers, as titles and condensed pastes word it: "Not enough space
# to allocate DRAM buffer on 64K ISL", "TT_FATAL: Out of Memory ... DRAM buffer ..." (the buffer
# types are the allocator's BufferType names, ``tt_metal/impl/buffers/buffer_constants.hpp``)
_TT_BARE = re.compile(
    r"(?:Not enough space to allocate|\bOut of Memory:?\s{0,2}(?:…|\.\.\.))\s{0,2}"
    r"(?P<kind>DRAM|L1|L1_SMALL|TRACE) buffer\b"
)
_TT_CB = re.compile(
    r"Statically allocated (?:circular|dataflow) buffers (?:on core range|in program) "
    r"[^\n]{0,200}?(?:grow to (?P<n>\d{1,20}) B which is beyond max L1 size of (?P<m>\d{1,20}) B"
    r"|clash with L1 buffers)"
)
_WGPU = re.compile(
    r"GL_OUT_OF_MEMORY|There is not enough memory left to execute the command"
    r"|[Nn]ot enough memory left(?: to request device|\.|\s{0,4}$)"
)
_GB = r"\d{1,9}(?:\.\d{1,4})?"
_OMLX = re.compile(
    rf"Prefill would require ~(?P<x>{_GB}) ?GB peak(?: \(current (?P<c>{_GB}) ?GB \+ KV\+SDPA "
    rf"(?P<p>{_GB}) ?GB[^)]{{0,60}}\))? but (?:the )?(?:\w{{1,20}} )?(?:prefill )?"
    rf"(?:ceiling|limit) is (?P<l>{_GB}) ?GB"
)
_OMLX_LOAD = re.compile(
    rf"Model '[^'\n]{{1,200}}' \((?P<s>{_GB}) ?(?P<su>[KMGTP]?B)\) exceeds max-model-memory "
    rf"\((?P<l>{_GB}) ?(?P<lu>[KMGTP]?B)\)"
)
_HR = r"\d{1,9}(?:\.\d{1,4})?[KMGTPE]?B?"
_TPU_RESERVE = re.compile(
    rf"Attempting to reserve (?P<req>{_HR}) at the bottom of memory\. That was not possible\. "
    rf"There are (?P<free>{_HR}) free, (?P<resv>{_HR}) reserved, and (?P<able>{_HR}) reservable"
)
_TPU_ALLOC = re.compile(
    rf"Attempting to allocate (?P<req>{_HR})\. That was not possible\. There are (?P<free>{_HR}) "
    rf"free\.(?: The largest contiguous region of free memory is (?P<largest>{_HR}) due to "
    r"fragmentation)?"
)
_GGML_POOL = re.compile(
    r"(?P<fn>ggml_\w{1,30}): not enough space in the (?:context's memory pool|buffer)"
    r"(?:[^(\n]{0,120}\(needed (?P<need>\d{1,20}), available (?P<avail>\d{1,20})\))?"
)
# TensorFlow eager (``tensorflow/python/eager/execute.py``: the op's status with `` [Op:<name>]``
# appended) naming an allocation: the class without its ``errors_impl.`` module path
_TF_EAGER = re.compile(r"ResourceExhaustedError: (?P<msg>[^\[]{1,300}) \[Op:(?P<op>\w{1,60})\]")
# the class as raised (a colon after it, or the end of a title), not an ``except`` clause
_TORCH_CLASS = re.compile(r"\btorch\.(?:cuda\.)?OutOfMemoryError(?::|\s{0,4}$)")
# THC's ``cuda runtime error (2) : out of memory`` as issue titles recase it; other recased
# "CUDA error: out of memory" forms are printed by many runtimes and stay with the fallback
_CUDA_TITLE = re.compile(r"\bcuda runtime error\s?(?:\(2\)\s?)?:\s?out of memory", re.I)
_TEXTURE = re.compile(
    r"Requested texture size \[(?P<w>\d{1,7})x(?P<h>\d{1,7})\] greater than WebGL maximum"
    r"(?: on this browser / GPU \[(?P<m>\d{1,7})x\d{1,7}\])?"
)
_WEBGL_LOST = re.compile(r"CONTEXT_LOST_WEBGL|Failed to compile fragment shader")
_METAL_OTHER = re.compile(
    r"Impacting Interactivity|ErrorImpactingInteractivity|Caused GPU (?:Timeout|Hang|Address "
    r"Fault) Error|kIOGPUCommandBufferCallbackError(?P<code>Timeout|Hang|PageFault)"
)
_GPT4ALL = re.compile(r"GPU loading failed \(out of VRAM\?\)", re.I)
_PREFILTER = needles_re(
    (
        "alloc fail",
        "ailed to cudaMalloc",
        "StackDeviceMemory",
        "device_helpers.cuh",
        "failed: out of memory",
        ": cudaErrorMemoryAllocation: out of memory",
        "failed on ",
        "TOutOfMemoryError",
        "ut of memory. ",
        "CL_",
        "Allocation Failure",
        "llocation failure",
        "ALLOCATION FAILURE",
        "ost Memory",
        "ost memory",
        "RMM",
        "out_of_memory",
        "pool size exceeded",
        "cudaStat",
        "OutOfMemoryError",
        "out of memory",
        "texture size",
        "CONTEXT_LOST_WEBGL",
        "fragment shader",
        "Interactivity",
        "Caused GPU",
        "kIOGPUCommandBufferCallbackError",
        "GPU loading failed",
        "Memory allocation error on worker",
        "StandardGpuResources",
        "fail type",
        "[Op:",
        "Unable to allocate",
        "maximum allowed buffer size",
        "Command buffer execution failed",
        "Not enough space to allocate",
        "Out of Memory",
        "Statically allocated",
        "That was not possible",
        "not enough space in the",
        "ot enough memory left",
        "GL_OUT_OF_MEMORY",
        "Prefill would require",
        "exceeds max-model-memory",
    )
)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _faiss(w: str, n: int) -> OomEvent | None:
    m = _FAISS_STD.search(w)
    if m is not None and "out of memory" in m["err"]:
        return _ev(
            "faiss",
            "gpu_alloc_failed",
            "faiss_alloc_fail",
            w,
            n,
            device=int(m["dev"]),
            requested_bytes=to_int(m["n"]),
            detail=m["type"],
        )
    m = _FAISS_MALLOC.search(w)
    if m is not None and (m["code"] == "2" or "out of memory" in m["err"]):
        return _ev(
            "faiss",
            "gpu_alloc_failed",
            "faiss_alloc_fail",
            w,
            n,
            device=int(m["dev"]) if m["dev"] else None,
            requested_bytes=to_int(m["n"]),
        )
    a = _FAISS_ASSERT.search(w) if m is None else None
    if a is not None:
        return _ev(
            "faiss",
            "gpu_alloc_failed",
            "faiss_alloc_fail",
            w,
            n,
            requested_bytes=to_int(a["n"]),
        )
    if _FAISS_STACK.search(w) and "cudaSuccess" in w:
        return _ev(
            "faiss", "gpu_alloc_failed", "faiss_alloc_fail", w, n, detail="TemporaryMemoryBuffer"
        )
    return None


def _gpu_libs(w: str, n: int) -> OomEvent | None:
    m = _XGB.search(w)
    if m is not None:
        return _ev("xgboost", "gpu_alloc_failed", "xgboost_device_oom", w, n)
    m = _XGB_ALLOC.search(w)
    if m is not None and "out of memory" in w:
        free, req = _XGB_FREE.search(w), _XGB_REQ.search(w)
        return _ev(
            "xgboost",
            "gpu_alloc_failed",
            "xgboost_device_oom",
            w,
            n,
            device=int(m["dev"]),
            free_bytes=to_int(free["n"]) if free else None,
            requested_bytes=to_int(req["n"]) if req else None,
        )
    m2 = _CATBOOST.search(w)
    if m2 is not None:
        return _ev(
            "catboost",
            "gpu_alloc_failed",
            "catboost_pool_oom",
            w,
            n,
            requested_bytes=decimal_to_bytes(m2["req"], _MIB),
            free_bytes=decimal_to_bytes(m2["free"], _MIB),
        )
    if _CATBOOST_CLASS in w:
        return _ev("catboost", "gpu_alloc_failed", "catboost_pool_oom", w, n)
    if _RMM_POOL.search(w) and ("RMM" in w or "rmm" in w or "bad_alloc" in w):
        return _ev("rmm", "alloc_limit", "rmm_pool_limit", w, n)
    if _RMM_OOM.search(w):
        return _ev("rmm", "gpu_alloc_failed", "rmm_out_of_memory", w, n)
    if _CL_DEVICE.search(w):
        return _ev("opencl", "gpu_alloc_failed", "opencl_mem_object_alloc", w, n)
    if _CL_HOST.search(w):
        return _ev("opencl", "host_alloc_failed", "opencl_out_of_host_memory", w, n)
    if _PADDLE_OLD.search(w):
        return _ev("paddle", "gpu_alloc_failed", "paddle_legacy_cuda_oom", w, n)
    m3 = _THRUST.search(w)
    if m3 is not None:
        return _ev("thrust", "gpu_alloc_failed", "thrust_oom", w, n, detail=m3["algo"])
    if _CUPY_RT.search(w):
        return _ev("cupy", "gpu_alloc_failed", "cupy_cuda_runtime_error", w, n)
    return None


def _hr_bytes(text: str | None) -> int | None:
    """``tsl::strings::HumanReadableNumBytes``: ``123B``, ``1.50K`` .. ``2.00E``, 1024-based."""
    if not text:
        return None
    t = text.removesuffix("B")
    if t and t[-1] in "KMGTPE":
        return decimal_to_bytes(t[:-1], 1 << (10 * ("KMGTPE".index(t[-1]) + 1)))
    return decimal_to_bytes(t, 1) if t else None


def _omlx_size(num: str, unit: str) -> int | None:
    """A size oMLX's ``format_size`` printed (``%.2f`` then B/KB/MB/GB/TB, steps of 1024)."""
    return decimal_to_bytes(num, 1 << (10 * "BKMGTP".index(unit[0])))


def _devices(w: str, n: int) -> OomEvent | None:
    m = _MLX_MAXBUF.search(w)
    if m is not None:
        return _ev(
            "mlx",
            "alloc_limit",
            "mlx_max_buffer_size",
            w,
            n,
            requested_bytes=to_int(m["n"]),
            allowed_bytes=to_int(m["m"]),
        )
    m = _MLX_MALLOC.search(w)
    if m is not None:
        return _ev("mlx", "gpu_alloc_failed", "mlx_malloc", w, n, requested_bytes=to_int(m["n"]))
    if _MLX_CB_OOM.search(w):
        return _ev("mlx", "gpu_runtime_oom", "mlx_metal_command_buffer_oom", w, n)
    m = _TT_OOM.search(w) or _TT_TEMPLATE.search(w)
    if m is None and (bare := _TT_BARE.search(w)) is not None:
        return _ev(
            "tt-metal",
            "gpu_alloc_failed",
            "tt_metal_bank_oom",
            w,
            n,
            buffer_name=bare["kind"],
            detail="the message's sizes are not in the text",
        )
    if m is not None:
        banks = to_int(m["banks"]) or 0
        per = to_int(m["per"])

        tt = m.groupdict()  # the template form (_TT_TEMPLATE) has no bank totals

        def across(field: str) -> int | None:
            v = to_int(tt[field]) if tt.get(field) else None
            return v * banks if v is not None and banks else None

        return _ev(
            "tt-metal",
            "gpu_alloc_failed",
            "tt_metal_bank_oom",
            w,
            n,
            requested_bytes=to_int(m["size"]),
            total_bytes=across("bank"),
            free_bytes=across("free"),
            allocated_bytes=across("alloc"),
            buffer_name=m["kind"],
            detail=(
                f"{per} B per bank; largest free block {tt['largest']} B"
                if tt.get("largest")
                else f"{per} B per bank"
            ),
        )
    m = _OMLX.search(w)
    if m is not None:
        cur = decimal_to_bytes(m["c"], 1 << 30) if m["c"] else None
        ceiling = decimal_to_bytes(m["l"], 1 << 30)
        return _ev(
            "omlx",
            "kv_capacity",
            "omlx_prefill_guard",
            w,
            n,
            requested_bytes=decimal_to_bytes(m["p"] or m["x"], 1 << 30),
            allocated_bytes=cur,
            total_bytes=ceiling,
            free_bytes=ceiling - cur if ceiling is not None and cur is not None else None,
            stage="prefill",
        )
    m = _OMLX_LOAD.search(w)
    if m is not None:
        return _ev(
            "omlx",
            "weights_capacity",
            "omlx_model_too_large",
            w,
            n,
            requested_bytes=_omlx_size(m["s"], m["su"]),
            total_bytes=_omlx_size(m["l"], m["lu"]),
            stage="load",
        )
    m = _WGPU.search(w)
    if m is not None:
        gl = "GL_OUT_OF_MEMORY" in w or "execute the command" in m.group(0)
        return _ev(
            "opengl" if gl else "wgpu",
            "gpu_alloc_failed",
            "opengl_out_of_memory" if gl else "wgpu_out_of_memory",
            w,
            n,
        )
    m = _TPU_RESERVE.search(w)
    if m is not None:
        return _ev(
            "tpu",
            "gpu_alloc_failed",
            "tpu_program_reserve",
            w,
            n,
            requested_bytes=_hr_bytes(m["req"]),
            free_bytes=_hr_bytes(m["free"]),
            detail=f"{m['able']} reservable",
            stage="program_load",
        )
    m = _TPU_ALLOC.search(w)
    if m is not None:
        return _ev(
            "tpu",
            "gpu_alloc_failed",
            "tpu_buffer_alloc",
            w,
            n,
            requested_bytes=_hr_bytes(m["req"]),
            free_bytes=_hr_bytes(m["free"]),
            detail=f"largest free region {m['largest']}" if m["largest"] else None,
        )
    return None


def _not_capacity(w: str, n: int) -> OomEvent | None:
    m0 = _TT_CB.search(w)
    if m0 is not None:
        return _ev(
            "tt-metal",
            "alloc_limit",
            "tt_metal_circular_buffers",
            w,
            n,
            detail=f"{m0['n']} B > {m0['m']} B of L1" if m0["n"] else "clash with L1 buffers",
        )
    m1 = _GGML_POOL.search(w)
    if m1 is not None:
        return _ev(
            "ggml",
            "alloc_limit",
            "ggml_fixed_pool",
            w,
            n,
            detail=f"{m1['fn']}: needed {m1['need']}, available {m1['avail']}"
            if m1["need"]
            else m1["fn"],
        )
    m = _TEXTURE.search(w)
    if m is not None:
        return _ev(
            "tfjs",
            "alloc_limit",
            "tfjs_texture_size",
            w,
            n,
            detail=f"[{m['w']}x{m['h']}] > [{m['m']}x{m['m']}]" if m["m"] else None,
        )
    if _WEBGL_LOST.search(w):
        return _ev("tfjs", "device_lost", "webgl_context_lost", w, n)
    if _METAL_OTHER.search(w):
        return _ev("metal", "device_lost", "metal_command_buffer_watchdog", w, n)
    if _GPT4ALL.search(w):
        return _ev("gpt4all", "gpu_load_failed", "gpt4all_gpu_load_failed", w, n, stage="load")
    return None


def _torch_fragment(w: str, n: int) -> OomEvent | None:
    m = _TF_EAGER.search(w)
    if m is not None and ("alloc" in m["msg"] or "OOM" in m["msg"]):
        return _ev(
            "tensorflow",
            "resource_exhausted",
            "tf_resource_exhausted_class",
            w,
            n,
            detail=f"[Op:{m['op']}]",
        )
    if _TORCH_CLASS.search(w) and "except" not in w:
        return _ev("pytorch", "cuda_oom", "pytorch_partial", w, n)
    if _CUDA_TITLE.search(w):
        return _ev("pytorch", "cuda_error_oom", "cuda_error_out_of_memory", w, n, stage="driver")
    return None


def _event(lines: Lines, i: int) -> OomEvent | None:
    raw = lines.text[i]
    wrapped = "alloc" in raw or "StandardGpuResources" in raw or "Memory allocation error" in raw
    # tt-metal's template form has its four arguments on the four lines below it (_TT_TEMPLATE)
    rows = 5 if "{} B {} buffer" in raw else 4
    w = window(lines, i, max_lines=rows) if wrapped else lines.cleaned(i)
    n = lines.number[i]
    for read in (_faiss, _gpu_libs, _devices, _not_capacity, _torch_fragment):
        ev = read(w, n)
        if ev is not None:
            return ev
    return None


def parse_libs(lines: Lines) -> list[OomEvent]:
    """Events of the wordings in the module docstring (at most one per line, in log order).

    Never raises. The caller runs this only when no other parser found an event.
    """
    return scan_events(lines, _PREFILTER, _event, repeat=_rewrapped)


def _rewrapped(last: OomEvent, ev: OomEvent) -> bool:
    """The same wrapped message, read again from its next line."""
    return (
        last.format == ev.format
        and last.requested_bytes == ev.requested_bytes
        and ev.line - last.line <= 4
    )

"""Engine builders' and sparse runtimes' allocation failures read by their status codes (issue 9,
after heldout20).

The dispatcher runs this module after ``parse_frameworks`` and before ``parse_backends``, only
when no other parser found an event. Each family is the runtime's own message, cited from its
source:

* TensorRT's plugin and sample error macros (``NVIDIA/TensorRT:plugin/common/checkMacrosPlugin.cpp``
  ``TRTException::log``, the same text in TensorRT 7's closed ``rtSafe`` runtime): ``<file>
  (<line>) - <Name> Error in <function>: <status> (<message>)``. The status is the library's own
  enum, so the code alone names an allocation failure even where the message is cut or missing:
  ``Cuda`` 2 (``cudaErrorMemoryAllocation``, ``cuda_runtime_api.h``), ``Cudnn`` 2
  (``CUDNN_STATUS_ALLOC_FAILED``, ``cudnn.h``), ``cuBLAS`` 3 (``CUBLAS_STATUS_ALLOC_FAILED``,
  ``cublas_api.h``). Other codes (``Cuda Error in execute: 700``, an illegal address) are not
  memory.
* TensorRT's builder when no tactic fits its workspace (closed source, ``optimizer.cpp``
  ``computeCosts``; the wording as TensorRT prints it): TRT 7 ``Internal error: could not find any
  implementation for node <n>, try increasing the workspace size with
  IBuilder::setMaxWorkspaceSize()``, TRT 8.4+ ``Error Code 10: Internal Error (Could not find any
  implementation for node <n> due to insufficient workspace. See verbose log for requested
  sizes.)`` -- the workspace is a memory pool (since 8.4 the device's memory by default); the same
  sentence without the workspace (an unsupported layer) is not memory.
* TensorRT's Myelin compiler status (closed source; the builder prints ``Error Code 1: Myelin
  (<status> : <message>)`` with Myelin's own status name, as in ``myelinVersionMismatch :
  Compiled against cuBLAS ...``, NVIDIA/TensorRT issues): ``myelinExceededMemBudget : Exceeded
  memory budget``, the fused graph needs more than the builder's memory budget (its workspace /
  memory-pool limit); the status name alone decides where the message is cut ("... : Exceed").
* PowerInfer's GPU split (``SJTU-IPADS/PowerInfer:llama.cpp``, ``llm_load_sparse_model_tensors``):
  ``GGML_ASSERT(vram_allocated_bytes < vram_capacity)`` after the buffered tensor allocator placed
  the hot neurons' weights; from commit 9d72668 ``GGML_ASSERT_DBG(vram_allocated_bytes <=
  vram_capacity, "vram_allocated_bytes=%ld, vram_capacity=%ld", ...)``, which prints both numbers
  (the capacity is the ``--vram-budget`` or the device's free memory): the weights placed on the
  GPU exceed the VRAM it may use.
* TensorFlow Lite for Microcontrollers' tensor arena (``tensorflow/tflite-micro:tensorflow/lite/
  micro/arena_allocator/single_arena_buffer_allocator.cc`` ``ResizeBuffer``: ``Failed to resize
  buffer. Requested: %u, available %u, missing: %u``, and ``AllocatePersistentBuffer``'s ``Failed
  to allocate tail memory. ...``; ``micro_allocator.cc`` ``CommitStaticMemoryPlan``: ``Arena size
  is too small for all buffers. Needed %u but only %u was available.``): the arena the
  application gave the interpreter is smaller than the model's plan (the request and what was
  left are read, in bytes).
* MNN's CPU backend and weight decoder (``alibaba/MNN:source/backend/cpu/CPUDeconvolution.cpp``
  ``makeResource``, ``source/core/IDSTDecoder.hpp``): ``MNN_ERROR("Alloc memory error for
  %s\n")`` when ``onAcquireBuffer`` or an ``AutoStorage`` of host memory returned nothing (the
  Out-of-memory-when-acquired wording of the other backends is ``parse_backends``').

* TensorRT's builder when a plugin's scratch need is above the workspace pool (closed source;
  the wording as TensorRT 8.6+ prints it through ``IBuilder::buildSerializedNetwork``, e.g.
  NVIDIA/TensorRT-LLM#2688): ``Internal error: plugin node <n> requires <N> bytes of scratch
  space, but only <M> is available. Try increasing the workspace size with
  IBuilderConfig::setMemoryPoolLimit().`` The request and the pool are read, in bytes.
* TensorRT-LLM's paged KV block pool (``NVIDIA/TensorRT-LLM:cpp/tensorrt_llm/batch_manager/
  kvCacheManager.cpp`` ``BlockManager::getFreeBlock``: ``TLLM_CHECK_WITH_INFO(hasFreeBlocks(),
  "Can't allocate new blocks. No free blocks left.")``): a running sequence needed one more KV
  block and the pool (``kv_cache_free_gpu_mem_fraction`` of the memory left after the engine)
  had none.
* GPUStack's resource-fit scheduler (``gpustack/gpustack:gpustack/policies/candidate_selectors/
  vllm_resource_fit_selector.py``, the logger name it prints; the messages as its tests expect
  them, ``tests/policies/candidate_selectors``): ``- The model requires approximately <R> GiB of
  VRAM ...`` then ``- The current available GPU only has <A> GiB allocatable VRAM (<P>%).`` or
  ``... each GPU needs <U>% of allocatable VRAM``: the scheduler found no GPU whose allocatable
  VRAM (its total minus what other instances claim) holds the model at the vLLM utilization. The
  three sizes and the two shares are read from the lines around the one that fails.
* Windows' ``STATUS_NO_MEMORY`` (``ntstatus.h``: ``0xC0000017``, "{Not Enough Quota} Not enough
  virtual memory or paging file quota is available to complete the specified operation"), as a
  process exit code (``-1073741801`` signed, ``3221225495`` unsigned) or by name: the process could
  not commit host memory. ``0xC0000005`` (an access violation) is not memory.

Every pattern is anchored on a literal and bounded: linear time on any line.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.sizes import to_bytes, to_float, to_int
from oomkit.diagnose.text import Lines, needles_re
from oomkit.validate import MAX_BYTES

__all__ = ["parse_engines"]

# "<Name> Error in <function>: <status>" then " (<message>)", the end of the line, or a cut
_TRT_STATUS = re.compile(
    r"\b(?P<lib>Cuda|CUDA|Cudnn|cuDNN|CUDNN|cuBLAS|Cublas|CUBLAS) Error in "
    r"(?P<fn>[\w:~<>.]{1,160}): (?P<code>\d{1,4})(?![\d.])(?: ?\((?P<msg>[^)\n]{0,80})\)?)?"
)
#: the allocation-failure status of each library's enum
_ALLOC_CODE = {"cuda": 2, "cudnn": 2, "cublas": 3}
_POWERINFER = re.compile(
    r"vram_allocated_bytes ?<=? ?vram_capacity\b|"
    r"vram_allocated_bytes ?= ?(?P<a>\d{1,20}), ?vram_capacity ?= ?(?P<c>\d{1,20})"
)
_TRT_NO_TACTIC = re.compile(
    r"[Cc]ould not find any implementation for node (?P<node>.{1,160}?)"
    r"(?:, try increasing the workspace size| due to insufficient workspace)"
)
_MYELIN_BUDGET = re.compile(r"\bmyelinExceededMemBudget\b")
_MNN_ALLOC = re.compile(r"(?<![A-Za-z])Alloc memory error for (?P<what>\w[\w ]{0,60})")
_TFLM = re.compile(
    r"Failed to (?:resize buffer|allocate tail memory)\. Requested: ?(?P<r>\d{1,20}), "
    r"available:? ?(?P<a>\d{1,20})|"
    r"Arena size is too small for all buffers\. ?Needed (?P<n>\d{1,20}) but only "
    r"(?P<o>\d{1,20}) was available"
)
# the figures as any token (docperf18): one no builder prints ("-5", "nan", 10^30) is refused
# after the match (_stated), not a reason to miss the message
_TRT_SCRATCH = re.compile(
    r"requires (?P<r>\S{1,40}) bytes of scratch space, but only (?P<a>\S{1,40}) (?:bytes )?is "
    r"available"
)
_TRTLLM_NO_BLOCKS = re.compile(r"Can(?:'|no)t allocate new blocks\. ?No free blocks left")
# the KV manager's start-up lines (kvCacheManager.cpp: "Memory usage when calculating max tokens
# in paged kv cache: total: %0.2f GiB, available: %0.2f GiB", "Max KV cache pages per sequence:
# %d", "Number of tokens per block: %d.", "[MemUsageChange] Allocated %0.2f GiB for max tokens in
# paged KV cache (%d).")
# (the figures as any word: an absurd one is refused and named, _trtllm_pool)
_TRTLLM_KV_LINES = re.compile(
    r"max tokens in paged kv cache: total: (?P<t>-?[\w.]{1,40}) GiB, available: "
    r"(?P<a>-?[\w.]{1,40}) GiB|"
    r"Allocated (?P<k>-?[\w.]{1,40}) GiB for max tokens in paged KV cache "
    r"\((?P<n>-?[\w.]{1,40})\)|"
    r"Max KV cache pages per sequence: (?P<p>-?\w{1,40})|"
    r"Number of tokens per block: (?P<b>-?\w{1,40})"
)
_KV_NAMES = {
    "t": "total",
    "a": "available",
    "k": "for the KV cache",
    "n": "tokens in the KV cache",
    "p": "KV cache pages per sequence",
    "b": "tokens per block",
}
#: how far before the failure the start-up lines are read (a serving log runs long)
_TRTLLM_LOOKBACK = 5000
_GPUSTACK_FAIL = re.compile(
    r"only has (?P<a>\d{1,6}(?:\.\d{1,3})?) GiB allocatable VRAM"
    r"(?: \((?P<ap>\d{1,3}(?:\.\d{1,2})?)%\))?|"
    r"each GPU needs (?P<u>\d{1,3}(?:\.\d{1,2})?)% of allocatable VRAM|"
    r"largest available worker has (?P<w>\d{1,6}(?:\.\d{1,3})?) GiB allocatable VRAM, "
    r"(?P<s>\d{1,3})/(?P<t>\d{1,3}) of GPUs meet the VRAM utilization ratio, providing "
    r"(?P<p>\d{1,6}(?:\.\d{1,3})?) GiB|"
    # docpost22: the same diagnostic without the ratio (vllm_resource_fit_selector.py:601 when
    # the utilization is 0, sglang_resource_fit_selector.py:651) or with the worker's GPU count
    # (custom_backend_resource_fit_selector.py:309; gpustack@47277d79)
    r"largest available worker has (?P<w0>\d{1,6}(?:\.\d{1,3})?) GiB allocatable VRAM"
    r"(?: across (?P<g>\d{1,4}) GPUs)?\."
)
_GPUSTACK_NEEDS = re.compile(
    r"The model requires approximately (?P<r>\d{1,6}(?:\.\d{1,3})?) GiB of VRAM"
)
# the decimal forms only as a code (a size of 3221225495 bytes is not a status)
_NT_NO_MEMORY = re.compile(
    r"\b0x[Cc]0000017\b|\bSTATUS_NO_MEMORY\b|"
    r"(?i:code|status|returned|exited with)\W{0,4}(?:-1073741801|3221225495)\b"
)
_PREFILTER = needles_re(
    (
        " Error in ",
        "vram_allocated_bytes",
        "Alloc memory error for",
        "Requested: ",
        "Arena size",
        "any implementation for node",
        "myelinExceededMemBudget",
        "bytes of scratch space",
        "No free blocks left",
        "allocatable VRAM",
        "0000017",
        "1073741801",
        "3221225495",
        "STATUS_NO_MEMORY",
    )
)


def _stated(v: int | None, *, zero: bool = True) -> int | None:
    """A stated count that can be one: not negative, not above MAX_BYTES (no device holds an
    EiB), not zero where ``zero`` is false (a 0-byte request never fails), as parse_torch's
    ``size_of``; ``None`` otherwise (and for text that is no number)."""
    return v if v is not None and 0 <= v <= MAX_BYTES and (zero or v) else None


def _ev(kind: str, fmt: str, runtime: str, line: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=line[:600], **kw)


def _event(line: str, n: int) -> OomEvent | None:
    if " Error in " in line:
        m = _TRT_STATUS.search(line)
        if m is not None and _ALLOC_CODE[m["lib"].lower()] == int(m["code"]):
            return _ev(
                "cuda_error_oom" if m["lib"].lower() == "cuda" else "library_alloc_failed",
                "trt_status_alloc_failed",
                "tensorrt",
                line,
                n,
                detail=f"{m['lib']} status {m['code']} in {m['fn']}"[:120],
            )
    if "any implementation for node" in line:
        m5 = _TRT_NO_TACTIC.search(line)
        if m5 is not None:
            return _ev(
                "workspace_alloc_failed",
                "trt_no_tactic_workspace",
                "tensorrt",
                line,
                n,
                stage="compile",
                detail=m5["node"].strip()[:120],
            )
    if "myelinExceededMemBudget" in line and _MYELIN_BUDGET.search(line) is not None:
        return _ev(
            "workspace_alloc_failed",
            "trt_myelin_mem_budget",
            "tensorrt",
            line,
            n,
            stage="compile",
            detail="Myelin: exceeded the builder's memory budget",
        )
    if "vram_allocated_bytes" in line:
        m2 = _POWERINFER.search(line)
        if m2 is not None:
            return _ev(
                "gpu_alloc_failed",
                "powerinfer_vram_capacity_assert",
                "llama.cpp",
                line,
                n,
                requested_bytes=to_int(m2["a"]) if m2["a"] else None,
                allowed_bytes=to_int(m2["c"]) if m2["c"] else None,
                stage="weights",
            )
    if "Requested: " in line or "Arena size" in line:
        m4 = _TFLM.search(line)
        if m4 is not None:
            return _ev(
                "host_oom",
                "tflm_arena_too_small",
                "tflite-micro",
                line,
                n,
                requested_bytes=to_int(m4["r"] or m4["n"]),
                allowed_bytes=to_int(m4["a"] or m4["o"]),
                stage="weights" if m4["n"] else None,
            )
    if "Alloc memory error for" in line:
        m3 = _MNN_ALLOC.search(line)
        if m3 is not None:
            return _ev(
                "host_oom",
                "mnn_alloc_memory_error",
                "mnn",
                line,
                n,
                detail=m3["what"].strip()[:80],
            )
    if "bytes of scratch space" in line:
        m6 = _TRT_SCRATCH.search(line)
        if m6 is not None:
            need, pool = _stated(to_int(m6["r"]), zero=False), _stated(to_int(m6["a"]))
            bad = [f"{m6['r']} bytes of scratch space"] if need is None else []
            bad += [f"{m6['a']} bytes available"] if pool is None else []
            return _ev(
                "workspace_alloc_failed",
                "trt_scratch_space",
                "tensorrt",
                line,
                n,
                stage="compile",
                requested_bytes=need,
                allowed_bytes=pool,
                ignored_sizes=", ".join(bad) or None,
            )
    if "No free blocks left" in line and _TRTLLM_NO_BLOCKS.search(line) is not None:
        return _ev("kv_blocks_exhausted", "trtllm_kv_no_free_blocks", "tensorrt-llm", line, n)
    if (
        "0000017" in line or "1073741801" in line or "3221225495" in line or "NO_MEMORY" in line
    ) and (_NT_NO_MEMORY.search(line) is not None):
        return _ev("host_oom", "windows_status_no_memory", "windows", line, n)
    return None


def _gpustack(lines: Lines, i: int) -> OomEvent | None:
    """GPUStack's resource-fit failure, with the sizes of the lines around it (module docstring)."""
    line = lines.text[i]
    if "allocatable VRAM" not in line or _GPUSTACK_FAIL.search(line) is None:
        return None
    near = "\n".join(lines.text[max(0, i - 3) : i + 3])
    avail = share = util = worker = gpus = None
    for m in _GPUSTACK_FAIL.finditer(near):
        gpus = gpus or m["g"]
        # the largest worker's line: what its GPUs that meet the ratio provide (allocatable x
        # utilization x met/total, vllm_resource_fit_selector.py's effective_vram) is what the
        # claim is compared with; the GPUs that miss the ratio are partly held by others
        avail = avail or m["a"] or m["p"] or m["w0"]
        share = share or m["ap"]
        util = util or m["u"]
        worker = worker or (m["w"] and (m["s"], m["t"], m["w"]))
    need = _GPUSTACK_NEEDS.search(near)
    detail = f"allocatable {share}% of the GPU" if share else None
    if worker:
        detail = f"{worker[0]}/{worker[1]} GPUs meet the ratio on a {worker[2]} GiB worker"
    if gpus == "0" or (avail is not None and to_float(avail) == 0):
        # "0.0 GiB allocatable VRAM across 0 GPUs": the scheduler counted no GPU at all (the
        # guard custom_backend_resource_fit_selector.py:303-306 added against this very text)
        detail = f"no allocatable VRAM: {avail} GiB across {gpus or 'the'} GPUs"
    return OomEvent(
        runtime="gpustack",
        kind="scheduler_no_fit",
        format="gpustack_resource_fit",
        line=lines.number[i],
        text=line[:600],
        stage="weights",
        requested_bytes=to_bytes(need["r"], "GiB", "gpustack") if need else None,
        free_bytes=to_bytes(avail, "GiB", "gpustack") if avail else None,
        gpu_memory_utilization=(to_float(util) or 0) / 100 if util else None,
        detail=detail,
    )


def _trtllm_pool(lines: Lines, i: int, e: OomEvent) -> OomEvent:
    """The KV pool's sizes from the start-up lines before the failure (the latest of each)."""
    got: dict[str, str] = {}
    for line in reversed(lines.text[max(0, i - _TRTLLM_LOOKBACK) : i]):
        if "KV" not in line and "kv cache" not in line and "per block" not in line:
            continue
        m = _TRTLLM_KV_LINES.search(line)
        if m is not None:
            for k, v in m.groupdict().items():
                if v is not None:
                    got.setdefault(k, v)

    bad: list[str] = []

    def stated(k: str, v: int | None, unit: str) -> int | None:
        if k in got and _stated(v) is None:
            bad.append(f"{got[k]}{unit} {_KV_NAMES[k]}")  # an absurd figure: named, not used
        return _stated(v)

    def gib(k: str) -> int | None:
        return stated(k, to_bytes(got[k], "GiB", "tensorrt-llm") if k in got else None, " GiB")

    def num(k: str) -> int | None:
        return stated(k, to_int(got[k]) if k in got else None, "")

    total, free, pool = gib("t"), gib("a"), gib("k")
    tokens, pages, block = num("n"), num("p"), num("b")
    return replace(
        e,
        total_bytes=total,
        free_bytes=free,
        available_kv_bytes=pool,
        kv_capacity_tokens=tokens,
        max_model_len=pages * block if pages and block else None,
        ignored_sizes=", ".join(bad) or None,
    )


def _at(lines: Lines, i: int) -> OomEvent | None:
    e = _event(lines.text[i], lines.number[i])
    if e is not None and e.format == "trtllm_kv_no_free_blocks":
        return _trtllm_pool(lines, i, e)
    return e or _gpustack(lines, i)


def _same(last: OomEvent, new: OomEvent) -> bool:
    # GPUStack states one failure in two or three lines (needs %, only has ... allocatable)
    return last.format == new.format == "gpustack_resource_fit" and new.line - last.line <= 3


def parse_engines(lines: Lines) -> list[OomEvent]:
    """Events of the families in the module docstring (every match, in log order). Never raises.

    The caller runs this only when no specific parser found an event.
    """
    return scan_events(lines, _PREFILTER, _at, repeat=_same)

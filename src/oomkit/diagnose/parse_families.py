"""More message families seen on unseen reports (issue 9), and log facts that decide a cause.

Events (each only when the message is the family's own wording):

* KV-pool sizing messages of serving engines that are neither vLLM's nor SGLang's
  ``--mem-fraction-static`` line: ``Not enough memory for KV cache, try reducing --num-pages``
  (FreeToken / SGLang-style page pools), ``insufficient memory for the KV cache``.
* ggml-vulkan ``Failed to allocate pinned memory`` (no size; ``ggml-vulkan.cpp``
  ``ggml_vk_host_malloc``: the driver has too little host-visible memory; llama.cpp falls back
  to pageable memory).
* Metal ``Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErr...`` cut off before
  ``OutOfMemory`` (the same command-buffer failure as the full wording).
* MLC/TVM relax VM static memory plan: ``storage allocation failure, attempted to allocate N at
  offset O in region that is R bytes`` (``relax_vm/memory_manager.cc``): a buffer planned at
  compile time for the configured context/prefill length is smaller than the input needs.
* cuBLAS handle creation outside PyTorch (MXNet ``Create cublas handle failed``, ``cublasCreate
  failed``): cuBLAS allocates its workspace first, so this is an OOM in disguise.
* numpy ``MemoryError: Unable to allocate X for an array with shape ...`` (host RAM).
* LM Studio's load guardrail (``insufficient system resources``, ``Not enough resources to load
  the model``), with the requirement it estimated when the message states it.
* transformers ``The current `device_map` had weights offloaded to the disk``: the weights did
  not fit the GPU (and CPU) memory given to ``device_map``.

Facts (``LogContext``): the PyTorch DataParallel warning ``There is an imbalance between your
GPUs`` (``torch/nn/parallel/data_parallel.py`` ``_check_balance``) and a driver's per-allocation
limit (ggml-vulkan ``Requested buffer size exceeds device (memory allocation|buffer size)
limit``: Vulkan's ``maxMemoryAllocationSize`` / ``maxBufferSize``, not the total memory).
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.sizes import to_bytes, to_int
from oomkit.diagnose.text import Lines, needles_re, size_of, sz

__all__ = ["parse_families"]

_KV_NOMEM = re.compile(
    r"(?:not enough|insufficient) (?:gpu |device )?memory (?:for|to allocate) (?:the )?"
    r"kv[ -]?cache",
    re.IGNORECASE,
)
_PAGES = re.compile(r"--(?P<flag>num-pages|num-tokens|max-total-tokens|context-length)")
_VK_PINNED = re.compile(r"Failed to allocate pinned memory", re.IGNORECASE)
_METAL_CUT = re.compile(r"Insufficient Memory \(0{0,8}8:kIOGPUCommandBuffer")
_MLC_PLAN = re.compile(
    r"storage allocation failure, attempted to allocate (?P<n>\d{1,20}) at offset \d{1,20} in "
    r"region that is (?P<r>\d{1,20}) ?bytes"
)
_CUBLAS = re.compile(r"Create cublas handle failed|cublasCreate(?:_v2)? failed", re.IGNORECASE)
_NUMPY = re.compile(
    r"MemoryError: Unable to allocate " + sz("req", "bytes|KiB|MiB|GiB|TiB|B") + r" for an array"
)
_LMS = re.compile(
    r"insufficient system resources|Not enough resources to load the model", re.IGNORECASE
)
_LMS_NEED = re.compile(r"requires approximately (?P<v>NaN|\d{1,9}(?:\.\d{1,4})?) ?(?P<u>GB|GiB)?")
_DISK_OFFLOAD = re.compile(r"`?device_map`? had weights offloaded to the disk")
_IMBALANCE = "There is an imbalance between your GPUs"
_ALLOC_LIMIT = re.compile(
    r"exceeds (?:the )?device (?:memory allocation|buffer size|max(?:imum)? buffer) (?:size )?"
    r"limit",
    re.IGNORECASE,
)
# training/eval progress before the failure: tqdm "k/N [..., x it/s]" and "Epoch E" (loading and
# download bars excluded)
_TQDM = re.compile(r"\b(?P<k>\d{1,9})/(?P<n>\d{1,9}) \[")
_EPOCH = re.compile(r"\b[Ee]poch:? ?\[?(?P<e>\d{1,6})\b")
_NOT_STEPS = ("Loading", "shards", "Fetching", "Downloading", "download", "Compiling")
_NEEDLES = (
    "it/s",
    "s/it",
    "poch",
    "KV cache",
    "kv cache",
    "KV-cache",
    "kv_cache",
    "pinned memory",
    "kIOGPUCommandBuffer",
    "storage allocation failure",
    "ublas",
    "Unable to allocate",
    "resources",
    "offloaded to the disk",
    _IMBALANCE,
    "limit",
)
_PREFILTER = needles_re(_NEEDLES)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _event(line: str, n: int) -> OomEvent | None:
    m = _KV_NOMEM.search(line)
    if m is not None:
        flags = sorted({f.group("flag") for f in _PAGES.finditer(line)})
        return _ev(
            "serving",
            "no_kv_pool",
            "kv_pool_not_enough_memory",
            line,
            n,
            stage="kv_cache",
            detail=", ".join("--" + f for f in flags) or None,
        )
    if "pinned memory" in line and _VK_PINNED.search(line):
        return _ev(
            "llama.cpp",
            "host_alloc_failed",
            "llama.cpp_pinned_alloc",
            line,
            n,
            buffer_name="Vulkan_Host" if "vulkan" in line.lower() else "Host",
            detail="pinned host memory",
        )
    if "OutOfMemory" not in line and _METAL_CUT.search(line):
        return _ev(
            "llama.cpp",
            "gpu_runtime_oom",
            "metal_command_buffer",
            line,
            n,
            stage="runtime",
            buffer_name="MTL0",
        )
    m2 = _MLC_PLAN.search(line)
    if m2 is not None:
        return _ev(
            "mlc-llm",
            "static_plan_exceeded",
            "mlc_storage_allocation_failure",
            line,
            n,
            requested_bytes=to_int(m2.group("n")),
            total_bytes=to_int(m2.group("r")),
            stage="runtime",
        )
    m3 = _CUBLAS.search(line)
    if m3 is not None:
        return _ev(
            "cuda",
            "library_alloc_failed",
            "cublas_create_failed",
            line,
            n,
            detail=m3.group(0),
            stage="library_workspace",
        )
    m4 = _NUMPY.search(line)
    if m4 is not None:
        return _ev(
            "numpy",
            "host_oom",
            "numpy_memory_error",
            line,
            n,
            requested_bytes=size_of(m4, "req", "numpy"),
        )
    if _LMS.search(line):
        need = _LMS_NEED.search(line)
        value = need.group("v") if need else None
        return _ev(
            "lmstudio",
            "guardrail",
            "lmstudio_guardrail",
            line,
            n,
            stage="startup",
            requested_bytes=to_bytes(value, need.group("u") or "GB", "lmstudio")
            if need and value and value != "NaN"
            else None,
            detail="estimate NaN" if value == "NaN" else None,
        )
    if _DISK_OFFLOAD.search(line):
        fmt = "hf_device_map_disk_offload"
        return _ev("transformers", "dispatch_offload", fmt, line, n, stage="weights")
    return None


def parse_families(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """Find the families listed in the module docstring and the deciding log facts.

    Returns:
        Events and context facts (``imbalance_warning``, ``allocation_limit``,
        ``completed_steps``). Never raises.
    """
    events: list[OomEvent] = []
    facts: dict[str, Any] = {}
    for i, raw in enumerate(lines.text):
        if not _PREFILTER.search(raw):
            continue
        line = lines.cleaned(i)
        if _IMBALANCE in line:
            facts.setdefault("imbalance_warning", line[:300])
        if "limit" in line and _ALLOC_LIMIT.search(line):
            facts.setdefault("allocation_limit", line[:300])
        ev = _event(line, lines.number[i])
        if ev is not None:
            events.append(ev)
        elif ("/s" in line or "poch" in line) and not any(w in line for w in _NOT_STEPS):
            _steps(line, facts)
    return events, facts


def _steps(line: str, facts: dict[str, Any]) -> None:
    """Completed steps shown by a progress bar or an epoch counter (the largest seen)."""
    done = [int(m.group("k")) for m in _TQDM.finditer(line) if int(m.group("k")) <= int(m["n"])]
    # "Epoch E" counts from 0 or 1: E >= 2 means at least one whole epoch ran either way
    done += [int(m.group("e")) - 1 for m in _EPOCH.finditer(line)]
    if done and max(done) > (facts.get("completed_steps") or 0):
        facts["completed_steps"] = max(done)

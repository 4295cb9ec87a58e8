"""Runtimes' own memory-pressure warnings, and a paged-KV shortfall, pasted alone (issue 9).

Users paste the last memory line their run printed. When that line is a runtime's *warning* (the
allocation it names succeeded, or was retried), nothing failed in the text, but the paste is not
"nothing found" either: it is a memory-pressure report with a size. Read here, as the last
fallback before the memory-use grammar (``oomkit.diagnose.parse`` runs it only where no other
parser found an event), as one ``memory_report`` event (``detail="pressure"``) whose numbers are
what the warning states; :mod:`oomkit.diagnose.rules_warnings` says what each one means:

* **TensorFlow's BFC retry warning** (``tensorflow/tensorflow:tensorflow/core/common_runtime/
  bfc_allocator.cc``, ``BFCAllocator::AllocateRawInternal`` when the caller allows a retry: the
  log names its own line, ``bfc_allocator.cc:215/217/219/237/239/246/271`` across TF 1.x-2.x):
  "Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.15GiB [with freed_by_count=0].
  The caller indicates that this is not a failure, but may mean that there could be performance
  gains if more memory were available." (TF 1.0-1.4: "Ran out of memory trying to allocate ...").
  The requested size is read; where the same log holds a real failure, ``parse_other`` reads the
  failure and this module never runs;
* **gperftools' large-allocation report** (``gperftools/gperftools:src/tcmalloc.cc``
  ``ReportLargeAlloc``: ``"tcmalloc: large alloc %zu bytes == %p @ "``, printed for every
  allocation over ``TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD``, 1 GiB by default, raised by 1/8
  after each report): with a non-null pointer the host allocation succeeded (``(nil)`` is the
  failure, read by ``parse_legacy``); the size is read (the largest of the pasted reports);
* **TensorFlow's CPU allocator warning** (``tensorflow/tensorflow:tensorflow/core/framework/
  cpu_allocator_impl.cc``, ``CPUAllocator::AllocateRaw``: "Allocation of %d exceeds 10%% of
  [free] system memory."): one host allocation over a tenth of the RAM, which succeeded.

* **TensorRT's builder workspace warning** (NVIDIA TensorRT, closed source; the builder logs it
  when tactics need more scratch memory than the workspace limit set by
  ``IBuilderConfig::setMaxWorkspaceSize`` / ``setMemoryPoolLimit(MemoryPoolType::kWORKSPACE)``):
  "Some tactics do not have sufficient workspace memory to run. Increasing workspace size may
  increase performance, please check verbose output." The engine still builds, without those
  tactics.

* **Forge's model-load plan** (``lllyasviel/stable-diffusion-webui-forge:backend/
  memory_management.py`` ``load_models_gpu``: ``estimated_remaining_memory = current_free_mem -
  model_require - memory_for_inference``, printed "[Memory Management] Target: %s, Free GPU: %.2f
  MB, Model Require: %.2f MB, Previously Loaded: %.2f MB, Inference Require: %.2f MB, Remaining:
  %.2f MB, "; below zero Forge switches to LOW_VRAM and keeps part of the model in CPU memory,
  "CPU Swap Loaded"): read only where Remaining is negative, with the free VRAM and what the
  model plus the inference need (``detail="does_not_fit"``; Forge's "MB" is bytes / 2**20).

And one runtime's failure that states its shortfall in pages, not bytes:

* **ExLlamaV2's dynamic generator** (``turboderp/exllamav2:exllamav2/generator/dynamic.py``,
  ``ExLlamaV2DynamicJob`` before it is queued: ``assert total_pages <= max_pages, f"Job requires
  {total_pages} pages (only {max_pages} available) and cannot be enqueued. Total cache allocated
  is {max_pages} * {page_size} = {max_total_tokens} tokens"``): the request needs more KV-cache
  pages than the whole paged cache holds; read as a ``kv_cache`` event with the cache's tokens.

And one app's pre-flight check, logged before the load fails:

* **Jan's model-support check** (``janhq/jan:src-tauri/plugins/tauri-plugin-llamacpp/src/gguf/
  commands.rs`` ``is_model_supported``): it logs ``"isModelSupported: Total memory requirement:
  {} for {}; Got kvCacheSize: {} from BE"`` (the GGUF file's size plus the KV-cache estimate at
  the context) and ``"Total VRAM reported/calculated (in bytes): {}"``, then calls the model
  Green only when the requirement fits the VRAM less ``RESERVE_BYTES = 2288490189``; above it,
  the model is split with the CPU or refused. Read as a ``memory_report``
  (``detail="does_not_fit"``) where the requirement is over that usable VRAM, with both sizes.

And one loader's lock that failed, which is no shortage of memory:

* **llama.cpp's mlock warning** (docpost30; ``ggml-org/llama.cpp:src/llama-mmap.cpp``
  ``llama_mlock::impl::raw_lock``, ``llama.cpp`` / ``llama-util.h`` in 2023 builds):
  ``LLAMA_LOG_WARN("warning: failed to mlock %zu-byte buffer (after previously locking %zu bytes):
  %s\n%s", size, this->size, strerror(errno), suggest ? MLOCK_SUGGESTION : "")``, with
  ``MLOCK_SUGGESTION`` = "Try increasing RLIMIT_MEMLOCK ('ulimit -l' as root).\n" (RLIMIT_MLOCK
  in early builds), printed only for ``ENOMEM``. With ``--mlock`` / ``use_mlock`` the loader
  pins the mapped model pages; when ``raw_lock`` fails, ``grow_to`` sets ``failed_already`` and
  the load goes on unlocked. Linux's ``mlock(2)`` returns ``ENOMEM`` ("Cannot allocate memory")
  for a lock above ``RLIMIT_MEMLOCK`` (or an unmapped range), while a shortage of RAM while
  faulting the pages in is ``EAGAIN`` (``torvalds/linux:mm/mlock.c``
  ``__mlock_posix_error_return`` maps ``-ENOMEM`` to ``-EAGAIN``): the line with "Cannot allocate
  memory" is the lock limit, not RAM running out. Read as an ``mlock_failed`` event with the
  buffer's size; ``parse_extra.parse_generic`` skips the line, so a real failure elsewhere in the
  paste is read first and this module never runs.

Every pattern is behind literal needles and has only bounded quantifiers (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import admitted
from oomkit.diagnose.sizes import to_bytes, to_int
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["WARNING_FORMATS", "parse_warnings"]

#: the ``format`` of each warning event (read by :mod:`oomkit.diagnose.rules_warnings`)
WARNING_FORMATS = (
    "tf_bfc_retry_warning",
    "tcmalloc_large_alloc",
    "tf_cpu_large_alloc",
    "jan_model_support_check",
    "tensorrt_workspace_warning",
    "forge_memory_plan",
)
#: Jan's headroom below the VRAM before a model counts as fitting (``RESERVE_BYTES``, commands.rs)
JAN_RESERVE_BYTES = 2288490189

_I = re.IGNORECASE
_NEEDLES = re.compile(
    needles_re(
        (
            "trying to allocate",
            "large alloc",
            "exceeds 10%",
            "cannot be enqueued",
            "Total memory requirement",
            "Total VRAM reported",
            "sufficient workspace memory",
            "[Memory Management] Target:",
            "failed to mlock",
        )
    ).pattern,
    _I,
)
_BFC = re.compile(
    r"ran out of memory trying to allocate (?:(?P<n>\d{1,6}(?:\.\d{1,3})?) ?(?P<u>[KMGT]i?B|B)"
    r"|\*{1,6} ?MB)",
    _I,
)
_NOT_A_FAILURE = "not a failure"
_TCMALLOC = re.compile(
    r"tcmalloc ?: large alloc (?P<n>\d{1,20}) {0,3}bytes\b"
    r"(?: ?={1,2} ?(?P<ptr>\(nil\)|0x[0-9a-f]{1,16}))?",
    _I,
)
_TF_CPU = re.compile(r"Allocation of (?P<n>\d{1,20}) exceeds 10% of (?:free )?system memory")
_TRT_WORKSPACE = re.compile(r"(?:Some )?tactics do not have sufficient workspace memory to run", _I)
_F = r"(?P<{0}>-?\d{{1,9}}(?:\.\d{{1,2}})?) ?MB"
_FORGE = re.compile(
    r"\[Memory Management\] Target: [^,]{1,80}, Free GPU: " + _F.format("free") + r", "
    r"(?:Model )?Require(?:d)?: " + _F.format("model") + r", Previous(?:ly Loaded)?: "
    r"-?\d{1,9}(?:\.\d{1,2})? ?MB, Inference(?: Require)?: " + _F.format("inf") + r", "
    r"Remaining: " + _F.format("left")
)
_EXL_PAGES = re.compile(
    r"Job requires (?P<need>\d{1,9}) pages \(only (?P<have>\d{1,9}) available\) and cannot "
    r"be enqueued(?:\. Total cache allocated is \d{1,9} \* (?P<page>\d{1,6}) = "
    r"(?P<tokens>\d{1,12}) tokens)?"
)
_JAN_REQ = re.compile(
    r"isModelSupported: Total memory requirement: (?P<req>\d{1,20})\b"
    r"(?:[^;]{0,400}; Got kvCacheSize: (?P<kv>\d{1,20}))?"
)
_JAN_VRAM = re.compile(r"Total VRAM reported/calculated \(in bytes\): (?P<v>\d{1,20})")
# llama-mmap.cpp raw_lock: "warning: failed to mlock %zu-byte buffer (after previously locking
# %zu bytes): %s" with strerror(ENOMEM); other errnos (EAGAIN: RAM short while faulting the pages
# in, EPERM) are not the lock limit and are not read here
_MLOCK = re.compile(
    r"failed to mlock (?P<n>\d{1,20})-byte buffer \(after previously locking \d{1,20} bytes\): "
    r"Cannot allocate memory"
)
#: the most admitted lines read (a log of repeated reports keeps a bounded cost)
_MAX_LINES = 400


def _pressure(fmt: str, text: str, n: int, requested: int | None) -> OomEvent:
    runtime = {"tcmalloc_large_alloc": "tcmalloc", "tensorrt_workspace_warning": "tensorrt"}.get(
        fmt, "tensorflow"
    )
    return OomEvent(
        runtime=runtime,
        kind="memory_report",
        format=fmt,
        line=n,
        text=text[:600],
        requested_bytes=requested,
        detail="pressure",
    )


def parse_warnings(lines: Lines) -> list[OomEvent]:
    """The first runtime memory-pressure warning (the largest tcmalloc report), or an ExLlamaV2
    page shortfall, as one event (or none). Never raises."""
    tcm: OomEvent | None = None
    jan_req: tuple[int, int, str] | None = None  # (requirement, line number, line)
    for k, i in enumerate(admitted(lines, _NEEDLES)):
        if k >= _MAX_LINES:
            break
        line = lines.cleaned(i)
        n = lines.number[i]
        if "enqueued" in line:
            e = _EXL_PAGES.search(line)
            if e is not None:
                tokens = to_int(e["tokens"]) if e["tokens"] else None
                return [
                    OomEvent(
                        runtime="exllamav2",
                        kind="kv_cache",
                        format="exllamav2_job_pages",
                        line=n,
                        text=line[:600],
                        stage="kv_cache",
                        kv_capacity_tokens=tokens,
                        detail=f"needs {e['need']} pages, {e['have']} available",
                    )
                ]
        if "isModelSupported" in line:
            j = _JAN_REQ.search(line)
            req = to_int(j["req"]) if j is not None else None
            if req is not None:
                jan_req = (req, n, line)
        if jan_req is not None and "Total VRAM reported" in line:
            v = _JAN_VRAM.search(line)
            vram = to_int(v["v"]) if v is not None else None
            if vram is not None and jan_req[0] > vram - JAN_RESERVE_BYTES:
                return [
                    OomEvent(
                        runtime="jan",
                        kind="memory_report",
                        format="jan_model_support_check",
                        line=jan_req[1],
                        text=(jan_req[2] + "\n" + line)[:600],
                        requested_bytes=jan_req[0],
                        total_bytes=vram,
                        detail="does_not_fit",
                    )
                ]
        if "[Memory Management]" in line:
            f = _FORGE.search(line)
            if f is not None and f["left"].startswith("-"):
                need = to_bytes(f["model"], "mib", "generic")
                inf = to_bytes(f["inf"], "mib", "generic")
                return [
                    OomEvent(
                        runtime="forge",
                        kind="memory_report",
                        format="forge_memory_plan",
                        line=n,
                        text=line[:600],
                        requested_bytes=None if need is None or inf is None else need + inf,
                        free_bytes=to_bytes(f["free"], "mib", "generic"),
                        detail="does_not_fit",
                    )
                ]
        if "failed to mlock" in line:
            lk = _MLOCK.search(line)
            if lk is not None:
                return [
                    OomEvent(
                        runtime="llama.cpp",
                        kind="mlock_failed",
                        format="llama.cpp_mlock_limit",
                        line=n,
                        text=line[:600],
                        requested_bytes=to_int(lk["n"]),
                        stage="weights",
                        detail="mlock ENOMEM",
                    )
                ]
        low = line.lower()
        if "workspace memory" in low and _TRT_WORKSPACE.search(line) is not None:
            return [_pressure("tensorrt_workspace_warning", line, n, None)]
        if "trying to allocate" in low:
            b = _BFC.search(line)
            nxt = lines.cleaned(i + 1).lower() if i + 1 < len(lines.text) else ""
            if b is not None and (_NOT_A_FAILURE in low or _NOT_A_FAILURE in nxt):
                req = to_bytes(b["n"], b["u"].lower(), "tensorflow") if b["n"] else None
                return [_pressure("tf_bfc_retry_warning", line, n, req)]
        if "large alloc" in low:
            t = _TCMALLOC.search(line)
            if t is not None and t["ptr"] != "(nil)":
                size = to_int(t["n"])
                if tcm is None or (size or 0) > (tcm.requested_bytes or 0):
                    tcm = _pressure("tcmalloc_large_alloc", line, n, size)
        if "exceeds 10%" in low:
            c = _TF_CPU.search(line)
            if c is not None and tcm is None:
                tcm = _pressure("tf_cpu_large_alloc", line, n, to_int(c["n"]))
    return [tcm] if tcm is not None else []

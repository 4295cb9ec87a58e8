"""PyTorch OOM messages: CUDA/HIP/XPU caching allocator (all eras), cudaMallocAsync, MPS, CPU,
driver-level ``CUDA error: out of memory``, cuBLAS/cuDNN allocation failures, traceback frames.

Formats modelled (oom-messages.md §1):

* current (>= 2.2) and 2.1 (``total capacty`` typo) text of ``DeviceCachingAllocator::malloc`` in
  ``c10/cuda/CUDACachingAllocator.cpp``, with per-process NVML lines, ``allowed``, private pools;
* legacy (<= 2.0) ``(GPU 0; X total capacity; Y already allocated; Z free; W reserved ...)``;
* ``c10/cuda/CUDAMallocAsyncAllocator.cpp`` (``would exceed allowed memory``);
* ``aten/src/ATen/mps/MPSAllocator.mm`` (KB/MB/GB labels over 1024**k);
* ``c10/core/impl/alloc_cpu.cpp`` (``DefaultCPUAllocator``, POSIX and Windows wording).

>>> from oomkit.diagnose.text import split_lines
>>> msg = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
...        "total capacity of 7.79 GiB of which 2.06 MiB is free. Of the allocated memory 6.99 GiB "
...        "is allocated by PyTorch, and 152.00 MiB is reserved by PyTorch but unallocated.")
>>> events, facts = parse_torch(split_lines(msg))
>>> events[0].requested_bytes == 20 * 1024 * 1024, events[0].device
(True, 0)
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from oomkit.diagnose.events import OomEvent, OtherProcess
from oomkit.diagnose.parse_torch_cut import BARE as _BARE
from oomkit.diagnose.parse_torch_cut import partial_event
from oomkit.diagnose.parse_torch_frames import _frames
from oomkit.diagnose.sizes import to_int
from oomkit.diagnose.text import Lines, has_any, sz, window
from oomkit.diagnose.text import size_of as _stated_size
from oomkit.units import format_bytes_fine

__all__ = ["parse_torch"]

_RT = "pytorch"
#: PyTorch prints ``format_size(UINT64_MAX)`` = 17179869184.00 GiB as the cudaMallocAsync
#: "PyTorch limit (set by user-supplied memory fraction)" when no fraction is set
#: (``pytorch_memory_limits`` starts at ``UINT64_MAX``, CUDAMallocAsyncAllocator.cpp): that is
#: "no limit", not a per-process cap. No device has an EiB, so anything this large is the marker.
_NO_LIMIT_BYTES = 1 << 60


def size_of(m: re.Match[str], name: str, runtime: str) -> int | None:
    """A size the allocator printed, or None when it cannot be one: PyTorch's ``format_size``
    takes a ``size_t``, so a negative number ("Tried to allocate -1.00 GiB") is a corrupted or
    hand-edited message, never a real size; so is one above 2^60 bytes (no device holds an
    EiB)."""
    v = _stated_size(m, name, runtime)
    if v is None or v < 0 or v > _NO_LIMIT_BYTES or (name == "req" and v == 0):
        return None  # a 0-byte request never fails
    return v


def _impossible(m: re.Match[str], *names: str) -> str | None:
    """The stated sizes among ``names`` that :func:`size_of` / :func:`_capacity` discard
    (negative; above 2^60 bytes, more than any device has; a zero ``total`` or request), as
    printed: ``"-1.00 GiB requested"``."""
    label = {"req": "requested", "total": "total capacity"}
    out = []
    for name in names:
        v = _stated_size(m, name, _RT)
        if v is not None and (
            v < 0 or v > _NO_LIMIT_BYTES or (name in ("total", "req") and v == 0)
        ):
            out.append(f"{m.group(name)} {m.group(name + '_u')} {label.get(name, name)}")
    return ", ".join(out) or None


def _capacity(v: int | None) -> int | None:
    """A device's total capacity: "0 bytes total capacity" is no device (None)."""
    return v if v else None


def _cap(v: int | None) -> int | None:
    """A per-process cap ("N allowed", the mallocAsync limit): None for the no-limit marker."""
    return None if v is None or v >= _NO_LIMIT_BYTES else v


def _free_above_total(total: int | None, free: int | None, backend: str = "CUDA") -> str | None:
    """The contradiction when the stated free memory exceeds the device's total capacity.

    Both come from one ``cudaMemGetInfo`` call (``c10/cuda/CUDACachingAllocator.cpp`` formats
    them), which never reports more free than total memory; the 1% slack covers the rounding of
    two sizes printed in different units ("1023.99 MiB" of "1.00 GiB"). Not so on HIP: on AMD
    APUs with unified memory ``hipMemGetInfo`` gives the VRAM aperture as the total and counts
    GTT (system RAM the GPU maps) in the free memory (ROCm/hip#3892: total 15.49 GiB on a Strix
    Halo; ROCm/legacy-rocm-build#6004: "hip mem_get_info total: 62.47 GiB / free: 120.00 GiB"),
    so a HIP message with free above total is what the runtime prints there
    (:func:`apu_free_above_total`), not an edit.
    """
    if backend == "HIP" or total is None or free is None or free <= total + total // 100:
        return None
    return (
        f"{format_bytes_fine(free)} free of a {format_bytes_fine(total)} total capacity "
        "(free memory cannot exceed the device's total)"
    )


_CONTEXT_MAX = 2 << 30  # CUDA context + cuBLAS/cuDNN/NCCL workspaces, upper bound
_TAIL = (
    "environment-variables",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
    "reserved in total by PyTorch",
    "cached)",
    "unoccupied cached memory",
    "may cause system failure",
)

# The "<backend> out of memory. " prefix is optional: older and truncated pastes often start at
# "Tried to allocate" (the numbers that follow are the same allocator message).
# Out-of-tree backends fork the caching allocator and its message under their device name:
# torch_npu (NPU), torch_musa (MUSA), Cambricon torch_mlu (MLU; its 2.x message prints
# "of which <free>is free", without the space: caching_allocator.cpp)
_NEW = re.compile(
    r"(?:(?P<backend>CUDA|HIP|XPU|MUSA|NPU|MLU) out of memory\. )?Tried to allocate "
    + sz("req")
    # PyTorch 2.2-2.3 streamed the c10::DeviceIndex (an int8_t) as a char: device 0 is a NUL
    # that pastes drop ("GPU  has"); later releases print static_cast<int>(device)
    + r"\. (?:GPU|Device|MLU) (?P<dev>\d{1,4}|[\x00-\x08\x0e-\x1f]|) ?has a total "
    + r"capac(?P<typo>i?)ty of "
    + sz("total")
    + " of which "
    + sz("free", space=" ?").removesuffix(r"\b")
    + r" ?is free\."
)
_OLD = re.compile(
    # (XPU: intel-extension-for-pytorch's csrc/gpu/runtime/CachingDeviceAllocator.cpp prints this
    # legacy shape with no free field at all: SYCL has no free-memory query)
    r"(?:(?P<backend>CUDA|HIP|XPU|MUSA|NPU|MLU) out of memory\. )?Tried to allocate "
    + sz("req")
    # (a paste may lose the parenthesis or wrap the line before "GPU N;")
    + r"\s{1,4}\(?(?:GPU|NPU|MLU) (?P<dev>\d{1,4}); "
    + sz("total")
    + " total capacity; "
    + sz("alloc")
    # (issue titles and pastes get cut after "already allocated": the rest is optional; the R
    # binding prints "Pytorch")
    + r" already allocated(?:; (?:"
    + sz("active")
    + r" current active; )?(?:"
    # IPEX (CachingDeviceAllocator.cpp malloc): "<allocated> already allocated; <reserved>
    # reserved in total by PyTorch)", no free field between them
    + sz("xresv")
    + r" reserved in total by PyTorch\)|"
    + sz("free")
    + r" free(?:; (?:"
    + sz("allowed")
    + r" allowed; )?"
    + sz("resv")
    + r" (?P<resv_kind>reserved in total by Py[Tt]orch|cached)\)?)?))?"
)
# a pasted fragment that starts at the request (no prefix, no numbers after it); MPS's second
# line "Tried to allocate N on shared pool" belongs to the MPS message before it
_FRAGMENT = re.compile(
    r"^(?:[\w.]{1,60}: )?Tried to allocate " + sz("req") + r"(?![\w ]{0,4}on (?:shared|private))"
)
_SELF = re.compile(r"this process has " + sz("self") + " memory in use")
_PROC = re.compile(r"Process (?P<pid>\d{1,10}) has " + sz("used") + " memory in use")
_ALLOWED = re.compile(sz("allowed") + " allowed;")
_ALLOC = re.compile(
    r"Of the allocated memory "
    + sz("alloc")
    + r" is allocated by PyTorch, (?:with "
    + sz("pools")
    + r" allocated in private pools \(e\.g\., (?:CUDA|HIP) Graphs\), )?and "
    + sz("runalloc")
    + " is reserved by PyTorch but unallocated"
)
_MPS_UNITS = "bytes|KiB|MiB|GiB|TiB|KB|MB|GB|TB|B"
_MPS = re.compile(
    r"MPS backend out of memory \(MPS allocated: "
    + sz("mps", _MPS_UNITS)
    + ", other allocations: "
    + sz("other", _MPS_UNITS)
    + "(?:, max allowed: "
    + sz("max", _MPS_UNITS)
    + r")?\)\. Tried to allocate "
    + sz("req", _MPS_UNITS)
    + r" on (?P<pool>shared|private) pool"
)
_ASYNC = re.compile(r"Allocation on device (?P<dev>\d{1,4}) would exceed allowed memory")
_ASYNC_FIELDS = {
    "allocated": re.compile(r"Currently allocated ?: ?" + sz("v")),
    "requested": re.compile(r"Requested ?: ?" + sz("v")),
    "total": re.compile(r"Device limit ?: ?" + sz("v")),
    "free": re.compile(r"Free \(according to CUDA\) ?: ?" + sz("v")),
    "allowed": re.compile(r"memory fraction\) ?: ?" + sz("v")),
}
# alloc_cpu.cpp: POSIX "can't allocate memory", Windows "not enough memory"; "DefaultCPUAllocator: "
# is missing from some builds and pasted fragments. Older: TH / CPUAllocator.cpp "%dGB. Buy new
# RAM!" (bytes / 2^30, truncated) and CPUAllocator.cpp 1.0-1.4's posix_memalign ENOMEM (12).
_CPU = re.compile(
    r"(?:DefaultCPUAllocator: )?(?P<why>can't allocate memory|not enough memory"
    r"|posix_memalign\(&data, gAlignment, nbytes\) == 0\. 12 vs 0)"
    r"(?:: you tried to (?:re)?allocate (?:(?P<n>\d{1,20}) bytes|(?P<g>\d{1,9})GB))?"
)
_DRIVER = re.compile(
    r"(?P<be>CUDA|HIP)(?: driver)? error: ?out of memory|cuda runtime error \(2\) : out of memory"
    r"|THCudaCheck FAIL file=\S{1,200} line=\d{1,6} error=2 : out of memory"
    r"|hipErrorOutOfMemory|cudaErrorMemoryAllocation"
)
# cuBLAS handle creation fails with NOT_INITIALIZED when its workspace cannot be allocated: an
# out-of-memory in disguise (cublasCreate allocates device memory first).
_LIB = re.compile(
    r"(?P<lib>CUBLAS|CUDNN|CUSOLVER|CUSPARSE|CUFFT|HIPBLAS|ROCBLAS)_STATUS_ALLOC_FAILED"
    r"|(?P<lib2>CUBLAS)_STATUS_NOT_INITIALIZED"
)
# other libraries' allocators that quote the CUDA error (XGBoost's caching allocator, RAPIDS
# RMM): their own wording names the library and its numbers (``parse_libs``)
_OTHER_LIBS = (
    "Memory allocation error on worker",
    "rmm/mr/",
    "RMM failure",
    "rmm::",
    # thrust's and CuPy's "<name>: <string>" (parse_libs; docpost23)
    " failed: cudaErrorMemoryAllocation",
    "bad_alloc: cudaErrorMemoryAllocation",
    "CUDARuntimeError: cudaErrorMemoryAllocation",
)
_DEVICE_IN_TEXT = re.compile(r"(?:cuda|device)[: ](?P<dev>\d{1,3})\b")


def _device_index(dev: str) -> int | None:
    """The device of ``GPU <dev> has``: digits, a control char (the int8 streamed as a char), or
    nothing where the paste dropped a NUL (unknown: another dropped char looks the same)."""
    if dev.isdigit():
        return int(dev)
    return ord(dev) if dev else None


def _processes(rest: str) -> tuple[int | None, list[OtherProcess]]:
    own: int | None = None
    m = _SELF.search(rest)
    if m is not None:
        own = size_of(m, "self", _RT)
    others = [
        OtherProcess(pid=int(p.group("pid")), used_bytes=size_of(p, "used", _RT))
        for p in _PROC.finditer(rest)
    ]
    return own, others


def _backend_of(w: str) -> str:
    """Backend of a message whose "<backend> out of memory" prefix was cut off."""
    return "HIP" if "HIP" in w or "hip" in w else "CUDA"


def _legacy_reserved(m: re.Match[str]) -> tuple[int | None, int | None]:
    """The last field of the legacy message, by era.

    PyTorch 1.0-1.3 (PR pytorch#13751) printed ``{cached} cached)`` where *cached* is the
    caching allocator's cached-but-unallocated memory (``memory_cached() - memory_allocated()``):
    it is smaller than ``already allocated`` in every real message (``4.00 GiB already
    allocated; 7.33 GiB free; 179.00 KiB cached``, oom-messages.md section 1.3). From 1.4 the
    field is ``{reserved} reserved in total by PyTorch`` (allocated included). Reading the old
    field as the total would put the allocated bytes outside PyTorch.
    """
    resv = size_of(m, "resv", _RT)
    return (None, resv) if m.group("resv_kind") == "cached" else (resv, None)


def _allocator_event(w: str, line: int) -> OomEvent | None:
    m = _NEW.search(w)
    if m is not None:
        nxt = w.find("out of memory. Tried to allocate", m.end())
        rest = w[m.end() : nxt if nxt >= 0 else len(w)]
        own, others = _processes(rest)
        total, free = _capacity(size_of(m, "total", _RT)), size_of(m, "free", _RT)
        self_pid: int | None = None
        if own is None and len(others) == 1 and total is not None and free is not None:
            # NVML PIDs live in the host namespace: inside a container this process is listed
            # as "Process N" (oom-messages.md §1.1, container caveat). One process whose use is
            # about total - free is this process.
            used = others[0].used_bytes
            if used is not None and abs(used - (total - free)) <= max(total // 50, 256 << 20):
                own, self_pid, others = used, others[0].pid, []
        allowed = _ALLOWED.search(rest)
        alloc = _ALLOC.search(rest)
        if own is None and len(others) > 1 and alloc is not None:
            # Several "Process N" lines and no "this process" line: this process is the one
            # whose use is PyTorch's reserved memory (allocated + cached) plus the CUDA context
            # and libraries (0 to 2 GiB). Pick it only when exactly one process fits.
            a, r = size_of(alloc, "alloc", _RT), size_of(alloc, "runalloc", _RT)
            if a is not None and r is not None:
                fits = [
                    o
                    for o in others
                    if o.used_bytes is not None and 0 <= o.used_bytes - (a + r) <= _CONTEXT_MAX
                ]
                if len(fits) == 1:
                    own, self_pid = fits[0].used_bytes, fits[0].pid
                    others = [o for o in others if o is not fits[0]]
        backend = m.group("backend") or _backend_of(w)
        fmt = "pytorch_2.1" if not m.group("typo") else "pytorch_new"
        return OomEvent(
            runtime=_RT,
            kind=backend.lower() + "_oom",
            format=fmt if backend == "CUDA" else f"{fmt}_{backend.lower()}",
            line=line,
            text=w[m.start() : m.start() + 1200],
            device=_device_index(m.group("dev")),
            requested_bytes=size_of(m, "req", _RT),
            total_bytes=total,
            free_bytes=free,
            process_in_use_bytes=own,
            other_processes=tuple(others),
            self_pid=self_pid,
            allowed_bytes=_cap(size_of(allowed, "allowed", _RT)) if allowed else None,
            allocated_bytes=size_of(alloc, "alloc", _RT) if alloc else None,
            private_pool_bytes=size_of(alloc, "pools", _RT) if alloc else None,
            reserved_unallocated_bytes=size_of(alloc, "runalloc", _RT) if alloc else None,
            ignored_sizes=_impossible(m, "req", "total", "free"),
            inconsistent=_free_above_total(total, free, backend),
        )
    m = _OLD.search(w)
    if m is not None:
        reserved, cached = _legacy_reserved(m)  # (reserved total, reserved-but-unallocated)
        if reserved is None and cached is None:
            reserved = size_of(m, "xresv", _RT)
        return OomEvent(
            runtime=_RT,
            kind=(m.group("backend") or _backend_of(w)).lower() + "_oom",
            format="pytorch_old",
            line=line,
            text=w[m.start() : m.start() + 1200],
            device=int(m.group("dev")),
            requested_bytes=size_of(m, "req", _RT),
            total_bytes=_capacity(size_of(m, "total", _RT)),
            allocated_bytes=size_of(m, "alloc", _RT),
            free_bytes=size_of(m, "free", _RT),
            allowed_bytes=_cap(size_of(m, "allowed", _RT)),
            reserved_bytes=reserved,
            reserved_unallocated_bytes=cached,
            ignored_sizes=_impossible(m, "req", "total", "alloc", "free", "resv", "xresv"),
            inconsistent=_free_above_total(
                _capacity(size_of(m, "total", _RT)),
                size_of(m, "free", _RT),
                m.group("backend") or _backend_of(w),
            ),
        )
    if _BARE.search(w) is None:  # pragma: no cover - the only caller matched _BARE already
        return None
    return partial_event(w, line)  # cut short: the request, and capacity/free if they survived


def _mps_event(w: str, line: int) -> OomEvent:
    m = _MPS.search(w)
    if m is None:
        return OomEvent(runtime=_RT, kind="mps_oom", format="mps_partial", line=line, text=w[:600])
    rt = "pytorch-mps"
    return OomEvent(
        runtime=_RT,
        kind="mps_oom",
        format="mps",
        line=line,
        text=w[m.start() : m.start() + 600],
        requested_bytes=size_of(m, "req", rt),
        allocated_bytes=size_of(m, "mps", rt),
        other_allocations_bytes=size_of(m, "other", rt),
        allowed_bytes=_cap(size_of(m, "max", rt)),
        detail=m.group("pool") + " pool",
    )


def _async_event(w: str, line: int, dev: int) -> OomEvent:
    vals: dict[str, int | None] = {}
    for key, rx in _ASYNC_FIELDS.items():
        m = rx.search(w)
        vals[key] = size_of(m, "v", _RT) if m else None
    return OomEvent(
        runtime=_RT,
        kind="cuda_oom",
        format="pytorch_cudamallocasync",
        line=line,
        text=w[:800],
        device=dev,
        requested_bytes=vals["requested"],
        total_bytes=_capacity(vals["total"]),
        free_bytes=vals["free"],
        allocated_bytes=vals["allocated"],
        allowed_bytes=_cap(vals["allowed"]),
        inconsistent=_free_above_total(_capacity(vals["total"]), vals["free"]),
    )


def _device_hint(w: str) -> int | None:
    m = _DEVICE_IN_TEXT.search(w)
    return int(m.group("dev")) if m else None


def parse_torch(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """Find PyTorch OOM events and the traceback phase in ``lines``.

    Returns:
        The events in log order and a dict of context facts (``frame_phase``, ``frame_text``).
        Never raises on arbitrary text.
    """
    events: list[OomEvent] = []
    facts: dict[str, Any] = {}
    text, numbers = lines.text, lines.number
    skip_until = -1
    for i, raw in enumerate(text):
        if i < skip_until:
            continue
        line_no = numbers[i]
        if "Free (according to CUDA)" in raw and not any(
            e.format == "pytorch_cudamallocasync" for e in events
        ):
            # the cudaMallocAsync message without its first line (a paste that starts at its
            # fields): c10/cuda/CUDAMallocAsyncAllocator.cpp prints these labels only there
            # (its first field a few lines up, past a wrapper's lines between)
            start = next(
                (j for j in range(max(0, i - 16), i) if "Currently allocated" in text[j]),
                max(0, i - 3),
            )
            w = window(lines, start, max_lines=i - start + 3)
            if "Requested" in w and "Device limit" in w:
                events.append(_async_event(w, numbers[start], -1))
                skip_until = i + 1
                continue
        if (
            "out of memory" not in raw
            and "Tried to allocate" in raw
            and "on private pool" not in raw
        ):
            w = window(lines, i, stop=_TAIL)
            ev = _allocator_event(w, line_no) if (_NEW.search(w) or _OLD.search(w)) else None
            if ev is not None:
                events.append(ev)
                skip_until = i + 1
                continue
            frag = _FRAGMENT.match(lines.cleaned(i))
            if frag is not None and not (i and "out of memory" in text[i - 1]):
                # a bare "Tried to allocate 2.00 GiB" (older or cut pastes): the request only
                events.append(
                    OomEvent(
                        runtime=_RT,
                        kind=_backend_of(lines.cleaned(i)).lower() + "_oom",
                        format="pytorch_partial",
                        line=line_no,
                        text=lines.cleaned(i)[:600],
                        requested_bytes=size_of(frag, "req", _RT),
                    )
                )
                continue
        if "out of memory" in raw:
            if "MPS backend out of memory" in raw:
                w = window(lines, i, stop=_TAIL)
                events.append(_mps_event(w, line_no))
                skip_until = i + 1
                continue
            if "would exceed allowed memory" in raw:
                m = _ASYNC.search(raw)
                w = window(lines, i, max_lines=9)
                events.append(_async_event(w, line_no, int(m.group("dev")) if m else -1))
                skip_until = i + 1
                continue
            # (the window ends before the next line that starts another OOM message: a
            # llama.cpp line took the numbers of a PyTorch message five lines below)
            own = next(
                (k for k in range(1, 10) if i + k < len(text) and "out of memory" in text[i + k]),
                10,
            )
            w = window(lines, i, stop=_TAIL, max_lines=own)
            if ("out of memory." in w or w.rstrip().endswith("out of memory")) and _BARE.search(w):
                ev = _allocator_event(w, line_no)
                if ev is not None:
                    events.append(ev)
                    # skip the continuation lines we consumed, up to the message tail
                    j = i + 1
                    while (
                        j < len(text)
                        and j < i + 10
                        and not has_any(text[j - 1], _TAIL)
                        and "out of memory" not in text[j]  # the next message starts here
                    ):
                        j += 1
                    skip_until = j
                    continue
            m2 = _DRIVER.search(raw)
            if m2 is not None:
                nxt = " ".join(text[i + 1 : i + 3])
                if "current device:" in nxt or "current device:" in raw:
                    continue  # ggml_cuda_error: parsed by parse_llamacpp
                if has_any(raw, _OTHER_LIBS):
                    continue  # XGBoost's / RMM's own wording: parsed by parse_libs
                events.append(
                    OomEvent(
                        runtime=_RT,
                        kind="cuda_error_oom",
                        format="cuda_error_out_of_memory",
                        line=line_no,
                        text=lines.cleaned(i)[:600],
                        stage="driver",
                        device=_device_hint(raw) if "device" in raw else None,
                    )
                )
                continue
        elif ("hipErrorOutOfMemory" in raw or "cudaErrorMemoryAllocation" in raw) and not has_any(
            raw, _OTHER_LIBS
        ):
            events.append(
                OomEvent(
                    runtime=_RT,
                    kind="cuda_error_oom",
                    format="cuda_error_out_of_memory",
                    line=line_no,
                    text=lines.cleaned(i)[:600],
                    stage="driver",
                )
            )
        if "ALLOC_FAILED" in raw or "STATUS_NOT_INITIALIZED" in raw:
            m3 = _LIB.search(raw)
            if m3 is not None:
                lib = (m3.group("lib") or m3.group("lib2")).lower()
                events.append(
                    OomEvent(
                        runtime=_RT,
                        kind="library_alloc_failed",
                        format=lib + ("_alloc_failed" if m3.group("lib") else "_not_initialized"),
                        line=line_no,
                        text=lines.cleaned(i)[:600],
                        detail=m3.group(0),
                        stage="library_workspace",
                    )
                )
        if "DefaultCPUAllocator" in raw or "you tried to" in raw or "posix_memalign" in raw:
            m4 = _CPU.search(lines.cleaned(i))
            if m4 is not None:
                gib = (int(m4.group("g") or 0) << 30) or None  # "0GB" states no size
                events.append(
                    OomEvent(
                        runtime=_RT,
                        kind="cpu_oom",
                        format="c10_cpu_allocator",
                        line=line_no,
                        text=m4.group(0),
                        requested_bytes=to_int(m4.group("n")) if m4.group("n") else gib,
                        detail=m4.group("why"),
                    )
                )
    if not events:
        tail = _allocator_tail(lines)
        if tail is not None:
            events.append(tail)
    if events:
        limited = {numbers[i] for i, t in enumerate(text) if _IPEX_BLOCK in t}
        if limited:
            events = [_block_limit(e) if {e.line, e.line - 1} & limited else e for e in events]
        _frames(lines, facts)
    return events, facts


# Intel Extension for PyTorch on GPUs without 2D block arrays (Arc A-series, Flex) refuses any
# single block above 4 GiB before it tries the device (csrc/gpu/runtime/
# CachingDeviceAllocator.cpp: "Current platform can NOT allocate memory block with size larger
# than 4GB! Tried to allocate ..."), with the allocator's usual numbers: a per-buffer limit
_IPEX_BLOCK = "can NOT allocate memory block with size larger than 4GB"


def _block_limit(e: OomEvent) -> OomEvent:
    """``e`` (on or after a line with IPEX's 4 GiB refusal) read as the per-block limit."""
    return replace(
        e,
        kind="buffer_limit",
        format="ipex_4gb_block",
        allowed_bytes=4 << 30,
        detail="the Intel GPU runtime (no 2D block arrays)",
    )


# The caching allocator's OOM message is the only text that ends with these hints
# (c10/cuda/CUDACachingAllocator.cpp): a paste of the tail alone is still that OOM
_TAIL_HINTS = (
    "max_split_size_mb to avoid fragmentation",
    "expandable_segments:True to avoid fragmentation",
)


def _allocator_tail(lines: Lines) -> OomEvent | None:
    """The tail of an allocator OOM message pasted without its head (no numbers survive)."""
    for i, raw in enumerate(lines.text):
        if "to avoid fragmentation" in raw and has_any(raw, _TAIL_HINTS):
            return OomEvent(
                runtime=_RT,
                kind=_backend_of(raw).lower() + "_oom",
                format="pytorch_partial",
                line=lines.number[i],
                text=lines.cleaned(i)[:600],
            )
    return None

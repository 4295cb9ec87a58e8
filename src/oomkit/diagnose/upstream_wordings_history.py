"""The same OOM messages across releases: every historical wording of the messages users paste most
(issue 9).

:mod:`oomkit.diagnose.upstream_wordings` mostly holds one release of each message. Users paste the
message of the release *they* run, often years old or brand new, so this table lists the wordings
each runtime printed over time: words changed ("cached" became "reserved in total by PyTorch",
"capacty" was a typo of torch 2.1 fixed in 2.2), fields added or removed ("Process %d has %s
memory in use", "Including non-PyTorch memory, this process has", "%s allowed;", "with %s
allocated in private pools"), units changed (ggml's "MB" became "MiB", vLLM's "GB" became "GiB"),
and the exception's name moved (``RuntimeError`` → ``torch.cuda.OutOfMemoryError`` (1.13) →
``torch.OutOfMemoryError`` (2.4)).

Each entry's ``source`` cites ``repo:path@first..last`` with the first and the last release tag
that printed the wording (``..main`` when the current source still prints it). The repositories'
full histories were too large to mirror here (``git log -S`` was not possible), so the wordings
were checked against the search index's stored versions and forks of the files and against pasted
messages that name their release; the release bounds are from that and from the release notes,
and may be off by a release where no paste pins them. Entries are PyTorch's here; the other
runtimes are in :mod:`oomkit.diagnose.upstream_wordings_history_engines` and
:mod:`oomkit.diagnose.upstream_wordings_history_frameworks`.
:data:`HISTORY_NEAR_MISSES` are texts with the same words that are not an allocation failure.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB as _GIB
from oomkit.diagnose.upstream_wordings_base import MIB as _MIB
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w
from oomkit.diagnose.upstream_wordings_history_engines import (
    ENGINES_HISTORY,
    ENGINES_HISTORY_NEAR_MISSES,
)
from oomkit.diagnose.upstream_wordings_history_frameworks import (
    FRAMEWORKS_HISTORY,
    FRAMEWORKS_HISTORY_NEAR_MISSES,
)

__all__ = ["HISTORY", "HISTORY_NEAR_MISSES", "TORCH_HISTORY"]

_CCA = "pytorch/pytorch:c10/cuda/CUDACachingAllocator.cpp@"
_THC = "pytorch/pytorch:aten/src/THC/THCCachingAllocator.cpp@"
_FRAG_1 = (
    " If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
    "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
)
_FRAG_2 = (
    " If reserved but unallocated memory is large try setting max_split_size_mb to avoid "
    "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
)
_FRAG_3 = (
    " If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
    "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)

TORCH_HISTORY: tuple[Wording, ...] = (
    # --- THC era (0.1 .. 0.4): no sizes, the THCudaCheck / THError of the storage allocation
    _w(
        "pytorch",
        "pytorch/pytorch:torch/lib/THC/THCGeneral.c@v0.1.12..v0.3.1 (THCudaCheck)",
        "THCudaCheck FAIL file=%s line=%i error=%i : %s",
        "THCudaCheck FAIL file=/pytorch/torch/lib/THC/generic/THCStorage.cu line=66 error=2 : "
        "out of memory\nRuntimeError: cuda runtime error (2) : out of memory at "
        "/pytorch/torch/lib/THC/generic/THCStorage.cu:66",
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:aten/src/THC/THCGeneral.cpp@v0.4.0..v1.0.1 (THError of THCudaCheck)",
        "cuda runtime error (%d) : %s at %s:%d",
        "RuntimeError: cuda runtime error (2) : out of memory at "
        "/opt/conda/conda-bld/pytorch_1524584710464/work/aten/src/THC/generic/THCStorage.cu:58",
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:aten/src/THC/THCGeneral.cpp@v0.4.0..v1.0.1 (THCublasCheck: "
        "CUBLAS_STATUS_ALLOC_FAILED in words)",
        "cublas runtime error : %s at %s:%d",
        "RuntimeError: cublas runtime error : resource allocation failed at "
        "/pytorch/aten/src/THC/THCGeneral.cpp:228",
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:c10/cuda/CUDAException.h@v1.9.0..v2.0.1 (the 'call,so' typo)",
        "CUDA error: %s\nCUDA kernel errors might be asynchronously reported at some other API "
        "call,so the stacktrace below might be incorrect.",
        "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously "
        "reported at some other API call,so the stacktrace below might be incorrect.\nFor "
        "debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:c10/cuda/CUDAException.h@v2.1.0..main (TORCH_USE_CUDA_DSA line)",
        "CUDA error: %s\n...\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be "
        "asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with "
        "`TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ),
    # --- host RAM: TH's THAlloc and c10's CPUAllocator before alloc_cpu.cpp ("%dGB" is
    # bytes / 2^30, truncated: "0GB" states no size)
    _w(
        "pytorch",
        "pytorch/pytorch:aten/src/TH/THGeneral.cpp@v0.4.0..v1.0.1 (torch/lib/TH/THGeneral.c "
        "from v0.1.1; THAlloc)",
        "$ Torch: not enough memory: you tried to allocate %dGB. Buy new RAM!",
        "RuntimeError: $ Torch: not enough memory: you tried to allocate 8GB. Buy new RAM! at "
        "/pytorch/aten/src/TH/THGeneral.cpp:201",
        req=8 * _GIB,
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:aten/src/TH/THGeneral.cpp@v0.4.0..v1.0.1 (THRealloc)",
        "$ Torch: not enough memory: you tried to reallocate %dGB. Buy new RAM!",
        "RuntimeError: $ Torch: not enough memory: you tried to reallocate 12GB. Buy new RAM! at "
        "/pytorch/aten/src/TH/THGeneral.cpp:218",
        req=12 * _GIB,
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:c10/core/CPUAllocator.cpp@v1.0.0..v1.0.1 (caffe2's alloc_cpu)",
        "DefaultCPUAllocator: not enough memory: you tried to allocate %dGB. Buy new RAM!",
        "RuntimeError: [enforce fail at CPUAllocator.cpp:46] data. DefaultCPUAllocator: not "
        "enough memory: you tried to allocate 2GB. Buy new RAM!",
        req=2 * _GIB,
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:c10/core/CPUAllocator.cpp@v1.1.0..v1.9.1 (Windows, bytes)",
        "DefaultCPUAllocator: not enough memory: you tried to allocate %d bytes. Buy new RAM!",
        "RuntimeError: [enforce fail at ..\\c10\\core\\CPUAllocator.cpp:73] data. "
        "DefaultCPUAllocator: not enough memory: you tried to allocate 9437184 bytes. Buy new "
        "RAM!",
        req=9437184,
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:c10/core/CPUAllocator.cpp@v1.0.0..v1.4.1 (Linux: CAFFE_ENFORCE_EQ on "
        "posix_memalign, errno 12 = ENOMEM)",
        "[enforce fail at CPUAllocator.cpp:%d] posix_memalign(&data, gAlignment, nbytes) == 0. "
        "%d vs 0",
        "RuntimeError: [enforce fail at CPUAllocator.cpp:56] posix_memalign(&data, gAlignment, "
        "nbytes) == 0. 12 vs 0",
    ),
    # --- THCCachingAllocator: the first message with sizes, "cached" (0.4.1 .. 1.0)
    _w(
        "pytorch",
        _THC + "v0.4.1..v1.0.1",
        "CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already "
        "allocated; %s free; %s cached)",
        "RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total "
        "capacity; 8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)",
        req=int(12.5 * _MIB),
        total=int(10.92 * _GIB),
        free=int(9.28 * _GIB),
        alloc=int(8.57 * _MIB),
    ),
    _w(
        "pytorch",
        _CCA + "v1.1.0..v1.4.1 (moved to c10, still 'cached'; trailer of c10::Error)",
        "CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already "
        "allocated; %s free; %s cached) (malloc at %s:%d)",
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 7.93 GiB total "
        "capacity; 7.38 GiB already allocated; 1.06 MiB free; 12.44 MiB cached) (malloc at "
        "/pytorch/c10/cuda/CUDACachingAllocator.cpp:241)\nframe #0: std::function<std::string "
        "()>::operator()() const + 0x45 (0x7f2b in /usr/lib/python3/torch/lib/libc10.so)",
        req=2 * _MIB,
        total=int(7.93 * _GIB),
        free=int(1.06 * _MIB),
        alloc=int(7.38 * _GIB),
    ),
    # --- "reserved in total by PyTorch" (1.5 .. 2.0), with and without the fragmentation hint
    _w(
        "pytorch",
        _CCA + "v1.5.0..v1.9.1 ('0 bytes' when format_size is under 1 KiB)",
        "CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already "
        "allocated; %s free; %s reserved in total by PyTorch)",
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.98 GiB total "
        "capacity; 15.20 GiB already allocated; 0 bytes free; 15.43 GiB reserved in total by "
        "PyTorch)\nException raised from malloc at /pytorch/c10/cuda/CUDACachingAllocator.cpp:272 "
        "(most recent call first):",
        req=20 * _MIB,
        total=int(15.98 * _GIB),
        free=0,
        alloc=int(15.20 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v1.10.0..v2.0.1 (the max_split_size_mb hint)",
        "CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already "
        "allocated; %s free; %s reserved in total by PyTorch) If reserved memory is >> allocated "
        "memory try setting max_split_size_mb to avoid fragmentation.  See documentation for "
        "Memory Management and PYTORCH_CUDA_ALLOC_CONF",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB (GPU 0; "
        "14.75 GiB total capacity; 11.93 GiB already allocated; 1.17 GiB free; 12.42 GiB "
        "reserved in total by PyTorch)" + _FRAG_1,
        req=int(1.53 * _GIB),
        total=int(14.75 * _GIB),
        free=int(1.17 * _GIB),
        alloc=int(11.93 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v1.8.0..v2.0.1 (set_per_process_memory_fraction: '%s allowed;')",
        "CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already "
        "allocated; %s free; %s allowed; %s reserved in total by PyTorch)",
        "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 23.69 GiB total "
        "capacity; 11.20 GiB already allocated; 11.80 GiB free; 11.85 GiB allowed; 11.50 GiB "
        "reserved in total by PyTorch)" + _FRAG_1,
        req=_GIB,
        total=int(23.69 * _GIB),
        free=int(11.80 * _GIB),
        alloc=int(11.20 * _GIB),
    ),
    # --- 2.1: the sentence form, with the "capacty" typo and other processes named
    _w(
        "pytorch",
        _CCA + "v2.1.0..v2.1.2 ('total capacty', fixed in 2.2)",
        "CUDA out of memory. Tried to allocate %s. GPU %d has a total capacty of %s of which %s "
        "is free. Process %d has %s memory in use. Including non-PyTorch memory, this process "
        "has %s memory in use. Of the allocated memory %s is allocated by PyTorch, and %s is "
        "reserved by PyTorch but unallocated.",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 0 has "
        "a total capacty of 14.75 GiB of which 11.06 MiB is free. Process 3258 has 14.73 GiB "
        "memory in use. Of the allocated memory 14.04 GiB is allocated by PyTorch, and 509.85 "
        "MiB is reserved by PyTorch but unallocated." + _FRAG_2,
        req=224 * _MIB,
        total=int(14.75 * _GIB),
        free=int(11.06 * _MIB),
        alloc=int(14.04 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v2.1.0..v2.1.2 (this process only, 'capacty')",
        "GPU %d has a total capacty of %s of which %s is free. Including non-PyTorch memory, "
        "this process has %s memory in use.",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.37 GiB. GPU 0 has a "
        "total capacty of 79.11 GiB of which 2.93 GiB is free. Including non-PyTorch memory, "
        "this process has 76.17 GiB memory in use. Of the allocated memory 68.61 GiB is "
        "allocated by PyTorch, and 5.63 GiB is reserved by PyTorch but unallocated." + _FRAG_2,
        req=int(6.37 * _GIB),
        total=int(79.11 * _GIB),
        free=int(2.93 * _GIB),
        alloc=int(68.61 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v2.2.0..main (expandable_segments hint; 'capacity')",
        "GPU %d has a total capacity of %s of which %s is free. Process %d has %s memory in use. "
        "Including non-PyTorch memory, this process has %s memory in use.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 876.00 MiB. GPU 0 has a "
        "total capacity of 23.68 GiB of which 251.06 MiB is free. Process 2612630 has 458.00 MiB "
        "memory in use. Including non-PyTorch memory, this process has 22.98 GiB memory in use. "
        "Of the allocated memory 22.65 GiB is allocated by PyTorch, and 77.68 MiB is reserved by "
        "PyTorch but unallocated." + _FRAG_3,
        req=876 * _MIB,
        total=int(23.68 * _GIB),
        free=int(251.06 * _MIB),
        alloc=int(22.65 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v2.1.0..main (set_per_process_memory_fraction: '%s allowed; ')",
        "GPU %d has a total capacity of %s of which %s is free. %s%s allowed; Of the allocated "
        "memory %s is allocated by PyTorch, and %s is reserved by PyTorch but unallocated.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 58.10 GiB is free. Including non-PyTorch memory, "
        "this process has 21.04 GiB memory in use. 23.75 GiB allowed; Of the allocated memory "
        "20.30 GiB is allocated by PyTorch, and 210.00 MiB is reserved by PyTorch but "
        "unallocated." + _FRAG_3,
        req=4 * _GIB,
        total=int(79.15 * _GIB),
        free=int(58.10 * _GIB),
        alloc=int(20.30 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v2.3.0..main (CUDA graphs' private pools)",
        "Of the allocated memory %s is allocated by PyTorch, with %s allocated in private pools "
        "(e.g., CUDA Graphs), and %s is reserved by PyTorch but unallocated.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.51 GiB is free. Including non-PyTorch memory, "
        "this process has 77.58 GiB memory in use. Of the allocated memory 74.20 GiB is "
        "allocated by PyTorch, with 3.12 GiB allocated in private pools (e.g., CUDA Graphs), and "
        "1.80 GiB is reserved by PyTorch but unallocated." + _FRAG_3,
        req=2 * _GIB,
        total=int(79.10 * _GIB),
        free=int(1.51 * _GIB),
        alloc=int(74.20 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v2.1.0..main (no process sentence: NVML unavailable, e.g. WSL)",
        "CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s "
        "is free. Of the allocated memory %s is allocated by PyTorch, and %s is reserved by "
        "PyTorch but unallocated.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a "
        "total capacity of 8.00 GiB of which 0 bytes is free. Of the allocated memory 6.20 GiB "
        "is allocated by PyTorch, and 500.00 MiB is reserved by PyTorch but unallocated." + _FRAG_3,
        req=_GIB,
        total=8 * _GIB,
        free=0,
        alloc=int(6.20 * _GIB),
    ),
    # --- ROCm: the same format strings hipified ("CUDA" -> "HIP")
    _w(
        "pytorch",
        _CCA + "v1.8.0..v2.0.1 (hipified for ROCm)",
        "HIP out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already "
        "allocated; %s free; %s reserved in total by PyTorch)",
        "RuntimeError: HIP out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.98 GiB total "
        "capacity; 15.52 GiB already allocated; 0 bytes free; 15.73 GiB reserved in total by "
        "PyTorch)" + _FRAG_1,
        req=20 * _MIB,
        total=int(15.98 * _GIB),
        free=0,
        alloc=int(15.52 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v2.1.0..v2.1.2 (hipified, 'capacty')",
        "HIP out of memory. Tried to allocate %s. GPU %d has a total capacty of %s of which %s "
        "is free.",
        "torch.cuda.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 MiB. GPU 0 has a "
        "total capacty of 15.98 GiB of which 0 bytes is free. Of the allocated memory 15.29 GiB "
        "is allocated by PyTorch, and 316.58 MiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting max_split_size_mb to avoid "
        "fragmentation.  See documentation for Memory Management and PYTORCH_HIP_ALLOC_CONF",
        req=2 * _MIB,
        total=int(15.98 * _GIB),
        free=0,
        alloc=int(15.29 * _GIB),
    ),
    _w(
        "pytorch",
        _CCA + "v2.2.0..main (hipified)",
        "HIP out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s "
        "is free. Including non-PyTorch memory, this process has %s memory in use.",
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total "
        "capacity of 191.98 GiB of which 612.00 MiB is free. Including non-PyTorch memory, this "
        "process has 191.39 GiB memory in use. Of the allocated memory 186.54 GiB is allocated "
        "by PyTorch, and 3.72 GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True "
        "to avoid fragmentation.",
        req=int(1.02 * _GIB),
        total=int(191.98 * _GIB),
        free=612 * _MIB,
        alloc=int(186.54 * _GIB),
    ),
    # --- MPS (1.12 ..): "MB"/"GB" are binary units in MPSAllocator's format_size
    _w(
        "pytorch",
        "pytorch/pytorch:aten/src/ATen/mps/MPSAllocator.mm@v1.13.0..main (shared pool, bytes)",
        "MPS backend out of memory (MPS allocated: %s, other allocations: %s, max allowed: %s). "
        "Tried to allocate %s on %s pool.",
        "RuntimeError: MPS backend out of memory (MPS allocated: 1.80 GB, other allocations: "
        "1.74 GB, max allowed: 3.40 GB). Tried to allocate 256 bytes on shared pool. Use "
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations "
        "(may cause system failure).",
        req=256,
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:aten/src/ATen/mps/MPSAllocator.mm@v1.12.0..v1.12.1 (before the "
        "watermark hint)",
        "MPS backend out of memory (MPS allocated: %s, other allocations: %s, max allowed: %s). "
        "Tried to allocate %s on %s pool.",
        "RuntimeError: MPS backend out of memory (MPS allocated: 8.23 GB, other allocations: "
        "1.01 GB, max allowed: 9.07 GB). Tried to allocate 256.00 MB on private pool.",
        req=256 * _MIB,
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:aten/src/ATen/mps/MPSAllocator.mm@v2.x..main (binary units: 'GiB', "
        "'KiB' where 1.12-2.x printed 'GB', 'MB')",
        "MPS backend out of memory (MPS allocated: %s, other allocations: %s, max allowed: %s). "
        "Tried to allocate %s on %s pool.",
        "RuntimeError: MPS backend out of memory (MPS allocated: 42.28 GiB, other allocations: "
        "720.00 KiB, max allowed: 42.43 GiB). Tried to allocate 384.00 MiB on shared pool.",
        req=384 * _MIB,
    ),
    # --- XPU: IPEX's legacy allocator before torch had an XPU one
    _w(
        "pytorch",
        "intel/intel-extension-for-pytorch:csrc/gpu/runtime/CachingDeviceAllocator.cpp@"
        "v1.10.200+gpu..v2.1.40+xpu",
        "XPU out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already "
        "allocated; %s reserved in total by PyTorch)",
        "RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.56 GiB total "
        "capacity; 12.34 GiB already allocated; 13.00 GiB reserved in total by PyTorch)",
        req=2 * _GIB,
        total=int(15.56 * _GIB),
        alloc=int(12.34 * _GIB),
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:c10/cuda/CUDAMallocAsyncAllocator.cpp@v2.0.0..main (the block below "
        "the one-line message)",
        "Allocation on device %d would exceed allowed memory. (out of memory)\nCurrently "
        "allocated     : %s\nRequested               : %s\nDevice limit            : %s\nFree "
        "(according to CUDA): %s\nPyTorch limit (set by user-supplied memory fraction)\n"
        "                        : %s",
        "torch.cuda.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out "
        "of memory)\nCurrently allocated     : 21.40 GiB\nRequested               : 3.00 GiB\n"
        "Device limit            : 23.65 GiB\nFree (according to CUDA): 1.94 GiB\nPyTorch limit "
        "(set by user-supplied memory fraction)\n                        : 17179869184.00 GiB",
        req=3 * _GIB,
    ),
)

HISTORY: tuple[Wording, ...] = TORCH_HISTORY + ENGINES_HISTORY + FRAMEWORKS_HISTORY

_TORCH_NEAR_MISSES: tuple[str, ...] = (
    # the allocator's settings and statistics printed on success
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:512",
    "torch.cuda.memory_reserved(0) = 12.50 GiB; torch.cuda.memory_allocated(0) = 11.20 GiB",
    "GPU 0 has a total capacity of 23.65 GiB",
    "|  Reserved memory | 10.50 GiB | 10.50 GiB | 10.50 GiB |        0 B |",
    "MPS allocated: 1.80 GB, other allocations: 1.74 GB, recommended max working set: 10.7 GB",
    "Setting PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations",
    # posix_memalign's EINVAL (22), a bad alignment, is not a lack of memory
    "RuntimeError: [enforce fail at CPUAllocator.cpp:56] posix_memalign(&data, gAlignment, "
    "nbytes) == 0. 22 vs 0",
)

HISTORY_NEAR_MISSES: tuple[str, ...] = (
    _TORCH_NEAR_MISSES + ENGINES_HISTORY_NEAR_MISSES + FRAMEWORKS_HISTORY_NEAR_MISSES
)

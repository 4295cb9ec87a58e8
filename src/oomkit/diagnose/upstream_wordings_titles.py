"""Upstream wordings of mistral.rs's device mapper, XLA's OOM dump, ggml-vulkan's per-buffer limit,
Triton Inference Server's pinned pool, the Kompute backend's exception, CANN's and HIP's
allocation status names, CPython's fatal MemoryError, and the node-level killers (kubelet's
SystemOOM event, systemd-oomd, earlyoom) (issue 9, after heldout14); MIOpen's and MIGraphX's
HIP allocator check, ManagedCuda's NPP images, the XLA TPU compiler's HBM report tables, ONNX
Runtime's arena message with its number elided, PyTorch's cudaMallocAsync fields without their
first line, Dask's nanny restart (after heldout16 / heldout17).

Part of :mod:`oomkit.diagnose.upstream_wordings`; recognised by the generic fallback's families in
:mod:`oomkit.diagnose.parse_wordings_titles` (mistral.rs, XLA, the status names),
:mod:`oomkit.diagnose.parse_hosts` (the node-level killers),
:mod:`oomkit.diagnose.parse_wordings_damage` (those after heldout16 / heldout17, but ONNX
Runtime's, read by :mod:`oomkit.diagnose.parse_families`) and the existing parsers (the rest).
``TITLES_NEAR_MISSES`` are the same words where nothing failed for lack of memory.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB, Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["TITLES", "TITLES_NEAR_MISSES"]

_MISTRALRS = "EricLBuehler/mistral.rs:mistralrs-core/src/pipeline/loaders/auto_device_map.rs"
_XLA = "openxla/xla:xla/service/buffer_assignment.cc (BufferAssignment::ToVerboseString)"

TITLES: tuple[Wording, ...] = (
    _w(
        "mistral.rs",
        _MISTRALRS + " (get_device_layers: layers left over after every device)",
        "This model does not fit on the devices %s, and exceeds total capacity by %dMB. Auto "
        "device mapping params: %s",
        'Error: This model does not fit on the devices ["cuda[0] (avail: 7800MB)", "cpu (avail: '
        '2000MB)"], and exceeds total capacity by 6423MB. Auto device mapping params: '
        "text[max_seq_len: 4096, max_batch_size: 1]",
    ),
    _w(
        "mistral.rs",
        _MISTRALRS + " (get_device_layers: no device left to pop)",
        "No more devices to map to. The model does not fit on this system.",
        "Error: No more devices to map to. The model does not fit on this system.",
    ),
    _w(
        "mistral.rs",
        _MISTRALRS + " (get_device_layers: integrated GPU with unified memory)",
        "Model weights, activations, and runtime reservations need %.1f GiB, but only %.1f GiB is "
        "available within the unified-memory budget. ...",
        "Error: Model weights, activations, and runtime reservations need 18.2 GiB, but only 12.1 "
        "GiB is available within the unified-memory budget. Close other applications, pick a "
        "smaller quantization, reduce the expected context or batch size, or adjust "
        "MISTRALRS_IGPU_MEMORY_FRACTION.",
    ),
    _w(
        "mistral.rs",
        _MISTRALRS + " (get_device_layers: the primary device)",
        "Primary device %s cannot fit its fixed model components, activations, and post-load "
        "reservation within %d MB of usable capacity.",
        "Error: Primary device cuda[0] cannot fit its fixed model components, activations, and "
        "post-load reservation within 7000 MB of usable capacity.",
    ),
    # XLA prints this dump only after "Out of memory while trying to allocate %d bytes."; a
    # paste often starts inside it (the first line scrolled away)
    _w(
        "jax",
        _XLA,
        "BufferAssignment stats: ... preallocated temp allocation: %s",
        "BufferAssignment stats:\n             parameter allocation:    1.02GiB\n              "
        "constant allocation:         0B\n        maybe_live_out allocation:    4.89GiB\n     "
        "preallocated temp allocation:    1.97GiB",
    ),
    _w(
        "jax",
        _XLA,
        "Peak buffers:\\n\\tBuffer %d:\\n\\t\\tSize: %s\\n\\t\\tOperator: %s\\n\\t\\tXLA Label: "
        "%s\\n\\t\\tShape: %s",
        "Peak buffers:\n        Buffer 1:\n                Size: 3.40GiB\n                XLA "
        "Label: fusion\n                Shape: f32[1200,476,1600]",
    ),
    _w(
        "jax",
        _XLA,
        "\\tBuffer %d:\\n\\t\\tSize: %s\\n ... \\t\\tXLA Label: %s\\n\\t\\tShape: %s",
        "        Buffer 12:\n                Size: 96.00MiB\n                XLA Label: fusion\n"
        "                Shape: f32[128,256,768]",
    ),
    _w(
        "tpu",
        "XLA:TPU compiler (closed source; the RESOURCE_EXHAUSTED report of a program above HBM)",
        "Largest program allocations in hbm:",
        "  Largest program allocations in hbm:\n\n  1. Size: 512.00M\n     Operator: "
        'op_type="OneHot" op_name="one_hot"\n     Shape: f32[4,128,128,9,18]',
    ),
    _w(
        "vulkan",
        "ggml-org/llama.cpp:ggml/src/ggml-vulkan/ggml-vulkan.cpp (ggml_vk_create_buffer: size > "
        "max_memory_allocation_size throws vk::OutOfDeviceMemoryError)",
        "Requested buffer size exceeds device memory allocation limit",
        "ggml_vulkan: Device memory allocation of size 2166360064 failed.\nggml_vulkan: Requested "
        "buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory",
        req=2166360064,
    ),
    _w(
        "triton",
        "triton-inference-server/core:src/pinned_memory_manager.cc (AllocInternal: the pinned "
        "pool's allocate returned nullptr)",
        "failed to allocate pinned system memory",
        "E0509 21:57:29.450523 1 pinned_memory_manager.cc:170] failed to allocate pinned system "
        "memory",
    ),
    _w(
        "vulkan",
        "nomic-ai/llama.cpp:ggml-kompute.cpp (ggml_vk_allocate -> vk::Device::allocateMemory "
        "throws vk::OutOfDeviceMemoryError; GPT4All's Vulkan backend)",
        "terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'",
        "terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'\n  what():  "
        "vk::Device::allocateMemory: ErrorOutOfDeviceMemory",
    ),
    _w(
        "ascend",
        "Ascend CANN acl_base.h (ACL_ERROR_BAD_ALLOC = 200000, returned by ACL_CHECK_MALLOC_RESULT "
        "when a host allocation returns nullptr)",
        "ACL_ERROR_BAD_ALLOC",
        "[ERROR] ASCENDCL(4242,python):2024-06-01-10:00:00.000.000 [Check][Malloc]Allocate "
        "memory for [dataBuffer] failed.\naclmdlExecute failed, ret = ACL_ERROR_BAD_ALLOC",
    ),
    _w(
        "hip",
        "ROCm/HIP:include/hip/hip_runtime_api.h (hipErrorMemoryAllocation = 2, the deprecated "
        "alias of hipErrorOutOfMemory)",
        "hipErrorMemoryAllocation",
        "HIP error: hipErrorMemoryAllocation at /src/backend/hip/alloc.cpp:88",
    ),
    _w(
        "linux",
        "python/cpython:Python/errors.c (_PyErr_NormalizeException: Py_FatalError)",
        "Fatal Python error: Cannot recover from MemoryErrors while normalizing exceptions.",
        "Fatal Python error: _PyErr_NormalizeException: Cannot recover from MemoryErrors while "
        "normalizing exceptions.",
    ),
)

# after heldout16 / heldout17 (parse_wordings_damage)
TITLES += (
    _w(
        "miopen",
        "ROCm/MIOpen:src/hip/handlehip.cpp (Handle::Create / default_allocator: the request is "
        "larger than hipMemGetInfo's free bytes)",
        'MIOPEN_THROW("Memory not available to allocate buffer: " + std::to_string(sz))',
        "MIOpen Error: /data/repo/MIOpen/src/hip/handlehip.cpp:70: Memory not available to "
        "allocate buffer: 655360000",
        req=655360000,
    ),
    _w(
        "migraphx",
        "ROCm/AMDMIGraphX:src/targets/gpu/hip.cpp (allocate_gpu: the same check before hipMalloc)",
        'MIGRAPHX_THROW("Memory not available to allocate buffer: " + std::to_string(sz))',
        "terminate called after throwing an instance of 'migraphx::exception'\n  what():  "
        "/src/AMDMIGraphX/src/targets/gpu/hip.cpp:90: allocate_gpu: Memory not available to "
        "allocate buffer: 4294967296",
        req=4294967296,
    ),
    _w(
        "cuda",
        "kunzmi/managedCuda:NPP/NPPImage_8uC1.cs (and every NPPImage_*: nppiMalloc_* returned a "
        "null device pointer)",
        'throw new NPPException("Device allocation error", null)',
        "Unhandled Exception: ManagedCuda.NPP.NPPException: Device allocation error\n   at "
        "ManagedCuda.NPP.NPPImage_32fC1..ctor(Int32 nWidthPixels, Int32 nHeightPixels)",
    ),
    _w(
        "tpu",
        "XLA:TPU compiler (closed source; the RESOURCE_EXHAUSTED report after 'Ran out of memory "
        "in memory space hbm', as jax / flax users paste it)",
        "Total hbm usage >= %s:\n    reserved %s\n    program %s\n    arguments %s",
        "Total hbm usage >= 17.60G:\n    reserved        528.00M \n    program          17.08G \n"
        "    arguments       unknown size ",
    ),
    _w(
        "tpu",
        "XLA:TPU compiler (closed source; the second table of the same report)",
        "Program hbm requirement %s:\n    global %s\n    scoped %s\n    HLO temp %s",
        "Program hbm requirement 8.98G:\n    global           241.0K\n    scoped            "
        "9.56M\n    HLO temp          8.97G (100.0% utilization: Unpadded (8.94G) Padded (8.94G), "
        "0.4% fragmentation (36.60M))",
    ),
    _w(
        "onnxruntime",
        "microsoft/onnxruntime:onnxruntime/core/framework/bfc_arena.cc (BFCArena::Extend), its "
        "last number elided by the poster",
        "Available memory of %zu is smaller than requested bytes of %zu",
        "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : ... Available memory of 0 is smaller than "
        "requested bytes ...",
    ),
)

# TensorFlow's BFC dump without its first line (parse_wordings_damage)
TITLES += (
    _w(
        "tensorflow",
        "tensorflow/tsl:tsl/framework/bfc_allocator.cc (AllocateRawInternal on failure: "
        "LOG(WARNING) << RenderOccupancy())",
        "RenderOccupancy(): one '*' (in use) or '_' (free) per slice of the region",
        "W tensorflow/core/common_runtime/bfc_allocator.cc:479] "
        "**************************************************************************____",
    ),
    _w(
        "tensorflow",
        "tensorflow/tsl:tsl/framework/bfc_allocator.cc (DumpMemoryLog, called on failure)",
        'LOG(INFO) << "Bin (" << b->bin_size << "): \\tTotal Chunks: " << ... '
        '<< ", Chunks in use: "',
        "I tensorflow/core/common_runtime/bfc_allocator.cc:1004] Bin (256): \tTotal Chunks: 58, "
        "Chunks in use: 57. 14.5KiB allocated for chunks. 14.2KiB in use in bin. 1.2KiB "
        "client-requested in use in bin.",
    ),
)

# PyTorch's cudaMallocAsync message without its first line (parse_torch)
TITLES += (
    _w(
        "pytorch",
        "pytorch/pytorch:c10/cuda/CUDAMallocAsyncAllocator.cpp (mallocAsync: TORCH_CHECK_WITH("
        "OutOfMemoryError, ...), the fields after 'would exceed allowed memory')",
        "\\nCurrently allocated     : %s\\nRequested               : %s\\nDevice limit     "
        "       : %s\\nFree (according to CUDA): %s",
        "Currently allocated     : 4.86 GiB\nRequested               : 10.12 GiB\nDevice limit "
        "           : 24.00 GiB\nFree (according to CUDA): 0 bytes",
        req=int(10.12 * GIB),
    ),
)

# the node-level killers (parse_hosts)
TITLES += (
    _w(
        "kubernetes",
        "kubernetes/kubernetes:pkg/kubelet/oom/oom_watcher_linux.go (the SystemOOM event)",
        '"System OOM encountered" + ", victim process: %s, pid: %d"',
        "Warning  SystemOOM  6m57s  kubelet  System OOM encountered, victim process: python, "
        "pid: 3419",
    ),
    _w(
        "linux",
        "systemd/systemd:src/oom/oomd-util.c (oomd_kill_by_swap_usage / the memory-used kill)",
        "Killed %s due to memory used (%lu) / total (%lu) and swap used (%lu) / total (%lu) being "
        "more than %.2f%%",
        "systemd-oomd[812]: Killed /user.slice/user-1000.slice/user@1000.service/app.slice/"
        "ollama.service due to memory used (30100000000) / total (31200000000) and swap used "
        "(7600000000) / total (8000000000) being more than 90.00%",
    ),
    _w(
        "linux",
        "rfjakob/earlyoom:main.c (poll_loop: the SIGTERM threshold)",
        "low memory! at or below SIGTERM limits: mem %, swap %",
        "earlyoom[1479]: low memory! at or below SIGTERM limits: mem 10.00%, swap 10.00%",
    ),
    _w(
        "linux",
        "rfjakob/earlyoom:kill.c (kill_process)",
        'sending %s to process %d uid %d "%s": badness %d, VmRSS %lld MiB',
        'earlyoom[1479]: sending SIGTERM to process 211447 uid 1000 "python": badness 999, '
        "VmRSS 6318 MiB",
    ),
    _w(
        "dask",
        "dask/distributed:distributed/worker_memory.py (NannyMemoryManager.memory_monitor: the "
        "worker's RSS above memory_limit x terminate fraction)",
        "Worker %s (pid=%s) exceeded %d%% memory budget. Restarting...",
        "distributed.nanny.memory - WARNING - Worker tcp://127.0.0.1:40000 (pid=1234) exceeded "
        "95% memory budget. Restarting...",
    ),
)

TITLES_NEAR_MISSES: tuple[str, ...] = (
    # mistral.rs's mapper when everything fits, and its warning for a device that holds none
    "Using automatic device mapping parameters: text[max_seq_len: 4096, max_batch_size: 1].",
    "Model fits on the devices: cuda[0] 32 layers",
    # XLA's buffer-assignment text outside the OOM dump (the dump files of --xla_dump_to)
    "allocation 0: size 1024, parameter 0, shape |f32[256]| at ShapeIndex {}:",
    "XLA label is shown in the memory profiler",
    # Triton: the pinned pool's failure for a driver too old, not for memory
    "E0509 21:57:29.450523 1 pinned_memory_manager.cc:192] failed to allocate pinned system "
    "memory: CUDA driver version is insufficient for CUDA runtime version",
    "failed to allocate pinned system memory: no pinned memory pool",
    # a Vulkan exception that is not memory
    "terminate called after throwing an instance of 'vk::IncompatibleDriverError'",
    # the other fatal error of the same CPython function, and HIP's other deprecated alias
    "Fatal Python error: _PyErr_NormalizeException: Cannot recover from the recursive "
    "normalization of an exception.",
    "HIP error: hipErrorInitializationError",
    # earlyoom's periodic report and kubelet starting its watcher: nothing was killed
    "earlyoom[904]: mem avail:  7072 of  7721 MiB (91.60%), swap free: 7720 of 7720 MiB (100.00%)",
    "I0601 10:00:00.000000    1234 kubelet.go:1500] Starting OOM watcher",
    # MIOpen / MIGraphX's neighbours: the query before the check failed, not the memory
    "MIOpen Error: /data/repo/MIOpen/src/hip/handlehip.cpp:60: Failed getting available memory",
    # ManagedCuda's other NPP exceptions
    "ManagedCuda.NPP.NPPException: Image size error",
    "Device allocation error handling was refactored in NPPImage",
    # the TPU's HBM named outside the OOM report
    "Total hbm usage is shown in the TensorBoard memory viewer",
    "TPU v4 has 32 GiB of HBM per chip; program hbm requirement is printed at compile time",
    # Dask pausing a worker (nothing killed) and PyTorch's async fields quoted in prose
    "distributed.worker.memory - WARNING - Worker is at 80% memory usage. Pausing worker.  "
    "Process memory: 3.2 GiB -- Worker memory limit: 4.0 GiB",
    "the render died on Free (according to CUDA): 9.62 MiB",
    # a Markdown rule of asterisks, a bin table header without the counts
    "**************************************************",
    "Bin (256) holds the small chunks",
    # ONNX Runtime's arena telling its size, not failing
    "onnxruntime::BFCArena::Extend Extended allocation by 1048576 bytes.",
)

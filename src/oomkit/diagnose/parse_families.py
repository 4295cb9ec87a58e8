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
* Other frameworks' allocators: PaddlePaddle ``Out of memory error on GPU N. Cannot allocate X
  memory ... Y memory has been allocated and available memory is only Z`` (kB/MB/GB divide by
  1024), CuPy ``Out of memory allocating N bytes (allocated so far: A bytes)``, ONNX Runtime's BFC
  arena, CTranslate2 ``CUDA failed with error out of memory``, TVM's device API (MLC-LLM).
* Apple: MLX ``[metal::malloc]`` buffer-size and resource-count limits, MPS ``Invalid buffer
  size``, ggml-metal ``failed to allocate 'data' buffer`` (with ``recommendedMaxWorkingSetSize``).
* ggml scheduler ``failed to allocate graph``, XLA:TPU VMEM, Vulkan ``ErrorOutOfHostMemory``,
  ComfyUI's error report, safetensors ``unable to mmap ... Cannot allocate memory``.

Facts (``LogContext``): training/evaluation progress before the OOM (``completed_steps``), the
ggml-metal working set, the PyTorch DataParallel warning ``There is an imbalance between your
GPUs`` (``torch/nn/parallel/data_parallel.py`` ``_check_balance``) and a driver's per-allocation
limit (ggml-vulkan ``Requested buffer size exceeds device (memory allocation|buffer size)
limit``: Vulkan's ``maxMemoryAllocationSize`` / ``maxBufferSize``, not the total memory).
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import admitted
from oomkit.diagnose.sizes import to_bytes, to_int
from oomkit.diagnose.text import Lines, needles_re, sz

__all__ = ["parse_families"]

_KV_NOMEM = re.compile(
    r"(?:(?:not enough|insufficient) (?:gpu |device )?memory (?:for|to allocate) |"
    r"failed to allocate )(?:the )?kv[ -]?cache\b",
    re.IGNORECASE,
)
# Apple MLX (mlx/backend/metal/allocator.cpp): a buffer-count limit and a per-buffer limit
_MLX_COUNT = re.compile(r"\[metal::malloc\] Resource limit \((?P<n>\d{1,12})\) exceeded")
_MLX_BUFFER = re.compile(
    r"\[metal::malloc\] Attempting to allocate (?P<x>\d{1,20}) bytes which is greater than the "
    r"maximum allowed buffer size of (?P<m>\d{1,20}) bytes"
)
# PyTorch MPS: one buffer above Metal's maxBufferLength
_MPS_BUFFER = re.compile(r"Invalid buffer size: (?P<v>\d{1,9}(?:\.\d{1,4})?) ?(?P<u>[KMGT]?B)\b")
_VK_HOST = re.compile(r"ErrorOutOfHostMemory|VK_ERROR_OUT_OF_HOST_MEMORY")
# ONNX Runtime BFC arena (bfc_arena.cc BFCArena::Extend; a poster may elide the last number:
# "... Available memory of 0 is smaller than requested bytes ...")
_ORT = re.compile(
    r"Failed to allocate memory for requested buffer of size (?P<x>\d{1,20})|Available memory "
    r"of (?P<a>\d{1,20}) is smaller than requested bytes(?: of (?P<x2>\d{1,20}))?"
)
# PaddlePaddle: "Out of memory error on GPU 0. Cannot allocate 1.000000GB memory on GPU 0,
# 15.000000GB memory has been allocated and available memory is only 500.000000MB."
_PADDLE_UNITS = "B|kB|KB|MB|GB|TB"
# Paddle 1.x (memory/allocation/cuda_allocator.cc, memory/detail/system_allocator.cc) has no
# "has been allocated" part: "... Cannot allocate 3.125000GB memory on GPU 0, available memory is
# only 117.750000MB." and pastes wrap the line before the free size
# docpost24 (heldout49): the same allocators name the other places Paddle runs on, with the
# clauses they have: memory/allocation/xpu_allocator.cc ``Out of memory error on XPU %d. Cannot
# allocate %s memory on XPU %d.``; the XPU kernels' XPU_MALLOC ``Out of memory error on XPU,
# Cannot allocate %s memory on XPU.`` (no index; some spell "Cannot" "allocate" unspaced);
# memory/detail/system_allocator.cc (NPUAllocator) ``Out of memory error on NPU %d. Cannot
# allocate %s memory on NPU %d, available memory is only %s.``; custom devices
# (custom_allocator.cc) print their type's name in the same sentence
_PADDLE_PLACE = r"(?:GPU|XPU|NPU|MLU|IPU|[a-z][a-z_]{1,15})"
_PADDLE = re.compile(
    r"Out of memory error on (?P<k>"
    + _PADDLE_PLACE
    + r")(?: (?P<d>\d{1,3}))?[.,] Cannot ?allocate "
    + sz("x", _PADDLE_UNITS, "")
    + r" memory on "
    + _PADDLE_PLACE
    + r"(?: \d{1,3})?(?:, (?:"
    + sz("a", _PADDLE_UNITS, "")
    + r" memory has been allocated(?: ?\([^)]{0,80}\))? and )?available memory is only(?: "
    + sz("f", _PADDLE_UNITS, "")
    + r")?)?"
)
# Paddle's HumanReadableSize and PyTorch MPS's format_size divide by 1024 but print kB/MB/GB
_BINARY = {"B": "bytes", "kB": "KiB", "KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB"}
# CuPy: "Out of memory allocating 1,073,741,824 bytes (allocated so far: 15,032,385,536 bytes)"
# CuPy <= 6 (cuda/memory.pyx): "out of memory to allocate N bytes (total T bytes)", where
# total = size + pool.total_bytes(), so the pool held T - N
_CUPY = re.compile(
    r"Out of memory allocating (?P<x>[\d,]{1,26}) bytes \(allocated so far: (?P<a>[\d,]{1,26}) "
    r"bytes\)|out of memory to allocate (?P<x2>\d{1,20}) bytes \(total (?P<t>\d{1,20}) bytes\)"
)
# CTranslate2 (faster-whisper, whisperX): "CUDA failed with error out of memory"
_CT2 = re.compile(r"CUDA failed with error out of memory", re.IGNORECASE)
# TVM runtime (MLC-LLM): the device API's cudaMalloc check and the pooled allocator
_TVM_CUDA = re.compile(r"cuda_device_api\.cc:\d{1,6}.{0,120}CUDA: out of memory")
_TVM_ALLOC = re.compile(r"Failed to allocate (?P<x>\d{1,20}) bytes with alignment \d{1,6} bytes")
# ggml-metal (2023): "ggml_metal_add_buffer: error: failed to allocate 'data' buffer, size = X MiB"
_METAL_ADD = re.compile(
    r"ggml_metal_add_buffer: error: failed to allocate '(?P<name>[\w ]{1,20})' buffer, size = "
    r" {0,8}(?P<mib>\d{1,9}(?:\.\d{1,4})?) Mi?B"  # "MB" until late 2023: size / 1024 / 1024
)
_METAL_WS = re.compile(
    r"recommendedMaxWorkingSetSize\s{0,4}=\s{0,4}(?P<mib>\d{1,9}(?:\.\d{1,4})?) MiB"
)
# ggml scheduler: the compute graph's buffers could not be reserved
_GGML_GRAPH = re.compile(r"ggml_backend_sched: failed to allocate graph")
# XLA:TPU compile: the on-core vector memory (VMEM) of one kernel, not HBM
_VMEM = re.compile(r"Ran out of memory in memory space vmem")
# ComfyUI's error report: "- **Exception Message:** Allocation on device" (cut by the report)
_COMFY = re.compile(r"Exception Message:\*{0,2} Allocation on device")
# safetensors mmap of a checkpoint: ENOMEM from mmap (address space / overcommit)
_MMAP = re.compile(
    r"unable to mmap (?P<x>\d{1,20}) bytes from file .{0,300}?Cannot allocate memory"
)
_PAGES = re.compile(r"--(?P<flag>num-pages|num-tokens|max-total-tokens|context-length)")
_VK_PINNED = re.compile(r"Failed to allocate pinned memory", re.IGNORECASE)
_METAL_CUT = re.compile(r"Insufficient Memory \(0{0,8}8:kIOGPUCommandBuffer")
_MLC_PLAN = re.compile(
    r"storage allocation failure, attempted to allocate (?P<n>\d{1,20}) at offset \d{1,20} in "
    r"region that is (?P<r>\d{1,20}) ?bytes"
)
_CUBLAS = re.compile(r"Create cublas handle failed|cublasCreate(?:_v2)? failed", re.IGNORECASE)
# numpy/_core/_exceptions.py ``_ArrayMemoryError.__str__``: "Unable to allocate {size} for an
# array with shape {shape} and data type {dtype}"; ``_size_to_string`` prints ``{:#.3g}`` so a
# three-digit size keeps its point ("117. GiB"); numpy < 1.17 printed "Unable to allocate array
# with shape ..." with no size. Pastes paraphrase "for array with form" and decimal GB.
_NUMPY = re.compile(
    r"MemoryError: Unable to allocate (?:(?P<req>\d{1,15}(?:\.\d{0,8})?) ?"
    r"(?P<req_u>bytes|KiB|MiB|GiB|TiB|PiB|[KMGT]?B)\b )?(?:for )?(?:an )?array with"
)
_LMS = re.compile(
    r"insufficient system resources|Not enough resources to (?:load|run) (?:the )?model",
    re.IGNORECASE,
)
_LMS_NEED = re.compile(r"requires approximately (?P<v>NaN|\d{1,9}(?:\.\d{1,4})?) ?(?P<u>GB|GiB)?")
# accelerate/utils/modeling.py load_checkpoint_in_model raises the same verdict in its own words
# (docrec26): "At least one of the model submodule will be offloaded to disk, please pass along
# an `offload_folder`." (device_map put a submodule on "disk": GPU and CPU budgets were full)
_DISK_OFFLOAD = re.compile(
    r"`?device_map`? had weights offloaded to the disk|"
    r"submodule will be offloaded to disk, please pass along an `?offload_folder"
)
_IMBALANCE = "There is an imbalance between your GPUs"
_ALLOC_LIMIT = re.compile(
    r"exceeds (?:the )?device (?:memory allocation|buffer size|max(?:imum)? buffer) (?:size )?"
    r"limit",
    re.IGNORECASE,
)
# training/eval progress before the failure: tqdm "k/N [..., x it/s]" and "Epoch E" (loading and
# download bars excluded)
_TQDM = re.compile(r"\b(?P<k>\d{1,9})/(?P<n>\d{1,9}) \[|\[ {0,8}(?P<k2>\d{1,9})/(?P<n2>\d{1,9})\]")
_EPOCH = re.compile(r"\b[Ee]poch:? ?\[?(?P<e>\d{1,6})\b")
_LOOP_WORDS = ("epoch", "loss", "step", "train", "iter", "batch", "valid")
# the HF Trainer's own bar is unlabelled ("12%|█▏ | 190/1562 [41:02<4:56:13, 12.96s/it]"): it is
# transformers ProgressCallback.on_train_begin's `tqdm(total=state.max_steps)`, started after
# the `***** Running training *****` banner (`Total optimization steps = {max_steps:,}`), so a
# bare it/s or s/it bar counts once the log has shown that banner or a TrainingArguments dump
_TRAINER_START = ("***** Running training *****", "TrainingArguments(", "Total optimization steps")
_RATE_BAR = re.compile(r"\b\d{1,9}/\d{1,9} \[[^\]]{0,40}?(?:it/s|s/it)\]")
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
    "offloaded to disk, please pass",
    _IMBALANCE,
    "limit",
)
_DEVICE_NEEDLES = (
    "cuda_device_api",
    "with alignment",
    "ggml_metal_add_buffer",
    "failed to allocate graph",
    "memory space vmem",
    "Allocation on device",
    "unable to mmap",
    "cuda failed with error",
    "Out of memory error on ",
    "Out of memory allocating",
    "out of memory to allocate",
    "requested buffer of size",
    "smaller than requested bytes",
    "CUDA failed with error",
    "metal::malloc",
    "Invalid buffer size",
    "OutOfHostMemory",
    "OUT_OF_HOST_MEMORY",
)
_PREFILTER = needles_re(
    (*_NEEDLES, *_DEVICE_NEEDLES, "recommendedMaxWorkingSetSize", *_TRAINER_START)
)
_DEVICE_PREFILTER = needles_re(_DEVICE_NEEDLES)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _binary(m: re.Match[str], name: str) -> int | None:
    if m.group(name) is None:
        return None
    return to_bytes(m.group(name), _BINARY.get(m.group(name + "_u"), "bytes"), "generic")


def _numpy_bytes(m: re.Match[str]) -> int | None:
    """Bytes of numpy's size, which may end in a bare point (``{:#.3g}``: "926. GiB")."""
    if m["req"] is None:
        return None
    return to_bytes(m["req"].rstrip("."), m["req_u"], "numpy")


def _device_event(line: str, n: int) -> OomEvent | None:
    """Frameworks whose OOM states a request (and sometimes what is held or free)."""
    m = _PADDLE.search(line)
    if m is not None:
        return _ev(
            "paddle",
            "gpu_alloc_failed",
            "paddle_out_of_memory",
            line,
            n,
            device=int(m.group("d")) if m.group("d") else None,
            requested_bytes=_binary(m, "x"),
            detail=None if m.group("k") == "GPU" else m.group("k"),
            allocated_bytes=_binary(m, "a"),
            free_bytes=_binary(m, "f"),
        )
    m2 = _CUPY.search(line)
    if m2 is not None:
        if m2.group("x2") is not None:
            req, t = to_int(m2.group("x2")), to_int(m2.group("t"))
            held = t - req if req is not None and t is not None and t >= req else None
        else:
            req, held = to_int(m2.group("x")), to_int(m2.group("a"))
        return _ev(
            "cupy",
            "gpu_alloc_failed",
            "cupy_out_of_memory",
            line,
            n,
            requested_bytes=req,
            allocated_bytes=held,
        )
    m3 = _ORT.search(line)
    if m3 is not None:
        x = m3.group("x") or m3.group("x2")
        return _ev(
            "onnxruntime",
            "gpu_alloc_failed",
            "onnxruntime_bfc_arena",
            line,
            n,
            requested_bytes=to_int(x) if x else None,
            free_bytes=to_int(m3.group("a")) if m3.group("a") else None,
        )
    if _CT2.search(line):
        return _ev("ctranslate2", "cuda_error_oom", "ctranslate2_cuda_failed", line, n)
    if _TVM_CUDA.search(line):
        return _ev("mlc-llm", "cuda_error_oom", "tvm_cuda_device_api", line, n)
    m6 = _TVM_ALLOC.search(line)
    if m6 is not None:
        return _ev(
            "mlc-llm",
            "cuda_error_oom",
            "tvm_alloc_failed",
            line,
            n,
            requested_bytes=to_int(m6.group("x")),
        )
    m7 = _METAL_ADD.search(line)
    if m7 is not None:
        return _ev(
            "llama.cpp",
            "metal_buffer_failed",
            "metal_add_buffer_failed",
            line,
            n,
            requested_bytes=to_bytes(m7.group("mib"), "MiB", "llama.cpp"),
            buffer_name="MTL0",
            detail=m7.group("name").strip(),
            stage="weights" if m7.group("name").strip() == "data" else None,
        )
    if _GGML_GRAPH.search(line):
        return _ev("llama.cpp", "buffer_alloc_failed", "ggml_sched_graph", line, n, stage="compute")
    if _VMEM.search(line):
        return _ev("jax", "xla_vmem", "xla_tpu_vmem", line, n, stage="compile")
    if _COMFY.search(line):
        return _ev("pytorch", "cuda_oom", "pytorch_partial", line, n)
    m8 = _MMAP.search(line)
    if m8 is not None:
        return _ev(
            "safetensors",
            "host_oom",
            "safetensors_mmap_enomem",
            line,
            n,
            requested_bytes=to_int(m8.group("x")),
        )
    m4 = _MLX_BUFFER.search(line)
    if m4 is not None:
        return _ev(
            "mlx",
            "buffer_limit",
            "mlx_max_buffer_size",
            line,
            n,
            requested_bytes=to_int(m4.group("x")),
            allowed_bytes=to_int(m4.group("m")),
        )
    if _MLX_COUNT.search(line):
        return _ev("mlx", "resource_limit", "mlx_resource_limit", line, n)
    m5 = _MPS_BUFFER.search(line)
    if m5 is not None:
        unit = _BINARY.get(m5.group("u"), m5.group("u"))
        return _ev(
            "pytorch-mps",
            "buffer_limit",
            "mps_invalid_buffer_size",
            line,
            n,
            requested_bytes=to_bytes(m5.group("v"), unit, "pytorch"),
        )
    if _VK_HOST.search(line):
        return _ev(
            "llama.cpp" if "ggml" in line else "vulkan",
            "host_alloc_failed",
            "vulkan_out_of_host_memory",
            line,
            n,
            buffer_name="Vulkan_Host",
        )
    return None


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
            requested_bytes=_numpy_bytes(m4),
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
    dev = _device_event(line, n) if _DEVICE_PREFILTER.search(line) else None
    if dev is not None:
        return dev
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
    trainer = False  # the HF Trainer's training loop has started (its bar is unlabelled)
    for i in admitted(lines, _PREFILTER):
        line = lines.cleaned(i)
        if not trainer and any(m in line for m in _TRAINER_START):
            trainer = True
        if _IMBALANCE in line:
            facts.setdefault("imbalance_warning", line[:300])
        if "limit" in line and _ALLOC_LIMIT.search(line):
            facts.setdefault("allocation_limit", line[:300])
        if "recommendedMaxWorkingSetSize" in line:
            ws = _METAL_WS.search(line)
            if ws is not None:
                facts.setdefault("metal_working_set_bytes", to_bytes(ws["mib"], "MiB", "llama.cpp"))
        ev = _event(line, lines.number[i])
        if ev is not None:
            events.append(ev)
        elif (
            "/s" in line or "s/it" in line or "poch" in line or ("/" in line and "] " in line)
        ) and not any(w in line for w in _NOT_STEPS):
            _steps(line, facts, trainer)
    return events, facts


def _steps(line: str, facts: dict[str, Any], trainer: bool = False) -> None:
    """Completed steps shown by a progress bar or an epoch counter (the largest seen).

    Only bars of a training/evaluation loop count (the line names an epoch, step, loss, batch
    or iteration): an unlabelled bar is as often a diffusion sampler's 20/20 steps before the
    VAE decode, or a dataset map, where a later failure is a different allocation, not growth.
    After the HF Trainer's banner (``trainer``) its unlabelled it/s or s/it bar counts too.
    """
    low = line.lower()
    if not any(w in low for w in _LOOP_WORDS) and not (trainer and _RATE_BAR.search(line)):
        return
    done = [
        int(m["k"] or m["k2"])
        for m in _TQDM.finditer(line)
        if int(m["k"] or m["k2"]) <= int(m["n"] or m["n2"])
    ]
    # "Epoch E" counts from 0 or 1: E >= 2 means at least one whole epoch ran either way
    done += [int(m.group("e")) - 1 for m in _EPOCH.finditer(line)]
    if done and max(done) > (facts.get("completed_steps") or 0):
        facts["completed_steps"] = max(done)

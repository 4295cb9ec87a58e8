"""Runtime messages that say "out of memory" in their own words, read when no parser matched.

Each family is a runtime's own wording (cited below); the dispatcher runs this module only when
the specific parsers found nothing, before the keyword fallback (``parse_extra.parse_generic``),
so these families never displace a richer event:

* Ollama 0.1.x ``llama runner exited, you may not have enough available memory to run this
  model`` (``llm/llama.go`` ``Predict``: the runner subprocess died — ``unexpected EOF`` — and
  left no error line, so Ollama guesses memory).
* A llama.cpp context that could not be created: ``failed to create context with model``
  (``common/common.cpp``), llama-cpp-python ``Failed to create llama_context``, the Rust
  ``llama-cpp-2`` crate's ``Failed to create context: null reference from llama.cpp``. Creating a
  context allocates the KV cache and the compute buffers (``llama_init_from_model``), both sized
  by the context length x parallel sequences; the weights are loaded before it.
* vLLM hybrid (Mamba / linear-attention) models: ``max_num_seqs (N) exceeds available Mamba cache
  blocks (B)`` (``vllm/config/compilation.py``, at CUDA-graph capture): every running sequence
  holds one state block, and the block pool is what the memory budget left.
* ComfyUI: PyTorch's ``Allocation on device <d> would exceed allowed memory`` (the
  ``cudaMallocAsync`` backend ComfyUI enables, ``c10/cuda/CUDAMallocAsyncAllocator.cpp``) prints
  the device index as an ``int8`` char, so the text stops at ``Allocation on device``; ComfyUI's
  ``execution.py`` prints it after ``!!! Exception during processing !!!`` (``processing!!!``
  without the space before mid-2024: ``logging.error(f"!!! Exception during processing!!!
  {ex}")``) and then ``Got an
  OOM, unloading all loaded models.``; older ComfyUI prints ``Error occurred when executing
  <node>:`` and the exception's text, ``Allocation on device``, alone on a line;
  ``comfy/sd.py`` ``Ran out of memory when regular VAE decoding, retrying with tiled VAE
  decoding`` (recovered by tiling).
* Split attention of Stable Diffusion UIs (A1111 ``sd_hijack_optimizations.py``, ComfyUI
  ``attention_split``): ``Not enough memory, use lower resolution (max approx. RxR). Need: N GB
  free, Have: H GB free`` -- raised when even 64 slices of the attention matrix do not fit the
  free memory; "GB" there divides by 1024**3, and Need is one 64th of the requirement.
* TensorFlow's BFC allocator statistics, printed on OOM by ``BFCAllocator::DumpMemoryLog``
  (``AllocatorStats::DebugString``: ``Limit: N`` / ``InUse: N`` / ``MaxAllocSize: N``), when the
  paste keeps only that table.
* vLLM sleep mode's allocator (``csrc/cumem_allocator.cpp``, used only with
  ``enable_sleep_mode`` by RL frameworks that colocate a trainer: verl, OpenRLHF): ``CUDA Error:
  out of memory at .../cumem_allocator.cpp:N`` when ``wake_up`` re-maps the weights / KV cache it
  released on ``sleep``.
* lmdeploy TurboMind / FasterTransformer ``check_cuda_error``: ``[TM][ERROR] CUDA runtime error:
  out of memory <file>:<line>`` (``[FT][ERROR]`` in FasterTransformer-era builds). The file is
  the failing call's: ``src/turbomind/utils/memory_utils.cu`` is ``deviceMalloc``, which
  ``LlamaDecoderLayerWeight::mallocWeights`` uses for every weight matrix (the weights);
  ``allocator.h`` serves the KV cache and runtime buffers. FasterTransformer's own ``[FT][ERROR]``
  is read apart (``fastertransformer_cuda_runtime_error``): there ``deviceMalloc``
  (``src/fastertransformer/utils/memory_utils.cu``) places the weights at load
  (``ParallelGptWeight::mallocWeights``) and, in the Triton backend, every request's input
  tensors (``src/fastertransformer/triton_backend/triton_utils.hpp`` ``move_tensor_H2D``,
  FT 5.x), so the file does not decide.
* ggml-vulkan ``Requested buffer size exceeds device memory allocation limit`` (``ggml-vulkan.cpp``
  ``ggml_vk_create_buffer`` throws ``vk::OutOfDeviceMemoryError`` when one buffer is above the
  driver's ``maxMemoryAllocationSize``): a per-buffer limit, not the total memory.
* TensorFlow's exception class alone, ``tensorflow.python.framework.errors_impl.
  ResourceExhaustedError`` / ``tf.errors.ResourceExhaustedError`` (the status an op kernel
  returns when its output cannot be allocated), when the paste lost the ``OOM when allocating``
  line.
* TensorFlow's list of the tensors a step held when it ran out (``report_tensor_allocations_upon_
  oom``): ``StepStatsCollector::ReportAllocsOnResourceExhausted``
  (``tensorflow/core/common_runtime/step_stats_collector.cc``, appended to the OOM status by
  ``executor.cc`` when the status is ``RESOURCE_EXHAUSTED``) prints one ``  <size> from <node>``
  line per large tensor and ends with ``  Remaining <N> nodes with <size>``
  (``strings::HumanReadableNumBytes``: ``5.32GiB``), when the paste keeps only that tail. The
  trailer is read only after a ``<size> from <node>`` line (a cluster's "Remaining 4 nodes with
  80GB GPUs" is not it).
* AMD's amdgpu command submission: Mesa RADV ``radv/amdgpu: Not enough memory for command
  submission.`` (``src/amd/vulkan/winsys/amdgpu/radv_amdgpu_cs.c``: the submit ioctl returned
  ``-ENOMEM`` and RADV reports ``VK_ERROR_OUT_OF_HOST_MEMORY``), and the kernel's ``*ERROR* Not
  enough memory for command submission!`` in dmesg (``drivers/gpu/drm/amd/amdgpu/amdgpu_cs.c``
  ``amdgpu_cs_ioctl``, when ``amdgpu_cs_parser_bos`` cannot validate the submission's buffers);
  also the other Mesa winsys tags (radeonsi ``amdgpu:``, r600 ``radeon:``) and the kernel's line
  quoted alone (``Not enough memory for command submission!``).
* PyTorch's caching allocator warning (``c10/cuda/CUDACachingAllocator.cpp`` ``alloc_block``:
  ``LOG(WARNING) << "memory allocation failed with OOM on device " << device << " while trying to
  allocate " << size << " bytes (free: " << free << ", total: " << total << ")."``), printed when
  ``cudaMalloc`` fails; on the first attempt the allocator frees its cached blocks and retries,
  and only a second failure raises ``OutOfMemoryError``.
* PyCUDA (``src/cpp/cuda.hpp``: ``CUDAPP_CALL_GUARDED`` throws ``pycuda::error(routine, code)``,
  message ``<routine> failed: <cuGetErrorString>``, raised as ``pycuda._driver.MemoryError`` for
  ``CUDA_ERROR_OUT_OF_MEMORY``): ``MemoryError: cuMemAlloc failed: out of memory`` (device
  routines only: ``cuMemHostAlloc`` / ``cuMemAllocHost`` pin host memory, not read here).
* CTranslate2's CPU allocator (``src/allocator.cc``: ``mkl_malloc: failed to allocate memory``
  with MKL, ``aligned_alloc: failed to allocate memory`` without): host RAM (faster-whisper,
  whisperX on CPU or while loading).
* SYCL / Level Zero (Intel GPUs, llama.cpp SYCL, IPEX): ``UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY``
  / ``ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY`` (Unified Runtime error 39) and
  ``..._OUT_OF_HOST_MEMORY`` (38); the Plugin Interface's ``PI_ERROR_OUT_OF_RESOURCES`` (-5, what
  a device allocation failure maps to) and ``PI_ERROR_OUT_OF_HOST_MEMORY`` (-6).

Every pattern is a literal or a bounded repetition: linear time on any line.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.sizes import decimal_to_bytes, to_int
from oomkit.diagnose.text import Lines, needles_re, window

__all__ = ["parse_recognise"]

_OLLAMA_EXIT = re.compile(
    r"llama runner exited, you may not have enough available memory to run this model"
)
_CTX_FAIL = re.compile(r"failed to create (?:a )?(?:llama[_ ])?context\b", re.IGNORECASE)
_MAMBA = re.compile(
    r"max_num_seqs \((?P<n>\d{1,9})\) exceeds available Mamba cache blocks \((?P<b>\d{1,12})\)"
)
# ComfyUI's log endpoint (``api_server/routes/internal/internal_routes.py`` ``get_logs``: ``"".join(
# l["t"] + " - " + l["m"] ...)``, one ISO-timestamped entry per ``write``) joins entries without a
# newline, so the cut message may run on into the next entry's "<ISO timestamp> - "; custom nodes
# print the exception after their own "Error during inference:" style prefix; the next entry's
# timestamp right after the cut text is itself the sign (whatever came before it)
_COMFY_CUT = re.compile(
    r"(?:!!! Exception during processing ?!!!|OutOfMemoryError:|Exception Message:\*{0,2}|"
    r"\b(?:[Ee]rror|[Ee]xception|[Ff]ailed)\b[\w ]{0,40}:) "
    r"{0,4}Allocation on device\s{0,8}$|"
    r"\bAllocation on device\s{1,8}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
)
_COMFY_GOT = "Got an OOM, unloading all loaded models"
_COMFY_VAE = re.compile(
    r"Ran out of memory when regular VAE (?P<op>en|de)coding, retrying with tiled VAE"
)
_BFC_LIMIT = re.compile(r"^Limit:\s{1,40}(?P<v>\d{1,20})\s{0,8}$")
# window() joins the table's lines with spaces ("MaxInUse:" has no word boundary before "InUse")
_BFC_INUSE = re.compile(r"\bInUse:\s{1,40}(?P<v>\d{1,20})\b")
_BFC_MAX = re.compile(r"\bMaxAllocSize:\s{1,40}(?P<v>\d{1,20})\b")
_CUMEM = re.compile(r"out of memory at \S{0,200}cumem_allocator\.cpp", re.IGNORECASE)
_TURBOMIND = re.compile(
    r"(?:\[(?P<who>TM|FT)\]\[ERROR\] )?CUDA runtime error: out of memory"
    r"(?: \S{0,200}?(?P<src>memory_utils\.cu|allocator\.h))?"
)
_SPLIT_ATTN = re.compile(
    r"Not enough memory, use lower resolution \(max approx\. \d{1,6}x\d{1,6}\)\.? ?"
    r"Need: ?(?P<need>\d{1,6}(?:\.\d{1,3})?) ?GB free, ?Have: ?(?P<have>\d{1,6}(?:\.\d{1,3})?) ?GB"
)
_VK_LIMIT = re.compile(
    r"Requested buffer size exceeds device (?:memory allocation|buffer size) limit", re.IGNORECASE
)
_TF_EXHAUSTED = re.compile(r"(?:errors_impl|errors)\.ResourceExhaustedError\b")
# step_stats_collector.cc ReportAllocsOnResourceExhausted: "  4.27MiB from model/decoder/add" ...
# "  Remaining 41046 nodes with 5.32GiB" (HumanReadableNumBytes: B, KiB, MiB, GiB, TiB)
_TF_HRB = r"\d{1,6}(?:\.\d{1,2})?(?:[KMGTP]iB|B)"
_TF_REMAINING = re.compile(
    r"^\s{0,8}Remaining (?P<n>\d{1,9}) nodes with (?P<b>" + _TF_HRB + r")\s*$"
)
_TF_FROM = re.compile(r"^\s{0,8}" + _TF_HRB + r" from \S{1,300}\s*$")
# (the kernel's DRM_ERROR / drm_err print "[drm:amdgpu_cs_ioctl [amdgpu]] *ERROR* ..." /
# "amdgpu 0000:03:00.0: [drm] *ERROR* ..." in dmesg)
_AMDGPU_CS = re.compile(
    r"(?:radv/amdgpu: |amdgpu\S{0,20} |\*ERROR\* )Not enough memory for command submission|"
    # docpost22: the other Mesa winsys tags and the kernel's bare line. radeonsi's
    # "amdgpu: Not enough memory for command submission." (src/gallium/winsys/amdgpu/drm/
    # amdgpu_cs.c), r600's "radeon: ..." (src/gallium/winsys/radeon/drm/radeon_drm_cs.c), RADV's
    # "radv/amdgpu: ..." (src/amd/vulkan/winsys/amdgpu/radv_amdgpu_cs.c radv_amdgpu_cs_submit,
    # bminor/mesa-mesa@00abc931: -ENOMEM -> VK_ERROR_OUT_OF_HOST_MEMORY), the kernel's
    # DRM_ERROR/drm_err("Not enough memory for command submission!\n") quoted alone
    r"(?:\b[\w/]{1,30}: |^\W{0,3})Not enough memory for command submission[.!]"
    # revfix20f: radeonsi's C++ winsys (src/gallium/winsys/amdgpu/drm/amdgpu_cs.cpp,
    # amdgpu_cs_submit_ib) dropped the -ENOMEM branch: a userspace ``out_of_memory`` sets
    # r = -ENOMEM and the one remaining message prints it, "amdgpu: The CS has been rejected, see
    # dmesg for more information (%i)." and later "amdgpu: The CS has been rejected (%i)."; only
    # -12 (ENOMEM) is memory: -22, -19, -62 ... are invalid, lost device, timeout
    r"|\b(?:radv/)?amdgpu: The CS has been rejected(?:, see dmesg for more information)? "
    r"\((?:-12|-ENOMEM)\)"
)
_TORCH_ALLOC_WARN = re.compile(
    r"memory allocation failed with OOM on device (?P<d>\d{1,3}) while trying to allocate "
    r"(?P<n>\d{1,20}) bytes \(free: (?P<f>\d{1,20}), total: (?P<t>\d{1,20})\)"
)
_PYCUDA = re.compile(r"MemoryError: (?P<call>cu\w{1,40}) failed: out of memory")
_CT2_HOST = re.compile(r"\b(?:mkl_malloc|aligned_alloc): failed to allocate memory")
# SYCL's older Plugin Interface names the same two failures (intel/llvm
# sycl/plugins/unified_runtime/pi2ur.hpp ur2piResult: UR_RESULT_ERROR_OUT_OF_HOST_MEMORY ->
# PI_ERROR_OUT_OF_HOST_MEMORY (-6); UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, _OUT_OF_RESOURCES and
# _OBJECT_ALLOCATION_FAILURE -> PI_ERROR_OUT_OF_RESOURCES (-5)), printed by the SYCL runtime as
# "Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)" (IPEX, llama.cpp SYCL)
_UR = re.compile(
    r"(?:UR|ZE)_RESULT_ERROR_OUT_OF_(?P<where>DEVICE|HOST)_MEMORY|"
    r"PI_ERROR_OUT_OF_(?P<pi>HOST_MEMORY|RESOURCES)\b"
)
_PREFILTER = needles_re(
    (
        "llama runner exited",
        "ontext",
        "Mamba cache blocks",
        "Allocation on device",
        _COMFY_GOT,
        "Ran out of memory when regular VAE",
        "Limit:",
        "_OUT_OF_",
        "cumem_allocator",
        "use lower resolution",
        "buffer size exceeds",
        "ResourceExhaustedError",
        "nodes with",
        "CUDA runtime error: out of memory",
        "for command submission",
        "CS has been rejected",
        "failed with OOM on device",
        "MemoryError: cu",
        "alloc: failed to allocate memory",
    )
)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _event(lines: Lines, i: int, line: str) -> OomEvent | None:
    n = lines.number[i]
    if _OLLAMA_EXIT.search(line):
        return _ev("ollama", "runner_exited_memory", "ollama_runner_exited_memory", line, n)
    m = _MAMBA.search(line)
    if m is not None:
        return _ev(
            "vllm",
            "state_blocks",
            "vllm_mamba_cache_blocks",
            line,
            n,
            stage="startup",
            detail=f"max_num_seqs {m['n']} > {m['b']} Mamba cache blocks",
        )
    if "ontext" in line and "process has terminated" not in line and _CTX_FAIL.search(line):
        return _ev(
            "llama.cpp", "context_failed", "llama.cpp_context_failed", line, n, stage="kv_cache"
        )
    if _COMFY_CUT.search(line) or _COMFY_GOT in line or line.strip() == "Allocation on device":
        return _ev("comfyui", "cuda_oom", "comfyui_allocation_on_device", line, n)
    m2 = _COMFY_VAE.search(line)
    if m2 is not None:
        return _ev(
            "comfyui",
            "vae_tiled_retry",
            "comfyui_vae_tiled_retry",
            line,
            n,
            stage="runtime",
            detail=f"VAE {m2['op']}coding",
        )
    m3 = _BFC_LIMIT.search(line)
    if m3 is not None:
        w = window(lines, i, max_lines=8)
        used = _BFC_INUSE.search(w)
        if used is not None:
            largest = _BFC_MAX.search(w)
            return _ev(
                "tensorflow",
                "bfc_stats",
                "tf_bfc_allocator_stats",
                w,
                n,
                total_bytes=to_int(m3["v"]),
                allocated_bytes=to_int(used["v"]),
                detail=f"MaxAllocSize {largest['v']}" if largest else None,
            )
    if "cumem_allocator" in line and _CUMEM.search(line):
        return _ev("vllm", "cuda_error_oom", "vllm_cumem_wake_up", line, n, stage="runtime")
    m5 = _TURBOMIND.search(line)
    if m5 is not None and m5["who"] == "FT":
        # FasterTransformer's own builds (docpost26): its deviceMalloc places the weights at
        # load *and*, in the Triton backend, each request's input tensors (triton_utils.hpp
        # move_tensor_H2D), so the file alone does not name the allocation
        return _ev(
            "fastertransformer",
            "cuda_error_oom",
            "fastertransformer_cuda_runtime_error",
            line,
            n,
            detail=m5["src"],
        )
    if m5 is not None:
        w = window(lines, i - 3 if i >= 3 else 0, max_lines=6)
        # check_cuda_error names the file of the failing call: memory_utils.cu is deviceMalloc,
        # which TurboMind uses for the weights (LlamaDecoderLayerWeight::mallocWeights); the
        # KV cache and the runtime buffers go through allocator.h
        weights = m5["src"] == "memory_utils.cu" and "create_model_instance" not in w
        return _ev(
            "lmdeploy",
            "cuda_error_oom",
            "turbomind_cuda_runtime_error",
            line,
            n,
            detail="create_model_instance"
            if "create_model_instance" in w
            else ("memory_utils.cu" if weights else None),
            stage="weights" if weights else None,
        )
    m6 = _SPLIT_ATTN.search(line) if "use lower resolution" in line else None
    if m6 is not None:
        return _ev(
            "stable-diffusion",
            "attention_slices",
            "sd_split_attention",
            line,
            n,
            requested_bytes=decimal_to_bytes(m6["need"], 1 << 30),
            free_bytes=decimal_to_bytes(m6["have"], 1 << 30),
            stage="runtime",
        )
    if "buffer size exceeds" in line and _VK_LIMIT.search(line):
        return _ev("llama.cpp", "alloc_limit", "vulkan_max_allocation_size", line, n)
    if "ResourceExhaustedError" in line and _TF_EXHAUSTED.search(line):
        return _ev("tensorflow", "resource_exhausted", "tf_resource_exhausted_class", line, n)
    m7 = _TF_REMAINING.search(line) if "nodes with" in line else None
    if m7 is not None and any(_TF_FROM.search(lines.cleaned(j)) for j in range(max(0, i - 8), i)):
        return _ev(
            "tensorflow",
            "resource_exhausted",
            "tf_oom_tensor_report",
            line,
            n,
            detail=f"{m7['n']} more tensors hold {m7['b']}",
        )
    if ("for command submission" in line or "CS has been rejected" in line) and _AMDGPU_CS.search(
        line
    ):
        return _ev("vulkan", "host_alloc_failed", "amdgpu_cs_enomem", line, n)
    m5 = _TORCH_ALLOC_WARN.search(line) if "failed with OOM" in line else None
    if m5 is not None:
        return _ev(
            "pytorch",
            "alloc_retry_warning",
            "torch_alloc_block_warning",
            line,
            n,
            device=int(m5["d"]),
            requested_bytes=to_int(m5["n"]),
            free_bytes=to_int(m5["f"]),
            total_bytes=to_int(m5["t"]),
        )
    m6 = _PYCUDA.search(line) if "MemoryError: cu" in line else None
    if m6 is not None and "Host" not in m6["call"]:  # (host routines: pinned host memory)
        return _ev(
            "cuda",
            "cuda_error_oom",
            "pycuda_memory_error",
            line,
            n,
            detail=m6.group(0)[len("MemoryError: ") :],
        )
    if "alloc: failed to allocate memory" in line and _CT2_HOST.search(line):
        return _ev("ctranslate2", "host_alloc_failed", "ctranslate2_cpu_alloc", line, n)
    m4 = _UR.search(line)
    if m4 is not None:
        host = m4["where"] == "HOST" or m4["pi"] == "HOST_MEMORY"
        return _ev(
            "sycl",
            "host_alloc_failed" if host else "gpu_alloc_failed",
            "level_zero_out_of_host_memory" if host else "level_zero_out_of_device_memory",
            line,
            n,
            detail=m4.group(0),
        )
    return None


def parse_recognise(lines: Lines) -> list[OomEvent]:
    """Events of the families in the module docstring (every match, in log order). Never raises.

    The caller runs this only when no specific parser found an event.
    """
    return scan_events(lines, _PREFILTER, lambda ls, i: _event(ls, i, ls.cleaned(i)))

"""Failures against a per-buffer limit, a paged KV cache, and Paddle's allocator (issue 9).

Read only where no other parser found an event (``parse_log``'s fallback chain). Each wording is
the runtime's own, cited to the file that prints it:

* **One buffer above the API's per-allocation limit** (``buffer_limit``; not the total memory, so
  the cause stays open): ggml's Metal backend before the 2023 buffer views,
  ``ggml_metal_add_buffer: buffer '%s' size %zu is larger than buffer maximum of %zu``
  (ggml-metal.m; copy in ``ollama/ollama:llama/ggml-metal.m``), which leaves the buffer
  unregistered so every later kernel prints ``ggml_metal_get_buffer: error: buffer is nil``;
  the Vulkan validation layer's ``VUID-VkBufferCreateInfo-size-06409``, ``vkCreateBuffer():
  pCreateInfo->size (%u) is larger than the maximum allowed buffer size
  VkPhysicalDeviceMaintenance4Properties.maxBufferSize (%u)``
  (``KhronosGroup/Vulkan-ValidationLayers:layers/core_checks/cc_buffer.cpp``); OpenCL's
  ``CL_INVALID_BUFFER_SIZE`` (-61: ``clCreateBuffer`` with a size above
  ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``, OpenCL-Headers ``cl.h``; TVM prints ``OpenCL Error,
  code=-61: CL_INVALID_BUFFER_SIZE``, ``apache/tvm:src/runtime/opencl/opencl_device_api.cc``);
  Intel Extension for PyTorch on GPUs without 2D block arrays (Arc A-series, Flex),
  ``Current platform can NOT allocate memory block with size larger than 4GB!``
  (``intel/intel-extension-for-pytorch:csrc/gpu/runtime/CachingDeviceAllocator.cpp``);
  WebGPU: wgpu (burn, candle's wgpu users, native apps) ``Buffer size {requested} is greater
  than the maximum buffer size ({maximum})`` (``gfx-rs/wgpu:wgpu-core/src/resource.rs``
  ``CreateBufferError::MaxBufferSize``) and ``Buffer binding {binding} range {given} exceeds
  `max_*_buffer_binding_size` limit {limit}`` (``wgpu-core/src/binding_model.rs``), and the
  browsers' Dawn (WebLLM, MediaPipe, ONNX Runtime Web) ``Buffer size (%u) exceeds the max buffer
  size limit (%u).`` (``google/dawn:src/dawn/native/Buffer.cpp``).
* **A paged KV cache with no free page**: TVM's ``PagedAttentionKVCache`` (MLC-LLM, WebLLM),
  ``CHECK(!free_page_ids_.empty()) << "The KV cache is full. No page can be allocated."``
  (``apache/tvm:src/runtime/relax_vm/paged_kv_cache.cc`` ``GetFreePage``).
* **PaddlePaddle's allocator**: the exception every failed ``Alloc`` throws, ``class BadAlloc :
  public std::exception`` (``PaddlePaddle/Paddle:paddle/fluid/memory/allocation/allocator.h``,
  uncaught: ``terminate called after throwing an instance of
  'paddle::memory::allocation::BadAlloc'``), and Paddle 1.x's first-chunk check
  ``PADDLE_ENFORCE(allocating <= available)`` (``paddle/fluid/platform/gpu_info.cc``
  ``GpuMaxChunkSize``: ``enforce allocating <= available failed, %d > %d``, the bytes the
  memory fraction asks for against the bytes free).
* **OpenVINO's GPU plugin** (``openvinotoolkit/openvino:src/plugins/intel_gpu/src/runtime/
  engine.cpp`` ``engine::check_allocatable``; ``ocl/ocl_engine.cpp`` in 2022-2023 releases): one
  buffer above the device's ``max_alloc_mem_size``, ``[GPU] Exceeded max size of memory object
  allocation: requested %d bytes, but max alloc size supported by device is %d bytes.`` (a
  per-buffer limit, ``buffer_limit``), and the device total, ``[GPU] Exceeded max size of memory
  allocation: Required %d bytes, already occupied : %d bytes, but available memory size is %d
  bytes`` (an allocation failure: the engine's use plus the request against the device memory).
* **Ascend's torch_npu** (``Ascend/pytorch:torch_npu/csrc/core/npu/NPUException.h``
  ``NPU_CHECK_ERROR``: ``NPU function error: <call>, error code is <n>``) with the CANN runtime
  codes of a failed device allocation (``rt_error_codes.h`` / ``acl_base.h``:
  ``ACL_ERROR_RT_MEMORY_ALLOCATION = 207001`` "memory allocation error, only used by out of
  memory", ``ACL_ERROR_RT_DEVIDE_OOM = 207018`` "device oom"); every other code (stream
  timeouts 107027, AI Core exceptions 507015, operator errors 561002) is not memory.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import on_raw, scan_events
from oomkit.diagnose.sizes import to_bytes, to_int
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["parse_limits"]

_METAL_ADD = re.compile(
    r"ggml_metal_add_buffer: (?:error: )?buffer '(?P<name>[^']{1,40})' size (?P<x>\d{1,20}) is "
    r"larger than buffer maximum of (?P<m>\d{1,20})"
)
_METAL_NIL = re.compile(r"ggml_metal_get_buffer: error: buffer is nil")
_VK_MAX = re.compile(
    r"size \((?P<x>\d{1,20})\) is larger than the maximum allowed buffer size "
    r"VkPhysicalDevice\w{0,40}Properties\.maxBufferSize \((?P<m>\d{1,20})\)"
)
_WGPU_MAX = re.compile(
    r"Buffer size \(?(?P<x>\d{1,20})\)? (?:is greater than the maximum buffer size|exceeds the "
    r"max buffer size limit) \((?P<m>\d{1,20})\)"
)
_WGPU_BINDING = re.compile(
    r"Buffer binding \d{1,4} range (?P<x>\d{1,20}) exceeds `max_\*_buffer_binding_size` limit "
    r"(?P<m>\d{1,20})"
)
_CL_SIZE = re.compile(r"\bCL_INVALID_BUFFER_SIZE\b")
_XPU_4GB = re.compile(
    r"can NOT allocate memory block with size larger than 4GB"
    r"(?:! Tried to allocate (?P<v>\d{1,9}(?:\.\d{1,4})?) ?(?P<u>[KMGT]iB|bytes))?"
)
# the same per-allocation limit in a user's words (a title): "Arrays larger than 4 GB crashes",
# "allocations bigger than 4GB fail on Arc", "buffers over 2 GB are not supported"; a size
# statement without a failure ("tensors larger than 2GB are saved in shards") is not one
_PROSE_LIMIT = re.compile(
    r"\b(?:arrays?|tensors?|buffers?|allocations?|textures?|memory blocks?)(?: \w{1,12})? "
    r"(?:(?:larger|bigger|greater) than|over|above|of more than|exceeding) "
    r"(?P<v>\d{1,4}(?:\.\d{1,2})?) ?(?P<u>GiB|GB|G|MiB|MB)\b(?: [\w()-]{1,12}){0,2}? "
    r"(?:crash\w{0,3}|fail\w{0,3}|error\w{0,3}|segfault\w{0,3}|abort\w{0,3}|can ?not be|"
    r"can't be|cannot be|are not supported|aren't supported|not supported|unsupported)\b",
    re.IGNORECASE,
)
_KV_PAGES = re.compile(r"The KV cache is full\. No page can be allocated")
_PADDLE_BAD = re.compile(r"paddle::memory::allocation::BadAlloc\b")
_PADDLE_ENFORCE = re.compile(
    r"enforce allocating <= available failed, (?P<x>\d{1,20}) > (?P<f>\d{1,20})"
)
_OV_OBJECT = re.compile(
    r"requested (?P<x>\d{1,20}) bytes,?\s{0,4}but max alloc size supported by device is "
    r"(?P<m>\d{1,20}) bytes"
)
_OV_AVAILABLE = re.compile(
    r"Required (?P<x>\d{1,20}) bytes,? already occupied\s{0,2}: (?P<u>\d{1,20}) bytes,?\s{0,4}"
    r"but available memory size is (?P<t>\d{1,20}) bytes"
)
_NPU_OOM = re.compile(r"NPU function error:.{0,300}?error code is (?P<code>207001|207018)\b")

_NEEDLES = (
    "max alloc size supported by device",
    "already occupied",
    "error code is 2070",
    "ggml_metal_",
    "maxBufferSize",
    "maximum buffer size",
    "max buffer size limit",
    "buffer_binding_size",
    "CL_INVALID_BUFFER_SIZE",
    "can NOT allocate memory block",
    "The KV cache is full",
    "BadAlloc",
    "allocating <= available",
    "arger than",  # the prose limit: "larger than", "Larger than", "bigger", "greater"
    "igger than",
    "reater than",
)
_PREFILTER = needles_re(_NEEDLES)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _buffer(line: str, n: int) -> OomEvent | None:
    m = _METAL_ADD.search(line)
    if m is not None:
        return _ev(
            "llama.cpp",
            "buffer_limit",
            "ggml_metal_buffer_maximum",
            line,
            n,
            requested_bytes=to_int(m.group("x")),
            allowed_bytes=to_int(m.group("m")),
            buffer_name="MTL0",
            detail="Metal's maxBufferLength",
        )
    if _METAL_NIL.search(line):
        return _ev(
            "llama.cpp",
            "buffer_limit",
            "ggml_metal_buffer_nil",
            line,
            n,
            buffer_name="MTL0",
            detail="Metal's maxBufferLength",
        )
    m = _VK_MAX.search(line)
    if m is not None:
        return _ev(
            "vulkan",
            "buffer_limit",
            "vulkan_max_buffer_size",
            line,
            n,
            requested_bytes=to_int(m.group("x")),
            allowed_bytes=to_int(m.group("m")),
            detail="Vulkan's maxBufferSize",
        )
    for pattern, what in ((_WGPU_MAX, "maxBufferSize"), (_WGPU_BINDING, "buffer binding size")):
        m = pattern.search(line)
        if m is not None:
            return _ev(
                "webgpu",
                "buffer_limit",
                "webgpu_max_buffer_size",
                line,
                n,
                requested_bytes=to_int(m.group("x")),
                allowed_bytes=to_int(m.group("m")),
                detail=f"WebGPU's {what}",
            )
    m = _OV_OBJECT.search(line) if "max alloc size supported" in line else None
    if m is not None:
        return _ev(
            "openvino",
            "buffer_limit",
            "openvino_gpu_max_alloc_size",
            line,
            n,
            requested_bytes=to_int(m.group("x")),
            allowed_bytes=to_int(m.group("m")),
            detail="OpenVINO GPU's max_alloc_mem_size",
        )
    if _CL_SIZE.search(line):
        return _ev(
            "opencl",
            "buffer_limit",
            "cl_invalid_buffer_size",
            line,
            n,
            detail="OpenCL's CL_DEVICE_MAX_MEM_ALLOC_SIZE",
        )
    m = _XPU_4GB.search(line)
    if m is not None:
        req = None
        if m.group("v"):
            req = to_bytes(m.group("v"), m.group("u").replace("bytes", "B"), "pytorch")
        return _ev(
            "xpu",
            "buffer_limit",
            "ipex_4gb_block",
            line,
            n,
            requested_bytes=req,
            allowed_bytes=4 << 30,
            detail="the Intel GPU runtime (no 2D block arrays)",
        )
    return None


def _event(line: str, n: int) -> OomEvent | None:
    found = _buffer(line, n)
    if found is not None:
        return found
    m = _PROSE_LIMIT.search(line) if "than " in line.lower() else None
    if m is not None:
        return _ev(
            "generic",
            "buffer_limit",
            "prose_buffer_limit",
            line,
            n,
            allowed_bytes=to_bytes(m.group("v"), m.group("u"), "generic"),
            detail="the device API's per-allocation limit",
        )
    m = _OV_AVAILABLE.search(line) if "already occupied" in line else None
    if m is not None:
        return _ev(
            "openvino",
            "gpu_alloc_failed",
            "openvino_gpu_available_memory",
            line,
            n,
            requested_bytes=to_int(m.group("x")),
            process_in_use_bytes=to_int(m.group("u")),
            total_bytes=to_int(m.group("t")),
        )
    m = _NPU_OOM.search(line) if "NPU function error" in line else None
    if m is not None:
        code = m.group("code")
        name = "ACL_ERROR_RT_MEMORY_ALLOCATION" if code == "207001" else "ACL_ERROR_RT_DEVIDE_OOM"
        return _ev("ascend", "gpu_alloc_failed", "torch_npu_acl_oom", line, n, detail=name)
    if _KV_PAGES.search(line):
        return _ev("tvm", "kv_slots_full", "tvm_paged_kv_full", line, n, stage="kv_full")
    m = _PADDLE_ENFORCE.search(line)
    if m is not None:
        return _ev(
            "paddle",
            "gpu_alloc_failed",
            "paddle_enforce_available",
            line,
            n,
            requested_bytes=to_int(m.group("x")),
            free_bytes=to_int(m.group("f")),
        )
    if _PADDLE_BAD.search(line):
        return _ev("paddle", "gpu_alloc_failed", "paddle_bad_alloc", line, n)
    return None


def parse_limits(lines: Lines) -> list[OomEvent]:
    """Per-buffer limits, paged-KV exhaustion and Paddle allocator failures in ``lines``.

    Never raises. A message repeated line after line (``buffer is nil`` is printed for every
    kernel that reads the missing buffer) counts once.
    """
    return scan_events(
        lines,
        _PREFILTER,
        on_raw(_event),
        repeat=lambda last, ev: last.format == ev.format and ev.line - last.line <= 4,
    )

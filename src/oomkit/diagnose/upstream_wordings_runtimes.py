"""Upstream wordings of OpenVINO's GPU plugin, torch_npu's ACL codes, ggml's context arena,
TensorFlow's allocator dump and Windows' E_OUTOFMEMORY (issue 9, after heldout12).

Part of :mod:`oomkit.diagnose.upstream_wordings`; recognised by
:mod:`oomkit.diagnose.parse_limits` (OpenVINO, torch_npu), ``parse_hosts`` (ggml_init) and the
generic fallback's families in ``parse_wordings`` (the BFC dump, the WIL failure line).
``RUNTIMES`` are allocation failures, ``RUNTIMES_NOT_CAPACITY`` one buffer above a per-allocation
limit, ``RUNTIMES_NEAR_MISSES`` the same words where nothing failed for lack of memory.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["RUNTIMES", "RUNTIMES_NEAR_MISSES", "RUNTIMES_NOT_CAPACITY"]

_OV = "openvinotoolkit/openvino:src/plugins/intel_gpu/src/runtime/engine.cpp (check_allocatable)"
_NPU = (
    "Ascend/pytorch:torch_npu/csrc/core/npu/NPUException.h (NPU_CHECK_ERROR) with CANN "
    "rt_error_codes.h (ACL_ERROR_RT_MEMORY_ALLOCATION 207001, ACL_ERROR_RT_DEVIDE_OOM 207018)"
)
_BFC = "tensorflow/tensorflow:tensorflow/tsl/framework/bfc_allocator.cc (DumpMemoryLog)"

RUNTIMES: tuple[Wording, ...] = (
    _w(
        "openvino",
        _OV,
        "[GPU] Exceeded max size of memory allocation: Required %d bytes, already occupied : %d "
        "bytes, but available memory size is %d bytes",
        "RuntimeError: Exception from src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp:224:\n"
        "[GPU] Exceeded max size of memory allocation: Required 2147483648 bytes, already "
        "occupied : 14495514624 bytes, but available memory size is 16106127360 bytes",
        req=2147483648,
        total=16106127360,
    ),
    _w(
        "ascend",
        _NPU,
        "%s NPU function error: %s, error code is %d",
        "RuntimeError: malloc:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:91 NPU function "
        "error: c10_npu::acl::AclrtMallocAlign32(&dev_ptr, size, ACL_MEM_MALLOC_HUGE_FIRST), "
        "error code is 207001",
    ),
    _w(
        "ascend",
        _NPU,
        "%s NPU function error: %s, error code is %d",
        "RuntimeError: NPU function error: call aclnnMatmul failed, error code is 207018",
    ),
    _w(
        "ggml",
        "ggml-org/ggml:src/ggml.c (ggml_init: GGML_ASSERT(ctx->mem_buffer != NULL) after "
        "ggml_aligned_malloc(mem_size))",
        "%s:%d: GGML_ASSERT(%s) failed",
        "D:/a/whisper.cpp/ggml/src/ggml.c:1685: GGML_ASSERT(ctx->mem_buffer != NULL) failed",
    ),
    _w(
        "ggml",
        "ggerganov/llama.cpp:ggml.c (2023 ggml_init; GGML_ASSERT printed 'GGML_ASSERT: %s:%d: %s')",
        "GGML_ASSERT: %s:%d: %s",
        "GGML_ASSERT: /home/circleci/project/gpt4all-backend/llama.cpp/ggml.c:4411: "
        "ctx->mem_buffer != NULL\nAborted (core dumped)",
    ),
    _w(
        "tensorflow",
        _BFC,
        '"Summary of in-use Chunks by size: " / "%d Chunks of size %d totalling %s"',
        "I tensorflow/core/common_runtime/bfc_allocator.cc:693]      Summary of in-use Chunks "
        "by size: \nI tensorflow/core/common_runtime/bfc_allocator.cc:696] 24 Chunks of size 256 "
        "totalling 6.0KiB\nI tensorflow/core/common_runtime/bfc_allocator.cc:696] 1 Chunks of "
        "size 1393082624 totalling 1.30GiB",
    ),
    _w(
        "tensorflow",
        _BFC,
        '"Sum Total of in-use chunks: " << HumanReadableNumBytes(total_bytes)',
        "2024-07-12 14:40:46.380644: I tensorflow/tsl/framework/bfc_allocator.cc:1107] Sum Total "
        "of in-use chunks: 37.35GiB",
    ),
    _w(
        "directml",
        "microsoft/wil:include/wil/result_macros.h (failure log '%hs(%d) tid(%x) %08X %ws') with "
        "winerror.h E_OUTOFMEMORY 0x8007000E, as ONNX Runtime's DmlExecutionProvider prints it",
        "%hs(%u)\\%hs!%p: (caller: %p) Exception(%u) tid(%x) %08X %ws",
        "onnxruntime\\core\\providers\\dml\\DmlExecutionProvider\\src\\ExecutionProvider.cpp(563)"
        "\\onnxruntime_pybind11_state.pyd!00007FFA1D8D2E2E: (caller: 00007FFA1D8D2B93) "
        "Exception(3) tid(4a1c) 8007000E Nicht genügend Speicherressourcen verfügbar.",
    ),
)

RUNTIMES_NOT_CAPACITY: tuple[Wording, ...] = (
    _w(
        "openvino",
        _OV,
        "[GPU] Exceeded max size of memory object allocation: requested %d bytes, but max alloc "
        "size supported by device is %d bytes.Please try to reduce batch size or use lower "
        "precision.",
        "Exception from src/plugins/intel_gpu/src/runtime/engine.cpp:319:\n[GPU] Exceeded max "
        "size of memory object allocation: requested 9172942848 bytes, but max alloc size "
        "supported by device is 4294959104 bytes.Please try to reduce batch size or use lower "
        "precision.",
        req=9172942848,
    ),
)

RUNTIMES_NEAR_MISSES: tuple[str, ...] = (
    # torch_npu codes that are not memory: a stream timeout, an AI Core fault, an operator error
    "RuntimeError: NPU function error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout("
    "copy_stream), error code is 107027",
    "NPU function error: call aclnnIndex failed, error code is 161002",
    # another ggml assertion
    "GGML_ASSERT: ggml.c:4411: ctx->n_objects < GGML_MAX_OBJECTS",
    "GGML_ASSERT(ctx->mem_buffer == NULL || params.mem_size > 0) is documented",
    # an HRESULT that is not E_OUTOFMEMORY, and the code as a bare number
    "Exception(3) tid(4a1c) 80070057 The parameter is incorrect.",
    "build 8007000 finished",
    # a seat, not a chunk of memory
    "seat already occupied : 12",
    "Summary of in-use seats by size",
)

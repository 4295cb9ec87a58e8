"""Upstream wordings of OpenVINO's GPU plugin, torch_npu's ACL codes, ggml's context arena,
TensorFlow's allocator dump, Windows' E_OUTOFMEMORY, a SIGKILLed compiler and exit status 137
(issue 9, after heldout12).

Part of :mod:`oomkit.diagnose.upstream_wordings`; recognised by
:mod:`oomkit.diagnose.parse_limits` (OpenVINO, torch_npu), ``parse_hosts`` (ggml_init) and the
generic fallback's families in ``parse_wordings`` (the BFC dump, the WIL failure line);
``parse_other`` reads the compiler kills and the exit statuses.
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

_HOST_KILLS: tuple[Wording, ...] = (
    _w(
        "linux",
        "gcc-mirror/gcc:gcc/gcc.cc (execute: '%s signal terminated program %s' with "
        "strsignal(SIGKILL); 'the user or OOM killer nuked it')",
        "%s signal terminated program %s",
        "x86_64-linux-gnu-g++: fatal error: Killed signal terminated program cc1plus\n"
        "compilation terminated.",
    ),
    _w(
        "linux",
        "NVIDIA nvcc (closed source; the driver's report of a SIGKILLed compiler stage)",
        "nvcc error   : '%s' died due to signal 9 (Kill signal)",
        "nvcc error   : 'cicc' died due to signal 9 (Kill signal)\nninja: build stopped: "
        "subcommand failed.",
    ),
    _w(
        "go",
        "golang/go:src/os/exec_posix.go (ProcessState.String 'exit status %d'), as Ollama and "
        "Go launchers print a child's exit",
        "exit status %d",
        "Error: llama runner process has terminated: exit status 137",
    ),
    _w(
        "docker",
        "moby/moby:container/state.go (State.String 'Exited (%d) %s ago', docker ps)",
        "Exited (%d) %s ago",
        "3f2a9c1b7d4e   vllm/vllm-openai:latest   Exited (137) 2 minutes ago",
    ),
)

RUNTIMES = RUNTIMES + _HOST_KILLS

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
    # a compiler stopped by Ctrl-C / a crash, a clean container exit, another exit status
    "g++: fatal error: Terminated signal terminated program cc1plus",
    "nvcc error   : 'cicc' died due to signal 11 (Invalid memory reference)",
    "3f2a9c1b7d4e   vllm/vllm-openai:latest   Exited (0) 2 minutes ago",
    "exit status 1371",
    # a seat, not a chunk of memory
    "seat already occupied : 12",
    "Summary of in-use seats by size",
)

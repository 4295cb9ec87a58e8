"""Non-PyTorch inference stacks' status lines (docpost26, issue 9, heldout51): WebGPU / Dawn /
WebLLM device loss, DXGI device removal, DirectML's CreateCommittedResource check, WebGPU's
size range error, OpenCL's CL_OUT_OF_RESOURCES, Emscripten's Aborted(OOM), ONNX Runtime's
arena asked for more than an address space, Android's ApplicationExitInfo LOW_MEMORY.

Each positive is the runtime's own wording (from a development record or the runtime's source,
cited in the modules); each has a near miss that must not read the same.
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log

# web-llm src/engine.ts (MLCEngine.reloadInternal, device.lost.then)
_WEBLLM = (
    "webllm.worker.ts:8 Device was lost. This can happen due to insufficient memory or other GPU "
    "constraints. Detailed error: [object GPUDeviceLostInfo]. Please try to reload WebLLM with a "
    "less resource-intensive model."
)
# chromium third_party/blink/renderer/modules/webgpu/gpu_queue.cc (OnWorkDoneCallback)
_WORK_DONE = (
    "Generate error, OperationError: Device lost during onSubmittedWorkDone (do not use this "
    "error for recovery - it is NOT guaranteed to happen on device loss)"
)
# dawn/src/dawn/wire/client/Queue.cpp (CompleteImpl on Shutdown)
_INSTANCE = (
    "simple-chat: error during loading params onto WebGPU, GPUPipelineError: A valid external "
    "Instance reference no longer exists"
)
# dawn/src/dawn/native/d3d/D3DError.cpp (CheckHRESULTImpl)
_DXGI = (
    "Find an error initializing the WebGPU device OperationError: D3D12 create command queue "
    "failed with DXGI_ERROR_DEVICE_REMOVED (0x887A0005) at CheckHRESULTImpl "
    "(..\\..\\third_party\\dawn\\src\\dawn\\native\\d3d\\D3DError.cpp:94)"
)
# pytorch-directml caffe2/dml/dml_backend.cc
_COMMITTED = (
    "[libprotobuf FATAL D:\\a\\_work\\1\\s\\pytorch-directml\\caffe2\\dml\\dml_backend.cc:171] "
    "CHECK failed: ((((HRESULT)((d3d_device->CreateCommittedResource( &properties, "
    "D3D12_HEAP_FLAG_NONE, &resource_buffer, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, nullptr, "
    "__uuidof(*out), reinterpret_cast<void**>(out))))) >= 0)) == (true): "
)
# WebIDL [EnforceRange] GPUSize64 (the browser's bindings)
_SIZE_RANGE = (
    "ai.js?v=ccd72f33:8695 Failed to execute 'createBuffer' on 'GPUDevice': Failed to read the "
    "'size' property from 'GPUBufferDescriptor': Value is outside the 'unsigned long long' value "
    "range."
)


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        (_WORK_DONE, "webgpu_work_done_lost"),
        (_INSTANCE, "dawn_instance_dropped"),
        (_DXGI, "dxgi_device_removed"),
        (
            "ID3D12Device::GetDeviceRemovedReason failed with DXGI_ERROR_DEVICE_HUNG (0x887A0006)",
            "dxgi_device_removed",
        ),
        (
            "Exception(3) tid(2a4c) 887A0005 The GPU device instance has been suspended.",
            "dxgi_device_removed",
        ),
    ],
)
def test_device_loss_is_recognised_and_not_answered_as_memory(text: str, fmt: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert d.primary is not None
    assert d.primary.format == fmt
    assert d.cause == "unknown"
    assert "not an allocation failure" in d.explanation


def test_dxgi_code_names_the_removal_reason() -> None:
    e = parse_log(_DXGI).events[0]
    assert (e.runtime, e.kind, e.detail) == ("d3d12", "device_lost", "REMOVED")


def test_webllm_fix_is_the_smaller_model_lever() -> None:
    d = diagnose_text(_WEBLLM)
    assert d.fixes
    assert "smaller model" in d.fixes[0].title


@pytest.mark.parametrize(
    "text",
    [
        # an ordinary hexadecimal word, a pointer that contains the digits, prose about loss
        "address 0x1887A00051 mapped",
        "the device was lost in the mail",
        "Device was lost. Reconnecting the controller.",
        "DXGI_ERROR_DEVICE_REMOVEDX is not a code",
    ],
)
def test_device_loss_near_misses_stay_out(text: str) -> None:
    assert not any(
        e.format in {"webllm_device_lost", "dxgi_device_removed"} for e in parse_log(text).events
    )


def test_directml_committed_resource_is_an_allocation_failure_left_open() -> None:
    d = diagnose_text(_COMMITTED)
    assert d.oom_found
    e = d.primary
    assert e is not None
    assert (e.runtime, e.kind) == ("directml", "gpu_alloc_failed")
    assert "HRESULT" in d.explanation
    # a passing CHECK elsewhere, or the call named in prose, is not a failure
    assert not parse_log("d3d_device->CreateCommittedResource(&props) returned S_OK").events


def test_webgpu_size_out_of_range_is_a_bad_size_not_memory() -> None:
    d = diagnose_text(_SIZE_RANGE)
    assert d.primary is not None
    assert d.primary.format == "webgpu_size_out_of_range"
    assert d.cause == "unknown"
    assert "not a lack of memory" in d.explanation
    near = "Failed to read the 'size' property from 'GPUBufferDescriptor': Required member"
    assert not any(e.format == "webgpu_size_out_of_range" for e in parse_log(near).events)


# openvino src/plugins/intel_gpu/src/runtime/ocl/ocl_common.hpp (rethrow, OCL_ERR_MSG_FMT)
@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("[GPU] clFinish, error code: -5 CL_OUT_OF_RESOURCES", "openvino_cl_out_of_resources"),
        ("[GPU] CL_OUT_OF_RESOURCES exception", "openvino_cl_out_of_resources"),
        (
            "onednn_verbose,v1,primitive,error,ocl,errcode -5,CL_OUT_OF_RESOURCES,"
            "src/gpu/intel/ocl/ocl_gpu_kernel.cpp:250",
            "onednn_cl_out_of_resources",
        ),
    ],
)
def test_cl_out_of_resources_is_recognised_and_left_unknown(text: str, fmt: str) -> None:
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.format == fmt
    assert d.cause == "unknown"
    assert "out-of-bounds" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "#define CL_OUT_OF_RESOURCES -5",
        '    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";',
    ],
)
def test_cl_out_of_resources_definitions_stay_out(text: str) -> None:
    assert not any(e.runtime == "opencl" for e in parse_log(text).events)


def test_cl_mem_object_allocation_failure_keeps_its_own_reading() -> None:
    d = diagnose_text("[GPU] CL_MEM_OBJECT_ALLOCATION_FAILURE")
    assert d.primary is not None
    assert d.primary.format == "opencl_mem_object_alloc"


# emscripten src/library.js (abortOnCannotGrowMemory)
@pytest.mark.parametrize(
    ("text", "size"),
    [
        (
            "Uncaught (in promise) RuntimeError: Aborted(OOM). Build with -sASSERTIONS for more "
            "info.",
            None,
        ),
        (
            "Aborted(Cannot enlarge memory arrays to size 4294967296 bytes (OOM). Either (1) "
            "compile with -sINITIAL_MEMORY=X with X higher than the current value 2147483648",
            4294967296,
        ),
    ],
)
def test_wasm_heap_oom_reads_the_heap_limit(text: str, size: int | None) -> None:
    d = diagnose_text(text)
    e = d.primary
    assert e is not None
    assert e.format == "emscripten_heap_oom"
    assert e.requested_bytes == size
    assert d.cause == "model_too_large"
    assert "4 GiB" in d.explanation


def test_bare_wasm_abort_is_not_an_oom() -> None:
    text = "Uncaught (in promise) RuntimeError: Aborted(). Build with -sASSERTIONS for more info."
    assert not parse_log(text).events


# onnxruntime/core/framework/bfc_arena.cc (BFCArena::AllocateRawInternal)
_ORT = (
    "Status Message: /workspace/onnxruntime/onnxruntime/core/framework/bfc_arena.cc:368 void* "
    "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
    "onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size {}"
)


def test_ort_request_beyond_any_address_space_is_not_memory() -> None:
    d = diagnose_text(_ORT.format(4547406516732812544))
    assert d.cause == "unknown"
    assert "not a lack of memory" in d.explanation


def test_ort_believable_request_keeps_its_memory_reading() -> None:
    d = diagnose_text(_ORT.format(1115955200))
    assert "address space" not in d.explanation
    assert d.primary is not None
    assert d.primary.requested_bytes == 1115955200


def test_android_exit_info_low_memory_is_a_host_kill() -> None:
    text = (
        "process killed, `ApplicationExitInfo reason=3 (LOW_MEMORY)`, description "
        "`by rms for extype=phyMemLeak level=1`."
    )
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.format == "android_exit_info_low_memory"
    assert d.cause == "host_ram"
    # another exit reason (4 = APP CRASH(EXCEPTION)) is not a memory kill
    near = "ApplicationExitInfo reason=4 (APP CRASH(EXCEPTION))"
    assert not any(e.format == "android_exit_info_low_memory" for e in parse_log(near).events)


# FasterTransformer src/fastertransformer/utils/memory_utils.cu (deviceMalloc, check_cuda_error)
_FT = (
    "terminate called after throwing an instance of 'std::runtime_error'\n"
    "  what():  [FT][ERROR] CUDA runtime error: out of memory "
    "/workspace/FasterTransformer/src/fastertransformer/utils/memory_utils.cu:32 "
)


def test_fastertransformer_device_malloc_does_not_decide_weights() -> None:
    d = diagnose_text(_FT)
    e = d.primary
    assert e is not None
    assert (e.runtime, e.format) == ("fastertransformer", "fastertransformer_cuda_runtime_error")
    assert "TurboMind" not in d.explanation
    assert d.cause != "model_too_large"


def test_turbomind_device_malloc_keeps_its_weights_reading() -> None:
    text = _FT.replace("[FT]", "[TM]").replace("fastertransformer", "turbomind")
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.format == "turbomind_cuda_runtime_error"
    assert d.cause == "model_too_large"


# mlc-ai/mlc-llm python/mlc_llm/serve/engine_base.py (the KV-cache estimate's log line)
_MLC = (
    "[2024-03-25 15:35:00] INFO engine.py:243: Estimated total single GPU memory usage: "
    "14361.14 MB (Parameters: 3615.13 MB. KVCache: 10689.56 MB. Temporary buffer: 56.44 MB)"
)


def test_mlc_plan_with_kv_cache_largest_is_the_kv_cache() -> None:
    d = diagnose_text(_MLC)
    assert d.primary is not None
    assert d.primary.format == "mlc_memory_plan"
    assert d.cause == "kv_cache_or_context"
    assert any("mode local" in f.title for f in d.fixes)


def test_mlc_plan_with_weights_largest_stays_open() -> None:
    text = _MLC.replace("KVCache: 10689.56", "KVCache: 512.00").replace("14361.14", "4183.57")
    assert diagnose_text(text).cause == "unknown"


def test_mlc_plan_does_not_hide_a_real_failure() -> None:
    d = diagnose_text(_MLC + "\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert d.primary is not None
    assert d.primary.format != "mlc_memory_plan"

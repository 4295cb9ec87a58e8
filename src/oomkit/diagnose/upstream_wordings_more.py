"""Upstream wordings added after heldout22/23 (issue 9, docrec20): oMLX's load guard, the DeepSpeed
launcher's exit line, the CUDA samples' ``checkCudaErrors``, ONNX Runtime's arena failure cut
inside its thrower's signature, and the AWS Neuron, Rockchip RKNN, Qualcomm QNN and Moore
Threads MUSA runtimes' allocation statuses.

Part of :mod:`oomkit.diagnose.upstream_wordings`. Recognised by ``parse_libs`` (oMLX),
``parse_other`` (the DeepSpeed launcher), ``parse_wordings_titles`` (the CUDA samples' status
code), ``parse_frameworks`` (ONNX Runtime) and ``parse_accel`` (Neuron, RKNN, QNN, MUSA).
``MORE_NEAR_MISSES`` are the same words where nothing failed for lack of memory.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB, Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["MORE", "MORE_NEAR_MISSES"]

_OMLX = (
    "jundot/omlx:omlx/exceptions.py (ModelTooLargeError, raised by the engine pool before a "
    "load; sizes by omlx/model_discovery.py format_size: %.2f with B/KB/MB/GB/TB steps of 1024)"
)
_DS = (
    "deepspeedai/DeepSpeed:deepspeed/launcher/launch.py (sigkill_handler: a child's "
    "Popen.returncode, -9 when SIGKILL ended it)"
)
_SAMPLES = (
    "NVIDIA/cuda-samples:Common/helper_cuda.h (check() behind checkCudaErrors; older releases "
    "print no enum name) with driver_types.h cudaErrorMemoryAllocation = 2 and cuda.h "
    "CUDA_ERROR_OUT_OF_MEMORY = 2"
)
_ORT = (
    "microsoft/onnxruntime:onnxruntime/core/framework/bfc_arena.cc (BFCArena::AllocateRawInternal: "
    "its one ORT_THROW follows the failed Extend(); ORT_THROW prefixes file:line and the "
    "function's signature, where pastes get cut)"
)

_NRT = (
    "aws-neuron/aws-neuron-sdk:src/libnrt/include/nrt/nrt_status.h (NRT_RESOURCE = 4: failed to "
    "allocate a resource for requested operation; NRT_FAIL_HOST_MEM_ALLOC = 11), as libnrt and "
    "torch-neuronx print a failed call's status"
)
_RKNN = (
    "airockchip/rknn-toolkit2:rknpu2/runtime/Linux/librknn_api/include/rknn_api.h "
    "(RKNN_ERR_MALLOC_FAIL -4, memory malloc fail), as the rknpu2 examples print a failed call"
)

_QNN = (
    "Qualcomm QNN SDK:include/QNN/QnnCommon.h (QNN_COMMON_ERROR_MEM_ALLOC = QNN_MIN_ERROR_COMMON "
    "+ 2 = 1002; aliased per API in QnnContext.h / QnnGraph.h / QnnBackend.h), as "
    "microsoft/onnxruntime's QNN execution provider prints a failed call"
)
_MUSA = (
    "the MUSA runtime's musaError enum (musaErrorMemoryAllocation = 2, printed by "
    "musaGetErrorName); MooreThreads/torch_musa's MUSACachingAllocator takes its OOM path on it"
)

MORE: tuple[Wording, ...] = (
    _w(
        "qnn",
        _QNN,
        "%s error %d (QNN_COMMON_ERROR_MEM_ALLOC)",
        "QnnDsp <E> Failed to finalize graph (id: 1) with err 1002 (QNN_COMMON_ERROR_MEM_ALLOC)",
    ),
    _w(
        "qnn",
        _QNN,
        "QNN_CONTEXT_ERROR_MEM_ALLOC",
        "[ERROR] [Qnn] contextCreateFromBinary failed: QNN_CONTEXT_ERROR_MEM_ALLOC",
    ),
    _w(
        "musa",
        _MUSA,
        "%s: %s (musaErrorMemoryAllocation)",
        "RuntimeError: MUSA error: musaErrorMemoryAllocation at musa_kernels.mu:88",
    ),
    _w("neuron", _NRT, "NRT_RESOURCE in %s", "Failure: NRT_RESOURCE in nrt_tensor_allocate"),
    _w(
        "neuron",
        _NRT,
        "%s status=%d",
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  nrt_tensor_allocate status=4",
    ),
    _w(
        "neuron",
        _NRT,
        "status=NRT_FAIL_HOST_MEM_ALLOC",
        "2025-Jan-10 12:00:00.0000 4242:4242 ERROR  NRT:nrt_load  failed, "
        "status=NRT_FAIL_HOST_MEM_ALLOC",
    ),
    _w("rknn", _RKNN, "rknn_init fail! ret=%d", "E RKNN: rknn_init fail! ret=-4"),
    _w("rknn", _RKNN, "rknn_run fail! ret=%d", "rknn_run fail! ret=-4"),
    _w(
        "omlx",
        _OMLX,
        "Model '%s' (%s) exceeds max-model-memory (%s)",
        'Error: {"error":{"message":"Model \'Qwen3.5-122B-A10B-4bit\' (65.32GB) exceeds '
        'max-model-memory (48.00GB)","type":"server_error","param":null,"code":null}}',
        req=round(65.32 * GIB),
        total=48 * GIB,
    ),
    _w(
        "omlx",
        _OMLX,
        "Model '%s' (%s) exceeds max-model-memory (%s)",
        "omlx.exceptions.ModelTooLargeError: Model 'gemma-3-27b-it-bf16' (50.47GB) exceeds "
        "max-model-memory (32.00GB)",
        req=round(50.47 * GIB),
        total=32 * GIB,
    ),
    _w(
        "deepspeed",
        _DS,
        "%s exits with return code = %d",
        "[2024-03-02 11:20:31,554] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
        "'-u', 'train.py', '--local_rank=0'] exits with return code = -9",
    ),
    _w(
        "deepspeed",
        _DS + "; an issue title quoting it",
        "%s exits with return code = %d",
        "[BUG] training exits with return code = -9 after the first epoch",
    ),
    _w(
        "cuda",
        _SAMPLES,
        'CUDA error at %s:%d code=%d(%s) "%s"',
        "CUDA error at /src/kernels/solver.cu:214 code=2(cudaErrorMemoryAllocation) "
        '"cudaMalloc((void **)&d_buf, bytes)"',
    ),
    _w(
        "cuda",
        _SAMPLES,
        'CUDA error at %s:%d code=%d "%s"',
        'CUDA error at src/render_cuda.cu:598 code=2 "cudaMemcpy2D(dst, pitch, src, spitch, w, h, '
        'cudaMemcpyDeviceToHost)"',
    ),
    _w(
        "onnxruntime",
        _ORT,
        "%s:%d %s %s",
        "[E:onnxruntime:, sequential_executor.cc:514 ExecuteKernel] Non-zero status code returned "
        "while running Conv node. Name:'/enc/Conv_3' Status Message: /onnxruntime_src/onnxruntime/"
        "core/framework/bfc_arena.cc:368 void* onnxruntime::BFCArena::AllocateRawInternal(size_t, "
        "bo",
    ),
)

MORE_NEAR_MISSES: tuple[str, ...] = (
    # Neuron's other statuses: too few NeuronCores (9), a timeout (5); the enum's definition
    "nrt_load status=9 NRT_LOAD_NOT_ENOUGH_NC",
    "nrt_execute status=5",
    "NRT_RESOURCE = 4,",
    # QNN's and MUSA's enums where they are defined, other QNN errors
    "QNN_COMMON_ERROR_MEM_ALLOC = QNN_MIN_ERROR_COMMON + 2,",
    "QNN_GRAPH_ERROR_INVALID_ARGUMENT: graph finalize failed",
    "musaErrorMemoryAllocation = 2,",
    "MUSA error: musaErrorInvalidValue at kernels.mu:12",
    # RKNN's other codes: an invalid model (-6), a device that is not there (-3)
    "rknn_init fail! ret=-6",
    "rknn_init error ret=-3",
    "rknn_query fail! ret=-40",
    # oMLX's other engine-pool errors (omlx/exceptions.py): a name, a busy load
    "Model 'Qwen3-8B' is already being loaded",
    "Model 'Qwen3-8B' not found. Available models: (none)",
    "omlx serve --model-dir ~/models --max-model-memory 32GB",
    # the DeepSpeed launcher's other exits: a Python error (1), a SIGINT cancel (-2), SIGABRT (-6)
    # (quoted without the "[launch.py:N:sigkill_handler]" logger prefix: the generic keyword
    # reads SIGKILL in the handler's name, which a development record relies on)
    "['python', 'train.py'] exits with return code = 1",
    "['python', 'train.py'] exits with return code = -2",
    "training exits with return code = -6 after the first epoch",
    # the CUDA samples' check() with other codes: an illegal address (700), an invalid value (1)
    'CUDA error at src/render.cu:598 code=700(cudaErrorIllegalAddress) "cudaDeviceSynchronize()"',
    'CUDA error at kernels.cu:2 code=1(cudaErrorInvalidValue) "cudaMemcpy(a, b, 2, kind)"',
    # ONNX Runtime's other bfc_arena.cc throws name their own function
    "bfc_arena.cc:142 onnxruntime::BFCArena::Free Could not find chunk in bin",
    "bfc_arena.cc:52 onnxruntime::BFCArena::BFCArena ORT_ENFORCE failed: memory_limit_ > 0",
)

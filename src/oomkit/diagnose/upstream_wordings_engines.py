"""Upstream wordings of TensorRT's status-code errors, ggml's device-buffer failure cut short,
PowerInfer's VRAM-capacity assert, and the cuDNN autotuners of XLA and TensorFlow (issue 9, after
heldout20).

Part of :mod:`oomkit.diagnose.upstream_wordings`; recognised by
:mod:`oomkit.diagnose.parse_engines` (TensorRT, PowerInfer), ``parse_llamacpp`` (the ggml line)
and ``parse_extra`` (the cuDNN autotuners, read as a workspace that could not be had, like
``CUDNN_STATUS_EXECUTION_FAILED``). ``ENGINES_NEAR_MISSES`` are the same words where nothing
failed for lack of memory.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import MIB, Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["ENGINES", "ENGINES_MORE", "ENGINES_NEAR_MISSES"]

_TRT = (
    "NVIDIA/TensorRT:plugin/common/checkMacrosPlugin.cpp (TRTException::log; TensorRT 7's rtSafe "
    "runtime prints the same) with the status enums of cuda_runtime_api.h "
    "(cudaErrorMemoryAllocation 2), cudnn.h (CUDNN_STATUS_ALLOC_FAILED 2), "
    "cublas_api.h (CUBLAS_STATUS_ALLOC_FAILED 3)"
)
_GGML = (
    "ggml-org/llama.cpp:ggml/src/ggml-cuda/ggml-cuda.cu "
    "(ggml_backend_cuda_buffer_type_alloc_buffer: printed only when ggml_cuda_device_malloc "
    "failed; the HIP and MUSA builds share it)"
)
_TFLM = (
    "tensorflow/tflite-micro:tensorflow/lite/micro/arena_allocator/single_arena_buffer_allocator.cc"
)
_PI = "SJTU-IPADS/PowerInfer:llama.cpp (llm_load_sparse_model_tensors, after alloc.flush())"

ENGINES: tuple[Wording, ...] = (
    _w(
        "tensorrt",
        _TRT,
        "%s (%d) - Cuda Error in %s: %d (%s)",
        "[03/15/2020-15:33:32] [E] [TRT] ../rtSafe/safeRuntime.cpp (25) - Cuda Error in allocate: "
        "2 (out of memory)",
    ),
    _w(
        "tensorrt",
        _TRT + "; the paste cut inside the status text",
        "%s (%d) - Cuda Error in %s: %d (%s)",
        "[E] [TRT] ../rtSafe/safeRuntime.cpp (25) - Cuda Error in allocate: 2 (out o",
    ),
    _w(
        "tensorrt",
        _TRT,
        "%s (%d) - Cudnn Error in %s: %d (%s)",
        "ERROR: ../rtSafe/cuda/cudaConvolutionRunner.cpp (457) - Cudnn Error in execute: 2 "
        "(CUDNN_STATUS_ALLOC_FAILED)",
    ),
    _w(
        "tensorrt",
        _TRT,
        "%s (%d) - cuBLAS Error in %s: %d",
        "plugin/common/bertCommon.h (120) - cuBLAS Error in initialize: 3",
    ),
    _w(
        "tensorrt",
        "TensorRT 7 builder (closed source; the wording as nvinfer prints it)",
        "Internal error: could not find any implementation for node %s, try increasing the "
        "workspace size with IBuilder::setMaxWorkspaceSize()",
        "[TensorRT] ERROR: Internal error: could not find any implementation for node (Unnamed "
        "Layer* 52) [Convolution], try increasing the workspace size with "
        "IBuilder::setMaxWorkspaceSize()",
    ),
    _w(
        "tensorrt",
        "TensorRT 8.4+ builder (closed source, optimizer.cpp computeCosts; as nvinfer prints it)",
        "[optimizer.cpp::computeCosts::%d] Error Code 10: Internal Error (Could not find any "
        "implementation for node %s due to insufficient workspace. See verbose log for requested "
        "sizes.)",
        "[TRT] [E] 10: [optimizer.cpp::computeCosts::3869] Error Code 10: Internal Error (Could "
        "not find any implementation for node /model.24/Conv due to insufficient workspace. See "
        "verbose log for requested sizes.)",
    ),
    _w(
        "tensorrt",
        "TensorRT's Myelin compiler status (closed source; printed as 'Error Code 1: Myelin "
        "(<status> : <message>)' like myelinVersionMismatch, NVIDIA/TensorRT issues); the paste "
        "cut after the status name (docrec30)",
        "[codeGenerator.cpp::compileGraph::%d] Error Code 1: Myelin (myelinExceededMemBudget : "
        "Exceeded memory budget ...)",
        "[E] [TRT] 1: [codeGenerator.cpp::compileGraph::476] Error Code 1: Myelin "
        "(myelinExceededMemBudget : Exceed",
    ),
    _w(
        "ggml",
        _GGML + "; the paste cut inside the API's name",
        "%s: allocating %.2f MiB on device %d: cudaMalloc failed: %s",
        "[2024-11-28 08:24:54.028] [error] [WASI-NN] llama.cpp: "
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: cudaMall",
        req=8192 * MIB,
    ),
    _w(
        "ggml",
        _GGML + "; the paste cut after the device",
        "%s: allocating %.2f MiB on device %d: hipMalloc failed: %s",
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 2448.03 MiB on device 1:",
        req=round(2448.03 * MIB),
    ),
    _w(
        "powerinfer",
        _PI + ": GGML_ASSERT(vram_allocated_bytes < vram_capacity), before commit 9d72668",
        "GGML_ASSERT: %s:%d: %s",
        "GGML_ASSERT: /home/user/PowerInfer/llama.cpp:3107: vram_allocated_bytes < vram_capacity",
    ),
    _w(
        "powerinfer",
        _PI + ': GGML_ASSERT_DBG(vram_allocated_bytes <= vram_capacity, "vram_allocated_bytes=%ld, '
        'vram_capacity=%ld"), from commit 9d72668',
        "GGML_ASSERT: %s:%d: vram_allocated_bytes=%ld, vram_capacity=%ld",
        "GGML_ASSERT: /PowerInfer/llama.cpp:3106: vram_allocated_bytes=25769803776, "
        "vram_capacity=23622320128",
        req=25769803776,
    ),
    _w(
        "tflite-micro",
        _TFLM + " (SingleArenaBufferAllocator::ResizeBuffer)",
        "Failed to resize buffer. Requested: %u, available %u, missing: %u",
        "Failed to resize buffer. Requested: 1076720, available 515080, missing: 561640",
        req=1076720,
    ),
    _w(
        "tflite-micro",
        _TFLM + " (SingleArenaBufferAllocator::AllocatePersistentBuffer)",
        "Failed to allocate tail memory. Requested: %u, available %u, missing: %u",
        "Failed to allocate tail memory. Requested: 816, available 8, missing: 808",
        req=816,
    ),
    _w(
        "tflite-micro",
        "tensorflow/tflite-micro:tensorflow/lite/micro/micro_allocator.cc "
        "(MicroAllocator::CommitStaticMemoryPlan)",
        "Arena size is too small for all buffers. Needed %u but only %u was available.",
        "Arena size is too small for all buffers. Needed 351408 but only 269040 was available.\n"
        "AllocateTensors() failed",
        req=351408,
    ),
    _w(
        "mnn",
        "alibaba/MNN:source/backend/cpu/CPUDeconvolution.cpp (makeResource: MNN_ERROR after "
        "onAcquireBuffer / AutoStorage failed; source/core/IDSTDecoder.hpp the same for weights)",
        "Alloc memory error for %s",
        "E/MNNJNI: Alloc memory error for deconvolution",
    ),
    _w(
        "mnn",
        "alibaba/MNN:source/core/IDSTDecoder.hpp (the fp16 weights expanded back to float)",
        "Alloc memory error for %s",
        "Alloc memory error for extract fp16 back to float",
    ),
    _w(
        "jax",
        "openxla/xla:xla/service/gpu/autotuning/conv_algorithm_picker.cc (PickBestAlgorithm)",
        "Failed to determine best cudnn convolution algorithm for:\\n%s\\n\\nOriginal error: %s",
        "jaxlib.xla_extension.XlaRuntimeError: UNKNOWN: Failed to determine best cudnn "
        "convolution algorithm for:\n%cudnn-conv-bw-filter = (f32[64,2,4,4]{3,2,1,0}, u8[0]{0}) "
        "custom-call(f32[1,2,28,28]{3,2,1,0} %pad), "
        'custom_call_target="__cudnn$convBackwardFilter"',
    ),
    _w(
        "tensorflow",
        "tensorflow/tensorflow:tensorflow/core/kernels/conv_ops.cc (LaunchConv2DOp, the autotuner "
        "found no algorithm)",
        "Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, "
        "so try looking to see if a warning log message was printed above.",
        "tensorflow.python.framework.errors_impl.UnknownError:  Failed to get convolution "
        "algorithm. This is probably because cuDNN failed to initialize, so try looking to see "
        "if a warning log message was printed above.\n\t [[node conv2d/Conv2D]]",
    ),
)

# docrec19 (after heldout21): the host's kind named in a runtime's own text, the Vulkan spec's
# wording of its two allocation failures, and TFLite's Java binding around AllocateTensors()
_VK_SPEC = (
    "KhronosGroup/Vulkan-Docs:chapters/fundamentals.adoc (Return Codes), as VkResult-to-string "
    "helpers print it (relgukxilef/hello-emscripten:source/utility/vulkan_resource.cpp "
    "vulkan_error::what)"
)
_TFLITE_JNI = (
    "tensorflow/tensorflow:tensorflow/lite/java/src/main/native/nativeinterpreterwrapper_jni.cc "
    "(earlier tensorflow/contrib/lite/java/...; thrown when Interpreter::AllocateTensors() fails "
    "and the error reporter has nothing to add)"
)

ENGINES_MORE: tuple[Wording, ...] = (
    _w(
        "vulkan",
        "IronicallySerious/alimer:third_party/vgpu/vgpu_vk.cpp (_vgpu_vk_get_error_string: "
        "VK_ERROR_OUT_OF_HOST_MEMORY)",
        "Out of CPU memory",
        "[vgpu] VK_CHECK failed: Out of CPU memory",
    ),
    _w(
        "vulkan",
        _VK_SPEC + ": VK_ERROR_OUT_OF_HOST_MEMORY",
        "A host memory allocation has failed.",
        "vulkan_error: A host memory allocation has failed.",
    ),
    _w(
        "vulkan",
        _VK_SPEC + ": VK_ERROR_OUT_OF_DEVICE_MEMORY",
        "A device memory allocation has failed.",
        "terminate called after throwing an instance of 'vulkan_error'\n"
        "  what():  A device memory allocation has failed.",
    ),
    _w(
        "tflite",
        _TFLITE_JNI,
        "Internal error: Cannot allocate memory for the interpreter",
        "java.lang.NullPointerException: Internal error: Cannot allocate memory for the "
        "interpreter",
    ),
)

#: the same words where nothing failed for lack of memory
ENGINES_NEAR_MISSES: tuple[str, ...] = (
    "[graphContext.h::MyelinGraphContext::26] Error Code 1: Myelin (myelinVersionMismatch : "
    "Compiled against cuBLAS 11.3.0.0 but running against cuBLAS 11.2.1.0.)",
    # other CUDA / cuDNN / cuBLAS statuses in the same TensorRT macro
    "../rtSafe/safeRuntime.cpp (25) - Cuda Error in execute: 700 (an illegal memory access was "
    "encountered)",
    "../rtSafe/cuda/cudaConvolutionRunner.cpp (457) - Cudnn Error in execute: 3 "
    "(CUDNN_STATUS_BAD_PARAM)",
    "plugin/common/bertCommon.h (120) - cuBLAS Error in gemm: 7 (CUBLAS_STATUS_INVALID_VALUE)",
    "../builder/cudnnBuilderUtils.cpp (427) - Cuda Error in findFastestTactic: 209 (no kernel "
    "image is available for execution on the device)",
    # no tactic for a layer the builder does not support: not the workspace
    "[TRT] [E] 10: [optimizer.cpp::computeCosts::3869] Error Code 10: Internal Error (Could not "
    "find any implementation for node {ForeignNode[/model/Conv...]}.)",
    # a load step that states its size, not the failure line of the device buffer
    "llm_load_tensors: allocating 8192.00 MiB on device 0",
    # PowerInfer's own budget report
    "llm_load_sparse_model_tensors: vram_capacity = 22528.00 MiB, offloaded 40/40 layers",
    # TFLM's own resize of a buffer that fits; an arena report without a failure
    "ResetTempAllocations() is not called before ResizeBuffer().",
    "[RecordingMicroAllocator] Arena allocation total 269040 bytes",
    # MNN's messages that are not an allocation failing
    "Fix: Alloc memory error message for deconvolution was unclear",
    "CPUDeconvolution makeResource error",
    # XLA's autotuner choosing, not failing
    "I0000 conv_algorithm_picker.cc:1034] Picked best cudnn convolution algorithm for: %cudnn-conv",
    # the host's memory named as a place data moves out of, not as exhausted
    "copy the tensor out of CPU memory into the GPU buffer",
    "Weights are streamed out of system memory layer by layer.",
    # the Vulkan wording inside a check, not a report
    "Check whether a device memory allocation has failed before retrying.",
    # TFLite's AllocateTensors() failing in an op's Prepare (a shape or scale the op rejects,
    # e.g. tensorflow/tensorflow#19982): the model's error, not memory
    "java.lang.NullPointerException: Internal error: Cannot allocate memory for the interpreter: "
    "tensorflow/contrib/lite/kernels/conv.cc:191 input->dims->size != 4 (0 != 4)",
    "Cannot allocate memory for the interpreter: tensorflow/contrib/lite/kernels/conv.cc:260 "
    "real_multiplier < 1.0 was not true.Node 28 failed to prepare.",
)

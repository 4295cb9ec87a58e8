"""Harvested OOM wordings of the stacks above the devices: serving engines, other frameworks,
language runtimes, operating systems, schedulers and localized UIs (see
:mod:`oomkit.diagnose.upstream_wordings`)."""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB as _GIB
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["FRAMEWORKS", "OS", "SERVING"]

_PT = "pytorch/pytorch:"

SERVING: tuple[Wording, ...] = (
    _w(
        "vllm",
        "vllm-project/vllm:vllm/worker/worker.py",
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine.",
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/core/kv_cache_utils.py",
        "To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache is "
        "needed, which is larger than the available KV cache memory (%.2f GiB).",
        "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 "
        "GiB KV cache is needed, which is larger than the available KV cache memory (9.20 GiB). "
        "Based on the available memory, the estimated maximum model length is 75360. Try "
        "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
        "engine.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/worker/utils.py (request_memory)",
        "Free memory on device (%.2f/%.2f GiB) on startup is less than desired GPU memory "
        "utilization (%.2f, %.2f GiB).",
        "ValueError: Free memory on device (10.5/23.55 GiB) on startup is less than desired GPU "
        "memory utilization (0.9, 21.19 GiB). Decrease GPU memory utilization or reduce GPU "
        "memory used by other processes.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/engine/llm_engine.py (v0)",
        "The model's max seq len (%d) is larger than the maximum number of tokens that can be "
        "stored in KV cache (%d).",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens "
        "that can be stored in KV cache (20144). Try increasing `gpu_memory_utilization` or "
        "decreasing `max_model_len` when initializing the engine.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/worker/gpu_model_runner.py (_dummy_sampler_run)",
        "CUDA out of memory occurred when warming up sampler with %d dummy requests. Please try "
        "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.",
        "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy "
        "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
        "initializing the engine.",
    ),
    _w(
        "sglang",
        "sgl-project/sglang:python/sglang/srt/managers/scheduler.py",
        "Prefill out of memory. Try to lower your batch size.",
        "Prefill out of memory. Try to lower your batch size.",
    ),
    _w(
        "sglang",
        "sgl-project/sglang:python/sglang/srt/model_executor/model_runner.py",
        "Not enough memory. Please try to increase --mem-fraction-static.",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ),
    _w(
        "tgi",
        "huggingface/text-generation-inference:server/text_generation_server/models/"
        "flash_causal_lm.py",
        "Not enough memory to handle {num_tokens} prefill tokens. You need to decrease "
        "`--max-batch-prefill-tokens`",
        "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
        "`--max-batch-prefill-tokens`",
    ),
    _w(
        "tgi",
        "huggingface/text-generation-inference:backends/v3/src/lib.rs",
        "Not enough memory to handle `max_total_tokens={0}`",
        "Error: Backend(NotEnoughMemory(4096))\nNot enough memory to handle "
        "`max_total_tokens=4096`",
    ),
    _w(
        "lmdeploy",
        "InternLM/lmdeploy:src/turbomind/utils/cuda_utils.h (check_cuda_error)",
        "[TM][ERROR] CUDA runtime error: %s %s:%d",
        "[TM][ERROR] CUDA runtime error: out of memory "
        "/lmdeploy/src/turbomind/utils/memory_utils.cu:32",
    ),
    _w(
        "tensorrt",
        "NVIDIA TensorRT libnvinfer (closed source; defaultAllocator.cpp as it names itself)",
        "Requested amount of GPU memory (%d bytes) could not be allocated. There may not be "
        "enough free memory for allocation to succeed.",
        "[TRT] [W] Requested amount of GPU memory (2833252352 bytes) could not be allocated. "
        "There may not be enough free memory for allocation to succeed.",
        req=2833252352,
    ),
    _w(
        "tensorrt",
        "NVIDIA TensorRT libnvinfer (closed source; ErrorCode::kOUT_OF_MEMORY = 2)",
        "Error Code 2: OutOfMemory (%s)",
        "[E] [executionContext.cpp::initializeExecutionContext::625] Error Code 2: OutOfMemory "
        "(Requested size was 20132809216 bytes.)",
        req=20132809216,
    ),
    _w(
        "tensorrt",
        "NVIDIA TensorRT libnvinfer (closed source; defaultAllocator.cpp)",
        "Error Code 1: Cuda Runtime (%s)",
        "1: [defaultAllocator.cpp::allocate::19] Error Code 1: Cuda Runtime (out of memory)",
    ),
    _w(
        "tensorrt-llm",
        "NVIDIA/TensorRT-LLM:cpp/include/tensorrt_llm/common/cudaUtils.h (check)",
        "[TensorRT-LLM][ERROR] CUDA runtime error in %s: %s (%s:%d)",
        "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()):"
        " out of memory (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)",
    ),
    _w(
        "ctranslate2",
        "OpenNMT/CTranslate2:src/cuda/utils.h (CUDA_CHECK)",
        "CUDA failed with error %s",
        "RuntimeError: CUDA failed with error out of memory",
    ),
    _w(
        "ctranslate2",
        "OpenNMT/CTranslate2:src/cuda/utils.h (CUBLAS_CHECK)",
        "cuBLAS failed with status %s",
        "RuntimeError: cuBLAS failed with status CUBLAS_STATUS_ALLOC_FAILED",
    ),
    _w(
        "transformers",
        "huggingface/transformers:src/transformers/quantizers/quantizer_bnb_4bit.py",
        "Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to "
        "fit the quantized model.",
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have "
        "enough GPU RAM to fit the quantized model. If you want to dispatch the model on the CPU "
        "or the disk while keeping these modules in 32-bit, you need to set "
        "`llm_int8_enable_fp32_cpu_offload=True`",
    ),
)

FRAMEWORKS: tuple[Wording, ...] = (
    _w(
        "tensorflow",
        "tensorflow/tensorflow:tensorflow/core/framework/op_kernel.cc",
        "OOM when allocating tensor with shape%s and type %s on %s by allocator %s",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[64,512,56,56] and type float on /job:localhost/replica:0/task:0/"
        "device:GPU:0 by allocator GPU_0_bfc",
    ),
    _w(
        "tensorflow",
        "tensorflow/tensorflow:third_party/xla/xla/tsl/framework/bfc_allocator.cc",
        "Allocator (%s) ran out of memory trying to allocate %s (rounded to %d)requested by op %s",
        "W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate 1.53GiB (rounded to 1638400000)requested by op Conv2D",
        req=1638400000,
    ),
    _w(
        "jax",
        "openxla/xla:xla/stream_executor/device_memory_allocator.cc "
        "(StreamExecutorMemoryAllocator::Allocate)",
        "Failed to allocate request for %s (%uB) on device ordinal %d",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request "
        "for 8.00GiB (8589934592B) on device ordinal 0",
        req=8589934592,
    ),
    _w(
        "jax",
        "openxla/xla:xla/stream_executor/integrations/tf_allocator_adapter.cc "
        "(TfAllocatorAdapter::Allocate over the BFC allocator)",
        "Out of memory while trying to allocate %d bytes.",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 "
        "bytes.",
        req=17179869184,
    ),
    _w(
        "jax",
        "openxla/xla TPU compiler (libtpu, closed source)",
        "Ran out of memory in memory space hbm. Used %s of %s hbm. Exceeded hbm capacity by %s.",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
        "in memory space hbm. Used 20.19G of 15.48G hbm. Exceeded hbm capacity by 4.71G.",
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/fluid/memory/allocation/cuda_allocator.cc (moved to "
        "paddle/phi/core/memory/allocation/ in 3.x)",
        "Out of memory error on GPU %d. Cannot allocate %s memory on GPU %d, %s memory has been "
        "allocated and available memory is only %s.",
        "ResourceExhaustedError: \n\nOut of memory error on GPU 0. Cannot allocate 1.953125GB "
        "memory on GPU 0, 14.653931GB memory has been allocated and available memory is only "
        "1.118347GB.",
    ),
    _w(
        "paddle",
        "PaddlePaddle/Paddle:paddle/phi/core/memory/allocation/cpu_allocator.cc",
        "(ResourceExhausted) Fail to alloc memory of %d size, error code is %d.",
        "OSError: (ResourceExhausted) Fail to alloc memory of 4294967296 size, error code is 12.",
    ),
    _w(
        "mindspore",
        "mindspore-ai/mindspore:mindspore/ccsrc/runtime/graph_scheduler/actor/ (output_actor.cc,"
        " copy_actor.cc)",
        "Device(id:%d) memory isn't enough and alloc failed, kernel name: %s, alloc size: %dB.",
        "RuntimeError: Device(id:0) memory isn't enough and alloc failed, kernel name: "
        "Default/MatMul-op0, alloc size: 1073741824B.",
        req=1073741824,
    ),
    _w(
        "mindspore",
        "mindspore-ai/mindspore:mindspore/ccsrc/runtime/graph_scheduler/actor/"
        "memory_manager_actor.cc",
        "Device memory isn't enough and alloc failed, actor name: %s, alloc size: %d",
        "RuntimeError: Device memory isn't enough and alloc failed, actor name: "
        "kernel_graph_0_MemoryManagerActor, alloc size: 268435456",
        req=268435456,
    ),
    _w(
        "mindspore",
        "mindspore-ai/mindspore:mindspore/ccsrc/runtime/pynative (MemoryManager)",
        "Out of memory!!! Request memory size: %dB, Memory Statistic:%s",
        "RuntimeError: Out of memory!!! Request memory size: 2147483648B, Memory Statistic:",
        req=2147483648,
    ),
    _w(
        "mindspore",
        "mindspore-ai/mindspore (Ascend device address; wording as quoted by "
        "mindspore-ai/troubleshooter's tests)",
        "Malloc device memory failed, size[%d], ret[%d]",
        "RuntimeError: Malloc device memory failed, size[536870912], ret[207001], Device 6 may be "
        "other processes occupying this card, check as: ps -ef|grep python",
        req=536870912,
    ),
    _w(
        "ascend",
        "Ascend CANN runtime (closed source; EL0004 in the CANN error-code table)",
        "EL0004: Failed to allocate memory.",
        "EL0004: [PID: 4242] 2024-06-01-10:00:00.000.000 Failed to allocate memory.\n        "
        "Possible Cause: Available memory is insufficient.",
    ),
    _w(
        "ascend",
        "Ascend CANN runtime acl error code ACL_ERROR_RT_MEMORY_ALLOCATION (207001)",
        "ACL_ERROR_RT_MEMORY_ALLOCATION",
        "RuntimeError: call aclrtMalloc failed, error code: ACL_ERROR_RT_MEMORY_ALLOCATION",
    ),
    _w(
        "onnxruntime",
        "microsoft/onnxruntime:onnxruntime/core/framework/bfc_arena.cc",
        "Failed to allocate memory for requested buffer of size %d",
        "onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested "
        "buffer of size 1073741824",
        req=1073741824,
    ),
    _w(
        "onnxruntime",
        "microsoft/onnxruntime:onnxruntime/core/framework/bfc_arena.cc (Extend)",
        "Available memory of %d is smaller than requested bytes of %d",
        "onnxruntime::BFCArena::Extend Available memory of 0 is smaller than requested bytes of "
        "2147483648",
        req=2147483648,
    ),
    _w(
        "onnxruntime",
        "microsoft/onnxruntime:onnxruntime/core/providers/cuda/cuda_call.cc",
        "CUDA failure %d: %s ; GPU=%d ; hostname=%s ; file=%s ; line=%d ; expr=%s;",
        "CUDA failure 2: out of memory ; GPU=0 ; hostname=box ; file=cuda_allocator.cc ; line=47 ; "
        "expr=cudaMalloc((void**)&p, size);",
    ),
    _w(
        "openvino",
        "openvinotoolkit/openvino:src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp "
        "(ocl_engine::allocate_memory)",
        "[GPU] Exceeded max size of memory object allocation: requested %d bytes, but max alloc "
        "size supported by device is %d bytes.",
        "[GPU] Exceeded max size of memory object allocation: requested 4294967296 bytes, but "
        "max alloc size supported by device is 4294959104 bytes.Please try to reduce batch size "
        "or use lower precision.",
        req=4294967296,
    ),
    _w(
        "openvino",
        "openvinotoolkit/openvino:src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp",
        "[GPU] out of GPU resources",
        "RuntimeError: Exception from src/inference/src/cpp/infer_request.cpp:223:\n[GPU] out of "
        "GPU resources",
    ),
    _w(
        "mlx",
        "ml-explore/mlx:mlx/backend/metal/allocator.cpp",
        "[metal::malloc] Attempting to allocate %d bytes which is greater than the maximum "
        "allowed buffer size of %d bytes.",
        "RuntimeError: [metal::malloc] Attempting to allocate 134767706112 bytes which is "
        "greater than the maximum allowed buffer size of 86586540032 bytes.",
        req=134767706112,
    ),
    _w(
        "mlx",
        "ml-explore/mlx:mlx/backend/metal/allocator.cpp",
        "[malloc] Unable to allocate %d bytes.",
        "RuntimeError: [malloc] Unable to allocate 68719476736 bytes.",
        req=68719476736,
    ),
    _w(
        "mlx",
        "ml-explore/mlx:mlx/backend/metal/device.cpp",
        "[METAL] Command buffer execution failed: %s.",
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] "
        "Command buffer execution failed: Insufficient Memory "
        "(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory).",
    ),
    _w(
        "numpy",
        "numpy/numpy:numpy/_core/_exceptions.py (_ArrayMemoryError.__str__)",
        "Unable to allocate %s for an array with shape %s and data type %s",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 74.5 GiB for an array with "
        "shape (100000, 100000) and data type float64",
        req=80000000000,
    ),
    _w(
        "deepspeed",
        "deepspeedai/DeepSpeed:deepspeed/runtime/zero/stage3.py (via torch)",
        "%s out of memory",
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 "
        "has a total capacity of 79.15 GiB of which 1.20 GiB is free.",
        req=int(1.96 * _GIB),
    ),
)

OS: tuple[Wording, ...] = (
    _w(
        "linux",
        "torvalds/linux:mm/oom_kill.c (__oom_kill_process)",
        "%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, "
        "shmem-rss:%lukB",
        "Out of memory: Killed process 12345 (python3) total-vm:98765432kB, anon-rss:61234567kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:123456kB oom_score_adj:0",
    ),
    _w(
        "linux",
        "torvalds/linux:mm/oom_kill.c (dump_header)",
        "%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd",
        "python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, "
        "oom_score_adj=0",
    ),
    _w(
        "linux",
        "torvalds/linux:mm/memcontrol.c (mem_cgroup_out_of_memory)",
        "Memory cgroup out of memory: Killed process %d (%s)",
        "Memory cgroup out of memory: Killed process 4321 (python) total-vm:20971520kB, "
        "anon-rss:16777216kB, file-rss:0kB, shmem-rss:0kB",
    ),
    _w(
        "linux",
        "python/cpython:Modules/errnomodule.c (ENOMEM strerror)",
        "[Errno 12] Cannot allocate memory",
        "OSError: [Errno 12] Cannot allocate memory",
    ),
    _w(
        "linux",
        "kubernetes/kubernetes:pkg/kubelet (container status reason)",
        "OOMKilled",
        "Last State: Terminated\n  Reason: OOMKilled\n  Exit Code: 137",
    ),
    _w(
        "windows",
        "Windows system error 1455 ERROR_COMMITMENT_LIMIT (FormatMessage)",
        "The paging file is too small for this operation to complete.",
        "OSError: [WinError 1455] The paging file is too small for this operation to complete. "
        'Error loading "C:\\venv\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or '
        "one of its dependencies.",
    ),
    _w(
        "windows",
        "Windows system error 8 ERROR_NOT_ENOUGH_MEMORY (FormatMessage)",
        "Not enough memory resources are available to process this command.",
        "OSError: [WinError 8] Not enough memory resources are available to process this command",
    ),
    _w(
        "windows",
        "Windows system error 14 ERROR_OUTOFMEMORY (FormatMessage)",
        "Not enough storage is available to complete this operation.",
        "OSError: [WinError 14] Not enough storage is available to complete this operation",
    ),
    _w(
        "windows",
        "Windows HRESULT E_OUTOFMEMORY 0x8007000E (FormatMessage)",
        "Not enough memory resources are available to complete this operation.",
        "RuntimeError: D3D12 device error 0x8007000E: Not enough memory resources are available "
        "to complete this operation.",
    ),
    _w(
        "windows",
        "Windows HRESULT name E_OUTOFMEMORY (winerror.h)",
        "E_OUTOFMEMORY",
        "onnxruntime DmlExecutionProvider: HRESULT failed: E_OUTOFMEMORY",
    ),
    _w(
        "node",
        "nodejs/node:deps/v8/src/utils/utils.h (V8::FatalProcessOutOfMemory)",
        "FATAL ERROR: %s Allocation failed - JavaScript heap out of memory",
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
    ),
    _w(
        "go",
        "golang/go:src/runtime/malloc.go (throw)",
        "runtime: out of memory",
        "fatal error: runtime: out of memory",
    ),
    _w(
        "java",
        "openjdk/jdk:src/hotspot/share/memory/universe.cpp",
        "java.lang.OutOfMemoryError: %s",
        'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
    ),
    _w(
        "linux",
        "SchedMD/slurm:src/plugins/task/cgroup/task_cgroup_memory.c",
        "Detected %d oom-kill event(s) in %ps. Some of your processes may have been killed by "
        "the cgroup out-of-memory handler.",
        "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=2680914.batch. Some of your "
        "processes may have been killed by the cgroup out-of-memory handler.",
    ),
    _w(
        "linux",
        "SchedMD/slurm:src/slurmd/slurmstepd (jobacct memory enforcement)",
        "Exceeded job memory limit",
        "slurmstepd: error: Exceeded job memory limit",
    ),
    _w(
        "linux",
        "openpbs/openpbs:src/resmom (mom_over_limit message)",
        "PBS: job killed: %s %s exceeded limit %s",
        "=>> PBS: job killed: mem 2097152kb exceeded limit 1048576kb",
    ),
    _w(
        "linux",
        "kubernetes/kubernetes:pkg/kubelet/eviction/helpers.go (nodeLowMessageFmt)",
        "The node was low on resource: %v.",
        "Status: Failed\nReason: Evicted\nMessage: The node was low on resource: memory. "
        "Container trainer was using 30Gi, which exceeds its request of 16Gi.",
    ),
    _w(
        "linux",
        _PT + "torch/distributed/elastic/multiprocessing/errors/__init__.py (ChildFailedError)",
        "exitcode  : %d (pid: %d)",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n  rank      : 0 "
        "(local_rank: 0)\n  exitcode  : -9 (pid: 4242)",
    ),
    _w(
        "linux",
        "zsh-users/zsh:Src/jobs.c (job status 'killed' after SIGKILL)",
        "zsh: killed     %s",
        "zsh: killed     python train.py",
    ),
    _w(
        "macos",
        "apple-oss-distributions/libmalloc:src (malloc_zone_error)",
        "malloc: *** mach_vm_map(size=%lu) failed (error code=%d)\n*** error: can't allocate "
        "region",
        "python(4242,0x1f2) malloc: *** mach_vm_map(size=8589934592, flags: 100) failed (error "
        "code=3)\n*** error: can't allocate region",
        req=8589934592,
    ),
    _w(
        "macos",
        "macOS memory-pressure dialog (closed source)",
        "Your system has run out of application memory.",
        "Your system has run out of application memory. To avoid problems with your computer, "
        "quit any applications you are not using.",
    ),
    _w(
        "windows",
        "MSVC vcruntime_exception.h (std::bad_alloc::what())",
        "bad allocation",
        "RuntimeError: bad allocation",
    ),
    _w(
        "rust",
        "rust-lang/rust:library/std/src/alloc.rs (default_alloc_error_hook)",
        "memory allocation of {} bytes failed",
        "memory allocation of 8589934592 bytes failed",
        req=8589934592,
    ),
    _w(
        "linux",
        "systemd/systemd:src/core/service.c (service_sigchld_event: code=killed, status=9/KILL)",
        "Main process exited, code=killed, status=9/KILL",
        "systemd[1]: ollama.service: Main process exited, code=killed, status=9/KILL",
    ),
    _w(
        "linux",
        "apache/hadoop:hadoop-yarn-project (ContainersMonitorImpl)",
        "Container [pid=%s,containerID=%s] is running beyond physical memory limits.",
        "Container [pid=1234,containerID=container_1_0001_01_000002] is running beyond physical "
        "memory limits. Current usage: 2.1 GB of 2 GB physical memory used; 3.5 GB of 4.2 GB "
        "virtual memory used. Killing container.",
    ),
    _w(
        "linux",
        "apache/spark:resource-managers/yarn/src/main/scala/org/apache/spark/deploy/yarn/"
        "YarnAllocator.scala",
        "Container killed by YARN for exceeding memory limits. %s of %s physical memory used.",
        "ExecutorLostFailure (executor 3 exited caused by one of the running tasks) Reason: "
        "Container killed by YARN for exceeding memory limits. 10.4 GB of 10 GB physical memory "
        "used. Consider boosting spark.yarn.executor.memoryOverhead.",
    ),
    _w(
        "node",
        "v8/v8:src/common/message-template.h (kArrayBufferAllocationFailed)",
        "Array buffer allocation failed",
        "RangeError: Array buffer allocation failed",
    ),
    _w(
        "arrow",
        "apache/arrow:cpp/src/arrow/memory_pool.cc",
        "malloc of size %d failed",
        "pyarrow.lib.ArrowMemoryError: malloc of size 1073741824 failed",
        req=1073741824,
    ),
    _w(
        "notebook",
        "Google Colab runtime UI (closed source)",
        "Your session crashed after using all available RAM.",
        "Your session crashed after using all available RAM. If you are interested in access to "
        "high-RAM runtimes, you may want to check out Colab Pro.",
    ),
    _w(
        "notebook",
        "Kaggle notebook UI (closed source)",
        "Your notebook tried to allocate more memory than is available. It has restarted.",
        "Your notebook tried to allocate more memory than is available. It has restarted.",
    ),
    _w(
        "tensorflow",
        "tensorflow/tensorflow:tensorflow/core/common_runtime/gpu/gpu_util.cc (copy into a "
        "destination the allocator failed to create; tensorflow/tensorflow#7025)",
        "Dst tensor is not initialized.",
        "tensorflow.python.framework.errors_impl.InternalError: Dst tensor is not initialized.",
    ),
    _w(
        "jax",
        "libtpu / XLA TPU memory-space assignment (closed source)",
        "Attempting to reserve %s at the bottom of memory. That was not possible. There are %s "
        "free, %s reserved, and %s reservable.",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Attempting to reserve 10.53G at the bottom of "
        "memory. That was not possible. There are 5.55G free, 0B reserved, and 5.55G reservable.",
    ),
    _w(
        "japanese",
        "Japanese UIs' wrappers",
        "メモリ不足",
        "エラー: GPU のメモリ不足です。バッチサイズを小さくしてください",
    ),
    _w(
        "korean",
        "Korean UIs' wrappers",
        "메모리 부족",
        "오류: GPU 메모리 부족 (CUDA out of memory)",
    ),
    _w(
        "chinese",
        "chinese UIs' wrappers (traditional)",
        "記憶體不足",
        "錯誤：記憶體不足，無法載入模型",
    ),
    _w(
        "chinese",
        "chinese UIs' wrappers (e.g. lllyasviel/Fooocus zh locale, ModelScope/FunASR messages)",
        "显存不足",
        "错误：CUDA 显存不足，请减小图片尺寸或批量大小",
    ),
    _w(
        "chinese",
        "chinese UIs' wrappers (system RAM)",
        "内存不足",
        "加载模型失败：内存不足（需要 16.0 GB，可用 7.5 GB）",
    ),
    _w(
        "chinese",
        "chinese UIs' wrappers",
        "显存溢出",
        "推理失败: 显存溢出 (OOM)，请降低分辨率",
    ),
)

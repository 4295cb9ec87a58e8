"""Historical OOM wordings of the frameworks: TensorFlow, JAX / XLA, and the Hugging Face
dispatch errors (issue 9; see :mod:`oomkit.diagnose.upstream_wordings_history`, whose docstring
says how ``source`` cites the first and last release that printed each wording)."""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB as _GIB
from oomkit.diagnose.upstream_wordings_base import MIB as _MIB
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["FRAMEWORKS_HISTORY", "FRAMEWORKS_HISTORY_NEAR_MISSES"]

_TF = "tensorflow/tensorflow:"

TF_HISTORY: tuple[Wording, ...] = (
    _w(
        "tensorflow",
        _TF + "tensorflow/core/framework/op_kernel.cc@v0.12.0..v1.3.0 ('of shape')",
        "OOM when allocating tensor of shape %s and type %s",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor of shape [3,3,256,512] and type float\n\t [[Node: conv2d/kernel/Initializer/"
        "random_uniform/RandomUniform = RandomUniform[T=DT_INT32, dtype=DT_FLOAT]]]",
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/framework/op_kernel.cc@v1.0.0..v1.15.5 (the kernel's own log, "
        "status name in words)",
        "%s: Resource exhausted: OOM when allocating tensor with shape%s",
        "W tensorflow/core/framework/op_kernel.cc:1158] Resource exhausted: OOM when allocating "
        "tensor with shape[64,128,112,112]",
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/framework/op_kernel.cc@v1.3.0..v1.4.0 (no device nor allocator)",
        "OOM when allocating tensor with shape%s",
        "ResourceExhaustedError: OOM when allocating tensor with shape[32,64,224,224]\n\t "
        '[[Node: conv1/Conv2D = Conv2D[T=DT_FLOAT, padding="SAME"]]]',
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/common_runtime/executor.cc@v1.4.0..v2.7.4 (graph mode: root errors, "
        "the status name in words)",
        "%d root error(s) found.\n  (%d) Resource exhausted:  OOM when allocating tensor with "
        "shape%s ...",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: 2 root error(s) found.\n"
        "  (0) Resource exhausted:  OOM when allocating tensor with shape[32,512,64,64] and type "
        "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n\t "
        "[[{{node model/conv2d/Conv2D}}]]",
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/common_runtime/executor.cc@v2.8.0..main (absl status name)",
        "%d root error(s) found.\n  (%d) RESOURCE_EXHAUSTED:  OOM when allocating tensor with "
        "shape%s ...",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: 2 root error(s) found.\n"
        "  (0) RESOURCE_EXHAUSTED:  OOM when allocating tensor with shape[32,512,64,64] and type "
        "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n\t "
        "[[{{node model/conv2d/Conv2D}}]]",
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/python/eager/execute.py@v2.11.0..main ({{function_node}} prefix)",
        "{{function_node %s}} OOM when allocating tensor with shape%s and type %s on %s by "
        "allocator %s [Op:%s]",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: {{function_node "
        "__wrapped__MatMul_device_/job:localhost/replica:0/task:0/device:GPU:0}} OOM when "
        "allocating tensor with shape[16384,16384] and type float on /job:localhost/replica:0/"
        "task:0/device:GPU:0 by allocator GPU_0_bfc [Op:MatMul]",
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/common_runtime/bfc_allocator.cc@v1.0.0..v2.2.0 (the failing try)",
        "Allocator (%s) ran out of memory trying to allocate %s.  Current allocation summary "
        "follows.",
        "W tensorflow/core/common_runtime/bfc_allocator.cc:273] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate 16.00MiB.  Current allocation summary follows.",
        req=16 * _MIB,
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/common_runtime/bfc_allocator.cc@v2.3.0..v2.4.4 ('rounded to')",
        "Allocator (%s) ran out of memory trying to allocate %s (rounded to %d).  Current "
        "allocation summary follows.",
        "W tensorflow/core/common_runtime/bfc_allocator.cc:431] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate 1.00GiB (rounded to 1073741824).  Current allocation summary "
        "follows.",
        req=1073741824,
    ),
    _w(
        "tensorflow",
        "tensorflow/tensorflow:third_party/xla/third_party/tsl/tsl/framework/bfc_allocator.cc@"
        "v2.5.0..main ('requested by op', the cuda_malloc_async hint)",
        "Allocator (%s) ran out of memory trying to allocate %s (rounded to %d)requested by op "
        "%s\nIf the cause is memory fragmentation maybe the environment variable "
        "'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation.",
        "W external/local_tsl/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out "
        "of memory trying to allocate 8.00GiB (rounded to 8589934592)requested by op MatMul\n"
        "If the cause is memory fragmentation maybe the environment variable "
        "'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. \nCurrent allocation "
        "summary follows.",
        req=8589934592,
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/framework/op_kernel.cc@v1.14.0..main (eager op, the hint)",
        "OOM when allocating tensor with shape%s and type %s on %s by allocator %s [Op:%s]",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[16384,16384] and type float on /job:localhost/replica:0/task:0/"
        "device:GPU:0 by allocator GPU_0_bfc [Op:MatMul]",
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/common_runtime/gpu/gpu_cudamallocasync_allocator.cc@"
        "v2.5.0..v2.6.5 (no 'bytes', no 'Reported by CUDA')",
        "%s cuMemAllocAsync failed to allocate %d: %s\n Free memory/Total memory: %d/%d",
        "E tensorflow/core/common_runtime/gpu/gpu_cudamallocasync_allocator.cc:288] "
        "gpu_async_0 cuMemAllocAsync failed to allocate 4294967296: CUDA error: out of memory "
        "(CUDA_ERROR_OUT_OF_MEMORY)\n Free memory/Total memory: 1258291200/8589934592",
        req=4294967296,
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/core/common_runtime/gpu/gpu_cudamallocasync_allocator.cc@v2.7.0..main",
        "%s cuMemAllocAsync failed to allocate %d bytes: %s\n Reported by CUDA: Free "
        "memory/Total memory: %d/%d",
        "E tensorflow/core/common_runtime/gpu/gpu_cudamallocasync_allocator.cc:288] "
        "gpu_async_0 cuMemAllocAsync failed to allocate 4294967296 bytes: CUDA error: out of "
        "memory (CUDA_ERROR_OUT_OF_MEMORY)\n Reported by CUDA: Free memory/Total memory: "
        "1258291200/8589934592",
        req=4294967296,
    ),
    _w(
        "tensorflow",
        _TF + "tensorflow/stream_executor/cuda/cuda_driver.cc@v2.0.0..v2.8.4 (GiB, was 'G')",
        "failed to allocate %s (%d bytes) from device: %s",
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:794] failed to allocate 3.77GiB "
        "(4046333952 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
        req=4046333952,
    ),
)

JAX_HISTORY: tuple[Wording, ...] = (
    _w(
        "jax",
        "openxla/xla (tensorflow/compiler/xla/service/shaped_buffer / jaxlib < 0.1.60: the "
        "'Resource exhausted:' status prefix)",
        "Resource exhausted: Out of memory while trying to allocate %d bytes.",
        "RuntimeError: Resource exhausted: Out of memory while trying to allocate 17179869184 "
        "bytes.",
        req=17179869184,
    ),
    _w(
        "jax",
        "jax-ml/jax:jax/_src/lib (jax >= 0.4.36: jax.errors.JaxRuntimeError) over openxla/xla's "
        "human-readable size",
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate %s.",
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        "262.56GiB.\n  [executable_name='jit_train_step']",
        req=int(262.56 * _GIB),
    ),
    _w(
        "jax",
        "openxla/xla (jaxlib < 0.1.60, 'Resource exhausted:' over the BFC's request message)",
        "Resource exhausted: Failed to allocate request for %s (%uB) on device ordinal %d",
        "RuntimeError: Resource exhausted: Failed to allocate request for 3.00GiB (3221225472B) "
        "on device ordinal 0",
        req=3221225472,
    ),
    _w(
        "jax",
        "openxla/xla:xla/pjrt/pjrt_stream_executor_client.cc@jaxlib-v0.3.0..main (replica log)",
        "Execution of replica %d failed: %s",
        "E1108 10:00:00.123456 4242 pjrt_stream_executor_client.cc:2985] Execution of replica 0 "
        "failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 5242880 bytes.",
        req=5242880,
    ),
    _w(
        "jax",
        "openxla/xla (TPU compiler, 'Resource exhausted:' before absl status names)",
        "Resource exhausted: Ran out of memory in memory space hbm. Used %s of %s hbm. Exceeded "
        "hbm capacity by %s.",
        "RuntimeError: Resource exhausted: Ran out of memory in memory space hbm. Used 20.31G of "
        "15.48G hbm. Exceeded hbm capacity by 4.83G.",
    ),
)

HF_HISTORY: tuple[Wording, ...] = (
    _w(
        "transformers",
        "huggingface/transformers:src/transformers/modeling_utils.py@v4.26.0..v4.29.2 "
        "('load_in_8bit_fp32_cpu_offload', renamed llm_int8_enable_fp32_cpu_offload in 4.30)",
        "Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM "
        "to fit the quantized model. ... set `load_in_8bit_fp32_cpu_offload=True` ...",
        "ValueError: \n                        Some modules are dispatched on the CPU or the "
        "disk. Make sure you have enough GPU RAM to fit\n                        the quantized "
        "model. If you want to dispatch the model on the CPU or the disk while keeping\n"
        "                        these modules in 32-bit, you need to set "
        "`load_in_8bit_fp32_cpu_offload=True` and pass a custom\n                        "
        "`device_map` to `from_pretrained`.",
    ),
)

FRAMEWORKS_HISTORY: tuple[Wording, ...] = TF_HISTORY + JAX_HISTORY + HF_HISTORY

FRAMEWORKS_HISTORY_NEAR_MISSES: tuple[str, ...] = (
    # (TensorFlow's BFC retry warning and CPU allocator warning are memory-pressure reports
    # since docrec23: parse_wordings_warnings, tests/test_doctor_warnings.py)
    # TensorFlow / XLA: device creation with its memory, a log of memory limits
    "Created device /job:localhost/replica:0/task:0/device:GPU:0 with 21458 MB memory:  -> "
    "device: 0, name: NVIDIA GeForce RTX 3090",
    "XLA_PYTHON_CLIENT_MEM_FRACTION=.75 XLA_PYTHON_CLIENT_PREALLOCATE=false",
)

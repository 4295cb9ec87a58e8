"""Families and cause mechanisms added after the corpus review (issue 9, docs/doctor-causes.md).

Each case is a message in the runtime's own wording; the assertions check what the mechanism says
(which allocation failed, what the numbers or the log say), so a rule keyed to one record's
string would not pass the neighbouring cases.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oomkit.diagnose.consistency import contradictions, hardware_top_fix
from oomkit.diagnose.doctor import diagnose_text

MiB = 1 << 20
GiB = 1 << 30

RECOGNISED = [
    ("RuntimeError: Out of workspace memory in AlignedAlloactor", "flashinfer_workspace"),
    (
        "fire_batch failed: only 0 bytes available in AlignedAllocator. Increase the workspace "
        "buffer size.",
        "flashinfer_workspace",
    ),
    ("AssertionError: Not enough memory for KV cache, try reducing --num-pages", None),
    ("ggml_vulkan: Failed to allocate pinned memory.", "llama.cpp_pinned_alloc"),
    ("Tried to allocate 2.00 GiB", "pytorch_partial"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM", None),
    ("Resource exhausted: OOM when allocating tensor with shape", "tf_oom_allocating_tensor"),
    (
        "W external/xla/xla/tsl/framework/bfc_allocator.cc:291] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate 1.00GiB with freed_by_count=0.",
        "tf_bfc_allocator",
    ),
    ("Error: cuDNN isn't found FWD algo for convolution.", "cudnn_workspace"),
    ("[1]    14875 killed     python main.py --low_vram", "linux_killed"),
    ("Check failed: err == CUBLAS_STATUS_SUCCESS (1 vs. 0) : Create cublas handle failed", None),
    ("Not enough resources to load the model with the current settings", "lmstudio_guardrail"),
    (
        "InternalError: Check failed: (offset + needed_size <= this->buffer.size) is false: "
        "storage allocation failure, attempted to allocate 16785408 at offset 0 in region that "
        "is 16777216bytes",
        "mlc_storage_allocation_failure",
    ),
    ("error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErr", "metal_command_buffer"),
    ("[metal::malloc] Resource limit (499000) exceeded.", "mlx_resource_limit"),
    (
        "[metal::malloc] Attempting to allocate 25769803776 bytes which is greater than the "
        "maximum allowed buffer size of 17179869184 bytes.",
        "mlx_max_buffer_size",
    ),
    ("RuntimeError: Invalid buffer size: 19.07 GB", "mps_invalid_buffer_size"),
    ("ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfHostMemory", "vulkan_out_of_host_memory"),
    (
        "onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested "
        "buffer of size 1073741824",
        "onnxruntime_bfc_arena",
    ),
    (
        "ResourceExhaustedError: Out of memory error on GPU 0. Cannot allocate 45.776367MB memory "
        "on GPU 0, 44.376709GB memory has been allocated(actual using allocated memory "
        "439.451172MB) and available memory is only 15.812500MB.",
        "paddle_out_of_memory",
    ),
    (
        "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes "
        "(allocated so far: 15,032,385,536 bytes).",
        "cupy_out_of_memory",
    ),
    ("RuntimeError: CUDA failed with error out of memory", "ctranslate2_cuda_failed"),
    ("RuntimeError: CUDA driver error: out of memory", "cuda_error_out_of_memory"),
    ("ERROR: failed to allocate KV cache", "kv_pool_not_enough_memory"),
    (
        "tvm/src/runtime/cuda/cuda_device_api.cc:129: InternalError: Check failed: (e == "
        "cudaSuccess || e == cudaErrorCudartUnloading) is false: CUDA: out of memory",
        "tvm_cuda_device_api",
    ),
    (
        "TVMError: Check failed: (result) is false: Failed to allocate 99121664 bytes with "
        "alignment 16 bytes",
        "tvm_alloc_failed",
    ),
    ("ggml_backend_sched: failed to allocate graph, reserving", "ggml_sched_graph"),
    (
        "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. "
        "Ran out of memory in memory space vmem.",
        "xla_tpu_vmem",
    ),
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCStorage.cu line=58 error=2 : out "
        "of memory",
        "cuda_error_out_of_memory",
    ),
    ("RuntimeError: CUDA error:out of memory", "cuda_error_out_of_memory"),
    ("OutOfMemoryError: CUDA out of memory", "pytorch_partial"),
    ("- **Exception Message:** Allocation on device ", "pytorch_partial"),
    (
        "RuntimeError: unable to mmap 23802932552 bytes from file <./flux1-dev.safetensors>: "
        "Cannot allocate memory (12)",
        "safetensors_mmap_enomem",
    ),
    (
        "ggml_cuda_host_malloc: failed to allocate 1900,00 MiB of pinned memory: invalid argument",
        "llama.cpp_pinned_alloc",
    ),
    ("Not enough memory. Please try to increase --mem-fraction-static", "sglang_not_enough_memory"),
    (
        "numpy.core._exceptions._ArrayMemoryError: MemoryError: Unable to allocate 3.00 GiB for an "
        "array with shape (1024, 1024, 768) and data type float32",
        "numpy_memory_error",
    ),
    (
        "ValueError: The current `device_map` had weights offloaded to the disk. Please provide "
        "an `offload_folder` for them.",
        "hf_device_map_disk_offload",
    ),
    (
        "ValueError: To serve at least one request with the model's max seq len (1048576),\n"
        "22.5 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(17.39 GiB).",
        "vllm_v1_kv_capacity",
    ),
    (
        "free memory on device cuda:0 (19.77/22.05 GiB) on startup is less than desired GPU "
        "memory utilization (0.9, 19.84 GiB)",
        "vllm_startup_free_memory",
    ),
]


@pytest.mark.parametrize(("text", "fmt"), RECOGNISED, ids=[c[0][:40] for c in RECOGNISED])
def test_family_recognised(text: str, fmt: str | None) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert all(e.runtime != "generic" for e in d.events), [e.format for e in d.events]
    if fmt is not None:
        assert any(e.format == fmt for e in d.events), [e.format for e in d.events]
    assert not contradictions(d)
    assert not hardware_top_fix(d)


def test_bfc_warning_that_is_not_a_failure_is_no_failure() -> None:
    # since docrec23 the warning alone is a memory-pressure report (parse_wordings_warnings),
    # never a failed allocation
    d = diagnose_text(
        "W bfc_allocator.cc:296] Allocator (GPU_0_bfc) ran out of memory trying to allocate "
        "1.25GiB with freed_by_count=0. The caller indicates that this is not a failure, but may "
        "mean that there could be performance gains if more memory were available."
    )
    assert [e.kind for e in d.events] == ["memory_report"]
    assert d.cause == "unknown"


def test_kv_pool_message_is_the_context() -> None:
    d = diagnose_text("AssertionError: Not enough memory for KV cache, try reducing --num-pages")
    assert d.cause == "kv_cache_or_context"
    assert d.allocation == "kv_pool"


def test_context_creation_oom_is_someone_else() -> None:
    # the context is the process's first allocation on the device: nothing of its own is there
    d = diagnose_text(
        "jcuda.CudaException: CUDA_ERROR_OUT_OF_MEMORY\n"
        "    at jcuda.driver.JCudaDriver.checkResult(JCudaDriver.java:337)\n"
        "    at jcuda.driver.JCudaDriver.cuCtxCreate(JCudaDriver.java:1514)"
    )
    assert d.cause == "other_process_holding_memory"
    plain = diagnose_text("jcuda.CudaException: CUDA_ERROR_OUT_OF_MEMORY")
    # without the context-creation frame nothing decides: at most a low-confidence base-rate
    # guess (docs/doctor-causes.md section 8), never the other process
    assert plain.cause != "other_process_holding_memory"
    assert plain.open_question
    assert plain.confidence <= 0.35


def test_dataparallel_imbalance_warning_decides() -> None:
    d = diagnose_text(
        "UserWarning: There is an imbalance between your GPUs. You may want to exclude GPU 1 "
        "which has less than 75% of the memory or cores of GPU 0.\n"
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 3.95 GiB total "
        "capacity; 3.40 GiB already allocated; 1.12 MiB free; 3.45 GiB reserved in total by "
        "PyTorch)"
    )
    assert d.cause == "multi_gpu_imbalance"
    assert not hardware_top_fix(d)


def test_vulkan_per_allocation_limit_is_not_capacity() -> None:
    d = diagnose_text(
        "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: "
        "ErrorOutOfDeviceMemory\n"
        "alloc_tensor_range: failed to allocate Vulkan0 buffer of size 4697620480\n"
        "llama_model_load: error loading model: unable to allocate Vulkan0 buffer"
    )
    assert d.cause == "unknown"
    assert "per-allocation limit" in d.explanation


def test_host_kv_cache_failure_is_the_context() -> None:
    log = (
        "llama_new_context_with_model: n_ctx      = {n}\n"
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size {b}\n"
        "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
    )
    d = diagnose_text(log.format(n=1048576, b=137438953504))
    assert d.cause == "kv_cache_or_context"
    assert any("-c 524288" in c for f in d.fixes for c in f.commands)
    # the same host buffer failing with no KV line after it is host RAM
    weights = diagnose_text(
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 8589934592"
    )
    assert weights.cause == "host_ram"


def test_fixed_runtime_buffers_are_not_memory_causes() -> None:
    fi = diagnose_text(
        "Buffer overflow when allocating memory for batch_prefill_tmp_v with size 283115520 and "
        "alignment 16, but only 268435456 bytes available in AlignedAllocator."
    )
    assert fi.cause == "unknown"
    assert fi.fixes  # the workspace / prefill levers are still given
    pool = diagnose_text(
        "ggml_new_object: not enough space in the context's memory pool (needed 10882896, "
        "available 10650320)"
    )
    assert pool.cause == "unknown"


def test_mlc_check_that_contradicts_its_numbers() -> None:
    msg = (
        "Insufficient GPU memory error: The available single GPU memory is {a} MB, which is less "
        "than the sum of model weight size ({w} MB) and temporary buffer size ({t} MB)."
    )
    assert diagnose_text(msg.format(a="19314.976", w="51.083", t="106.819")).cause == "unknown"
    assert (
        diagnose_text(msg.format(a="20584.716", w="5977.188", t="15013.765")).cause
        == "batch_or_activations"
    )
    assert diagnose_text(msg.format(a="4762.535", w="4958.468", t="609.312")).cause == (
        "model_too_large"
    )


_NEW_MSG = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {x}. GPU 0 has a total "
    "capacity of 44.53 GiB of which 263.25 MiB is free. Including non-PyTorch memory, this "
    "process has 44.25 GiB memory in use. Of the allocated memory 40.62 GiB is allocated by "
    "PyTorch, and 1.57 GiB is reserved by PyTorch but unallocated."
)


def test_oom_in_a_serving_engine_loop_is_activations() -> None:
    loop = (
        "ERROR 04-27 09:07:04 [engine.py:160] " + _NEW_MSG.format(x="1.50 GiB") + "\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/vllm/engine/multiprocessing/engine.py", '
        "line 221, in run_engine_loop\n"
    )
    d = diagnose_text(loop)
    assert d.cause == "batch_or_activations"
    assert d.phase == "inference"
    # the same numbers with no phase: the small-request default
    assert diagnose_text(_NEW_MSG.format(x="1.50 GiB")).cause == "model_too_large"


def test_a_servers_memory_fraction_is_its_budget() -> None:
    msg = (
        "Server error: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 47.54 GiB total "
        "capacity; 23.68 GiB already allocated; 23.44 GiB free; 23.77 GiB allowed; 23.77 GiB "
        "reserved in total by PyTorch)"
    )
    served = diagnose_text("batch{batch_size=1}:prefill:prefill{id=13 size=1}: " + msg)
    assert served.cause == "model_too_large"
    assert served.fixes[0].title.startswith("Raise or remove the per-process memory fraction")
    assert diagnose_text(msg).cause == "unknown"  # a user's/test harness's own cap


def test_impossible_process_figure_is_ignored() -> None:
    d = diagnose_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a "
        "total capacity of 23.43 GiB of which 4.06 MiB is free. Including non-PyTorch memory, "
        "this process has 0 bytes memory in use. Of the allocated memory 23.03 GiB is allocated "
        "by PyTorch, and 15.67 MiB is reserved by PyTorch but unallocated."
    )
    assert d.cause != "other_process_holding_memory"
    assert "is ignored" in d.explanation
    assert "-23" not in d.explanation


def test_oom_after_completed_steps_reads_as_growth() -> None:
    msg = (
        "RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB (GPU 0; 6.00 GiB total "
        "capacity; 4.11 GiB already allocated; 34.82 MiB free; 4.42 GiB reserved in total by "
        "PyTorch)"
    )
    later = diagnose_text(
        "Epoch 3:  45%|####5     | 450/1000 [05:12<06:20,  1.45it/s, loss=0.31]\n" + msg
    )
    assert later.cause == "leak_or_accumulation"
    assert later.phase == "loop_later_iteration"
    assert "memory_allocated() per step" in later.explanation
    # no completed step: the single message's reading (an open question: the base rate's guess)
    first = diagnose_text("Epoch 0:   0%|          | 0/1000 [00:00<?, ?it/s]\n" + msg)
    assert first.cause != "leak_or_accumulation"
    assert first.open_question
    # an unfinished loading bar places the failure in the weights load
    loading = diagnose_text(
        "Loading checkpoint shards:  88%|########  | 7/8 [00:12<00:01,  1.84s/it]\n" + msg
    )
    assert loading.cause == "model_too_large"
    assert loading.phase == "load"
    # a sampler's steps before the VAE decode, a dataset map: not a training loop
    sampler = diagnose_text("100%|##########| 20/20 [00:05<00:00,  3.90it/s]\n" + msg)
    assert sampler.cause != "leak_or_accumulation"
    assert sampler.open_question
    mapped = diagnose_text("Map: 100%|#####| 1000/1000 [00:01<00:00, 812.3 examples/s]\n" + msg)
    assert mapped.cause != "leak_or_accumulation"
    assert mapped.open_question


def test_ollama_placement_then_cuda_oom_is_too_many_layers() -> None:
    d = diagnose_text(
        'time=2024-08-02T14:39:38.621+05:00 level=INFO source=memory.go:309 msg="offload to '
        'cuda" layers.requested=-1 layers.model=28 layers.offload=20 layers.split="" '
        'memory.available="[7.3 GiB]" memory.required.full="9.6 GiB" '
        'memory.required.partial="7.1 GiB" memory.required.kv="540.0 MiB" '
        'memory.required.allocations="[7.1 GiB]" memory.weights.total="8.5 GiB"\n'
        "CUDA error: out of memory\n"
    )
    assert d.cause == "model_too_large"
    assert any("num_gpu 19" in f.title for f in d.fixes)


def test_lmstudio_guardrail_readings() -> None:
    bare = diagnose_text("Not enough resources to load the model with the current settings")
    assert bare.cause == "other_process_holding_memory"
    assert "lms ps" in bare.explanation
    nan = diagnose_text(
        "Error: Model loading was stopped due to insufficient system resources. Under the "
        "current settings, this model requires approximately NaN undefined of memory"
    )
    assert nan.cause == "unknown"
    sized = diagnose_text(
        "Model loading was stopped due to insufficient system resources. Under the current "
        "settings, this model requires approximately 273.25 GB of memory"
    )
    assert sized.cause == "model_too_large"
    assert sized.events[0].requested_bytes == 273_250_000_000


def test_request_share_is_of_what_a_spilling_device_holds() -> None:
    # Windows WDDM / unified memory: PyTorch holds 13.98 GiB on an 8 GiB card, so a 1002 MiB
    # request is 7% of what the device holds, not 12% of the card: a small request
    msg = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {x}. GPU 0 has a total "
        "capacity of 8.00 GiB of which 0 bytes is free. Of the allocated memory {a} GiB is "
        "allocated by PyTorch, and 129.48 MiB is reserved by PyTorch but unallocated."
    )
    spill = diagnose_text(msg.format(x="1002.00 MiB", a="13.98"))
    assert spill.cause == "model_too_large"
    assert "spills into system memory" in spill.explanation
    fits = diagnose_text(msg.format(x="1002.00 MiB", a="6.98"))
    assert fits.cause == "batch_or_activations"


def test_framework_allocators_read_like_pytorchs() -> None:
    msg = (
        "Out of memory error on GPU 0. Cannot allocate {x} memory on GPU 0, {a} memory has been "
        "allocated and available memory is only {f}."
    )
    big = diagnose_text(msg.format(x="15.503906GB", a="28.770508GB", f="10.815613GB"))
    assert big.cause == "batch_or_activations"
    assert big.events[0].requested_bytes == round(15.503906 * GiB)  # Paddle's GB is 2**30
    # a small request with the device held: weights or the step's activations, not decided by
    # the message (the base rate answers at low confidence)
    small = diagnose_text(msg.format(x="128.000000MB", a="23.431824GB", f="97.625000MB"))
    assert small.open_question
    assert small.confidence < 0.5


def test_metal_per_buffer_limits_are_not_capacity() -> None:
    d = diagnose_text("RuntimeError: Invalid buffer size: 19.07 GB")
    # not capacity, but one tensor above MPS's per-buffer limit: PyTorch's MPS allocator backs
    # each tensor with its own buffer, so a buffer that large is one activation (doccause7,
    # h16-krita-ai-diffusion-1511, as the MLX reading); other per-buffer limits stay unknown
    assert d.cause == "batch_or_activations"
    assert d.confidence <= 0.5
    assert d.events[0].requested_bytes == round(19.07 * GiB)
    assert "per-buffer limit" in d.explanation


def test_bracket_progress_counts_as_completed_steps() -> None:
    d = diagnose_text(
        "Epoch: [0] [  19/6250] mem_allocated: 5268 MB mem_reserved: 10415 MB\n"
        "RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB (GPU 0; 6.00 GiB total "
        "capacity; 4.11 GiB already allocated; 34.82 MiB free; 4.42 GiB reserved in total by "
        "PyTorch)"
    )
    assert d.cause == "leak_or_accumulation"


def test_bare_ggml_cuda_check_has_no_phase() -> None:
    bare = diagnose_text("CUDA error 2 at ggml-cuda.cu:359: out of memory")
    assert bare.open_question
    assert bare.confidence < 0.5
    assert "would decide" in bare.explanation
    pool = diagnose_text(
        "CUDA error: out of memory\n"
        "  current device: 0, in function ggml_cuda_pool_malloc_vmm at ggml-cuda.cu:8583\n"
        "  cuMemCreate(&handle, reserve_size, &prop, 0)\n"
    )
    assert pool.cause == "batch_or_activations"  # the compute scratch pool grew at run time


def test_metal_single_buffer_against_the_working_set() -> None:
    log = (
        "ggml_metal_init: recommendedMaxWorkingSetSize  = {ws} MiB\n"
        "ggml_metal_add_buffer: error: failed to allocate 'data            ' buffer, size = "
        "19283.21 MiB\n"
    )
    within = diagnose_text(log.format(ws="49152.00"))
    assert within.cause == "unknown"  # one buffer capped below the working set
    over = diagnose_text(log.format(ws="16384.00"))
    assert over.cause == "model_too_large"


def test_trainer_bar_after_its_banner_counts_as_completed_steps() -> None:
    from oomkit.diagnose.parse import parse_log

    msg = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.05 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 812.00 MiB is free."
    )
    bar = " 12%|█▏        | 190/1562 [41:02<4:56:13, 12.96s/it]\n"
    banner = "***** Running training *****\n  Total optimization steps = 1,562\n"
    assert parse_log(banner + bar + msg).context.completed_steps == 190
    args = "TrainingArguments(\noptim=adamw_torch,\n)\n"
    assert parse_log(args + bar.replace("12.96s/it", "1.45it/s") + msg).context.completed_steps
    # without the Trainer's banner an unlabelled bar stays a sampler's (see the test above)
    assert parse_log(bar + msg).context.completed_steps is None
    # a dataset map after the banner is still not a training step
    mapped = "Map: 100%|#####| 1000/1000 [00:01<00:00, 812.3 examples/s]\n"
    assert parse_log(banner + mapped + msg).context.completed_steps is None


def test_fsdp_and_deepspeed_backward_hooks_are_the_backward_phase() -> None:
    from oomkit.diagnose.parse import parse_log

    log = (Path(__file__).parent / "fixtures/oom_logs/constructed-train-fsdp.txt").read_text()
    d = diagnose_text(log)
    assert d.context.frame_phase == "backward"
    assert d.context.completed_steps == 190
    assert d.cause == "batch_or_activations"
    assert d.phase == "training_backward"
    ds = log.replace(
        'torch/distributed/fsdp/_runtime_utils.py", line 805, in _post_backward_hook',
        'deepspeed/runtime/zero/stage_1_and_2.py", line 900, in '
        "reduce_ready_partitions_and_remove_grads",
    )
    assert parse_log(ds).context.frame_phase == "backward"

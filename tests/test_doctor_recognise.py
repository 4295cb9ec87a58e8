"""Recognition of runtimes' own few-number OOM wordings (issue 9, parse_recognise/rules_recognise).

Each message is written in the runtime's real format (the source that prints it is cited in
``oomkit.diagnose.parse_recognise``); the assertions are what the runtime's mechanism implies.
"""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log


def _only(text: str) -> tuple[str, str]:
    log = parse_log(text)
    assert len(log.events) >= 1, text
    e = log.events[0]
    return e.runtime, e.format or ""


# --- Ollama 0.1.x: runner died without a message ---------------------------------------------


def test_ollama_runner_exited_guess_is_recognised_as_ollama() -> None:
    d = diagnose_text(
        "ollama run mixtral\nError: llama runner exited, you may not have enough available "
        "memory to run this model"
    )
    assert d.oom_found
    assert d.primary is not None
    assert d.primary.runtime == "ollama"
    assert d.cause == "model_too_large"
    assert d.confidence < 0.5  # Ollama's own guess, not a measurement
    assert "server log" in d.explanation


def test_ollama_runner_exited_without_the_memory_guess_is_not_this_family() -> None:
    log = parse_log("Error: llama runner exited: some other reason")
    assert all(e.format != "ollama_runner_exited_memory" for e in log.events)


# --- llama.cpp context creation ---------------------------------------------------------------


def test_wrapper_context_creation_failure_points_at_the_context() -> None:
    for msg in (
        "Error: Failed to create context: null reference from llama.cpp",
        "ValueError: Failed to create llama_context",
        "main: error: failed to create context with model 'model.gguf'",
    ):
        d = diagnose_text(msg)
        assert d.primary is not None, msg
        assert d.primary.runtime == "llama.cpp", msg
        assert d.cause == "kv_cache_or_context", msg
        assert d.allocation == "kv_pool"


def test_context_failure_beside_a_buffer_failure_keeps_the_buffer_event() -> None:
    # the fallback runs only when no specific parser matched: the sized buffer event stays
    d = diagnose_text(
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
        "llama_init_from_model: failed to initialize the context: failed to allocate buffer\n"
        "main: error: failed to create context with model 'x.gguf'"
    )
    assert all(e.format != "llama.cpp_context_failed" for e in d.events)


# --- vLLM Mamba state blocks ------------------------------------------------------------------


def test_vllm_mamba_blocks_bound_the_concurrency() -> None:
    d = diagnose_text(
        "ValueError: max_num_seqs (512) exceeds available Mamba cache blocks (300). Each decode "
        "sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. Please "
        "lower max_num_seqs to at most 300 or increase gpu_memory_utilization."
    )
    assert d.primary is not None
    assert d.primary.runtime == "vllm"
    assert d.cause == "batch_or_activations"
    assert d.allocation == "kv_pool"
    assert any("--max-num-seqs 300" in c for f in d.fixes for c in f.commands)


# --- ComfyUI: PyTorch's message cut at "Allocation on device" ----------------------------------


def test_comfyui_cut_allocation_message_is_the_nodes_working_set() -> None:
    for msg in (
        "!!! Exception during processing !!! Allocation on device \nTraceback (most recent call "
        "last):",
        "torch.OutOfMemoryError: Allocation on device\n\nGot an OOM, unloading all loaded models.",
        "Got an OOM, unloading all loaded models.",
    ):
        d = diagnose_text(msg)
        assert d.oom_found, msg
        assert d.primary is not None, msg
        assert d.primary.runtime == "comfyui", msg
        assert d.cause == "batch_or_activations", msg


def test_full_async_allocator_message_stays_with_the_pytorch_parser() -> None:
    # the whole message (device number, sizes) is PyTorch's own, read by parse_torch
    rt, _ = _only(
        "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of "
        "memory)\nCurrently allocated     : 10.00 GiB\nRequested               : 2.00 GiB\n"
        "Device limit            : 11.00 GiB\nFree (according to CUDA): 100.00 MiB"
    )
    assert rt == "pytorch"


def test_comfyui_tiled_vae_retry_is_recognised() -> None:
    d = diagnose_text(
        "Warning: Ran out of memory when regular VAE decoding, retrying with tiled VAE decoding."
    )
    assert d.primary is not None
    assert d.primary.format == "comfyui_vae_tiled_retry"
    assert d.cause == "batch_or_activations"


# --- TensorFlow BFC statistics ----------------------------------------------------------------


def test_tf_bfc_stats_table_gives_the_limit_and_use() -> None:
    d = diagnose_text(
        "Stats:\nLimit:                  7967745639\nInUse:                  7800000000\n"
        "MaxInUse:               7800000000\nNumAllocs:                    2003\n"
        "MaxAllocSize:           1073741824\n"
    )
    e = d.primary
    assert e is not None
    assert e.runtime == "tensorflow"
    assert e.total_bytes == 7967745639
    assert e.allocated_bytes == 7800000000
    assert "1073741824" in (e.detail or "")


def test_a_limit_line_without_the_table_is_not_an_oom() -> None:
    assert not diagnose_text("Limit:     100\nsomething else").oom_found


# --- SYCL / Level Zero ------------------------------------------------------------------------


def test_level_zero_out_of_memory_codes() -> None:
    d = diagnose_text(
        "memcpy failed: level_zero backend failed with error: 39 "
        "(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)"
    )
    assert d.primary is not None
    assert d.primary.runtime == "sycl"
    d2 = diagnose_text("Exception caught: UR_RESULT_ERROR_OUT_OF_HOST_MEMORY")
    assert d2.primary is not None
    assert d2.primary.kind == "host_alloc_failed"
    assert d2.cause == "host_ram"


# --- case and wording variants of known families ----------------------------------------------


def test_vllm_cache_blocks_message_in_any_case() -> None:
    d = diagnose_text("ValueError: no available memory for the cache blocks")
    assert d.primary is not None
    assert d.primary.format == "vllm_no_cache_blocks"


def test_generic_fallback_reads_out_of_the_memory_with_its_size() -> None:
    d = diagnose_text("RuntimeError: CUDA out of the memory. Tried to allocate 360.00 MiB")
    assert d.oom_found
    assert d.primary is not None
    assert d.primary.requested_bytes == 360 * 2**20


def test_windows_error_1455_in_any_spelling_is_the_page_file() -> None:
    for msg in (
        "Error 1455",
        "OSError: [WinError 1455] The paging file is too small",
        "error code 1455",
    ):
        d = diagnose_text(msg)
        assert d.cause == "host_ram", msg
    assert not diagnose_text("Error 14550 at step 3").oom_found


def test_a_lone_lower_case_killed_line_is_the_shell_report() -> None:
    assert diagnose_text("python train.py\nkilled").cause == "host_ram"
    assert not diagnose_text("the job was killed by the user").oom_found


# --- older formats of framework allocators ----------------------------------------------------


def test_paddle_1x_message_without_allocated_part() -> None:
    d = diagnose_text(
        "Out of memory error on GPU 1. Cannot allocate 4.500000GB memory on GPU 1, available "
        "memory is only 300.250000MB."
    )
    e = d.primary
    assert e is not None
    assert e.runtime == "paddle"
    assert e.device == 1
    assert e.requested_bytes == int(4.5 * 2**30)
    assert e.free_bytes == int(300.25 * 2**20)
    assert e.allocated_bytes is None
    # a 4.5 GiB request is larger than any weight tensor: an activation
    assert d.cause == "batch_or_activations"


def test_paddle_1x_small_request_with_only_free_memory_is_undecided() -> None:
    # without what Paddle holds, a 30 MiB request against 10 MiB free says nothing about which
    # allocation filled the device
    d = diagnose_text(
        "Out of memory error on GPU 0. Cannot allocate 30.000000MB memory on GPU 0, available "
        "memory is only 10.000000MB."
    )
    assert d.primary is not None
    assert d.primary.runtime == "paddle"
    # the rules leave it open; at most the base rate's low-confidence guess answers
    assert d.open_question
    assert d.confidence < 0.5


def test_paddle_1x_message_wrapped_before_the_free_size() -> None:
    d = diagnose_text(
        "Out of memory error on GPU 0. Cannot allocate 1.000000GB memory on GPU 0, available "
        "memory is only \n    100.000000MB."
    )
    assert d.primary is not None
    assert d.primary.runtime == "paddle"
    assert d.primary.requested_bytes == 2**30


def test_old_cupy_total_is_the_request_plus_the_pool() -> None:
    # cupy/cuda/memory.pyx: total = size + pool.total_bytes()
    d = diagnose_text(
        "cupy.cuda.memory.OutOfMemoryError: out of memory to allocate 536870912 bytes "
        "(total 8589934592 bytes)"
    )
    e = d.primary
    assert e is not None
    assert e.runtime == "cupy"
    assert e.requested_bytes == 536870912
    assert e.allocated_bytes == 8589934592 - 536870912


# --- vLLM sleep mode and lmdeploy TurboMind ---------------------------------------------------


def test_vllm_cumem_wake_up_failure_is_the_colocated_trainers_memory() -> None:
    d = diagnose_text(
        "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:139"
    )
    assert d.primary is not None
    assert d.primary.runtime == "vllm"
    assert d.cause == "other_process_holding_memory"
    assert d.confidence < 0.5


def test_turbomind_cuda_check_is_lmdeploy() -> None:
    d = diagnose_text(
        "    model_inst = self.tm_model.model_comm.create_model_instance(\n"
        "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory "
        "/lmdeploy/src/turbomind/utils/allocator.h:246"
    )
    assert d.primary is not None
    assert d.primary.runtime == "lmdeploy"
    assert "create_model_instance" in d.explanation
    assert any("cache_max_entry_count" in c for f in d.fixes for c in f.commands)


# --- split attention of Stable Diffusion UIs --------------------------------------------------


def test_split_attention_slice_larger_than_free_is_the_resolution() -> None:
    d = diagnose_text(
        "RuntimeError: Not enough memory, use lower resolution (max approx. 1024x1024). "
        "Need: 1.2GB free, Have:0.8GB free"
    )
    e = d.primary
    assert e is not None
    assert e.format == "sd_split_attention"
    assert e.requested_bytes == round(1.2 * 2**30)
    assert e.free_bytes == round(0.8 * 2**30)
    assert d.cause == "batch_or_activations"


def test_split_attention_with_nothing_free_leaves_the_cause_open() -> None:
    d = diagnose_text(
        "RuntimeError: Not enough memory, use lower resolution (max approx. 448x448). "
        "Need: 0.0GB free, Have:0.0GB free"
    )
    assert d.primary is not None
    assert d.primary.format == "sd_split_attention"
    assert d.cause == "unknown"
    assert "oomkit gpus" in d.explanation


# --- per-allocation limit of Vulkan, TensorFlow's exception class ------------------------------


def test_vulkan_allocation_limit_alone_is_recognised() -> None:
    d = diagnose_text("Requested buffer size exceeds device memory allocation limit")
    assert d.primary is not None
    assert d.primary.format == "vulkan_max_allocation_size"
    assert "maxMemoryAllocationSize" in d.explanation


def test_tensorflow_resource_exhausted_class_alone() -> None:
    d = diagnose_text(
        "    raise type(e)(node_def, op, message)\n"
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError"
    )
    assert d.primary is not None
    assert d.primary.runtime == "tensorflow"
    assert d.cause == "batch_or_activations"
    assert d.confidence < 0.5


def test_tensorflow_oom_line_keeps_the_shape_parser() -> None:
    d = diagnose_text(
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[64,256,56,56] and type float on /job:localhost/replica:0/task:0/"
        "device:GPU:0 by allocator GPU_0_bfc"
    )
    assert d.primary is not None
    assert d.primary.format != "tf_resource_exhausted_class"
    assert d.primary.shape == (64, 256, 56, 56)


# --- robustness: the fallback families on broken and hostile text -----------------------------

_FAMILY_LINES = (
    "Error: llama runner exited, you may not have enough available memory to run this model",
    "Failed to create context: null reference from llama.cpp",
    "max_num_seqs (1024) exceeds available Mamba cache blocks (856).",
    "!!! Exception during processing !!! Allocation on device ",
    "Warning: Ran out of memory when regular VAE decoding, retrying with tiled VAE decoding.",
    "Limit:                 10198757376\nInUse:                 10029289984",
    "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62",
    "[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:231",
    "Not enough memory, use lower resolution (max approx. 448x448). Need: 0.0GB free, Have:0.0GB",
    "Requested buffer size exceeds device memory allocation limit",
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError",
    "level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
)


def test_fallback_families_survive_mutations() -> None:
    import random

    from oomkit.diagnose.parse_recognise import parse_recognise
    from oomkit.diagnose.text import split_lines

    rng = random.Random(9)
    for _ in range(3000):
        base = rng.choice(_FAMILY_LINES)
        cut = base[: rng.randrange(len(base) + 1)]
        noise = rng.choice(["", "9" * rng.randrange(1, 400), " " * rng.randrange(1, 400), "(" * 50])
        pos = rng.randrange(len(cut) + 1)
        text = cut[:pos] + noise + cut[pos:]
        parse_recognise(split_lines(text))  # must not raise
        diagnose_text(text)


def test_fallback_families_stay_linear_on_long_near_misses() -> None:
    import time

    text = ("Limit: " + "1" * 5000 + " InUse: \n" + "max_num_seqs (" + "9" * 5000 + "\n") * 200
    t0 = time.process_time()
    diagnose_text(text)
    assert time.process_time() - t0 < 5.0

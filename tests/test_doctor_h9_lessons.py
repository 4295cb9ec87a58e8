"""Lessons from the retired heldout9 part's misses (issue 9), each read from the message itself.

* A token-pool manager's K/V buffer line in the traceback (lightllm ``mem_manager.py``, SGLang
  ``memory_pool.py``) places the OOM in the KV-cache allocation.
* Mesa RADV / the amdgpu kernel driver "Not enough memory for command submission": the
  submission's buffers fit neither VRAM nor GTT (host RAM the GPU maps).
* ggml buffer-type names with spaces (ggml-vulkan device descriptions) and stable-diffusion.cpp /
  whisper.cpp "failed to allocate the compute buffer" put a ggml failure in the compute stage.
"""

from __future__ import annotations

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text

_SGLANG = (
    "Traceback (most recent call last):\n"
    '  File "/sglang/srt/mem_cache/memory_pool.py", line 281, in _create_buffers\n'
    "    self.k_buffer = [\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process "
    "has 78.04 GiB memory in use. Of the allocated memory 77.20 GiB is allocated by PyTorch, and "
    "120.00 MiB is reserved by PyTorch but unallocated."
)


def test_lightllm_kv_buffer_line_is_the_kv_cache() -> None:
    d = diagnose_text(corpus_text("h9-lightllm-13"))
    assert d.context.frame_phase == "kv_cache_alloc"
    assert d.cause == "kv_cache_or_context"


def test_sglang_k_buffer_line_is_the_kv_cache() -> None:
    d = diagnose_text(_SGLANG)
    assert d.context.frame_phase == "kv_cache_alloc"
    assert d.cause == "kv_cache_or_context"


def test_other_buffer_lines_are_not_the_kv_cache() -> None:
    # near miss: a buffer that is not a K/V pool, and a size attribute of one
    for line in ("    self.key_buffer_size = size * 2", "    self.buffer = torch.empty(n)"):
        text = _SGLANG.replace("    self.k_buffer = [", line)
        assert diagnose_text(text).context.frame_phase != "kv_cache_alloc", line


def test_radv_command_submission_is_host_visible_memory() -> None:
    d = diagnose_text(corpus_text("h9-stable-diffusion-cpp-2015"))
    assert d.primary is not None
    assert d.primary.format == "amdgpu_cs_enomem"
    assert d.cause == "host_ram"


def test_kernel_amdgpu_command_submission_wording() -> None:
    d = diagnose_text(
        "[drm:amdgpu_cs_ioctl [amdgpu]] *ERROR* Not enough memory for command submission!"
    )
    assert d.primary is not None
    assert d.primary.format == "amdgpu_cs_enomem"
    assert d.cause == "host_ram"


def test_radv_lost_context_is_not_an_oom() -> None:
    d = diagnose_text(
        "radv/amdgpu: The CS has been cancelled because the context is lost. This context is "
        "innocent."
    )
    assert not d.oom_found


def test_vulkan_device_named_buffer_type_is_read_with_its_stage() -> None:
    d = diagnose_text(corpus_text("h9-stable-diffusion-cpp-291"))
    e = d.primary
    assert e is not None
    assert e.stage == "compute"
    assert e.requested_bytes == 6979321856
    assert e.buffer_name == "AMD Radeon FirePro W8100 (RADV HAWAII)"


def test_whisper_compute_buffer_wording_is_the_compute_stage() -> None:
    d = diagnose_text(
        "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1610612736\n"
        "whisper_sched_graph_init: failed to allocate the compute buffer"
    )
    e = d.primary
    assert e is not None
    assert e.stage == "compute"
    assert e.buffer_name == "CUDA0"
    assert e.device == 0


def test_weights_buffer_line_keeps_no_compute_stage() -> None:
    # near miss: alloc_tensor_range (weights or KV) names no stage; the buffer name still reads
    d = diagnose_text("alloc_tensor_range: failed to allocate ROCm0 buffer of size 4294967296")
    e = d.primary
    assert e is not None
    assert e.stage != "compute"
    assert e.buffer_name == "ROCm0"


def test_ggml_cpu_buffer_assert_is_host_ram() -> None:
    d = diagnose_text(corpus_text("h9-whisper-cpp-1915"))
    assert d.primary is not None
    assert d.primary.format == "ggml_cpu_buffer_assert"
    assert d.cause == "host_ram"


def test_ggml_cpu_buffer_assert_of_a_fork() -> None:
    d = diagnose_text(
        "WSP_GGML_ASSERT: /build/whisper/ggml-backend.c:512: data != NULL && "
        '"failed to allocate buffer"'
    )
    assert d.primary is not None
    assert d.primary.format == "ggml_cpu_buffer_assert"


def test_other_ggml_asserts_are_not_the_cpu_buffer() -> None:
    # near miss: the same macro on a non-memory condition
    d = diagnose_text("GGML_ASSERT: ggml.c:4412: view_src == NULL || data_size == 0")
    assert d.primary is None or d.primary.format != "ggml_cpu_buffer_assert"


def test_torch_alloc_block_warning_is_read_with_its_numbers() -> None:
    d = diagnose_text(corpus_text("h9-vllm-omni-6843"))
    e = d.primary
    assert e is not None
    assert e.format == "torch_alloc_block_warning"
    assert (e.requested_bytes, e.free_bytes, e.total_bytes) == (272629760, 125304832, 85017624576)
    # a retried allocation: the warning alone does not say what filled the GPU
    assert d.cause == "unknown"


def test_torch_alloc_block_warning_before_the_error_leaves_the_error_primary() -> None:
    text = (
        "[W101 10:00:00.1 CUDACachingAllocator.cpp:3933] memory allocation failed with OOM on "
        "device 0 while trying to allocate 2147483648 bytes (free: 1073741824, total: "
        "25769803776).\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 24.00 GiB of which 1.00 GiB is free. Including non-PyTorch memory, "
        "this process has 22.90 GiB memory in use. Of the allocated memory 22.10 GiB is "
        "allocated by PyTorch, and 300.00 MiB is reserved by PyTorch but unallocated."
    )
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.format != "torch_alloc_block_warning"


def test_allocation_failed_without_the_allocator_numbers_is_not_the_warning() -> None:
    # near miss: same words, none of the allocator's numbers
    d = diagnose_text("memory allocation failed with OOM on device: see the log above")
    assert d.primary is None or d.primary.format != "torch_alloc_block_warning"


def test_older_onnxruntime_cuda_failure_without_file_and_line() -> None:
    d = diagnose_text(corpus_text("h9-triton-server-5014"))
    e = d.primary
    assert e is not None
    assert e.format == "onnxruntime_cuda_failure_oom"
    assert e.device == 0


def test_onnxruntime_cuda_failure_with_file_and_line_still_read() -> None:
    d = diagnose_text(
        "CUDA failure 2: out of memory ; GPU=1 ; hostname=box ; file=cuda_allocator.cc ; "
        "line=47 ; expr=cudaMalloc((void**)&p, size);"
    )
    assert d.primary is not None
    assert d.primary.format == "onnxruntime_cuda_failure_oom"
    assert d.primary.device == 1


def test_onnxruntime_cuda_failure_of_another_status_is_not_an_oom_event() -> None:
    # near miss: the same format with a launch failure
    d = diagnose_text(
        "CUDA failure 719: unspecified launch failure ; GPU=0 ; hostname=box ; "
        "expr=cudaStreamSynchronize(stream);"
    )
    assert d.primary is None or d.primary.format != "onnxruntime_cuda_failure_oom"


def test_pycuda_memory_error_is_a_cuda_driver_oom() -> None:
    d = diagnose_text(corpus_text("h9-nervana-deepspeech-10"))
    e = d.primary
    assert e is not None
    assert e.format == "pycuda_memory_error"
    assert e.kind == "cuda_error_oom"


def test_pycuda_array_create_wording() -> None:
    d = diagnose_text("pycuda._driver.MemoryError: cuArray3DCreate failed: out of memory")
    assert d.primary is not None
    assert d.primary.format == "pycuda_memory_error"


def test_pycuda_other_errors_and_host_pinning_are_not_the_device_oom() -> None:
    for text in (
        "pycuda._driver.LogicError: cuMemAlloc failed: invalid device context",
        "pycuda._driver.MemoryError: cuMemHostAlloc failed: out of memory",
    ):
        d = diagnose_text(text)
        assert d.primary is None or d.primary.format != "pycuda_memory_error", text


def test_ctranslate2_mkl_allocator_is_host_ram() -> None:
    d = diagnose_text(corpus_text("h9-faster-whisper-797"))
    assert d.primary is not None
    assert d.primary.format == "ctranslate2_cpu_alloc"
    assert d.cause == "host_ram"


def test_ctranslate2_aligned_allocator_is_host_ram() -> None:
    d = diagnose_text("RuntimeError: aligned_alloc: failed to allocate memory")
    assert d.primary is not None
    assert d.primary.format == "ctranslate2_cpu_alloc"
    assert d.cause == "host_ram"


def test_other_allocators_failing_are_not_ctranslate2() -> None:
    # near miss: a different routine with the same tail
    d = diagnose_text("my_pool_alloc: failed to allocate memory")
    assert d.primary is None or d.primary.format != "ctranslate2_cpu_alloc"

"""GPU data libraries and browser/Apple/desktop-app GPU back ends (``parse_libs`` / ``rules_libs``).

Each family: a real message from the corpus (heldout8, retired to development), a second line
built from the library's own format (cited in ``parse_libs``), and a near miss.
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text

GIB = 1 << 30
MIB = 1 << 20


def _primary(text: str) -> tuple[str, str, int | None]:
    d = diagnose_text(text)
    assert d.oom_found, text
    e = d.primary
    assert e is not None
    return e.runtime, e.format or "", e.requested_bytes


# --- faiss ---------------------------------------------------------------------------------------


def test_faiss_temporary_buffer_wrapped_over_lines_is_memory_held_elsewhere() -> None:
    # h8-faiss-2179's shape: the message wrapped mid-phrase by the paste
    real = (
        "Error in virtual void* faiss::gpu::StandardGpuResourcesImpl::allocMemory(const "
        "faiss::gpu::AllocRequest&) at /home/conda/work/faiss/gpu/StandardGpuResources.cpp:452: "
        "Error: 'err == cudaSuccess' failed: StandardGpuResources: alloc\n fail type "
        "TemporaryMemoryBuffer dev 0 space Device stream 0x56211a0ab660 size 1610612736 bytes "
        "(cudaMalloc error out of memory [2])"
    )
    d = diagnose_text(real)
    assert [e.format for e in d.events] == ["faiss_alloc_fail"]  # one event, not one per line
    assert d.primary is not None
    assert d.primary.requested_bytes == 1536 * MIB
    assert d.cause == "other_process_holding_memory"


def test_faiss_index_storage_and_search_scratch_are_told_apart() -> None:
    base = (
        "Error: 'err == cudaSuccess' failed: StandardGpuResources: alloc fail type {t} dev 2 "
        "space Device stream 0 size 2764800000 bytes (cudaMalloc error out of memory [2])"
    )
    assert diagnose_text(base.format(t="FlatData")).cause == "model_too_large"
    assert diagnose_text(base.format(t="IVFLists")).cause == "model_too_large"
    assert diagnose_text(base.format(t="TemporaryMemoryOverflow")).cause == "batch_or_activations"


def test_faiss_untyped_malloc_is_the_reservation_only_at_its_distinctive_size() -> None:
    old = (
        "RuntimeError: Error in void faiss::gpu::allocMemorySpaceV(faiss::gpu::MemorySpace, "
        "void**, size_t) at gpu/utils/MemorySpace.cpp:27: Error: 'err == cudaSuccess' failed: "
        "failed to cudaMalloc {n} bytes (error 2 out of memory)"
    )
    assert diagnose_text(old.format(n=1610612736)).cause == "other_process_holding_memory"
    d = diagnose_text(old.format(n=536870912))  # a power of two any buffer may be
    assert d.oom_found
    assert d.cause != "other_process_holding_memory"


def test_faiss_malloc_failing_for_another_reason_is_not_an_oom() -> None:
    text = "Failed to cudaMalloc 1024 bytes on device 0 (error 1 invalid argument"
    assert not diagnose_text(text).oom_found


# --- XGBoost / Thrust -----------------------------------------------------------------------------


def test_xgboost_device_helpers_and_caching_allocator() -> None:
    real = (
        "terminate called after throwing an instance of 'thrust::system::system_error'  what():  "
        "/home/ubuntu/src/xgboost/src/tree/../common/device_helpers.cuh(456): out of memory"
    )
    assert _primary(real)[:2] == ("xgboost", "xgboost_device_oom")
    assert diagnose_text(real).cause == "batch_or_activations"
    built = (
        "../src/common/device_helpers.cuh:431: Memory allocation error on worker 0: "
        "std::bad_alloc: cudaErrorMemoryAllocation: out of memory\n- Free memory: 8126464\n"
        "- Requested memory: 33554432"
    )
    d = diagnose_text(built)
    assert d.primary is not None
    assert d.primary.runtime == "xgboost"
    assert d.primary.requested_bytes == 32 * MIB
    assert d.primary.free_bytes == 8126464


def test_thrust_algorithm_failure() -> None:
    assert _primary("what():  parallel_for failed: out of memory")[0] == "thrust"
    assert _primary("radix_sort: failed on 1st step: out of memory")[0] == "thrust"
    assert not diagnose_text("parallel_for failed: invalid device function").oom_found
    other = diagnose_text("allocation failed: out of memory").primary
    assert other is None or other.runtime != "thrust"


# --- CatBoost ------------------------------------------------------------------------------------


def test_catboost_pool_in_mebibytes_with_and_without_units() -> None:
    real = (
        "(NCudaLib::TOutOfMemoryError) /src/catboost/catboost/cuda/cuda_lib/memory_pool/"
        "stack_like_memory_pool.h:303: Error: Out of memory. Requested 8880 MB; Free "
        "5902.061425 MB"
    )
    d = diagnose_text(real)
    assert d.primary is not None
    assert d.primary.requested_bytes == 8880 * MIB
    assert d.cause == "batch_or_activations"
    old = "Error: Out of memory. Requested 1070.546387; Free 1010.952393"
    assert _primary(old)[0] == "catboost"
    assert _primary("NCudaLib::TOutOfMemoryError")[0] == "catboost"


# --- OpenCL / RMM / Paddle ----------------------------------------------------------------------


def test_opencl_device_and_host_allocation_failures() -> None:
    dev = "what():  Memory Object Allocation Failure"
    assert _primary(dev)[:2] == ("opencl", "opencl_mem_object_alloc")
    assert diagnose_text("clCreateBuffer: CL_MEM_OBJECT_ALLOCATION_FAILURE").oom_found
    host = diagnose_text("lightgbm.basic.LightGBMError: Out of Host Memory")
    assert host.cause == "host_ram"


def test_rmm_pool_cap_and_device_failure() -> None:
    real = (
        "MemoryError: std::bad_alloc: RMM failure at:/home/a/cupoch/third_party/rmm/include/rmm/"
        "mr/device/pool_memory_resource.hpp:179: Maximum pool size exceeded"
    )
    assert _primary(real)[:2] == ("rmm", "rmm_pool_limit")
    cuda = (
        "MemoryError: std::bad_alloc: CUDA error at: ../include/rmm/mr/device/"
        "cuda_memory_resource.hpp:68: cudaErrorMemoryAllocation out of memory"
    )
    assert _primary(cuda)[0] == "rmm"  # not PyTorch's driver error
    # a connection pool, not RMM's
    assert not diagnose_text("Maximum pool size exceeded, destroying missile").oom_found


def test_paddle_v2_cuda_check() -> None:
    real = (
        "F0503 14:27:35.951573 23235 hl_cuda_device.cc:437] Check failed: cudaSuccess == "
        "cudaStat (0 vs. 2) Cuda Error: out of memory"
    )
    assert _primary(real)[:2] == ("paddle", "paddle_legacy_cuda_oom")


# --- PyTorch and TensorFlow fragments -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Allocation on device | torch.OutOfMemoryError",
        "[Bug]: torch.OutOfMemoryError",
        "torch.cuda.OutOfMemoryError: CUD",
    ],
)
def test_pytorch_class_alone_is_a_cut_pytorch_message(text: str) -> None:
    assert _primary(text)[:2] == ("pytorch", "pytorch_partial")


def test_pytorch_class_in_code_is_not_read_as_pytorch() -> None:
    d = diagnose_text("except torch.cuda.OutOfMemoryError:")
    assert all(e.runtime != "pytorch" for e in d.events)


def test_recased_driver_titles_and_tf_eager_op() -> None:
    assert _primary("Cuda Runtime Error: out of memory")[1] == "cuda_error_out_of_memory"
    # a recased generic CUDA error names no runtime: not attributed to PyTorch
    assert _primary("RuntimeError: CUDA Error: out of memory")[0] != "pytorch"
    tf = _primary("ResourceExhaustedError: failed to allocate memory [Op:AddV2]")
    assert tf[:2] == ("tensorflow", "tf_resource_exhausted_class")
    quota = diagnose_text("ResourceExhaustedError: quota of 10 files [Op:Write]").primary
    assert quota is None or quota.format != "tf_resource_exhausted_class"


# --- recognised, not a lack of memory ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        (
            "Error: Requested texture size [35597x64] greater than WebGL maximum on this "
            "browser / GPU [16384x16384]",
            "tfjs_texture_size",
        ),
        ("WebGL: CONTEXT_LOST_WEBGL: loseContext: context lost", "webgl_context_lost"),
        (
            "[METAL] Command buffer execution failed: Impacting Interactivity "
            "(0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)",
            "metal_command_buffer_watchdog",
        ),
        (
            "[METAL] Command buffer execution failed: Caused GPU Hang Error "
            "(00000003:kIOGPUCommandBufferCallbackErrorHang)",
            "metal_command_buffer_watchdog",
        ),
        ("GPU loading failed (out of VRAM?)", "gpt4all_gpu_load_failed"),
    ],
)
def test_not_capacity_messages_are_recognised_and_answered_unknown(text: str, fmt: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert d.primary is not None
    assert d.primary.format == fmt
    assert d.cause == "unknown"
    assert d.explanation


def test_metal_out_of_memory_is_still_an_oom_not_a_watchdog() -> None:
    d = diagnose_text(
        "[METAL] Command buffer execution failed: Insufficient Memory "
        "(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"
    )
    assert d.primary is not None
    assert d.primary.format != "metal_command_buffer_watchdog"


def test_invalid_texture_size_is_not_the_limit() -> None:
    assert not diagnose_text("Error: Requested texture size [0x0] is invalid.").oom_found


# --- Ollama / transformers fragments --------------------------------------------------------------


def test_ollama_system_memory_title_without_numbers() -> None:
    d = diagnose_text("Error model requires more system memory but it works loading locally")
    assert d.primary is not None
    assert d.primary.format == "ollama_system_memory"
    assert d.primary.requested_bytes is None


def test_transformers_dispatch_message_tail() -> None:
    for flag in ("load_in_8bit_fp32_cpu_offload", "llm_int8_enable_fp32_cpu_offload"):
        text = f"need to set `{flag}=True` and pass a custom `device_map` to `from_pretrained`."
        assert _primary(text)[1] == "bnb_dispatch_cpu_disk"
    assert not diagnose_text("llm_int8_enable_fp32_cpu_offload: bool = False").oom_found


# --- PyTorch message details (heldout8) ----------------------------------------------------------

_NEW_FMT = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU {dev}has a "
    "total capacity of 44.53 GiB of which 1.94 MiB is free. Process 123210 has 44.52 GiB memory "
    "in use. Of the allocated memory 40.92 GiB is allocated by PyTorch, and 754.08 MiB is "
    "reserved by PyTorch but unallocated."
)


@pytest.mark.parametrize(("dev", "index"), [("0 ", 0), (" ", None), ("\x01 ", 1), ("", None)])
def test_device_index_streamed_as_a_char_keeps_the_numbers(dev: str, index: int | None) -> None:
    # PyTorch 2.2-2.3 streamed the int8 device index as a char: "GPU  has" for device 0
    d = diagnose_text(_NEW_FMT.format(dev=dev))
    e = d.primary
    assert e is not None
    assert e.format == "pytorch_new"
    assert e.total_bytes is not None
    assert e.device == index


def test_near_miss_device_word_is_not_a_device_index() -> None:
    text = _NEW_FMT.format(dev="zero ")
    e = diagnose_text(text).primary
    assert e is None or e.format != "pytorch_new"


_ASYNC = (
    "torch.cuda.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of "
    "memory)\nCurrently allocated     : {alloc}\nRequested               : 1.49 MiB\nDevice limit"
    "            : 39.39 GiB\nFree (according to CUDA): 3.06 MiB\nPyTorch limit (set by "
    "user-supplied memory fraction)\n                        : {cap}"
)


def test_async_allocator_cap_that_was_not_crossed_is_not_blamed() -> None:
    # h8-tgi-655: 9.64 GiB allocated under a 39.39 GiB limit (= the device): the driver's pool
    # failed, not the fraction
    d = diagnose_text(_ASYNC.format(alloc="9.64 GiB", cap="39.39 GiB"))
    assert "set_per_process_memory_fraction() (a server's" not in d.explanation
    assert "no fraction set" in d.explanation


def test_async_allocator_cap_that_was_crossed_is_still_the_finding() -> None:
    d = diagnose_text(_ASYNC.format(alloc="20.00 GiB", cap="20.00 GiB"))
    assert "set_per_process_memory_fraction()" in d.explanation


def test_ipex_xpu_message_is_read_as_xpu_without_claiming_a_cut() -> None:
    text = (
        "RuntimeError: XPU out of memory. Tried to allocate 130.00 MiB (GPU 0; 15.11 GiB total "
        "capacity; 11.09 GiB already allocated; 11.23 GiB reserved in total by PyTorch)"
    )
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.kind == "xpu_oom"
    assert "cut before the free memory" not in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # IPEX's CachingDeviceAllocator.cpp prints no free field (SYCL has no query)
        "RuntimeError: XPU out of memory. Tried to allocate 1.95 GiB (GPU 0; 15.11 GiB total "
        "capacity; 13.20 GiB already allocated; 13.50 GiB reserved in total by PyTorch)",
        # a legacy CUDA message cut after "already allocated" (issue titles, pastes)
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.11 GiB total "
        "capacity; 13.20 GiB already allocated",
    ],
    ids=["ipex-xpu", "cut-cuda"],
)
def test_a_message_without_free_memory_is_not_read_as_zero_free(text: str) -> None:
    """'0 bytes free' sized the batch cut at request / 1 byte ('Cut the batch size by at least
    2093796557x'); the bound is the card less what is held, and the request."""
    d = diagnose_text(text)
    assert "Only 0 bytes is free" not in d.explanation
    assert "The message states no free memory" in d.explanation
    cuts = [f.title for f in d.fixes if f.title.startswith("Cut the batch size")]
    assert cuts, [f.title for f in d.fixes]
    factor = int(cuts[0].rsplit(" ", 1)[1].rstrip("x"))
    assert 2 <= factor <= 8


def test_ipex_reserved_field_without_free_is_read() -> None:
    """IPEX prints '<a> already allocated; <r> reserved in total by PyTorch)' with no free field
    between them; the reserved total was dropped, so the cached 300 MiB went unseen."""
    d = diagnose_text(
        "RuntimeError: XPU out of memory. Tried to allocate 1.95 GiB (GPU 0; 15.11 GiB total "
        "capacity; 13.20 GiB already allocated; 13.50 GiB reserved in total by PyTorch)"
    )
    e = d.primary
    assert e is not None
    assert e.reserved_bytes == round(13.50 * GIB)
    assert e.free_bytes is None
    assert "at most 1.61 GiB was free" in d.explanation


@pytest.mark.parametrize(
    "junk",
    [
        "alloc fail type X dev 0 space Device stream 0 size " * 40_000,
        "ResourceExhaustedError: " * 40_000 + " [Op:",
        "a_b failed on " * 60_000,
        "Requested texture size [1x" * 40_000,
        "Out of memory. Requested 1.1" * 30_000,
    ],
    ids=["faiss", "tf-eager", "thrust", "texture", "catboost"],
)
def test_library_wordings_stay_linear_on_near_matching_junk(junk: str) -> None:
    import time

    from oomkit.diagnose.parse import parse_log

    start = time.process_time()
    parse_log(junk)
    assert time.process_time() - start < 8.0


# --- MLX, Tenstorrent, TPU, ggml arenas ---------------------------------------------------------


def test_mlx_buffer_limit_and_small_malloc() -> None:
    # h5-mlxllm-22 and h5-mlxexamples-70 (retired development parts)
    big = (
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: Attempting "
        "to allocate 19081554496 bytes which is greater than the maximum allowed buffer size of "
        "17179869184 bytes."
    )
    d = diagnose_text(big)
    assert d.primary is not None
    assert d.primary.requested_bytes == 19081554496
    assert d.cause == "batch_or_activations"
    small = diagnose_text("[malloc_or_wait] Unable to allocate 12 bytes.")
    assert small.cause == "model_too_large"
    assert _primary("[malloc] Unable to allocate 4294967296 bytes.")[:2] == ("mlx", "mlx_malloc")
    assert not diagnose_text("[malloc] Unable to allocate the slab").events or (
        _primary("[malloc] Unable to allocate the slab")[0] != "mlx"
    )


def test_tenstorrent_bank_allocator_reads_bank_numbers_and_fragmentation() -> None:
    text = (
        "Out of Memory: Not enough space to allocate 104857600 B DRAM buffer across 12 banks, "
        "where each bank needs to store 8738304 B, but bank size is 1073741824 B (allocated: "
        "1000000000 B, free: 73741824 B, largest free block: 5000000 B)"
    )
    d = diagnose_text(text)
    e = d.primary
    assert e is not None
    assert e.total_bytes == 12 * 1073741824
    assert e.free_bytes == 12 * 73741824
    assert d.cause == "fragmentation"  # 884 MiB free in total, no block of 8.3 MiB per bank
    l1 = diagnose_text(
        "Out of Memory: Not enough space to allocate 2097152 B L1 buffer across 64 banks, where "
        "each bank needs to store 32768 B"
    )
    assert l1.cause == "batch_or_activations"
    assert not diagnose_text("Not enough space to allocate 100 B for the file header").events or (
        _primary("Not enough space to allocate 100 B for the file header")[0] != "tt-metal"
    )


def test_tenstorrent_circular_buffers_are_an_l1_program_limit() -> None:
    d = diagnose_text(
        "Statically allocated circular buffers on core range [(x=0,y=0) - (x=7,y=7)] grow to "
        "1540096 B which is beyond max L1 size of 1499136 B"
    )
    assert d.oom_found
    assert d.cause == "unknown"


def test_tpu_program_reserve_and_fragmented_buffer() -> None:
    # h2-xla-3470 (retired development part)
    real = (
        "E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   (1) RESOURCE_EXHAUSTED: "
        "Attempting to reserve 6.48G at the bottom of memory. That was not possible. There are "
        "6.78G free, 0B reserved, and 3.33G reservable."
    )
    d = diagnose_text(real)
    assert d.primary is not None
    assert d.primary.format == "tpu_program_reserve"
    assert d.primary.free_bytes == int(6.78 * (1 << 30) + 0.5)
    frag = diagnose_text(
        "RESOURCE_EXHAUSTED: Attempting to allocate 1.00G. That was not possible. There are "
        "3.00G free. The largest contiguous region of free memory is 512.00M due to "
        "fragmentation."
    )
    assert frag.cause == "fragmentation"
    assert not diagnose_text("Attempting to reserve a table. That was not possible.").events or (
        _primary("Attempting to reserve a table. That was not possible.")[0] != "tpu"
    )


def test_ggml_graph_buffer_overflow_is_a_sizing_limit() -> None:
    d = diagnose_text("ggml_tallocr_alloc: not enough space in the buffer")  # h2-llamacpppython-944
    assert d.primary is not None
    assert d.primary.format == "ggml_fixed_pool"
    assert d.cause == "unknown"


def test_wgpu_and_opengl_out_of_memory() -> None:
    wgpu = (
        "wgpu error: Validation Error\n\nCaused by:\n    In Device::create_buffer\n"
        "    Not enough memory left."
    )
    assert _primary(wgpu)[:2] == ("wgpu", "wgpu_out_of_memory")
    gl = "GL_OUT_OF_MEMORY: There is not enough memory left to execute the command."
    assert _primary(gl)[0] == "opengl"
    # the same words about disk space are not a GPU API's
    assert not diagnose_text("There is not enough disk space left on the device.").oom_found
    app = diagnose_text("not enough memory left for the video buffer").primary
    assert app is None or app.runtime != "wgpu"


def test_omlx_prefill_guard_reads_resident_and_prefill_parts() -> None:
    # h5-omlx-2521 / h7-omlx-1998 (retired development parts)
    kv = diagnose_text(
        "Prefill would require ~237.30 GB peak (current 156.05 GB + KV+SDPA 81.25 GB) but "
        "dynamic ceiling is 235.96 GB. Raise custom_ceiling_bytes in admin Memory settings"
    )
    assert kv.cause == "kv_cache_or_context"
    resident = diagnose_text(
        "Error: Prefill would require ~70.27 GB peak (current 67.54 GB + KV+SDPA 2.73 GB) but "
        "metal_cap ceiling is 69.86 GB."
    )
    assert resident.cause == "model_too_large"
    short = diagnose_text("Prefill would require ~12.32 GB peak but metal_cap ceiling is 11.84 GB.")
    assert short.primary is not None
    assert short.primary.format == "omlx_prefill_guard"
    assert not diagnose_text("Prefill would require a warm cache to be fast.").oom_found

"""General mechanisms found by studying the retired heldout4 part (issue 9), each tested on the
real message shapes of the development parts (tests/fixtures/oom_corpus) that show it."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text

# h4-ollama-10735 (dev part heldout4): Ollama 0.7 with 20 parallel slots x num_ctx 32768
_OLLAMA_KV_SIZE = (
    "llama_kv_cache_unified: kv_size = 655360, type_k = 'f16', type_v = 'f16', n_layer = 40, "
    "can_shift = 1, padding = 32\n"
    "llama_kv_cache_unified:      CUDA0 KV buffer size = 51200.00 MiB\n"
    "llama_kv_cache_unified: KV self size  = 51200.00 MiB, K (f16): 25600.00 MiB, V (f16): "
    "25600.00 MiB\n"
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 42256.00 MiB on device 0: "
    "cudaMalloc failed: out of memory"
)


def test_llamacpp_kv_size_line_gives_the_context_that_sizes_the_compute_buffer() -> None:
    d = diagnose_text(_OLLAMA_KV_SIZE)
    assert d.context.n_ctx == 655360
    # without flash attention the compute buffer holds n_ctx x n_ubatch attention scores
    assert d.cause == "kv_cache_or_context"
    assert any(f.title.startswith("Halve the context") for f in d.fixes)
    # a short context keeps the compute-buffer reading
    short = diagnose_text(_OLLAMA_KV_SIZE.replace("kv_size = 655360", "kv_size = 4096"))
    assert short.context.n_ctx == 4096
    assert short.cause == "batch_or_activations"


def test_turbomind_oom_in_memory_utils_is_the_weights() -> None:
    # h4-internvl-465: InternVL2-76B on one A100 40GB
    d = diagnose_text(
        "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory "
        "/lmdeploy/src/turbomind/utils/memory_utils.cu:32"
    )
    assert d.cause == "model_too_large"
    assert d.allocation == "weights_load"
    assert d.phase == "load"
    assert not d.fixes[0].hardware
    # h3-lmdeploy-1019: allocator.h inside create_model_instance is the KV cache, not weights
    kv = diagnose_text(
        "    model_inst = self.tm_model.model_comm.create_model_instance(\n"
        "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory "
        "/lmdeploy/src/turbomind/utils/allocator.h:231"
    )
    assert kv.cause != "model_too_large"
    assert kv.allocation == "kv_pool"
    # no file named: still open
    bare = diagnose_text("CUDA runtime error: out of memory")
    assert bare.cause != "model_too_large" or bare.confidence <= 0.45


def test_dataloader_worker_killed_is_host_ram_with_or_without_pid() -> None:
    # h4-pytorch-8976 (an issue title without the pid) and h4-rlvigen-17
    for text in (
        "RuntimeError: DataLoader worker is killed by signal: Killed.",
        "RuntimeError: DataLoader worker (pid 22358) is killed by signal: Killed.",
    ):
        d = diagnose_text(text)
        assert d.cause == "host_ram", text
        assert d.allocation == "host_ram"
        assert "(None)" not in d.explanation


def test_dataloader_bus_error_is_shared_memory() -> None:
    # h4-ultralyticsyolov3-1151
    d = diagnose_text(
        ">     _error_if_any_worker_fails()\n"
        "> RuntimeError: DataLoader worker (pid 3855) is killed by signal: Bus error. It is "
        "possible that dataloader's workers are out of shared memory. Please try to raise your "
        "shared memory limit."
    )
    assert d.oom_found
    assert d.cause == "host_ram"
    assert any("--shm-size" in c for f in d.fixes for c in f.commands)


def test_dataloader_segfault_is_not_an_oom() -> None:
    # h4-mhliaodb-94: a segfault, not a kill for memory; no OOM wording, nothing to diagnose
    d = diagnose_text(
        "RuntimeError: DataLoader worker (pid 25902) is killed by signal: Segmentation fault"
    )
    assert d.cause != "host_ram"


def test_vllm_kv_capacity_quoted_with_a_typo_and_no_pool_size() -> None:
    # h4-qwen-110: "maxinum", and the pool's token count lost in the quote
    d = diagnose_text(
        "ValueError : the model's max seq len (32768) is larger than the maxinum number of "
        "tokens that can be stored in KV cache, Try increasing 'gpu_memory_utilization' or "
        "decreasing 'max_model_len' when initializing the engine"
    )
    assert d.cause == "kv_cache_or_context"
    assert "None" not in d.explanation
    assert not d.fixes[0].hardware
    assert "--max-model-len 16384" in d.fixes[0].commands


def test_comfyui_allocation_on_device_alone_on_a_line() -> None:
    # h4-cogvideoxwrapper-26: older ComfyUI's "Error occurred when executing <node>:"
    d = diagnose_text(
        "Error occurred when executing CogVideoDecode:\n\nAllocation on device\n\n"
        'File "E:\\ComfyUI_windows_portable\\ComfyUI\\custom_nodes\\ComfyUI-CogVideoXWrapper'
        '\\nodes.py", line 336, in decode\nframes = vae.decode(latents).sample'
    )
    assert d.oom_found
    assert d.primary is not None
    assert d.primary.format == "comfyui_allocation_on_device"
    # a sentence that merely contains the words is not the message
    assert not diagnose_text("the Allocation on device field is documented here").oom_found


def test_unsufficient_vram_wording_is_recognised() -> None:
    # h4-wan2gp-39
    d = diagnose_text(
        "The generation of the video has encountered an error: it is likely that you have "
        "unsufficient VRAM and you should therefore reduce the video resolution or its number "
        "of frames."
    )
    assert d.oom_found


def test_videohelpersuite_frame_cap_is_host_ram() -> None:
    # h4-vhs-236
    d = diagnose_text(
        "Error occurred when executing VHS_LoadVideo: Memory limit hit after loading 1347 "
        "frames. Stopping execution."
    )
    assert d.cause == "host_ram"
    assert d.allocation == "host_ram"
    assert any("frame_load_cap" in c for f in d.fixes for c in f.commands)


def test_detectron2_cpu_retry_is_the_input() -> None:
    # h4-detectron2-2595
    d = diagnose_text(
        "Attempting to copy inputs of <function pairwise_iou at > to CPU due to CUDA OOM"
    )
    assert d.cause == "batch_or_activations"
    assert d.confidence >= 0.5  # the rule decides; not a base-rate guess
    assert not d.open_question
    assert "pairwise_iou" in d.explanation


def test_turbomind_session_len_truncated_is_the_kv_pool() -> None:
    # h4-lmdeploy-4366
    d = diagnose_text(
        "[TM][WARNING] [SegMgr] prefix caching is enabled\n"
        "[TM][WARNING] `session_len` truncated to 4928 due to limited KV cache memory\n"
        "[TM][ERROR] [Engine] Warm-up for 6144 tokens failed with status 6"
    )
    assert d.cause == "kv_cache_or_context"
    assert d.allocation == "kv_pool"
    assert "--session-len 4928" in d.fixes[0].commands


def test_triton_shared_memory_limit_and_ort_buffer_check_are_not_capacity() -> None:
    # h4-lmdeploy-4367 and h4-tritonserver-3776: recognised, and said not to be a lack of memory
    for text in (
        "OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 98304.",
        "onnx runtime error 2: not enough space: expected 318080, got 314240",
    ):
        d = diagnose_text(text)
        assert d.oom_found, text
        assert d.cause == "unknown", text
        assert not d.open_question  # no base rate may turn it into a capacity cause
        assert "not" in d.explanation


# h3-nerfpytorch-9 (Windows, 11 GB card): 2.31 GiB held outside the allocator, nobody named
_NERF = (
    "RuntimeError: CUDA out of memory. Tried to allocate 3.94 GiB (GPU 0; 11.00 GiB total "
    "capacity; 4.49 GiB already allocated; 2.81 GiB free; 5.88 GiB reserved in total by PyTorch)"
)


def test_unattributed_memory_yields_to_a_large_request() -> None:
    d = diagnose_text(_NERF)
    assert d.cause == "batch_or_activations"
    assert "oomkit gpus" in d.explanation
    titles = [f.title for f in d.fixes]
    assert any("else holds the GPU" in t for t in titles)
    # a small request on the same card keeps the other-process reading (T6)
    small = diagnose_text(
        _NERF.replace("allocate 3.94 GiB", "allocate 20.00 MiB").replace("2.81 GiB", "10.00 MiB")
    )
    assert small.cause == "other_process_holding_memory"
    # during model load a large request is a weight shard, not an activation
    load = diagnose_text('  File "train.py", line 9, in <module>\n    model.cuda()\n' + _NERF)
    assert load.cause != "batch_or_activations"


def test_cut_message_with_a_large_request_is_an_activation() -> None:
    # h4-comfycnpre-50: an issue title cut after the request (a huge unresized image)
    d = diagnose_text(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 218.96 GiB"
    )
    assert d.cause == "batch_or_activations"
    assert d.confidence == 0.45
    assert not d.open_question  # decided by the stated size, not by the base rate
    # a small surviving request decides nothing
    small = diagnose_text(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 90.00 MiB"
    )
    assert small.confidence < 0.45


def test_caffe_cudamalloc_check_is_the_blobs_of_the_batch() -> None:
    # h2-waifu2x-caffe-178 (with the glog prefix) and h4-yjxiongcaffe-69 / h4-dsod-11 (bare)
    for text in (
        "F0911 10:23:46.552422  1824 syncedmem.cpp:71] Check failed: error == cudaSuccess "
        "(2 vs. 0)  out of memory",
        "Check failed: error == cudaSuccess (2 vs. 0) out of memory.How to deal with it?",
    ):
        d = diagnose_text(text)
        assert d.primary is not None
        assert d.primary.runtime == "caffe"
        assert d.cause == "batch_or_activations"
        assert not d.open_question
        assert any("iter_size" in c for f in d.fixes for c in f.commands)
    # another CUDA error in the same check is not an OOM
    assert not diagnose_text(
        "Check failed: error == cudaSuccess (8 vs. 0) invalid device function"
    ).oom_found


def test_tensorflow_bfc_line_cut_before_its_size() -> None:
    # h4-deeplabcut-1394 (an issue title): still TensorFlow's BFC allocator
    d = diagnose_text("Issue analyzing video, Allocator ran out of memory")
    assert d.primary is not None
    assert d.primary.runtime == "tensorflow"
    assert d.cause == "batch_or_activations"
    full = diagnose_text(
        "2023-02-17 11:16:15.419019: W tensorflow/core/common_runtime/bfc_allocator.cc:457] "
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate 600.00MiB (rounded to "
        "629145600)requested by op"
    )
    assert full.primary is not None
    assert full.primary.requested_bytes == 629145600  # the full line keeps its size


@pytest.mark.parametrize(
    "size", ["99999999999.00 GiB", "0 bytes", "-1.00 GiB"], ids=["exabytes", "zero", "negative"]
)
def test_impossible_request_sizes_are_ignored_not_answered(size: str) -> None:
    """No allocator prints a request above 2^60 bytes, of 0 bytes or negative: the doctor says
    the number is ignored and never sizes a fix from it (review of session 4: a 10^20-byte
    request had produced 'cut the batch by 10239999999898x' at confidence 0.85)."""

    text = (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {size}. GPU 0 has a "
        "total capacity of 23.64 GiB of which 10.00 MiB is free."
    )
    d = diagnose_text(text)
    assert d.events
    assert d.events[0].requested_bytes is None
    assert "ignored" in d.explanation
    assert d.confidence < 0.5


def test_pytorch_own_sigbus_worker_message_is_shared_memory() -> None:
    """torch/csrc/DataLoader.cpp's SIGBUS handler prints its own line (no "killed by signal");
    it was "no out-of-memory message found" (review of session 4)."""
    d = diagnose_text(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm)."
    )
    assert d.events
    assert d.cause == "host_ram"
    assert "/dev/shm" in d.explanation

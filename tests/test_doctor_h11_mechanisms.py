"""Mechanisms read from heldout11's misses (doccause3): each on real corpus texts and near misses.

* PyTorch's 1 EB size guard and Wav2Lip's catch-all retry loop are not a lack of memory
  (``rules_notmemory``): ``unknown``, settled, so the base rate does not guess.
* MLX's live-buffer *count* limit reaches its own rule (``unknown``), not the bytes reading.
* ExLlamaV3's ``Insufficient VRAM in split for model and cache`` reads like ExLlamaV2's.
* cuDNN's algorithm search (``cudnnFind*`` / CNTK ``finder``) failing to allocate: its
  workspaces scale with the batch and the image.
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize("rid", ["h11-nccl-1284", "h7-chatglm6b-790"])
def test_exabyte_request_is_a_corrupt_size_not_memory(rid: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert d.cause == "unknown"
    assert not d.open_question
    assert "1 EB" in d.explanation
    assert "Best guess by base rate" not in d.explanation


def test_exabyte_guard_of_a_vendor_fork() -> None:
    d = diagnose_text("RuntimeError: MLU out of memory. Tried to allocate more than 1EB memory.")
    assert d.cause == "unknown"
    assert "1 EB" in d.explanation


def test_large_but_real_request_is_not_the_guard() -> None:
    # 71.28 GiB is large, but an allocator really tried it: the numbers decide
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 71.28 GiB. GPU 0 has a "
        "total capacity of 23.64 GiB of which 7.00 GiB is free."
    )
    d = diagnose_text(text)
    assert d.cause == "batch_or_activations"
    assert "1 EB" not in d.explanation


@pytest.mark.parametrize("rid", ["h11-wav2lip-231", "h11-wav2lip-234"])
def test_wav2lip_retry_loop_does_not_show_memory_ran_out(rid: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert d.cause == "unknown"
    assert not d.open_question
    assert "every RuntimeError" in d.explanation


def test_retry_loop_beside_a_real_cuda_oom_reads_the_oom() -> None:
    text = (
        "Recovering from OOM error; New batch size: 8\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
        "(GPU 0; 4.00 GiB total capacity; 1.50 GiB already allocated; 1.20 GiB free; "
        "1.60 GiB reserved in total by PyTorch)"
    )
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.runtime == "pytorch"
    assert "every RuntimeError" not in d.explanation


def test_mlx_buffer_count_limit_reaches_its_rule() -> None:
    d = diagnose_text(corpus_text("h11-mlx-lm-1644"))
    assert d.cause == "unknown"
    assert "number of live buffers" in d.explanation


def test_mlx_byte_allocation_keeps_the_bytes_reading() -> None:
    d = diagnose_text("RuntimeError: [metal::malloc] Unable to allocate 1073741824 bytes.")
    assert "number of live buffers" not in d.explanation


@pytest.mark.parametrize(
    ("rid", "runtime"),
    [("h11-tabbyapi-475", "exllamav3"), ("sv-exl2-383-autosplit-insufficient", "exllamav2")],
)
def test_exllama_split_wordings(rid: str, runtime: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert d.primary is not None
    assert d.primary.runtime == runtime
    assert d.cause == "model_too_large"


def test_exllama_other_insufficient_wording_is_not_the_split() -> None:
    d = diagnose_text("RuntimeError: Insufficient VRAM to load the vision tower")
    assert d.primary is None or d.primary.runtime not in {"exllamav2", "exllamav3"}


@pytest.mark.parametrize("rid", ["h11-cntk-220", "h11-torch7-780", "h11-neural-style-116"])
def test_cudnn_algorithm_search_is_the_batch(rid: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert d.cause == "batch_or_activations"
    assert "algorithm search" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED",
        "CUDNN_STATUS_ALLOC_FAILED",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    ],
)
def test_cudnn_handle_or_bare_status_is_not_the_search(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert "algorithm search" not in d.explanation


# --- prose that names the allocation (rules_stated_alloc) ---


def test_checkpoint_loaded_onto_first_gpu_is_imbalance() -> None:
    d = diagnose_text(corpus_text("h11-mmengine-665"))
    assert d.cause == "multi_gpu_imbalance"
    assert any("map_location" in c for f in d.fixes for c in f.commands)


@pytest.mark.parametrize(
    "text",
    [
        # saving, not loading
        "CUDA memory increase (caused CUDA OOM) when saving checkpoint at the `train_epoch_end`",
        # a checkpoint load with no first-GPU placement named
        "OOM when loading checkpoint of a 70B model",
        # a single-GPU run names GPU 0 too
        "CUDA OOM on GPU 0 when loading checkpoint",
    ],
)
def test_checkpoint_near_misses(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert d.cause != "multi_gpu_imbalance"


def test_stated_fragmentation() -> None:
    d = diagnose_text(corpus_text("h11-animalorastudio-205"))
    assert d.cause == "fragmentation"
    assert any("expandable_segments" in c for f in d.fixes for c in f.commands)


@pytest.mark.parametrize(
    "text",
    [
        # a question about the setting, no causation stated
        "OOM on 8GB GPU, should I set expandable_segments to reduce fragmentation?",
        # PyTorch's own hint inside the allocator's message: the numbers decide
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 23.65 GiB of which 5.06 MiB is free. Of the allocated memory 22.10 "
        "GiB is allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
    ],
)
def test_fragmentation_near_misses(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert "The text says" not in d.explanation


def test_stated_kv_buffer_for_long_context() -> None:
    d = diagnose_text(corpus_text("h11-llama.cpp-8817"))
    assert d.cause == "kv_cache_or_context"
    assert "160k" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "out of memory with the kv buffer at 4K context",  # short context: not the KV's doing
        "out of memory with a 160K context length",  # no KV allocation named
    ],
)
def test_kv_near_misses(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert "The text names the" not in d.explanation


@pytest.mark.parametrize("rid", ["h11-rapids-examples-41", "h11-sentence-transformers-1244"])
def test_failure_tied_to_dataset_size_is_accumulation(rid: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert d.cause == "leak_or_accumulation"
    assert "dataset's size" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "CUDA OOM on a dataset of 500 images",  # a small count: one batch's worth
        "CUDA OOM when training with 16 images per batch",
        "CUDA out of memory while encoding 2048 sentences",
        # a dataset merely named, no count the failure is tied to
        "CUDA OOM while embedding a corpus of 200k documents at batch size 512",
    ],
)
def test_dataset_near_misses(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert "dataset's size" not in d.explanation


@pytest.mark.parametrize("rid", ["h11-llama.cpp-25502", "h11-slime-669", "h10-kohya-ss-1441"])
def test_stated_free_memory_is_not_capacity(rid: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert d.cause == "unknown"
    assert not d.open_question
    assert "memory was free" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        corpus_text("h10-endosurf-11"),  # "even if I resize them": a lever tried, not free memory
        "CUDA out of memory with 2GB free on an 8GB card",  # a small margin that may have run out
        "CUDA out of memory, but I have a 24GB card",  # a capacity, not free memory
    ],
)
def test_stated_free_near_misses(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert "memory was free" not in d.explanation


def test_not_enough_memory_for_a_huge_model() -> None:
    d = diagnose_text(corpus_text("h11-vosk-android-70"))
    assert d.cause == "model_too_large"


@pytest.mark.parametrize(
    "text",
    [
        "not enough memory for a large batch, CUDA out of memory",  # the batch's size
        "CUDA out of memory when I load a large image into the model",
    ],
)
def test_big_model_near_misses(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert "the weights are allocated first" not in d.explanation


# --- TensorFlow: a driver failure beside the BFC's "not a failure" warning (rules_tf) ---


def test_tf_driver_failure_while_the_graph_runs_is_the_batch() -> None:
    d = diagnose_text(corpus_text("h11-captcha-trainer-16"))
    assert d.cause == "batch_or_activations"
    assert d.context.tf_bfc_retry is not None


@pytest.mark.parametrize("rid", ["tc-squeezedet-77", "h4-cortex-853", "h2-keras-8545-restart"])
def test_tf_driver_failure_at_start_up_stays_other_process(rid: str) -> None:
    d = diagnose_text(corpus_text(rid))
    assert d.context.tf_bfc_retry is None
    assert d.cause == "other_process_holding_memory"


def test_bfc_warning_alone_is_a_pressure_report_not_a_failure() -> None:
    # since docrec23 (issue 9: never "nothing found" on an obvious memory message) the warning
    # alone is a memory-pressure report, cause unknown; never read as a failed allocation
    text = (
        "W tensorflow/core/common_runtime/bfc_allocator.cc:219] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate 2.02GiB. The caller indicates that this is not a failure, but "
        "may mean that there could be performance gains if more memory were available."
    )
    d = diagnose_text(text)
    assert [e.kind for e in d.events] == ["memory_report"]
    assert d.cause == "unknown"
    assert d.explanation.startswith("No out-of-memory error is in the text")

"""Mechanisms read after retired heldout12: PyTorch's ``OutOfMemoryError`` class is not host RAM,
stable-diffusion.cpp's VAE decode is the image's activations, and a small request on a <= 2 GiB
card is the resident state (each on real corpus texts and on near-misses)."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_extra import names_host_memory

# --- OutOfMemoryError: torch's device OOM class, not Python's MemoryError ------------------------


def test_bare_torch_class_is_not_host_ram() -> None:
    d = diagnose_text(corpus_text("h12-fish-speech-41"))  # "OutOfMemoryError" alone
    assert d.oom_found
    assert d.cause != "host_ram"
    assert d.allocation != "host_ram"


def test_task_wrapped_torch_class_is_not_host_ram() -> None:
    # RayTaskError(X) wraps the exception the task raised: torch's, inside a verl trainer
    assert diagnose_text(corpus_text("h7-verl-647")).cause != "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        "MemoryError",
        "numpy.core._exceptions.MemoryError",
        'Exception in thread "main" java.lang.OutOfMemoryError: GC overhead limit exceeded',
        "java.lang.OutOfMemoryError",
        "ray.exceptions.OutOfMemoryError: Task was killed",
        "pyarrow.lib.ArrowMemoryError: malloc of size 64 failed",
    ],
)
def test_host_memory_wordings_still_name_host_ram(text: str) -> None:
    assert names_host_memory(text)


@pytest.mark.parametrize("text", ["OutOfMemoryError", "torch.OutOfMemoryError", "OutOfMemory"])
def test_device_class_names_do_not_name_host_ram(text: str) -> None:
    assert not names_host_memory(text)


# --- stable-diffusion.cpp: a failure in the VAE decode ------------------------------------------


@pytest.mark.parametrize(
    "record_id",
    [
        "h12-localai-11216",  # "sampling completed" / "decoding 1 latents", then Vulkan fails
        "h12-stable-diffusion.cpp-1621",  # "vae compute buffer size: 14978.25 MB(VRAM)"
        "h9-stable-diffusion-cpp-291",  # "vae: failed to allocate the compute buffer"
    ],
)
def test_vae_decode_is_the_image_activations(record_id: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.cause == "batch_or_activations"
    assert d.confidence == pytest.approx(0.5)
    assert "VAE decode" in d.explanation
    assert any("--vae-tiling" in c for f in d.fixes for c in f.commands)


_VK = "ggml_vulkan: Device memory allocation of size 4831838208 failed."


def test_vulkan_failure_alone_stays_open() -> None:
    d = diagnose_text(_VK)
    assert d.oom_found
    assert "VAE decode" not in d.explanation


def test_failure_before_the_decode_is_not_read_as_the_decode() -> None:
    # the decode line comes after the failure: sampling (or loading) failed, not the decode
    d = diagnose_text(_VK + "\n[INFO ] stable-diffusion.cpp:4197 - decoding 1 latents")
    assert "VAE decode" not in d.explanation


def test_failure_after_the_decode_completed_is_not_the_decode() -> None:
    log = (
        "[INFO ] stable-diffusion.cpp:4197 - decoding 1 latents\n"
        "[INFO ] stable-diffusion.cpp:4210 - latent 1 decoded, taking 2.10s\n"
        "[INFO ] stable-diffusion.cpp:4220 - decode_first_stage completed, taking 2.11s\n" + _VK
    )
    assert "VAE decode" not in diagnose_text(log).explanation


def test_host_ram_failure_during_the_decode_stays_host_ram() -> None:
    log = (
        "[INFO ] stable-diffusion.cpp:4197 - decoding 1 latents\n"
        "terminate called after throwing an instance of 'std::bad_alloc'\n"
        "  what():  std::bad_alloc"
    )
    d = diagnose_text(log)
    assert d.cause == "host_ram"


# --- a small request on a card of at most 2 GiB ---------------------------------------------------


@pytest.mark.parametrize(
    "record_id",
    [
        "h3-transferconvai-103",  # 1.96 GiB card; batch size 1 still failed
        "h3-bgmattingv2-142",  # 1 GiB card; "1G显存确实有点小"
        "h4-aphantasia-45",  # 2 GiB card; "even for 1 sample"
    ],
)
def test_small_request_on_a_small_card_is_the_resident_state(record_id: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.cause == "model_too_large"
    assert d.confidence == pytest.approx(0.45)
    assert not d.open_question


def test_large_request_on_a_small_card_is_still_an_activation() -> None:
    # 288 MiB is 14% of the 2 GiB card: the large-request reading comes first
    assert diagnose_text(corpus_text("h2-wav2lip-221")).cause == "batch_or_activations"


def test_small_request_on_a_larger_card_stays_open() -> None:
    d = diagnose_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
        "3.95 GiB total capacity; 3.20 GiB already allocated; 3.50 MiB free; 3.30 GiB reserved "
        "in total by PyTorch)"
    )
    assert "on a card of" not in d.explanation


def test_small_card_in_the_backward_pass_is_left_to_the_phase() -> None:
    log = (
        'File "train.py", line 40, in <module>\n    loss.backward()\n'
        'File "/usr/lib/python3/site-packages/torch/_tensor.py", line 487, in backward\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
        "1.96 GiB total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved "
        "in total by PyTorch)"
    )
    assert "on a card of" not in diagnose_text(log).explanation


# --- 2023 ggml's fixed pools: the scratch buffer is one eval's activations ------------------------


def test_scratch_pool_overflow_is_the_batch() -> None:
    # koboldcpp at --blasbatchsize 1024: "set --blasbatchsize 512" fixed it
    d = diagnose_text(corpus_text("h12-koboldcpp-331"))
    assert d.cause == "batch_or_activations"
    assert d.confidence == pytest.approx(0.45)
    assert any("--blasbatchsize" in c for f in d.fixes for c in f.commands)


@pytest.mark.parametrize(
    "record_id",
    [
        "sv-lcpp-2404-ctx-memory-pool-3060",  # needed 10882896, available 10650320
        "h11-whisper.cpp-1804",  # a ctx_size computed ~22 KB short
    ],
)
def test_context_pool_overflow_stays_a_sizing_bug(record_id: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.cause == "unknown"
    assert d.confidence == pytest.approx(0.5)


# --- the text says one GPU of several took the work -----------------------------------------------


def test_one_gpu_running_the_service_is_the_imbalance() -> None:
    d = diagnose_text(corpus_text("h12-openllm-901"))
    assert d.cause == "multi_gpu_imbalance"
    assert d.confidence == pytest.approx(0.45)


@pytest.mark.parametrize(
    "text",
    [
        "CUDA out of memory: it only uses the first GPU, the other GPUs stay idle",
        "torch.OutOfMemoryError: CUDA out of memory. everything goes to cuda:0",
    ],
)
def test_other_placement_wordings(text: str) -> None:
    assert diagnose_text(text).cause == "multi_gpu_imbalance"


@pytest.mark.parametrize(
    "text",
    [
        "CUDA out of memory, I only have one GPU (RTX 3060)",
        "CUDA out of memory when training on a single GPU",
        "CUDA out of memory on GPU 0",
    ],
)
def test_a_single_gpu_machine_is_not_an_imbalance(text: str) -> None:
    assert diagnose_text(text).cause != "multi_gpu_imbalance"

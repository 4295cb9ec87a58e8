"""doccause12 (heldout24, retired): host-side allocators and kills named by their own wording,
the model's own requirement, and placement on the first GPU, read on real corpus texts and on
near-misses that must keep their reading."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_extra import names_host_memory


@pytest.mark.parametrize(
    ("record", "cause"),
    [
        # OpenCV's fastMalloc failure (core/src/alloc.cpp OutOfMemoryError): host RAM
        ("h24-stagesepx-86", "host_ram"),
        # Ray's OOM prevention is its node-RAM memory monitor, whatever the actors hold on GPUs
        ("h24-ROLL-234", "host_ram"),
        # the failure placed at loading the models / the model's own minimum VRAM asked for
        ("h24-web-llm-500", "model_too_large"),
        ("h24-LHM-113", "model_too_large"),
        # the first GPU takes more than the others; only the first of four GPUs used; a
        # checkpoint loaded without a device (torch.load restores onto the saved device)
        ("h24-FFB6D-35", "multi_gpu_imbalance"),
        ("h24-singleshotpose-52", "multi_gpu_imbalance"),
        ("h24-apex-756", "multi_gpu_imbalance"),
        # the GPU memory said to keep slowly growing, the run failing only when run long
        ("h24-ColossalAI-3342", "leak_or_accumulation"),
    ],
)
def test_corpus_text_cause(record: str, cause: str) -> None:
    assert diagnose_text(corpus_text(record)).cause == cause


def test_host_wordings_and_their_near_misses() -> None:
    assert names_host_memory("terminate called after throwing 'cv::OutOfMemoryError'")
    assert names_host_memory("Ray OOM prevention stops the vLLM actors during engine init")
    assert names_host_memory("Ray's memory monitor stopped the worker")
    # OpenCV's CUDA module fails in cudaMalloc with its own wording: the device, not the host
    assert not names_host_memory(
        "cv::Exception: OpenCV(4.5.1) (-217:Gpu API call) out of memory in function 'allocate'"
    )
    # Ray wrapping a task's own CUDA OOM is the device's
    assert not names_host_memory(
        "ray.exceptions.RayTaskError(OutOfMemoryError): CUDA out of memory. Tried to allocate 2 GiB"
    )
    assert not names_host_memory("torch.OutOfMemoryError: out of memory on the Ray cluster")


@pytest.mark.parametrize(
    "text",
    [
        # a batch, not a model, is being loaded; a batch size asked for, not the model's VRAM
        "I'm running out of memory trying to load the batches of images",
        "Out of memory: what is the minimum batch size required to run this model?",
        # saving, not loading, a checkpoint; one GPU using more memory than another run did
        "Out-of-memory when saving the checkpoint w/o setting device id",
        "out of memory: this model uses more memory than others I tried",
        # "only used in one epoch" names no device
        "OUT OF MEMORY ERROR, the memory can only used in one epoch",
    ],
)
def test_near_misses_keep_their_reading(text: str) -> None:
    assert diagnose_text(text).cause not in {"model_too_large", "multi_gpu_imbalance"}


@pytest.mark.parametrize(
    "text",
    [
        # the memory said to stay steady, or a large model named: no growth is stated
        "32G显存会爆，显存一直很稳定",
        "训练中显存不稳定，模型很大 32G显存会爆",
    ],
)
def test_chinese_growth_near_misses(text: str) -> None:
    assert diagnose_text(text).cause != "leak_or_accumulation"

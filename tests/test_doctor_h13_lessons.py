"""Issue 9 after heldout13: memory growth and the OOM killer in prose, and the cause rules that read
the text's own words (growth per step, a step range, one GPU of several, a CPU OOM), on forms
other than the records they were found in, with near-misses that must not fire."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text

# memory that grew until it ran out: recognised, and the growth decides leak_or_accumulation
_GROWTH = (
    "GPU memory usage keeps growing during validation",
    "the vram keeps increasing and the app dies",
    "RAM usage increases with each epoch",
    "cuda memory grows with the steps until the job stops",
    "the memory increases by 200MB after each iteration",
    "after every epoch the memory increases until the kernel dies",
    "inference takes more and more GPU memory",
    "GPU memory leak when calling generate() in a loop",
    "the memory is leaking between runs",
)

# the OOM killer in prose: recognised as host RAM
_KILLED = (
    "the python process is killed while loading the checkpoint",
    "My training job gets killed after tokenization",
    "the script always gets killed on a 16 GB laptop",
    "conversion ends with 'Killed'",
)

# growth or killing that is not an OOM
_NEAR = (
    "memory usage increases with batch size",
    "memory grows linearly with the sequence length",
    "Fixed a memory leak in the tokenizer",
    "there is no memory leak in this loop",
    "more and more memory-efficient kernels land every release",
    "RuntimeError: DataLoader worker (pid 101) is killed by signal: Segmentation fault",
    "the process was killed by the user with Ctrl+C",
    "I killed the process and restarted it",
)


@pytest.mark.parametrize("text", _GROWTH)
def test_growth_is_recognised_as_accumulation(text: str) -> None:
    d = diagnose_text(text)
    assert d.confidence > 0, text
    assert d.cause == "leak_or_accumulation", (text, d.cause, d.explanation)


@pytest.mark.parametrize("text", _KILLED)
def test_killed_prose_is_host_ram(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "host_ram", (text, d.cause, d.explanation)


@pytest.mark.parametrize("text", _NEAR)
def test_near_misses_do_not_fire(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "unknown", (text, d.cause, d.explanation)
    assert d.confidence == 0.0, (text, d.explanation)


def test_step_range_counts_as_completed_steps() -> None:
    d = diagnose_text("CUDA out of memory. The run crashes after 1200-1500 steps every time")
    assert d.cause == "leak_or_accumulation", d.explanation


def test_single_step_range_start_is_not_growth() -> None:
    # "after 1-2 steps" leaves only the first step done: the optimizer's states, not growth
    d = diagnose_text("CUDA out of memory after 1-2 steps")
    assert d.cause != "leak_or_accumulation", d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "CUDA out of memory on cuda:0 while the other GPUs are free",
        "without device_map all tensors are sent to cuda:0 and it goes OOM",
        "CUDA OOM: everything is placed on gpu 0",
    ],
)
def test_one_gpu_of_several(text: str) -> None:
    assert diagnose_text(text).cause == "multi_gpu_imbalance", text


def test_cpu_oom_wording_is_host_ram() -> None:
    assert diagnose_text("Saving the merged model hits a CPU OOM").cause == "host_ram"
    assert diagnose_text("got a host out-of-memory error while loading").cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        "CUDA out of memory because the GPU memory was already in use by the notebook",
        "RuntimeError: CUDA out of memory; 20GB is held by a zombie process",
        "OOM at start: the card is occupied by another process",
    ],
)
def test_memory_taken_before_the_run(text: str) -> None:
    assert diagnose_text(text).cause == "other_process_holding_memory", text


def test_pytorch_already_allocated_is_not_another_process() -> None:
    d = diagnose_text("CUDA out of memory. 5.17 GiB already allocated")
    assert d.cause != "other_process_holding_memory", d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "24 GB of VRAM is not enough for Mixtral at 8k",
        "the trainer uses way too much GPU memory with gradient checkpointing",
        "llama-server consumes excessive RAM when mmap is off",
        "loading fails: the model would exceed the available memory",
    ],
)
def test_memory_stated_too_small_or_too_much(text: str) -> None:
    assert diagnose_text(text).confidence > 0, text


@pytest.mark.parametrize(
    "text",
    [
        "it does not use too much memory",
        "the new kernel uses less memory than v1",
        "This model requires a lot of memory; use a 24 GB card",
    ],
)
def test_memory_usage_statements_do_not_fire(text: str) -> None:
    assert diagnose_text(text).confidence == 0.0, text

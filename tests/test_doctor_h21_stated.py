"""Prose that decides a cause, read from heldout21's texts (doccause10), and near misses.

Each rule is the mechanism its docstring states (rules_stated*, rules_extra); the records are
the real texts (tests/corpus_records.py), the near misses say something else with the same words.
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_extra import names_host_memory


def test_a_contracted_not_released_is_growth() -> None:
    # "It looks like some data isn't released and memory keep growing" (the "n't" once vetoed it)
    d = diagnose_text(corpus_text("h21-lcnn-8"))
    assert d.cause == "leak_or_accumulation"
    assert "isn't released" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "the cache is released after each step and memory stays flat, then CUDA out of memory",
        "It isn't a leak: memory is flat until the big batch, then CUDA out of memory",
    ],
)
def test_memory_given_back_is_not_growth(text: str) -> None:
    assert diagnose_text(text).cause != "leak_or_accumulation"


def test_a_batch_of_one_quoted_as_code_that_still_fails() -> None:
    # "I've reduced to `batch_size=1` and still I'm unable to train as I get the out of memory"
    d = diagnose_text(corpus_text("h21-PL-Marker-7"))
    assert d.cause == "model_too_large"
    assert "batch was cut" in d.explanation


def test_a_quoted_batch_cut_that_runs_is_not_read() -> None:
    d = diagnose_text("I reduced to `batch_size=4` and training runs; at 8 it was out of memory")
    assert "batch was cut" not in d.explanation


@pytest.mark.parametrize("record", ["h21-aimnetcentral-103", "h21-cccl-4722"])
def test_parallel_test_workers_share_one_gpu(record: str) -> None:
    # "every xdist worker auto-selects cuda:0 and stacks models onto it until OOM";
    # "Executing tests using `N` processes, we scale GPU allocation footprint by a factor of `N`"
    d = diagnose_text(corpus_text(record))
    assert d.cause == "other_process_holding_memory"
    assert "the device is shared" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "I run the tests on 4 GPUs and get CUDA out of memory",  # GPUs, not worker processes
        "the test uses a single process and fails with out of memory",
    ],
)
def test_tests_without_parallel_workers_are_not_cotenants(text: str) -> None:
    assert diagnose_text(text).cause != "other_process_holding_memory"


@pytest.mark.parametrize(
    ("record", "words"),
    [
        ("h21-LLamaSharp-1236", "model exceeds VRAM"),  # a Vulkan load failure's issue title
        ("h21-DeepSpeed-MII-99", "when loading larger models"),
    ],
)
def test_a_model_said_to_exceed_the_card_or_to_fail_at_load(record: str, words: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "model_too_large"
    assert words in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "the prompt exceeds the model's context length and OOM happens",  # not the card
        "CUDA OOM errors when loading the dataset",  # loading data, not a model
        "CUDA OOM errors when loading larger images",
    ],
)
def test_other_exceeds_and_loading_statements_are_not_the_model(text: str) -> None:
    assert diagnose_text(text).cause != "model_too_large"


@pytest.mark.parametrize("record", ["h21-vllm-gaudi-993", "h21-vllm-gaudi-1736"])
def test_the_context_cap_left_unset_or_the_kv_cache_named_as_the_cause(record: str) -> None:
    # "large default context lengths ... without explicitly setting [--max-model-len], the server
    # crashes with a fatal, unrecoverable device OOM"; "miscalculates KV cache memory ...,
    # causing OOM during graph compilation"
    d = diagnose_text(corpus_text(record))
    assert d.cause == "kv_cache_or_context"


@pytest.mark.parametrize(
    "text",
    [
        "without explicitly setting --max-model-len the server starts fine; OOM comes later",
        "without setting --max-model-len it runs, but OOM in the forward pass of a large batch",
        "the KV cache is freed, causing no issue; later OOM in the forward",
    ],
)
def test_a_start_that_succeeds_is_not_the_context(text: str) -> None:
    assert diagnose_text(text).cause != "kv_cache_or_context"


def test_cpu_memory_said_to_be_insufficient_is_host_ram() -> None:
    # "When I load qwen1.5 32b bf16 with 32GB CPU memory, it is always insufficient"
    assert diagnose_text(corpus_text("h21-vllm-5269")).cause == "host_ram"
    # the GPU named beside it decides for the device
    assert not names_host_memory("I have 32GB CPU memory and the GPU runs out of memory")


def test_the_gpus_memory_in_chinese_is_not_host_ram() -> None:
    # "应该是gpu内存不足" (it should be the GPU's memory that is short): 内存 alone is RAM, but here
    # it is the GPU's, which \b cannot see between CJK characters
    assert diagnose_text(corpus_text("h21-PaddleOCR-84")).cause != "host_ram"
    assert not names_host_memory("但是Cuda out of memory 了")
    # RAM named alone in Chinese stays host memory
    assert names_host_memory("训练时内存不足，被系统杀死")
    assert diagnose_text(corpus_text("h16-F5-TTS-833")).cause == "host_ram"


def test_lightning_epoch_end_hooks_keep_every_steps_outputs() -> None:
    # "OOM when implementing training_epoch_end" (Lightning 1.x keeps each step's outputs for it)
    d = diagnose_text(corpus_text("h21-pytorch-lightning-15514"))
    assert d.cause == "leak_or_accumulation"
    assert "training_epoch_end" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "OOM in validation_step of my model",  # one step's hook, nothing kept across steps
        "CUDA out of memory in on_train_epoch_end after saving",  # Lightning 2's hook: no outputs
    ],
)
def test_other_lightning_hooks_are_not_read(text: str) -> None:
    assert diagnose_text(text).cause != "leak_or_accumulation"

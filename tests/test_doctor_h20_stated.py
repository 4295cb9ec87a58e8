"""Prose that decides a cause (issue 9, after heldout19/heldout20): a model's 16-bit weights
larger than the one card named, the context setting named as what caused the OOM, more than one
program on the card, one card of several taking the work or a batch of 1 still failing (in
Chinese), and Android's Java heap. Real corpus texts and the near-misses each rule must leave
alone."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_stated_size import weights_over_card
from oomkit.units import GB, GiB


@pytest.mark.parametrize(
    "record",
    [
        "h20-ChatRWKV-21",  # "the 14B model but still got OOM for the 24GB graphics memory"
        "h20-Wan2.1-241",  # "The I2V 14B model is too large ... on my GPU (24GB)"
    ],
)
def test_weights_larger_than_the_card(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "model_too_large"
    assert d.confidence == pytest.approx(0.5)
    assert "weights alone are about 26.08 GiB" in d.explanation
    assert not d.open_question


def test_weights_arithmetic_reads_precision_and_units() -> None:
    found = weights_over_card("14B model OOM on a 24GB GPU")
    assert found is not None
    assert found[0] == 28 * GB
    assert found[1] == 24 * GB
    # "24G" is binary (units.py); 4-bit weights are a quarter of 16-bit
    found = weights_over_card("70B in 4-bit still OOM on my 24G VRAM")
    assert found is not None
    assert found[0] == 35 * GB
    assert found[1] == 24 * GiB


@pytest.mark.parametrize(
    "text",
    [
        corpus_text("h12-llama-136"),  # 7B on 24 GB: the weights fit (label: batch)
        corpus_text("h7-deepspeed-192"),  # 1.5B on a 32 GB V100 (label: batch)
        corpus_text("h16-LongChat-8"),  # 7B on 40 GB (label: batch)
        corpus_text("h17-ai-toolkit-819"),  # "wan21_14b_24gb.yaml": a file name, not a size
        corpus_text("h19-ComfyUI-CogVideoXWrapper-82"),  # "running base 5B OK": it ran
        corpus_text("h20-LlamaFactory-7197"),  # 7 cards: the weights may be split
        corpus_text("h19-llama-chat-10"),  # "64G ram and 13B model": host RAM, not a card
        "Qwen3-VL-235B-A22B on one 80GB GPU OOM",  # an MoE name is not read
        "13B model in 4-bit OOM on my 8GB GPU",  # 6.5 GB of weights fit 8 GB
    ],
)
def test_sizes_that_do_not_exceed_one_card_are_not_read(text: str) -> None:
    d = diagnose_text(text)
    assert "The text states the model and the card" not in d.explanation


@pytest.mark.parametrize(
    "record",
    [
        "h19-gpustack-364",  # "Model instance OOM due to large context length"
        "h19-gpustack-1342",  # "derived_max_model_len ... using default value caused OOM"
    ],
)
def test_context_setting_named_as_the_cause(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "kv_cache_or_context"
    assert d.confidence == pytest.approx(0.45)
    assert "context the cache is sized for" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # a long training sequence is the activations', and a context merely named is no cause
        "CUDA out of memory due to long sequence length during training",
        "I set the context length to 4096 and got CUDA out of memory at step 3",
    ],
)
def test_context_mentions_that_are_not_the_cause(text: str) -> None:
    d = diagnose_text(text)
    assert "context the cache is sized for" not in d.explanation


@pytest.mark.parametrize(
    "record",
    [
        "h19-jax-17217",  # "when more than one program involving JAX and cuDNN"
        "h19-inference-1266",  # Xinference: "GPU index 1 has been occupied with a vLLM model"
    ],
)
def test_other_programs_on_the_card(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "other_process_holding_memory"
    assert "device is shared" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # one process holding two models is its own resident state; XPU's own "occupied"
        "CUDA out of memory when loading more than one model in my script",
        corpus_text("h7-torchxpuops-5046"),
    ],
)
def test_more_than_one_of_something_else_is_not_a_cotenant(text: str) -> None:
    assert "device is shared" not in diagnose_text(text).explanation


@pytest.mark.parametrize(
    "record",
    [
        "h19-VLMEvalKit-156",  # "有8张卡可用，发现只占了一张卡进行推理"
        "h20-Qwen-718",  # "先把模型加载到了`cuda:0`中（`cuda:0`最先满"
    ],
)
def test_one_card_of_several_in_chinese(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "multi_gpu_imbalance"
    assert d.confidence == pytest.approx(0.45)


def test_one_card_machine_in_chinese_is_not_read() -> None:
    # "I only have one card" states the machine, not a placement
    d = diagnose_text("我只有一张卡，运行时报错 CUDA out of memory")
    assert d.cause != "multi_gpu_imbalance"


def test_batch_of_one_still_fails_in_chinese() -> None:
    d = diagnose_text(corpus_text("h20-MOSS-297"))  # "batch=1。但是还是会提示 `out of memory`"
    assert d.cause == "model_too_large"
    assert "batch was cut" in d.explanation


def test_batch_of_one_that_runs_is_not_read() -> None:
    d = diagnose_text("batch=1。可以跑，batch=8 就 out of memory")
    assert "batch was cut" not in d.explanation


def test_android_java_heap_is_host_memory() -> None:
    d = diagnose_text(
        corpus_text("h19-Android-Face-Recognition-with-Deep-Learning-Test-Framework-38")
    )
    assert d.cause == "host_ram"


def test_a_gpu_byte_allocation_is_not_the_java_heap() -> None:
    d = diagnose_text("CUDA out of memory. Tried to allocate 20.00 MiB")
    assert d.cause != "host_ram"


def test_lora_runs_and_full_fine_tuning_does_not() -> None:
    # "lora method works on 1 gpu, but full parameter fine-tuning encountered OOM on 8*A100"
    d = diagnose_text(corpus_text("h20-LlamaFactory-455"))
    assert d.cause == "model_too_large"
    assert "LoRA runs and full fine-tuning does not" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "full fine-tuning works but LoRA gives CUDA out of memory",  # the other order
        "LoRA fine-tuning gives CUDA out of memory on my 24GB card",  # no comparison
    ],
)
def test_other_lora_statements_are_not_read(text: str) -> None:
    assert "LoRA runs and full fine-tuning" not in diagnose_text(text).explanation

"""docpost21: what heldout43-44 (scored once, retired) taught, as mechanisms with near misses.

Recognition: host RAM named short with its qualifier in parentheses ("insufficient (cpu) RAM",
``parse_wordings_exits._RAM_SHORT``). Cause: memory growth told with the pace before the verb
or per run without "with" (``growth_adverbs.PACE_FIRST_GROWTH``, read by
``rules_stated.stated_growth``); a card named by a model NVIDIA ships in one memory size ("on
4090", ``card_names.named_card``) against a stated model size (``rules_stated_size``).
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.card_names import ONE_SIZE_CARDS, named_card
from oomkit.diagnose.doctor import diagnose_text
from oomkit.hardware.catalog import find_gpu

# ---- recognition: "insufficient (cpu) RAM" --------------------------------------------------


def test_heldout43_sd_scripts_insufficient_cpu_ram() -> None:
    d = diagnose_text(corpus_text("h43-sd-scripts-1749"))
    assert d.oom_found
    assert d.cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        "it crashed due to insufficient (system) memory",
        "the save fails with insufficient (host) RAM",
    ],
)
def test_insufficient_parenthesised_host_is_host_ram(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert d.cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        # a storage or a workspace, not memory: stays what it was
        "insufficient (cpu) cores for this job",
        "the driver version is insufficient (cpu) for CUDA 12",
    ],
)
def test_insufficient_parenthesised_near_misses(text: str) -> None:
    assert not diagnose_text(text).oom_found


# ---- cause: growth with the pace first ------------------------------------------------------


@pytest.mark.parametrize("record", ["h44-llama.cpp-23446", "h44-sglang-9365"])
def test_heldout44_pace_first_growth_records(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "leak_or_accumulation"


@pytest.mark.parametrize(
    "text",
    [
        "the RAM usage slowly increases until the process is OOM killed",
        "VRAM grows every request until CUDA out of memory",
    ],
)
def test_pace_first_growth(text: str) -> None:
    assert diagnose_text(text).cause == "leak_or_accumulation"


@pytest.mark.parametrize(
    "text",
    [
        # a lever raised step by step, not memory growing
        "I gradually increase the batch size until OOM",
        # growth ruled out inside the sentence
        "memory usage does not gradually increase, it OOMs at once",
        "the VRAM doesn't grow each run but it still OOMs",
    ],
)
def test_pace_first_growth_near_misses(text: str) -> None:
    assert diagnose_text(text).cause != "leak_or_accumulation"


# ---- cause: a card named by a one-size model ------------------------------------------------


def test_heldout43_vace_14b_on_4090() -> None:
    d = diagnose_text(corpus_text("h43-ComfyUI-WanVideoWrapper-562"))
    assert d.cause == "model_too_large"


def test_training_a_7b_on_a_named_card() -> None:
    assert diagnose_text("OOM training a 7B model on my RTX 4090").cause == "model_too_large"


@pytest.mark.parametrize(
    "text",
    [
        # fits the card: not the model
        "Out of memory on 4090 with a 7b model",
        # a model sold in two memory sizes is not read
        "CUDA out of memory on RTX 3060 with a 13b model",
        # several cards: the weights may be split
        "CUDA out of memory on two 4090 with a 34b model",
    ],
)
def test_named_card_near_misses(text: str) -> None:
    assert diagnose_text(text).cause != "model_too_large"


@pytest.mark.parametrize(
    "text",
    ["listening on port 4090", "4090 tokens in the prompt", "RTX 3080 crashed", "in 2080 AD"],
)
def test_named_card_is_not_a_number(text: str) -> None:
    assert named_card(text) is None


@pytest.mark.parametrize("key", sorted(ONE_SIZE_CARDS))
def test_one_size_cards_are_the_catalogs(key: str) -> None:
    gpu = find_gpu(ONE_SIZE_CARDS[key])
    assert gpu.key == ONE_SIZE_CARDS[key]
    found = named_card(f"CUDA out of memory on {key.upper()}")
    assert found is not None
    assert found[0] == gpu.memory_bytes


def test_the_4090_is_its_driver_total() -> None:
    found = named_card("Out of memory on RTX 4090")
    assert found is not None
    assert found[0] == 24564 * 2**20


# ---- cause: the context named as the requests' or the KV cache's allocation named ------------


@pytest.mark.parametrize("record", ["h44-vllm-mlx-455", "h44-ik_llama.cpp-731"])
def test_heldout44_context_records(record: str) -> None:
    assert diagnose_text(corpus_text(record)).cause == "kv_cache_or_context"


@pytest.mark.parametrize(
    "text",
    [
        "long-context requests cause CUDA OOM on the server",
        "the KV cache allocation failed with out of memory",
    ],
)
def test_context_named(text: str) -> None:
    assert diagnose_text(text).cause == "kv_cache_or_context"


@pytest.mark.parametrize(
    "text",
    [
        # a long training sequence is its activations
        "long-context training causes OOM",
        # the KV cache ruled out
        "the KV cache allocation did not fail, the OOM came from the vision encoder",
    ],
)
def test_context_named_near_misses(text: str) -> None:
    assert diagnose_text(text).cause != "kv_cache_or_context"


# ---- recognition and cause: a duration as the condition ("if you run it long enough") --------


def test_heldout44_turboquant_long_enough() -> None:
    d = diagnose_text(corpus_text("h44-llama-cpp-turboquant-232"))
    assert d.oom_found
    assert d.cause == "leak_or_accumulation"


def test_left_running_long_enough() -> None:
    text = "If you leave the server running long enough, it gets OOM killed"
    assert diagnose_text(text).cause == "leak_or_accumulation"


@pytest.mark.parametrize(
    "text",
    [
        # advice to the reader stays silent
        "If you run out of VRAM, lower the batch size.",
        # a size, not a duration: still advice
        "If you use a long enough context, you will get an OOM",
    ],
)
def test_long_enough_near_misses(text: str) -> None:
    assert not diagnose_text(text).oom_found


def test_context_not_long_enough_is_not_growth() -> None:
    text = "I ran it with a context that is not long enough and got OOM"
    assert diagnose_text(text).cause != "leak_or_accumulation"


def test_heldout44_sglang_context_with_an_elision() -> None:
    assert diagnose_text(corpus_text("h44-sglang-6744")).cause == "kv_cache_or_context"


def test_an_ellipsis_after_a_start_said_fine_ties_nothing() -> None:
    text = "A larger context works fine... OOM at batch 64"
    assert diagnose_text(text).cause != "kv_cache_or_context"

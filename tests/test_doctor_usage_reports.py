"""Memory-use and growth reports without a failure line (issue 9: an obvious memory problem never
gets "nothing found"): ``parse_wordings_usage`` reads the shape and its numbers, ``rules_usage``
states them at low confidence and asks the deciding fact. Near-misses must stay silent."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_usage import usage_match, usage_numbers
from oomkit.units import GB


@pytest.mark.parametrize(
    ("record", "family"),
    [
        ("h22-onnxruntime-genai-1620", "growth"),  # "accumulates ~1GB per inference iteration"
        ("h23-openvino.genai-4481", "growth"),  # "the pool grows unbounded"
        ("h16-sam3-169", "growth"),  # "dictionary ... grow larger after each loop"
        ("h23-lemonade-1151", "near_full"),  # "of the 24 GB ... (leaving about 1 GB ... free)"
        ("h23-ollama-10994", "spike"),  # "the memory usage spikes to 34 GB"
        ("h23-cortex.cpp-2196", "spike"),  # "memory went up by 38GB"
        ("h23-ComfyUI-WanVideoWrapper-1267", "spike"),  # "surges to nearly 30 GB"
        ("h21-DeepSpeed-MII-189", "excessive"),  # "High Memory Usage for MII compared to HF"
        ("h22-mace-229", "excessive"),  # "requires extreme amounts of memory"
        ("h22-Langchain-Chatchat-4685", "excessive"),  # "显存异常分配"
    ],
)
def test_corpus_usage_reports_are_found_with_their_family(record: str, family: str) -> None:
    text = corpus_text(record)
    nums = usage_numbers(text)
    assert nums is not None, text
    assert nums.family == family
    d = diagnose_text(text)
    assert d.oom_found
    assert d.confidence <= 0.4  # a report of use is no failed allocation: low confidence
    assert "What would decide" in d.explanation


def test_growth_reads_the_amount_and_the_unit_and_reads_as_accumulation() -> None:
    text = corpus_text("h22-onnxruntime-genai-1620")
    nums = usage_numbers(text)
    assert nums is not None
    assert nums.growth_bytes == 1 * GB
    assert nums.unit_of_work == "inference iteration"
    d = diagnose_text(text)
    assert d.cause == "leak_or_accumulation"
    assert "memory_allocated()" in d.explanation  # the deciding fact: live tensors, not the reserve


def test_near_full_reads_used_and_capacity_and_leaves_the_cause_open() -> None:
    d = diagnose_text("It uses 23 GB of 24 GB then crashes")
    e = d.events[0]
    assert (e.kind, e.allocated_bytes, e.total_bytes) == ("memory_report", 23 * GB, 24 * GB)
    assert d.cause == "unknown"
    nums = usage_numbers(corpus_text("h23-lemonade-1151"))
    assert nums is not None
    assert (nums.total_bytes, nums.free_bytes) == (24 * GB, 1 * GB)


@pytest.mark.parametrize(
    "text",
    [
        # a use well under the capacity, a use said to be fine
        "It uses 8 GB of 24 GB during inference.",
        "memory usage is fine",
        "GPU memory usage is stable at 14 GB across epochs.",
        # requirements and savings as READMEs state them
        "Please note that by default it uses all available GPUs and requires ~18.2Gb of GPU "
        "memory.",
        "Finetune Llama 2x faster with 80% less VRAM!",
        '[NEW] "unsloth" uses 30% less VRAM, fits 2x larger batch sizes!',
        "We cut memory usage by a further 30% and now support 4x longer context windows!",
        # a property of the method; growth that levels off
        "KV cache memory grows linearly with the sequence length.",
        "Memory usage increases with the batch size.",
        "VRAM grows over the first steps and then plateaus at 14 GB",
        # docs that name a cause of high use
        "At present, QLoRA leads to high GPU memory consumption without use_reentrant.",
        "The iterative diffusion process consumes a lot of memory which can make it difficult "
        "to train.",
        # benchmark tables
        "| GPU VRAM | Unsloth context length | Hugging Face + FA2 |\n| 24 GB | 78,475 | 5,789 |",
        "| Model | VRAM | speed |\n| Llama 3.3 (70B) | 80GB | 2x |",
        # yes-no questions
        "Does the memory usage spike to 30 GB on the first request?",
        # a memory word and a number that say nothing about use
        "The A100 has 80 GB of HBM2e memory with 2 TB/s of bandwidth.",
    ],
)
def test_near_misses_stay_silent(text: str) -> None:
    assert not usage_match(text), text
    assert not diagnose_text(text).oom_found, text


def test_advice_opening_with_a_condition_is_not_a_usage_report() -> None:
    # (the older prose-report grammar still reads this one as a growth report: a known gap)
    assert not usage_match("If memory usage keeps increasing every epoch, detach the losses.")
    assert usage_match(corpus_text("h23-jan-3934"))  # "When ..., leading to increasing memory"


def test_the_usage_grammar_fires_on_no_docs_sentence_of_the_negative_set() -> None:
    path = Path(__file__).parent / "fixtures" / "prose_negatives.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    negatives = [r["text"] for r in rows if not r["mentions_oom"]]
    assert len(negatives) >= 395
    assert [t for t in negatives if usage_match(t)] == []


def test_linear_time_on_long_near_miss_lines() -> None:
    started = time.process_time()
    for line in (
        "memory usage grows " * 5_000,
        "uses 23 GB of " * 5_000,
        "the GPU memory spikes " * 5_000,
        "high memory " * 10_000,
    ):
        usage_numbers(line)
    assert time.process_time() - started < 2.0


@pytest.mark.parametrize("record", ["h22-ALMA-42", "h20-stable-diffusion-webui-forge-2464"])
def test_runtime_memory_pressure_warnings_are_reports_not_failures(record: str) -> None:
    # DeepSpeed's allocator cache flushes and Forge's low-VRAM warning (upstream_wordings_edge)
    text = corpus_text(record)
    nums = usage_numbers(text)
    assert nums is not None
    assert nums.family == "pressure"
    d = diagnose_text(text)
    assert (d.oom_found, d.cause) == (True, "unknown")
    assert "not a failure" in d.explanation


def test_forge_warning_reads_the_free_memory_in_mib() -> None:
    nums = usage_numbers(corpus_text("h20-stable-diffusion-webui-forge-2464"))
    assert nums is not None
    assert nums.free_bytes == round(223.35 * (1 << 20))


def test_jetson_nvmap_failure_named_in_prose_is_an_allocation_failure() -> None:
    d = diagnose_text(corpus_text("h23-audio.cpp-12"))
    assert [e.format for e in d.events] == ["jetson_nvmap_alloc"]
    assert "reboot" in d.explanation  # the deciding fact: fresh boot or not
    assert not diagnose_text("NvMapMemAllocInternalTagged: 1075072515 error 22").oom_found


@pytest.mark.parametrize(
    ("record", "family"),
    [
        ("h16-mlx-1804", "near_full"),  # "(with 64 GB memory) hits 58.5 GB RAM utilization"
        ("h21-lm-evaluation-harness-2490", "excessive"),  # "much higher than ... estimated"
        ("h23-onnxruntime-9068", "spike"),  # "memory would quickly up to full"
        ("h10-transformers-27834", "excessive"),  # "requiring a lot of memory"
    ],
)
def test_more_corpus_shapes(record: str, family: str) -> None:
    nums = usage_numbers(corpus_text(record))
    assert nums is not None
    assert nums.family == family


def test_capacity_first_reads_both_sizes_and_a_low_share_stays_silent() -> None:
    nums = usage_numbers("Machine 3 (with 64 GB memory) hits 58.5 GB RAM utilization")
    assert nums is not None
    assert (nums.used_bytes, nums.total_bytes) == (58_500_000_000, 64 * GB)
    assert not usage_match("a server with 64 GB of RAM at 20 GB used")
    assert not usage_match("The A100 has 80 GB of HBM2e memory")


@pytest.mark.parametrize(
    ("record", "family"),
    [
        ("h55-IOPaint-308", "growth"),  # "continue to increase without any release"
        ("h36-LlamaFactory-2880", "spike"),  # "显存从15G涨到26G"
        ("h39-LlamaFactory-3968", "spike"),  # "显存会长到78G"
    ],
)
def test_growth_never_released_and_a_chinese_rise_to_a_size(record: str, family: str) -> None:
    """docpost30: memory that grows without being released (a leak's shape), and a rise told in
    Chinese with the size it reached (从 X 涨到 Y / 长到 Y)."""
    nums = usage_numbers(corpus_text(record))
    assert nums is not None
    assert nums.family == family
    assert diagnose_text(corpus_text(record)).oom_found


def test_chinese_rise_reads_the_size_reached() -> None:
    nums = usage_numbers("显存从15G涨到26G，有输入可能还会一直增长")
    assert nums is not None
    assert nums.spike_bytes == 26 * GB


@pytest.mark.parametrize(
    "text",
    [
        "如果把显存增加到48G就可以了",  # the user's own change of hardware
        "显存没有涨到20G",  # negated
        "显存不会涨到20G",
        "内存升级到64G之后就好了",  # an upgrade, not a rise
        "显存占用从20G降到10G",  # a fall
        "The memory is released without any increase.",
    ],
)
def test_rise_and_release_near_misses_stay_silent(text: str) -> None:
    assert not usage_match(text), text

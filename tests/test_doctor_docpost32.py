"""docpost32 (issue 9, after doctor heldout58/59 were retired to development): training
frameworks' rollout engines and the less common serving stacks (Tenstorrent, Gaudi, mistral.rs).

Recognition: mistral.rs's device-mapper refusal with its device list wrapped below it;
tt-metal's bank allocator in its 2024 template form (the arguments one a line) and without its
numbers (titles, condensed pastes). Cause: the context setting stated as the lever in words
that carry their own outcome ("works if you set a lower max model length", "setting max seq
len to avoid OOM", "OOM ... until reduce max_model_len"), and host memory named by the run's
frame ("On CPU, ...") or the kernel's "system OOM". Real corpus texts, and the near-misses
each reading must leave alone.
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


def test_mistralrs_device_list_wrapped_to_the_next_line() -> None:
    # h59-mistral.rs-2127: "CPU load failed: This model does not fit on the devices\n[...]"
    d = diagnose_text(corpus_text("h59-mistral.rs-2127"))
    assert d.oom_found
    assert d.cause == "unknown"  # every device at 0 MB: the memory query failed
    assert "0 MB available" in d.explanation
    assert not d.open_question


def test_mistralrs_phrase_joins_only_a_list_below_it() -> None:
    d = diagnose_text("CPU load failed: This model does not fit on the devices\nRetrying later.")
    assert d.oom_found
    assert d.primary is not None
    assert "Retrying" not in d.primary.text
    # the phrase in the middle of a sentence without the list is not the mapper's refusal
    assert not diagnose_text("The model does not fit on the devices we bought, sadly.").oom_found


def test_tt_metal_template_form_reads_its_arguments() -> None:
    # h59-tt-metal-7933: tt::assert::tt_throw printed the format string, then each argument
    d = diagnose_text(corpus_text("h59-tt-metal-7933"))
    e = d.primary
    assert e is not None
    assert (e.runtime, e.format) == ("tt-metal", "tt_metal_bank_oom")
    assert e.requested_bytes == 148897792
    assert e.buffer_name == "DRAM"
    assert e.detail == "18612224 B per bank"
    # the template without its arguments below it is not read as tt-metal's numbers
    bare = diagnose_text(
        "Out of Memory: Not enough space to allocate {} B {} buffer across {} banks, where each "
        "bank needs to store {} B\nbacktrace:"
    )
    assert bare.primary is None or bare.primary.requested_bytes is None


@pytest.mark.parametrize("record", ["h59-tt-metal-34359", "h59-tt-metal-35814"])
def test_tt_metal_dram_failure_without_numbers(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    e = d.primary
    assert e is not None
    assert (e.runtime, e.buffer_name) == ("tt-metal", "DRAM")
    assert "a DRAM buffer" in d.explanation  # no "a ? DRAM buffer"
    titles = [f.title for f in d.fixes]
    assert any("maximum sequence length" in t for t in titles)


@pytest.mark.parametrize(
    "text",
    [
        "Not enough space to allocate the buffer for the file header",
        "Out of Memory in the DRAM buffer pool of the FPGA",
    ],
)
def test_tt_metal_near_misses(text: str) -> None:
    d = diagnose_text(text)
    assert d.primary is None or d.primary.runtime != "tt-metal"


@pytest.mark.parametrize(
    "record",
    [
        "h59-modelbench-981",  # "LG3 works if you set a lower max model length"
        "h59-tenstorrent-vllm-67",  # "setting max seq len to avoid OOM on n150"
        "h59-tenstorrent-vllm-302",  # "Without this, the default ... causing DRAM out-of-memory"
        "h57-club-3090-96",  # "OOM during verify-stress.sh until reduce max_model_len to 188000"
    ],
)
def test_context_setting_stated_as_the_lever(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "kv_cache_or_context"
    assert d.confidence == pytest.approx(0.55)


@pytest.mark.parametrize(
    "text",
    [
        # h21-lm-evaluation-harness-1923 (a batch label): lowered, and it still fails
        "CUDA out of memory. I have already decreased the `gpu_memory_utilization` and "
        "`max_model_len`, but the problem persists.",
        "CUDA out of memory. It works if you set a lower batch size.",
        "reduce batch size to avoid oom",
        # no context setting named: the cap's absence alone says nothing about the KV cache
        "Add the new constraint for the N150. Without this, the default is used, causing an OOM.",
    ],
)
def test_context_lever_near_misses(text: str) -> None:
    assert diagnose_text(text).cause != "kv_cache_or_context"


@pytest.mark.parametrize("record", ["h58-sglang-9090", "h59-optimum-habana-1112"])
def test_host_memory_named_by_the_frame_or_the_kernel(record: str) -> None:
    # "On CPU, the absence of `--mem-fraction-static` ... may lead to OOM."; "it will trigger
    # system OOM issue on system with 1TB memory instead of Gaudi2 OOM issue."
    assert diagnose_text(corpus_text(record)).cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        "On GPU, the absence of `--mem-fraction-static` may lead to OOM.",
        "On CPU offload the model still OOMs on the GPU.",
        "RuntimeError: 507 - System out of memory",
    ],
)
def test_host_memory_near_misses(text: str) -> None:
    assert diagnose_text(text).cause != "host_ram"

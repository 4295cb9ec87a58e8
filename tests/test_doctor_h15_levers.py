"""Prose that rules a lever in or out (issue 9, after heldout15): a batch cut that did not help,
the ComfyUI node that raised being a model loader, mistral.rs's device mapper, fragmentation,
several holders alive at once and growth stated in other words. Real corpus texts and the
near-misses each rule must leave alone."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_stated_levers import loader_node_in


@pytest.mark.parametrize(
    "record",
    [
        "h15-OV-DINO-47",  # total_batch_size 16 -> 2 "but I still faced the CUDA out of memory"
        "h14-LLaVA-569",  # "I still encounter out-of-memory issues, even with a batch size of 1"
    ],
)
def test_batch_cut_that_still_fails_points_at_the_resident_state(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "model_too_large"
    assert d.confidence == pytest.approx(0.45)
    assert "batch was cut" in d.explanation
    assert "What would decide" in d.explanation
    assert not d.open_question


@pytest.mark.parametrize(
    "text",
    [
        # one sample's size is stated: the batch-1 failure names the activations reading too
        corpus_text("h12-shadowformer-24"),
        # a setting, not a cut that failed to help (heldout12: a loop keeping every graph)
        corpus_text("h12-pytorch-4420"),
        "I changed the batch size from 2 to 8 and it still runs out of memory: CUDA out of memory.",
        "CUDA out of memory. I reduced the batch size to 4 and now it works.",
    ],
)
def test_batch_statements_that_decide_nothing_are_not_read(text: str) -> None:
    d = diagnose_text(text)
    assert "batch was cut" not in d.explanation


@pytest.mark.parametrize(
    ("record", "node"),
    [
        ("h15-ComfyUI-5818", "LTXVLoader"),
        ("h13-mistocontrolnet-flux-dev-11", "LoadTheMistoFluxControlNet"),
    ],
)
def test_comfyui_loader_node_reads_as_weights(record: str, node: str) -> None:
    text = corpus_text(record)
    assert loader_node_in(text) == node or node in diagnose_text(text).explanation
    d = diagnose_text(text)
    assert d.cause == "model_too_large"
    assert d.allocation == "weights_load"
    assert "oomkit gpus" in d.explanation


@pytest.mark.parametrize(
    "node", ["KSampler", "LoadImage", "VHS_LoadVideo", "VAEDecode", "ImageLoader", "LoadAudio"]
)
def test_comfyui_nodes_that_do_not_load_weights_keep_the_working_set_reading(node: str) -> None:
    d = diagnose_text(f"Error occurred when executing {node}:\n\nAllocation on device")
    assert d.cause == "batch_or_activations"
    assert loader_node_in(f"Error occurred when executing {node}:") is None


@pytest.mark.parametrize(
    "node",
    ["CheckpointLoaderSimple", "UNETLoader", "UnetLoaderGGUF", "DownloadAndLoadCogVideoModel"],
)
def test_comfyui_loader_names(node: str) -> None:
    assert loader_node_in(f"- **Node Type:** {node}") == node


def test_mistralrs_device_mapper() -> None:
    fits_nowhere = (
        'Error: This model does not fit on the devices ["cuda[0] (avail: 7800MB)", "cpu (avail: '
        '1200MB)"], and exceeds total capacity by 6423MB. Auto device mapping params: '
        "text[max_seq_len: 4096, max_batch_size: 1]"
    )
    d = diagnose_text(fits_nowhere)
    assert (d.cause, d.confidence) == ("model_too_large", 0.5)
    assert "6423 MB" in d.explanation
    # every device, the CPU included, at 0 MB: the memory query failed (heldout14, low label)
    d = diagnose_text(corpus_text("h14-mistral.rs-2078"))
    assert d.cause == "unknown"
    assert not d.open_question
    assert "free -h" in d.explanation
    # a GPU alone at 0 MB can be full: not read as a failed query
    d = diagnose_text('This model does not fit on the devices ["cuda[0] (avail: 0MB)"]')
    assert d.cause == "model_too_large"


@pytest.mark.parametrize("record", ["h15-tinygrad-3323", "h15-bionemo-recipes-524"])
def test_stated_fragmentation_wordings(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "fragmentation"
    assert "expandable_segments" in d.explanation


def test_pytorch_hint_alone_is_not_a_stated_fragmentation() -> None:
    d = diagnose_text(
        corpus_text("h15-FunASR-755")
    )  # "...try setting max_split_size_mb to avoid fragmentation"
    assert d.cause != "fragmentation"


@pytest.mark.parametrize("record", ["h11-kwaainet-35", "h15-server-1507", "h15-server-1351"])
def test_several_holders_alive_at_once(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "other_process_holding_memory"
    assert "oomkit gpus" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        corpus_text("h13-server-6928"),  # "When I increase the instance count" (model copies)
        "OOM when loading multiple models sequentially in a loop",
        "I ran two experiments, one after the other; the second ran out of memory (OOM).",
    ],
)
def test_holders_one_after_another_are_not_cotenants(text: str) -> None:
    assert diagnose_text(text).cause != "other_process_holding_memory"


@pytest.mark.parametrize(
    "text",
    [
        corpus_text("h12-stylegan2_pytorch-11"),
        "训练几个epoch后显存泄漏，最后 CUDA out of memory",
        "CUDA out of memory: 显存一直增加，没有释放",
        "メモリリークで CUDA out of memory になります",
    ],
)
def test_growth_stated_in_other_words(text: str) -> None:
    assert diagnose_text(text).cause == "leak_or_accumulation"


def test_a_model_said_not_to_fit_the_card() -> None:
    d = diagnose_text(corpus_text("h14-unsloth-997"))
    assert d.cause == "model_too_large"
    # the batch "does not fit" is the batch's
    assert diagnose_text("CUDA out of memory: the batch does not fit in GPU memory").cause != (
        "model_too_large"
    )


@pytest.mark.parametrize(
    "text",
    [
        corpus_text("h13-caffe-3136"),  # "If Python exits improperly ... out-of-memory error"
        "When the program ends, the memory of GPU0 is released, but the other GPUs are not "
        "released, and the next run fails with CUDA out of memory.",
        "nohup 启动训练进程之后直接kill主进程显卡不会释放显存, 再次训练 CUDA out of memory",
    ],
)
def test_memory_held_after_the_program_is_gone_is_another_process(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "other_process_holding_memory"
    assert "fuser -v /dev/nvidia*" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # not released between runs of one process: growth, not a process left alive
        "Unload model doesn't release memory; loading the next one gives CUDA out of memory.",
        "CUDA out of memory: the VRAM is not released after each generation.",
    ],
)
def test_memory_not_released_inside_one_process_stays_growth(text: str) -> None:
    assert diagnose_text(text).cause == "leak_or_accumulation"


@pytest.mark.parametrize(
    "record",
    [
        "h15-Model-Optimizer-2300",  # "~119.6 GiB of KV cache (...), leaving 87.8 MiB free"
        "h14-lmdeploy-1778",  # "`--cache-max-entry-count` parameter is not working correctly"
    ],
)
def test_kv_pool_named_as_what_took_the_memory(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "kv_cache_or_context"
    assert d.allocation == "kv_pool"
    assert "What would decide" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # co-tenants sized the pool from a shrinking free memory: their rule answers first
        corpus_text("h10-lmdeploy-3804"),
        # the KV cache named without saying it took the memory
        "CUDA out of memory while the KV cache was being filled with a long prompt batch",
    ],
)
def test_kv_pool_rule_near_misses(text: str) -> None:
    assert "KV-cache pool took the memory" not in diagnose_text(text).explanation


def test_a_failure_only_beyond_some_dataset_size_is_accumulation() -> None:
    d = diagnose_text(corpus_text("h13-labelmodels-4"))  # "For a large enough training set ..."
    assert d.cause == "leak_or_accumulation"
    # a dataset merely called large is not a threshold
    assert (
        diagnose_text("CUDA out of memory when training on a large dataset").cause
        != "leak_or_accumulation"
    )


def test_continuous_rising_memory_is_growth_and_loading_two_models_is_not_cotenancy() -> None:
    text = (
        "The way of updating training and validation loss results in the continuous rising of "
        "gpu memory, then CUDA out of memory"
    )
    assert diagnose_text(text).cause == "leak_or_accumulation"
    assert diagnose_text("CUDA out of memory after loading two models").cause != (
        "other_process_holding_memory"
    )

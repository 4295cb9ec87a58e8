"""docpost20: what heldout41-42 (scored once, retired) taught, as mechanisms with near misses.

Recognition: vLLM's start-up free-memory check with the spaces a retyped or CJK paste loses
(``parse_vllm._STARTUP``); Windows' page file (or a swap file) said to be used up or too small
(``parse_wordings_exits._PAGEFILE_SHORT``). Cause: the VRAM named only to be ruled out in Chinese
(``device_ruled_out.NOT_DEVICE``: 内存爆满…显存没问题) and a container's, pod's or cluster
node's memory (``container_memory.CONTAINER_MEMORY``) read as host RAM.
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_extra import names_host_memory


@pytest.mark.parametrize(
    "text",
    [
        "报错：Free memory on device (0.75/14.57GiB) on startup is less than desired GPU memory "
        "utilization(0.4,5.83GiB).",
        "ValueError: Free memory on device cuda:0(15.32/22.04 GiB) on startup is less than desired "
        "GPU memory utilization (0.88,19.39GiB).",
    ],
)
def test_vllm_startup_check_without_its_spaces(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert any(e.format == "vllm_startup_free_memory" for e in d.events)
    assert d.cause == "other_process_holding_memory"


def test_vllm_startup_summary_of_a_plugin_stays_silent() -> None:
    # vllm-ascend's profiling summary of a successful start: no "is less than"
    assert not diagnose_text("Free memory on device (60.89/61.27GiB) on startup.").oom_found


def test_heldout41_mineru_startup_record() -> None:
    d = diagnose_text(corpus_text("h41-MinerU-4619"))
    assert d.oom_found
    assert any(e.runtime == "vllm" for e in d.events)


@pytest.mark.parametrize(
    "text",
    [
        "Had manual page file of 16GB, used all of it, set to 32GB, still wasn't enough.",
        "my pagefile ran out.",
        "The paging file is still too small even at 40GB.",
        "The swap file was exhausted while loading the checkpoint.",
    ],
)
def test_page_file_used_up_is_a_host_oom(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert d.cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        "The page file was enough after I set it to 32GB.",
        "The page file never ran out, it was the GPU.",
        "Is the page file big enough for a 13B model?",
        "Set the pagefile to 32GB so it never gets used up.",
        "The swap space filled up the disk partition I gave it, so I moved it.",
        "The swap file used up all the free disk space on C:.",
    ],
)
def test_page_file_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "查看服务器监控发现内存爆满，进程被干掉，显存没问题（5090-32G）。",
        "内存溢出了，显存占用正常",
        "内存不够，显存倒是充足",
    ],
)
def test_vram_ruled_out_in_chinese_keeps_the_host_reading(text: str) -> None:
    assert names_host_memory(text)


@pytest.mark.parametrize(
    "text",
    [
        "内存爆满，显存够用吗？",  # a question about the VRAM
        "内存不够，显存也不够",  # both short
        "内存爆了，显存没了",  # VRAM gone
        "显存不足",
    ],
)
def test_vram_named_short_still_vetoes(text: str) -> None:
    assert not names_host_memory(text)


def test_heldout41_mineru_host_record() -> None:
    assert diagnose_text(corpus_text("h41-MinerU-5132")).cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        "OOM issue: This PR increases the memory request / limit from 1GB to 2GB.",
        "The head node typically uses around 3.5GB of memory; with 2GB it can lead to OOM.",
        "OOMKilled again: the container memory limit is 4Gi.",
        "OOM: resources limits.memory was 8Gi for the worker.",
    ],
)
def test_container_and_node_memory_is_host(text: str) -> None:
    assert names_host_memory(text)
    assert diagnose_text(text).cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        "CUDA OOM even after raising the pod memory limit",
        "the GPU pod memory ran out",
        "OOM on the head node's GPU with 24GB of memory",
    ],
)
def test_container_memory_beside_a_gpu_word_is_not_host(text: str) -> None:
    assert not names_host_memory(text)


@pytest.mark.parametrize("rid", ["h42-kuberay-2313", "h42-kuberay-4089"])
def test_heldout42_kuberay_records_read_host_ram(rid: str) -> None:
    assert diagnose_text(corpus_text(rid)).cause == "host_ram"


def test_heldout42_kohya_pagefile_record() -> None:
    d = diagnose_text(corpus_text("h42-kohya_ss-48"))
    assert d.oom_found
    assert d.cause == "host_ram"


def test_oom_right_after_moving_a_model_to_the_gpu_is_its_weights() -> None:
    d = diagnose_text(
        "[INFO] Moving text encoder 1 to cuda from cpu\n[ERROR] CUDA driver error: out of memory"
    )
    assert d.cause == "model_too_large"
    assert d.allocation == "weights_load"


def test_a_move_line_far_before_the_oom_says_nothing() -> None:
    d = diagnose_text(
        "Moving model to cuda\nstep 1 loss 2.3\nstep 2 loss 2.2\nstep 3 loss 2.1\n"
        "CUDA error: out of memory"
    )
    assert d.cause != "model_too_large"


def test_heldout42_simpletuner_text_encoder_move() -> None:
    assert diagnose_text(corpus_text("h42-SimpleTuner-3070")).cause == "model_too_large"


_FIT = (
    "llama_params_fit_impl: projected to use 18414 MiB of device memory vs. 15020 MiB of free "
    "device memory\n"
    "llama_params_fit_impl: cannot meet free memory target of 1024 MiB, need to reduce device "
    "memory by 4418 MiB\n"
    "llama_params_fit_impl: context size set by user to 32768 -> no change\n"
    "llama_params_fit: failed to fit params to free device memory: n_gpu_layers already set by "
    "user to 100, abort"
)


def test_llamacpp_fit_projection_above_free_memory_is_recognised() -> None:
    d = diagnose_text(_FIT)
    assert d.oom_found
    ev = next(e for e in d.events if e.format == "llama.cpp_fit_shortfall")
    assert ev.requested_bytes == 18414 * 2**20
    assert ev.free_bytes == 15020 * 2**20
    titles = " ".join(f.title for f in d.fixes)
    assert "-c" in titles
    assert "-ngl" in titles


@pytest.mark.parametrize(
    "text",
    [
        # under the free memory: only the 1024 MiB margin is missed, the load goes on
        "llama_params_fit_impl: projected to use 926 MiB of device memory vs. 1906 MiB of free "
        "device memory\nllama_params_fit_impl: cannot meet free memory target of 1024 MiB, need "
        "to reduce device memory by 43 MiB",
        "common_params_fit_impl: projected to use 21388 MiB of device memory vs. 23257 MiB of "
        "free device memory",
        "common_fit_params: failed to fit params to free device memory: n_gpu_layers already set "
        "by user to 99, abort",
    ],
)
def test_llamacpp_fit_within_free_memory_stays_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


def test_heldout42_llamacpp_rocm_fit_record() -> None:
    d = diagnose_text(corpus_text("h42-llamacpp-rocm-79"))
    assert d.oom_found
    assert any(e.runtime == "llama.cpp" for e in d.events)

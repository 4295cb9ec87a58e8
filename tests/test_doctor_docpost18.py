"""docpost18: what heldout36-38 (scored once, retired) taught, as mechanisms with near misses.

Recognition: TensorFlow's tensor report on OOM (``step_stats_collector.cc``
``ReportAllocsOnResourceExhausted``: "  <size> from <node>" lines, then "  Remaining <N> nodes
with <size>") kept without its header; the shell's ``Killed`` run into a Chinese clause and
followed by the perfective 了 ("模型加载Killed了"); the transitive "... which fails GPU memory
allocations". Cause (``rules_stated_budget``): the context named as the fix ("fix OOM by setting
max_model_len", "smaller context lengths work"), the KV cache named as what exhausted the memory,
and a clause that runs over an "e.g." before its OOM.
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_kills import KILLS_NEAR_MISSES

TF_REPORT = (
    "  4.27MiB from model/inference/decoder/while/CustomDecoderStep/attention/add\n"
    "  1.02GiB from model/inference/encoder/conv/Conv2D\n"
    "  Remaining 41046 nodes with 5.32GiB\n"
)


def test_tf_tensor_report_tail_is_recognised() -> None:
    d = diagnose_text(TF_REPORT)
    assert d.oom_found
    assert any(e.format == "tf_oom_tensor_report" for e in d.events)


@pytest.mark.parametrize(
    "text",
    [
        "Remaining 41046 nodes with 5.32GiB",  # no "<size> from <node>" line before it
        "Cluster status\nRemaining 4 nodes with 80GiB\n",
        "Downloaded 5.2GiB from s3://bucket/model\nRemaining 3 nodes with 12GiB\n",
        "  4.27MiB from model/add\n  Remaining 3 nodes with errors\n",
    ],
)
def test_tf_report_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "推理时模型加载Killed了，有人遇到过吗，训练是没问题的",
        "量化到最后一步直接Killed了",
        "数据预处理的时候进程 Killed 掉了",
    ],
)
def test_killed_in_a_chinese_clause_reads_as_host_ram(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert d.cause == "host_ram", d.explanation


@pytest.mark.parametrize(
    "text", ["我把旧进程Killed了，然后重启", "手动Killed了进程", "任务状态为Killed。"]
)
def test_killed_near_misses_in_chinese_stay_silent(text: str) -> None:
    assert text in KILLS_NEAR_MISSES
    assert not diagnose_text(text).oom_found


def test_transitive_fails_memory_allocations() -> None:
    d = diagnose_text(
        "AI: Ollama uses an unnecessary large context window which fails GPU memory allocations"
    )
    assert d.oom_found
    assert d.cause == "kv_cache_or_context", d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "The allocator handles failing memory allocations gracefully.",
        "This test fails memory allocations on purpose to exercise the fallback.",
        "The pool never fails memory allocations below 1 MiB.",
        "A fault injector that injects failing memory allocations.",
    ],
)
def test_fails_allocations_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "CUDA out of memory. Fix OOM by setting `max_model_len` in the example.",
        "it crashed because the memory was full. running it with smaller context lengths works",
        "CUDA out of memory: the KV cache estimation exhausted the GPU memory at startup",
        "It allocates a much larger context window than intended (e.g., 128k), causing OOM",
    ],
)
def test_context_named_as_fix_or_culprit(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "kv_cache_or_context", d.explanation
    assert "What would decide" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # the context is not the fix or the culprit here
        "CUDA out of memory. Fixed the OOM by setting a smaller batch size.",
        "CUDA out of memory: the activations exhausted the GPU memory at batch 64",
        "a larger context works fine; CUDA out of memory at batch 64",
    ],
)
def test_context_near_misses_keep_their_cause(text: str) -> None:
    assert diagnose_text(text).cause != "kv_cache_or_context"


@pytest.mark.parametrize(
    ("record_id", "cause"),
    [
        ("h36-chatglm_finetuning-75", "host_ram"),
        ("h37-zed-42340", "kv_cache_or_context"),
        ("h37-Roo-Code-7797", "kv_cache_or_context"),
        ("h37-Tacotron-2-13", "batch_or_activations"),
        ("h38-TensorRT-LLM-17470", "kv_cache_or_context"),
        ("h38-ray-58463", "kv_cache_or_context"),
        ("h38-llama.cpp-8124", "kv_cache_or_context"),
    ],
)
def test_development_records(record_id: str, cause: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.oom_found
    assert d.cause == cause, d.explanation


# --- second round: the model, the save, the optimizer step, another process, pinned host -------


@pytest.mark.parametrize(
    ("text", "cause", "fix"),
    [
        (
            "CUDA out of memory because the transformer is too large to fit on the GPUs",
            "model_too_large",
            "Use a smaller or more quantized model",
        ),
        (
            "It gave OOM error while attempting to transfer the model on GPU.",
            "model_too_large",
            "Use a smaller or more quantized model",
        ),
        (
            "It trains fine. When saving the checkpoint, it encounters with OOM sometimes.",
            "model_too_large",
            "Save without gathering the full model on the GPU",
        ),
        (
            "after backward it is at 61 GB and during the step function it goes out of memory.",
            "model_too_large",
            "Shrink or offload the optimizer state",
        ),
        (
            "CUDA out of memory when another process (trainer) uses 12.7GB of the GPU",
            "other_process_holding_memory",
            None,
        ),
        (
            "cudaHostRegister failed with cudaErrorMemoryAllocation",
            "host_ram",
            "Pin less host memory",
        ),
        (
            "A single registration of 512 GiB fails with cudaErrorMemoryAllocation, so the "
            "offload buffer never gets pinned.",
            "host_ram",
            "Pin less host memory",
        ),
        ("OOM异常，自动kill程序了", "host_ram", None),
    ],
)
def test_stated_phase_and_holder(text: str, cause: str, fix: str | None) -> None:
    d = diagnose_text(text)
    assert d.cause == cause, d.explanation
    if fix is not None:
        assert d.fixes[0].title == fix


@pytest.mark.parametrize(
    ("text", "not_cause"),
    [
        ("CUDA out of memory: the batch is too large to fit on the GPU", "model_too_large"),
        ("OOM while moving the inputs to the GPU", "model_too_large"),
        ("CUDA out of memory when saving activations for backward", "model_too_large"),
        ("CUDA out of memory after saving the checkpoint, at the next epoch", "model_too_large"),
        ("CUDA out of memory while saving memory with gradient checkpointing", "model_too_large"),
        ("OOM: reduce the step size of the scheduler", "model_too_large"),
        (
            "CUDA out of memory; another process uses the results of this one",
            "other_process_holding_memory",
        ),
        ("CUDA out of memory. cudaMalloc failed with cudaErrorMemoryAllocation", "host_ram"),
    ],
)
def test_stated_phase_near_misses(text: str, not_cause: str) -> None:
    assert diagnose_text(text).cause != not_cause


@pytest.mark.parametrize(
    ("record_id", "cause"),
    [
        ("h36-RWKV-Runner-185", "host_ram"),
        ("h38-vllm-51080", "host_ram"),
        ("h38-OpenRLHF-698", "model_too_large"),
        ("h38-LLaVA-155", "model_too_large"),
        ("h38-Bagel-116", "model_too_large"),
        ("h38-vdn-minimax-h3-7", "model_too_large"),
    ],
)
def test_development_records_second_round(record_id: str, cause: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.cause == cause, d.explanation


def test_save_on_one_gpu_by_a_missing_device_setting_is_not_the_model() -> None:
    d = diagnose_text("Out-of-memory when saving the checkpoint w/o setting device id")
    assert d.cause != "model_too_large"


# --- serving and unified-memory families get the runtime's own lever ------------------------


def test_ollama_system_memory_check_offers_num_ctx() -> None:
    d = diagnose_text(corpus_text("h37-zed-17012"))
    assert d.cause == "host_ram"
    titles = [f.title for f in d.fixes]
    assert "Load with a shorter context (num_ctx)" in titles


@pytest.mark.parametrize(
    "text",
    [
        "out of memory: available unified memory drops to 10% on the head node",
        "CUDA out of memory; the 128 GB unified memory machine hangs",
        "The crash is unified-memory pressure on the head node, then CUDA out of memory",
    ],
)
def test_unified_memory_named_by_quantity_or_pressure(text: str) -> None:
    assert diagnose_text(text).cause == "host_ram"


def test_cuda_managed_memory_is_not_a_unified_machine() -> None:
    d = diagnose_text(
        "CUDA out of memory with TF_FORCE_UNIFIED_MEMORY=1: unified memory usage exceeds the GPU"
    )
    assert d.cause != "host_ram"


def test_unified_memory_development_record() -> None:
    assert diagnose_text(corpus_text("h38-spark-vllm-docker-321")).cause == "host_ram"

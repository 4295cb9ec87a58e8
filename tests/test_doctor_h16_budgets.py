"""Prose and frames that name what overflowed (issue 9, after heldout16 and heldout17 were
retired): the context a cache was sized for, the full-size weights put on the device, training
that fits while evaluation fails, unbounded growth in other words, host kills by exit status,
the first rank's GPU, a concurrent worker, the Adam update's own line and PyTorch MPS's
per-buffer limit. Real corpus texts, and the near-misses each rule must leave alone."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_extra import names_host_memory


@pytest.mark.parametrize(
    "record",
    [
        "h16-openclaw-30420",  # "allocating memory for the maximum context size ... OOM errors"
        "h17-Open-Assistant-2411",  # "Reduced max tokens ... to 1792 because of OOMs at 2048"
        "h16-lmdeploy-1272",  # "might lead to OOM if too many cache blocks are using"
        "h16-llama.cpp-11332",  # "an OOM error ... with large (e.g. 65000) context sizes"
        "h13-vllm-289",  # "Lower max-tokens ... to 32k since 64k was causing OOM"
        "h15-vllm-2163",  # "a single sequence is larger than the system's KV cache size"
    ],
)
def test_context_budget_named_as_the_cause_reads_as_kv(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "kv_cache_or_context"
    assert d.confidence == pytest.approx(0.45)
    assert "What would decide" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # label unknown in the corpus (a bug fixed by updating): a prompt length, not a budget
        corpus_text("h16-LightLLM-28"),
        "OOM with a 4096 context on my 8 GB card.",  # a context under 32k tokens, in digits
        "I reduced the max tokens to 512 and the answers are cut short; no OOM since.",
        "The maximum context size is 8192 tokens.",  # the budget named, no failure tied to it
    ],
)
def test_context_statements_that_decide_nothing_are_not_read(text: str) -> None:
    d = diagnose_text(text)
    assert "the context the cache is sized for" not in d.explanation


def test_full_weights_pulled_onto_the_card_read_as_model() -> None:
    # h17-sglang-36192: runtime LoRA turned layerwise offload off
    d = diagnose_text(corpus_text("h17-sglang-36192"))
    assert d.cause == "model_too_large"
    assert d.confidence == pytest.approx(0.45)
    assert "parameters x 2 bytes" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "The whole model fits on the GPU and runs; OOM happens later at 4k resolution.",
        "Dequantized weights are cached on the CPU.",
    ],
)
def test_full_weight_near_misses_are_not_read(text: str) -> None:
    assert "full-size weights went onto" not in diagnose_text(text).explanation


def test_training_fits_evaluation_fails_reads_as_accumulation() -> None:
    d = diagnose_text(corpus_text("h16-transformers-13597"))
    assert d.cause == "leak_or_accumulation"
    assert d.confidence == pytest.approx(0.4)
    assert "eval_accumulation_steps" in " ".join(" ".join(f.commands) for f in d.fixes)
    near = diagnose_text("Training fails with CUDA out of memory; evaluation is fine.")
    assert "training fits and the evaluation" not in near.explanation


@pytest.mark.parametrize(
    "record",
    [
        "h16-pytorch-1840",  # "the memory grows unlimitly until OOM"
        "h16-pytorch-13613",  # "the GPU memory increase over time"
        "h16-BDMC-3",  # "the backward storage of the model accumulates"
        "h17-aimet-2047",  # "Add .item() to avoid out-of-memory ... accumulating gradients of loss"
        "h16-stable-diffusion-webui-depthmap-script-29",  # "after generating a bunch of ... images"
        "h16-transformers-27992",  # system memory "will not be released after validation"
    ],
)
def test_growth_in_other_words_reads_as_accumulation(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "leak_or_accumulation"
    assert "What would decide" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # gradient accumulation is a training technique, not a leak
        "CUDA out of memory even with gradient accumulation steps 8 and accumulating gradients "
        "over 4 micro-batches.",
        # an image size, not completed steps
        "CUDA out of memory at 512 x 512 images.",
    ],
)
def test_growth_near_misses_are_not_read(text: str) -> None:
    assert diagnose_text(text).cause != "leak_or_accumulation"


@pytest.mark.parametrize(
    "record",
    [
        "h16-llm-compressor-1369",  # "OOM (host) when running AWQ"
        "h17-bugbug-3906",  # "Status code 137 indicates OOM error in the docker container."
        "h16-ChatGLM3-97",  # "加载进程在57%时仍被系统杀死" (killed by the system while loading)
        "h14-TensorRT-LLM-186",  # "I checked `dmesg` and found that was probably because of OOM"
        "h17-DeepSpeed-4867",  # "killed with signal -9" ... "OOM on cpu instead of gpu"
    ],
)
def test_host_kills_in_other_words_read_as_host_ram(record: str) -> None:
    assert diagnose_text(corpus_text(record)).cause == "host_ram"


def test_host_wording_keeps_the_device_veto() -> None:
    assert names_host_memory("the job ended with exit code 137")
    assert names_host_memory("OOM (host) when calibrating")
    # a GPU word on the line vetoes the host reading, as before
    assert not names_host_memory("CUDA OOM; the container then exited with exit code 137")
    # "137" elsewhere is not an exit status
    assert not names_host_memory("OOM at step 137")
    # the GPU ruled out does not veto; the GPU named as what ran out still does
    assert names_host_memory("pretty sure it is OOM on cpu instead of gpu")
    assert not names_host_memory("OOM on the GPU while the host had RAM to spare")
    # the GPU driver also logs to dmesg (NVRM Xid lines): not the host's OOM killer
    assert not names_host_memory("dmesg shows NVRM: Xid 13 after the out of memory error")


@pytest.mark.parametrize(
    "record",
    [
        "h17-lm-evaluation-harness-123",  # "running out of memory on the 0-th rank GPU"
        "h17-textual_inversion-94",  # "dual 12gb gpu gets CUDA OOM, single works"
    ],
)
def test_first_rank_or_several_gpus_failing_read_as_imbalance(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "multi_gpu_imbalance"
    assert "oomkit gpus" in d.explanation


def test_single_gpu_statements_are_not_imbalance() -> None:
    d = diagnose_text("CUDA out of memory on my single GPU; a second run works after restart.")
    assert d.cause != "multi_gpu_imbalance"


@pytest.mark.parametrize(
    "record",
    [
        "h16-trl-5767",  # "a concurrent worker attempting to allocate 2.95 GiB found only ..."
        "h16-RL-1159",  # "optimizer state is not offloaded ... causes vLLM to run out of memory"
    ],
)
def test_other_holders_named_read_as_other_process(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "other_process_holding_memory"
    assert d.confidence == pytest.approx(0.45)


def test_concurrent_requests_are_not_cotenants() -> None:
    d = diagnose_text("OOM with 64 concurrent requests to the server.")
    assert d.cause != "other_process_holding_memory"


def test_empty_cache_that_prevents_the_oom_reads_as_cached_memory() -> None:
    d = diagnose_text(corpus_text("h16-lmdeploy-2671"))
    assert d.cause == "fragmentation"
    near = diagnose_text("torch.cuda.empty_cache() did not help, still CUDA out of memory.")
    assert near.cause != "fragmentation"


def test_adam_update_line_places_the_failure_in_the_optimizer_step() -> None:
    # h16-LlamaFactory-1221: full fine-tune of LLaMA-7B with ZeRO-2 on 32 GB V100s, only the
    # failing source line of torch/optim/adam.py above the message
    d = diagnose_text(corpus_text("h16-LlamaFactory-1221"))
    assert d.cause == "model_too_large"
    assert "optimizer.step()" in d.explanation


def test_mps_invalid_buffer_size_is_one_activation() -> None:
    d = diagnose_text(corpus_text("h16-krita-ai-diffusion-1511"))
    assert d.cause == "batch_or_activations"
    assert d.confidence == pytest.approx(0.5)
    assert "maxBufferLength" in d.explanation
    # other per-buffer limits (a Vulkan buffer-size validation error) stay unknown
    assert diagnose_text(corpus_text("h11-llama.cpp-11598")).cause == "unknown"


@pytest.mark.parametrize(
    "record",
    [
        "h17-onnxruntime-21643",  # "failed to run due to OOM and can be fixed by increase
        # trt_max_workspace_size"
        "h17-keras3-1539",  # "Setting the fraction to 100% can produce a RESOURCE_EXHAUSTED"
    ],
)
def test_configured_cap_named_as_what_failed_is_no_memory_cause(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "unknown"
    assert d.confidence == pytest.approx(0.45)
    assert "configured cap" in d.explanation
    assert "oomkit gpus" in d.explanation
    assert not d.open_question  # settled: no base-rate guess replaces it


@pytest.mark.parametrize(
    "text",
    [
        "Setting the memory fraction to 0.5 avoids the CUDA out of memory error.",
        "CUDA out of memory when I increase the batch size to 64.",
        # a stated TensorRT build OOM without a workspace statement keeps its own reading
        corpus_text("h17-wyoming-whisper-trt-1049"),
    ],
)
def test_configured_cap_near_misses_are_not_read(text: str) -> None:
    assert "configured cap" not in diagnose_text(text).explanation


def test_all_loaded_into_cuda0_above_the_message_reads_as_imbalance() -> None:
    # h17-accelerate-3655's sentence (no OOM message of its own) above PyTorch's bare message:
    # "all are loaded into `cuda:0`, causing `cuda:0` memory to explode"
    text = corpus_text("h17-accelerate-3655") + "\ntorch.cuda.OutOfMemoryError: CUDA out of memory."
    d = diagnose_text(text)
    assert d.cause == "multi_gpu_imbalance"
    near = diagnose_text(
        "I moved everything into RAM.\ntorch.cuda.OutOfMemoryError: CUDA out of memory."
    )
    assert near.cause != "multi_gpu_imbalance"

"""Prose that decides a cause (issue 9, after heldout18): a batch cut stated in more words, one
GPU of several named by a loader, the KV cache named as what ran out, a computer's memory, an RL
replay buffer, inference without torch.no_grad(), and a rollout engine on a GPU of its own.
Real corpus texts and the near-misses each rule must leave alone."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize(
    "record",
    [
        "h18-ControlNet-395",  # "set the batch_size=1, ... but still OOM"
        "h18-open_clip-1065",  # "out-of-memory error even with a batch size of 2"
        "h18-MiniCPM-V-181",  # "batch_size=1，gradient_accumulation_steps调大，不起作用"
        "h15-OV-DINO-47",  # the earlier wordings still read
        "h14-LLaVA-569",
    ],
)
def test_batch_cut_that_still_fails_in_more_wordings(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "model_too_large"
    assert d.confidence == pytest.approx(0.45)
    assert "batch was cut" in d.explanation
    assert not d.open_question


@pytest.mark.parametrize(
    "text",
    [
        # a long input named beside the batch-1 failure: that sample's activations compete
        corpus_text("h18-transformers-10965"),
        "CUDA out of memory even with a batch size of 1 on long audio recordings.",
        # batch 4 is not the smallest batch
        "CUDA out of memory even with a batch size of 4.",
        # a setting that went up, or a batch of 1 that was not said to fail
        "I set the batch_size=16 and it still runs out of memory: CUDA out of memory.",
        "batch_size=1 的时候可以跑，调大就 out of memory",
    ],
)
def test_batch_statements_that_decide_nothing_are_not_read(text: str) -> None:
    d = diagnose_text(text)
    assert "batch was cut" not in d.explanation


def test_a_model_loaded_only_on_one_gpu_of_several() -> None:
    d = diagnose_text(corpus_text("h18-FastChat-405"))
    assert d.cause == "multi_gpu_imbalance"
    assert d.confidence == pytest.approx(0.45)
    assert "oomkit gpus" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "I load the model on one GPU and get CUDA out of memory.",  # no "only": a choice
        "CUDA out of memory: I only have one GPU and the model does not fit.",
    ],
)
def test_one_gpu_statements_that_state_no_placement(text: str) -> None:
    assert diagnose_text(text).cause != "multi_gpu_imbalance"


def test_the_kv_cache_named_as_what_ran_out() -> None:
    d = diagnose_text(corpus_text("h18-vllm-metal-398"))
    assert d.cause == "kv_cache_or_context"
    assert d.confidence == pytest.approx(0.45)
    assert "KV cache OOM" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "OOM with QwQ-32B",  # no KV cache named
        "CUDA out of memory after the KV cache was allocated, during the first request.",
    ],
)
def test_kv_mentions_that_name_no_failing_pool(text: str) -> None:
    assert "KV cache OOM" not in diagnose_text(text).explanation


def test_a_computer_that_ran_out_of_memory_is_host_ram() -> None:
    d = diagnose_text(corpus_text("h18-ml-agents-3164"))
    assert d.cause == "host_ram"
    assert "free -h" in d.explanation


def test_a_gpu_that_ran_out_of_memory_is_not_host_ram() -> None:
    d = diagnose_text("My machine ran out of memory on the GPU while training.")
    assert d.cause != "host_ram"


def test_a_replay_buffer_that_grows_is_host_ram_not_a_leak() -> None:
    d = diagnose_text(corpus_text("h18-LearningByCheating-6"))
    assert d.cause == "host_ram"
    assert d.confidence == pytest.approx(0.45)
    assert "replay buffer" in d.explanation
    assert "free -h" in d.explanation
    assert any("replay buffer" in f.title for f in d.fixes)


@pytest.mark.parametrize(
    "text",
    [
        # no buffer named: the thread alone says it was one (heldout18's IQN and DrM stay growth)
        corpus_text("h18-IQN-and-Extensions-3"),
        # a buffer kept on the GPU is not host RAM
        "CUDA out of memory after 3 epochs: the replay buffer lives on the GPU and keeps growing.",
    ],
)
def test_growth_without_a_host_replay_buffer_is_not_read_as_one(text: str) -> None:
    assert "replay buffer (" not in diagnose_text(text).explanation


@pytest.mark.parametrize(
    "record",
    [
        "h18-spvnas-108",  # "there is not no_grad decorator arround the inference script"
        "h15-PC-NBV_pytorch-3",  # "without setting 'with torch.no_grad()', the usage ... increase"
        "h13-efficient-segmentation-networks-5",  # "make torch.no_grad effective, avoid OOM"
    ],
)
def test_inference_without_no_grad_keeps_the_activations(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "batch_or_activations"
    assert d.confidence == pytest.approx(0.5)
    assert "torch.no_grad()" in d.explanation
    assert any("no_grad" in f.title for f in d.fixes)


@pytest.mark.parametrize(
    "text",
    [
        # using no_grad and still growing names nothing missing (heldout11, a low label: leak)
        corpus_text("h11-pytorch-45334"),
        "CUDA out of memory during training; torch.no_grad() is only used in validation.",
        "I use torch.no_grad() for inference and it still runs out of memory: CUDA out of memory",
    ],
)
def test_no_grad_mentions_that_name_nothing_missing(text: str) -> None:
    assert "names torch.no_grad() as missing" not in diagnose_text(text).explanation


def test_trainer_work_on_the_rollout_engines_own_gpu() -> None:
    d = diagnose_text(corpus_text("h18-trl-3086"))
    assert d.cause == "multi_gpu_imbalance"
    assert d.confidence == pytest.approx(0.4)
    assert "engine's own GPU" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # an engine on its own GPU with no trainer work said to run there: not a co-tenant
        "GRPO with vllm_device='cuda:1' runs out of memory (CUDA out of memory) on cuda:0.",
        "OOM in GRPO: vLLM runs on a separate GPU and the trainer OOMs on GPU 0.",
    ],
)
def test_an_engine_on_its_own_gpu_is_not_a_colocated_tenant(text: str) -> None:
    d = diagnose_text(text)
    assert "rollout engine sharing the training GPUs" not in d.explanation
    assert d.cause != "multi_gpu_imbalance"


def test_a_colocated_engine_is_still_read() -> None:
    d = diagnose_text("OOM 8xH100 using latest GRPO code with vLLM: CUDA out of memory")
    assert d.cause == "other_process_holding_memory"

"""What the text says is still held, read from heldout21-23's texts (doccause11), and near misses.

The rules are rules_stated_held's (outputs gathered on the device, an earlier model still
resident, the context length left unset) and two widened shapes (growth "not properly
released", every rank's share on GPU 0); the records are the real texts
(tests/corpus_records.py), the near misses say something else with the same words.
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize(
    "record",
    [
        "h22-transformers-7232",  # "trainer.evaluate() aggregates predictions on GPU"
        "h22-ai-models-graphcast-33",  # "accumulates the full rollout trajectory on device"
        "h22-sentence-transformers-1717",  # "the embeddings aren't offloaded onto cpu"
        "h22-EuroEval-973",  # "Now uses `eval_accumulation_steps` ... to avoid running out"
        "h22-PaddleNLP-5426",  # "Add `eval_accumulation_steps` fix the eval OOM problem."
    ],
)
def test_outputs_gathered_on_the_device(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "leak_or_accumulation"
    assert "gathered on the device" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # gradient accumulation keeps nothing across steps (h18-MiniCPM-V-181's shape)
        "batch_size=1, gradient_accumulation_steps raised, still CUDA out of memory on the GPU",
        "set accumulate_grad_batches=4 and batch 1 but still OOM on the GPU",
        # outputs moved to the CPU: nothing gathered on the device
        "the predictions are moved to the cpu after each batch, still CUDA out of memory",
    ],
)
def test_gradient_accumulation_is_not_outputs_kept(text: str) -> None:
    assert "gathered on the device" not in diagnose_text(text).explanation


def test_not_properly_released_is_growth() -> None:
    # "The GPU memory is not properly released at the end of each step, which leads to a OOM
    # error when the VLLM rollout worker is woken up": the growth decides before the colocation
    d = diagnose_text(corpus_text("h22-verl-632"))
    assert d.cause == "leak_or_accumulation"
    assert "not properly released" in d.explanation


def test_properly_released_is_not_growth() -> None:
    d = diagnose_text("memory is properly released after each step, then CUDA out of memory")
    assert d.cause != "leak_or_accumulation"


@pytest.mark.parametrize(
    "record",
    [
        "h21-eullm-36",  # "both models could coexist in VRAM during the swap"
        "h23-lemonade-1804",  # "loading multiple resident models exceeds available memory"
        "h23-vllm-ascend-8621",  # "单卡顺序启动多个...小模型时，第四个实例因显存不够启动失败"
    ],
)
def test_an_earlier_model_still_resident(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "other_process_holding_memory"
    assert "still resident" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # models tried one by one are not resident together (h18-InvokeAI-1732's shape)
        "I've downloaded multiple models to try, sadly none worked, everything gave out of memory",
        # a GPU loaded with models beside a batch the text cuts (h10-lean-explore-70's shape)
        "batch cut to 32 in embed() to prevent CUDA OOM when the GPU is already loaded with models",
        # the first model loaded is a phase, not a residency
        "the first model loaded fine, then CUDA out of memory during generation",
        # an unload that did not free the model is a leak (h13-gpt4all-1688's shape)
        "changing models does not unload it: the previous model is still loaded in VRAM, OOM",
    ],
)
def test_models_named_without_residency_are_not_read(text: str) -> None:
    assert "still resident" not in diagnose_text(text).explanation


@pytest.mark.parametrize("record", ["h22-onnxruntime-genai-550", "h22-onnxruntime-genai-980"])
def test_context_length_left_unset(record: str) -> None:
    # "... without explicitly specifying 'max_length' in search options"; "'bad allocation' when
    # option `max_length` is not set": the KV buffers sized for the 128k trained context
    d = diagnose_text(corpus_text(record))
    assert d.cause == "kv_cache_or_context"
    assert "context length being unset" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "CUDA out of memory even though I did not set max_new_tokens",  # generated tokens only
        "OOM without setting max_length for the tokenizer: the texts are not truncated",
        "I set max_length to 2048 and it still runs out of memory",
    ],
)
def test_context_options_that_are_set_or_not_the_kv(text: str) -> None:
    assert "context length being unset" not in diagnose_text(text).explanation


@pytest.mark.parametrize(
    "record",
    [
        "h23-TensorRT-LLM-3058",  # "each trtllm seems to allocate 500MB on gpu 0"
        "h23-ms-swift-1402",  # "多卡推理参数总是堆积到第一块显卡造成显存不够"
    ],
)
def test_every_rank_on_the_first_gpu(record: str) -> None:
    assert diagnose_text(corpus_text(record)).cause == "multi_gpu_imbalance"


def test_a_step_allocating_on_gpu0_is_not_a_rank() -> None:
    d = diagnose_text("each step allocates 2 GB on GPU 0 and then CUDA out of memory")
    assert d.cause != "multi_gpu_imbalance"


def test_an_unload_that_did_not_free_is_growth() -> None:
    # the taxonomy's other side: memory the program is done with that is not given back
    d = diagnose_text("switching models does not always unload the previous one, then OOM")
    assert d.cause == "leak_or_accumulation"


def test_a_ram_limit_passed_outranks_a_device_word() -> None:
    # "an NPU model >10GB still loads, but the RyzenAI driver's runtime overhead pushes the
    # machine past its RAM limit during first inference"
    d = diagnose_text(corpus_text("h23-lemonade-3164"))
    assert d.cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        "the model hits the GPU RAM limit and CUDA out of memory follows",
        "we went over the 24GB VRAM limit: out of memory",
    ],
)
def test_a_device_memory_limit_is_not_host_ram(text: str) -> None:
    assert diagnose_text(text).cause != "host_ram"


def test_the_kernels_page_allocation_failure_is_host_ram() -> None:
    # the kernel's own allocator (mm/page_alloc.c warn_alloc), as pasted from dmesg on an RK3588
    d = diagnose_text(
        "[   86.719222] llm_demo: page allocation failure: order:0, "
        "mode:0x40cd0(GFP_KERNEL|__GFP_COMP|__GFP_RECLAIMABLE), nodemask=(null)"
    )
    assert d.cause == "host_ram"


def test_a_metal_failure_the_text_places_at_load_is_the_weights() -> None:
    # "is a Metal OOM during local model load ... crashing after breadcrumb `model.load begin`"
    d = diagnose_text(corpus_text("h23-osaurus-1371"))
    assert d.cause == "model_too_large"
    assert "model's load" in d.explanation


def test_a_metal_failure_while_generating_keeps_the_context_reading() -> None:
    d = diagnose_text(
        "[METAL] Command buffer execution failed: Insufficient Memory "
        "(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory) after the model loaded, "
        "during a long chat"
    )
    assert d.cause == "kv_cache_or_context"


def test_a_context_pool_of_llama_cpp_2023_eval_buffer_size_is_the_batch() -> None:
    # "not enough space in the context's memory pool (needed 819402384, available 805306368)":
    # 805306368 = 768 MiB, MEM_REQ_EVAL for 7B in llama.cpp of April-May 2023; -b 24 fixed it
    d = diagnose_text(corpus_text("h23-Chinese-LLaMA-Alpaca-526"))
    assert d.cause == "batch_or_activations"
    assert "MEM_REQ_EVAL" in d.explanation


@pytest.mark.parametrize(
    "record",
    [
        "h4-privategpt-921",  # available 10485760: the later metadata-only pool (10 MiB)
        "h23-ggml-322",  # available 268435456: a ggml example's fixed 256 MiB buffer
    ],
)
def test_other_context_pools_stay_settled(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "unknown"


@pytest.mark.parametrize(
    "record",
    [
        "h23-omlx-2321",  # "Prefill context too large for available memory (... kv_len=66461"
        "h23-tt-inference-server-2024",  # "The failure occurs at warmup stage when ISL > 32K."
    ],
)
def test_the_context_said_not_to_fit(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "kv_cache_or_context"
    assert "context is what does not fit" in d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "it fails with OOM when the context > 4k tokens",  # an ordinary prompt length
        "the prompt is too long for the model: 5000 tokens, max 4096, out of memory",
    ],
)
def test_short_or_unrelated_context_limits_are_not_read(text: str) -> None:
    assert "context is what does not fit" not in diagnose_text(text).explanation

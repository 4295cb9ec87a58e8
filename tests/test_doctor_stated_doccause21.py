"""doccause21: growth and kept outputs in the words the development parts' threads used.

The growth rule (``rules_stated.stated_growth``) read "keeps increasing", "grows steadily",
"not released"; the threads of heldout32-35 said the same with other verbs and shapes: memory
that "climbs steadily", a "linear growth" that "is not reclaimed", use that "increases without
being released", 显存"慢慢增大" (slowly grows), OOM "after consecutive runs"; and a loop's
predictions "saved in GPU" (``rules_stated_held.stated_outputs_kept_on_device``). Each form is
one family, with near misses that state how one step scales instead of growth.
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_stated import _stated_growth_text

GROWTH = (
    "Memory consumption climbs steadily at ~0.1GB per request until CUDA out of memory.",
    "This linear growth is not reclaimed over time and triggers an OOM crash.",
    "GPU memory increases linearly over the run, then CUDA out of memory",
    "GPU memory use in the loop increases without being released, then CUDA out of memory.",
    "显存慢慢增大，最终会报OOM错误",
    "Users were reporting CUDA OOM errors after consecutive runs.",
)


@pytest.mark.parametrize("text", GROWTH)
def test_each_growth_form_reads_as_accumulation(text: str) -> None:
    assert _stated_growth_text(text) is not None
    d = diagnose_text(text)
    assert d.cause == "leak_or_accumulation", d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "attention memory grows linearly with the sequence length: CUDA out of memory",
        "activation memory increases linearly with batch size, CUDA out of memory",
        "linear growth in the number of tokens per batch makes it OOM",
        "CUDA out of memory after two consecutive",
        "显存不足，模型太大",
    ],
)
def test_scaling_statements_are_not_growth(text: str) -> None:
    assert _stated_growth_text(text) is None
    assert diagnose_text(text).cause != "leak_or_accumulation"


@pytest.mark.parametrize(
    "record_id",
    [
        "h34-vllm-ascend-5262",  # climbs steadily; linear growth; not reclaimed
        "h34-Qwen3-VL-1522",  # 显存慢慢增大
        "h34-InvokeAI-2791",  # after consecutive runs
        "h32-PDF-Extract-Kit-89",  # increases without being released
        "h35-UniTalker-7",  # all the predictions are saved in GPU
    ],
)
def test_development_records_read_as_accumulation(record_id: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.cause == "leak_or_accumulation", d.explanation
    assert "What would decide" in d.explanation


def test_outputs_saved_on_the_device_are_kept_outputs() -> None:
    d = diagnose_text("CUDA out of memory: all the predictions are saved in GPU during inference")
    assert d.cause == "leak_or_accumulation"
    # saving the model's weights is not a loop's outputs
    d2 = diagnose_text("CUDA out of memory when the model is saved in GPU memory format")
    assert d2.cause != "leak_or_accumulation"


# --- the context setting named as raised, and llama.cpp's `-c 0` --------------------------------

CONTEXT_RAISED = (
    "CUDA out of memory after increasing num_ctx to 32768",
    "Switching from a high `num_ctx` to a model with a low `num_ctx` causes cuda out of memory",
    "OOM when I raise the context length in LM Studio",
    "llama-server -c 0 -ngl 99 crashes with out of memory",
    "running with --ctx-size=0 gives an OOM at load",
)


@pytest.mark.parametrize("text", CONTEXT_RAISED)
def test_raised_context_setting_reads_as_the_kv_cache(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "kv_cache_or_context", d.explanation


@pytest.mark.parametrize(
    "text",
    [
        # another clause, or the larger context said to work
        "a larger context length works; CUDA out of memory at batch 64",
        "a larger context length works fine but CUDA out of memory at batch 64",
        # `-c 0.5` is not a context of 0; a raised batch is not the context
        "OOM with -c 0.5 temperature",
        "CUDA out of memory after increasing the batch size to 64",
    ],
)
def test_other_settings_are_not_the_context(text: str) -> None:
    assert diagnose_text(text).cause != "kv_cache_or_context"


@pytest.mark.parametrize("record_id", ["h34-ollama-1871", "h35-Bonsai-demo-124"])
def test_development_records_read_as_the_context(record_id: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.cause == "kv_cache_or_context", d.explanation
    assert "What would decide" in d.explanation


# --- the smallest batch said to fail too, in Chinese ---------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "训练会报CUDA out of memory，batch_size和num_workers都设置为1，仍然报显存溢出",
        "我这边bs=1的情况下也出现显存溢出的情况",
        "batch size设为1还是爆显存",
    ],
)
def test_batch_of_one_that_still_overflows_is_the_resident_state(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "model_too_large", d.explanation


@pytest.mark.parametrize(
    "text",
    [
        "batch_size设置为16，仍然报显存溢出",  # not the smallest batch
        "bs=1的时候没有溢出，bs=8就爆显存了",  # batch 1 passes
        "abs=1 也出现显存溢出",  # not a batch
    ],
)
def test_other_batch_statements_are_not_the_smallest_batch(text: str) -> None:
    assert diagnose_text(text).cause != "model_too_large"


@pytest.mark.parametrize("record_id", ["h32-AtSpeed-3", "h33-DB-151"])
def test_development_records_read_as_the_resident_state(record_id: str) -> None:
    d = diagnose_text(corpus_text(record_id))
    assert d.cause == "model_too_large", d.explanation

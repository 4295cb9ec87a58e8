"""The generic fallback reads the ways people write "out of memory" in titles and prose (retired
heldout10: mostly issue titles), and llama.h's own text for llama_decode's return code 1."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize(
    "record_id",
    [
        "h10-exllamav3-324",  # OOMing
        "h10-llama-cookbook-118",  # CUDA OOMs
        "h10-llamafactory-3015",  # OOM followed by CJK text
        "h10-tgi-832",  # "cuda out of memoy" (typo)
        "h10-lmcache-955",  # Failing to allocate memory
        "h10-lmdeploy-1001",  # 炸显存
    ],
)
def test_real_titles_are_recognised(record_id: str) -> None:
    assert diagnose_text(corpus_text(record_id)).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "Training OOMed after 300 steps",
        "pod status: OOMKilled",
        "the job was OOM'd",
        "RuntimeError: out of video memory",
        "unable to alocate 2 GiB",
        "ran with 8 GPUs, exhausting all GPU memory at step 2",
        "微调时爆显存",
    ],
)
def test_second_wordings(text: str) -> None:
    assert diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "zoom into the room",
        "Loom and BOOM are products",
        "ROOM_ID=4 my_oom_handler()",
        "a memory overflow in the parser was fixed in PR 12",
        "OOMPH is a brand",
    ],
)
def test_near_misses(text: str) -> None:
    assert not diagnose_text(text).oom_found


def test_llama_h_kv_slot_text_is_the_kv_cache() -> None:
    d = diagnose_text(corpus_text("h10-node-llama-cpp-190"))
    assert d.cause == "kv_cache_or_context"
    second = diagnose_text(
        "llama_decode could not find a KV slot for the batch (try reducing the size of the batch "
        "or increase the context)"
    )
    assert second.cause == "kv_cache_or_context"

"""Plain "it did not fit" wordings without an OOM keyword (issue 9;
``oomkit.diagnose.parse_wordings_plain``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_plain import plain_match

NEGATIVES = Path(__file__).resolve().parent / "fixtures" / "prose_negatives.jsonl"

POSITIVES = [
    # a memory taken whole
    "Current implementation stores all the frames in the memory, which takes all the RAM if "
    "longer duration video is created.",
    "the webui eats up all my VRAM after a few generations",
    "it consumes all of the system memory and the desktop freezes",
    # a stated need above a stated capacity
    "needs 26 GB but I have 24",
    "Opens up by using 52GIG of RAM - I only have 32gb",
    "the 34B model requires 20 GB while I only have 12 GB of VRAM",
    # too big for the user's card
    "model too big for my 3060",
    "Flux dev is too large for my 8GB card",
    # a bigger card as the way out, said by the user
    "I don't know if I'm doing anything wrong or it's just that I need a better gpu.",
    # an attempt to allocate something called huge, with its size
    "which causes MLX to attempt allocating a very large attention matrix (~37 GB) as a single "
    "Metal buffer during prefill.",
    "it attempts to allocate a huge 40GB tensor",
    # PyTorch's own OOM advice, applied without effect
    "我修改了max_split_size_mb也不行，加了--batch-size参数也不行，报同样错。",
    "I set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True but it didn't help",
    "Still OOMs even with expandable_segments enabled",
]

NEAR_MISSES = [
    "A 7B model in fp16 needs about 14 GB, and I have 24 GB, so it should fit.",
    "The default font size is too big for my screen.",
    "Is the 13B model too big for my 3060?",
    "Do I need a better GPU to run this faster?",
    "You would need a better GPU for real-time inference.",
    "I need a bigger GPU to train faster, but the model fits fine.",
    "expandable_segments is not supported on this platform, so the setting has no effect.",
    "max_split_size_mb prevents the native allocator from splitting blocks larger than this size.",
    "The server takes all the GPU memory by default; pass --gpu-memory-utilization to leave room.",
    "The engine fills all the available VRAM with the KV cache so that more requests fit.",
    "By default, TensorFlow maps nearly all of the GPU memory of all GPUs visible to the process.",
    "The memory pool holds allocated blocks without freeing as much as possible.",
    "I used all the memory tricks from the wiki and it runs fine now.",
    "On the first call it tries to allocate a large workspace of 256 MB reused by later calls.",
    "The allocator attempts to allocate a very large block (2 GB) at startup.",
]


@pytest.mark.parametrize("text", POSITIVES)
def test_plain_wordings_are_recognised(text: str) -> None:
    assert plain_match(text, text.lower()) is not None, text
    d = diagnose_text(text)
    assert d.oom_found, text
    assert d.confidence < 0.6  # prose: never a confident cause


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


def test_the_sizes_a_need_and_a_capacity_state() -> None:
    (e,) = diagnose_text("needs 26 GB but I have 24").events
    assert (e.requested_bytes, e.total_bytes) == (26 * 10**9, 24 * 10**9)
    (e,) = diagnose_text("Opens up by using 52GIG of RAM - I only have 32gb").events
    assert (e.requested_bytes, e.total_bytes) == (52 * 10**9, 32 * 10**9)
    (e,) = diagnose_text("it attempts to allocate a huge 40GB tensor").events
    assert e.requested_bytes == 40 * 10**9


@pytest.mark.parametrize(
    "rid",
    ["h18-SyncTalk-226", "h18-pyannote-audio-1109", "h20-HunyuanVideo-62", "h22-exo-1048"],
)
def test_corpus_records_of_the_even_parts(rid: str) -> None:
    assert diagnose_text(corpus_text(rid)).oom_found, rid


def test_the_grammar_alone_fires_on_no_negative_sentence() -> None:
    rows = [json.loads(line) for line in NEGATIVES.read_text(encoding="utf-8").splitlines()]
    fired = [
        r["text"]
        for r in rows
        if not r["mentions_oom"] and plain_match(r["text"], r["text"].lower()) is not None
    ]
    assert fired == []


def test_linear_time_on_near_matching_junk() -> None:
    for junk in (
        "needs 26 GB but " * 20_000,
        "takes up all of the " * 20_000,
        "max_split_size_mb " * 30_000 + "didn't help",
        "too big for my " * 30_000,
    ):
        diagnose_text(junk)

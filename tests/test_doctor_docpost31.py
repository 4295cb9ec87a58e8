"""docpost31 (the leak -> host_ram / batch cells over the development parts): memory said to rise
until the run fails, in any tense ("increases all the time until", "increases abnormally and
eventually occupies", "increasing which causes ... crash"), and a failure placed after hours of a
run or a session used "for too long" read as accumulation (growth_adverbs)."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.growth_adverbs import GROWTH_UNTIL_EXHAUSTED, RUN_DURATION

# --- memory rising until the run fails (growth_adverbs.GROWTH_UNTIL_EXHAUSTED) --------------


@pytest.mark.parametrize(
    "record",
    ["h55-EasyOCR-211", "h48-loco-mujoco-90", "h50-openpi-764"],
)
def test_host_memory_rising_until_the_failure_is_accumulation(record: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.cause == "leak_or_accumulation"
    assert d.confidence == pytest.approx(0.5)


@pytest.mark.parametrize(
    "text",
    [
        # a size between the verb and the end is how one step scales, not growth
        "the GPU memory increases with the batch size until OOM",
        "memory increases as I raise the resolution until it crashes",
        # the lever, not memory, is the subject
        "I gradually increase the batch size until the memory runs out",
        # growth ruled out
        "the memory does not increase until the last step, then CUDA out of memory",
    ],
)
def test_size_or_lever_until_the_failure_is_not_growth(text: str) -> None:
    assert GROWTH_UNTIL_EXHAUSTED.search(text) is None
    assert diagnose_text(text).cause != "leak_or_accumulation"


def test_host_ram_kill_without_growth_stays_host_ram() -> None:
    # near miss: the same kind of host-RAM report with no growth stated
    text = "When I process a lot of pictures the process is killed by the OOM killer"
    assert diagnose_text(text).cause == "host_ram"


# --- a failure after hours of a run (growth_adverbs.RUN_DURATION) ---------------------------


@pytest.mark.parametrize("record", ["h48-ray-21718", "h55-flutter_gemma-37"])
def test_failure_after_hours_of_a_run_is_accumulation(record: str) -> None:
    assert diagnose_text(corpus_text(record)).cause == "leak_or_accumulation"


@pytest.mark.parametrize(
    "text",
    [
        # loading is one step
        "CUDA out of memory after 10 minutes of loading the model",
        # early, not after a long run
        "CUDA out of memory within 5 minutes of training",
        # ruled out
        "I did not use it for too long, it ran out of memory right away",
    ],
)
def test_loading_or_early_failure_is_not_a_long_run(text: str) -> None:
    assert diagnose_text(text).cause != "leak_or_accumulation"


def test_run_duration_reads_the_time_of_a_run() -> None:
    assert RUN_DURATION.search("OOM error after a few hours of training") is not None
    assert RUN_DURATION.search("OOM after 10 minutes of loading") is None

"""doccause20: the growth and kill forms recognition learned (docrec30) feed the cause rules.

docrec30 taught recognition a memory that "becomes higher and higher" / "keeps getting larger",
memory "which could not be released" and bash's "killed" quoted in Chinese prose ("出现killed");
the cause rules kept their older patterns, so "keeps growing" read as a leak and "被kill" as
host RAM while the new forms fell to the base rate. Each form is now one pattern shared by the
recogniser and the cause rule (``stated_growth`` for growth, ``names_host_memory`` for kills);
a kill the poster sent names no host memory. Texts are synthetic; each with near misses.
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_prose import MEMORY_GETS_BIGGER
from oomkit.diagnose.parse_wordings_titles_more import CJK_KILLED_BY_SYSTEM, CJK_SHOWN_KILLED
from oomkit.diagnose.rules_extra import names_host_memory
from oomkit.diagnose.rules_stated import _GROWTH_WORDS, _stated_growth_text

GROWTH = (
    "During training the GPU memory will become higher and higher until CUDA out of memory.",
    "cuda memory usage becomes bigger and bigger as time steps add, then OOM",
    "the memory was keeping getting larger when testing and then CUDA out of memory",
    "CUDA out of memory: 30mb of gpu memory which couldn't be released after every backward",
    "训练时显存越来越大，最后CUDA out of memory",
)


@pytest.mark.parametrize("text", GROWTH)
def test_each_recognised_growth_form_reads_as_accumulation(text: str) -> None:
    assert _stated_growth_text(text) is not None
    d = diagnose_text(text)
    assert d.cause == "leak_or_accumulation", d.explanation


def test_the_growth_rule_reads_the_recognisers_own_pattern() -> None:
    # one source of truth: the recogniser's pattern is part of the cause rule's
    assert MEMORY_GETS_BIGGER.pattern in _GROWTH_WORDS.pattern


@pytest.mark.parametrize(
    "text",
    [
        "a bigger batch makes the memory bigger and bigger, CUDA out of memory",
        "higher resolution images need higher memory: CUDA out of memory",
        "memory gets larger with the batch size, CUDA out of memory",
        "the loss keeps getting higher and then CUDA out of memory",
        "memory is not getting bigger and bigger, it fails at the first step: CUDA OOM",
    ],
)
def test_size_and_scaling_statements_are_not_growth(text: str) -> None:
    assert _stated_growth_text(text) is None
    assert diagnose_text(text).cause != "leak_or_accumulation"


def test_killed_quoted_in_chinese_prose_is_host_ram_like_bei_kill() -> None:
    shown = "楼主你知不知道运行解冻后的epoch会出现killed的现象该怎么解决？"
    older = "楼主你知不知道运行解冻后的epoch会被kill该怎么解决？"
    assert CJK_SHOWN_KILLED.search(shown) is not None
    assert CJK_KILLED_BY_SYSTEM.search(older) is not None
    for text in (shown, older, "终端显示Killed，怎么办", "进程被系统杀死了"):
        assert names_host_memory(text), text
        assert diagnose_text(text).cause == "host_ram", text


def test_growth_and_a_kill_read_as_growth() -> None:
    # the documented precedence: host RAM is where it ran out, the stated growth is why
    d = diagnose_text("训练时内存越来越高，最后出现killed")
    assert d.cause == "leak_or_accumulation"


@pytest.mark.parametrize(
    "text",
    [
        "I killed the process myself, then got OOM",
        "OOM error. I killed the process myself",
        "out of memory, so we had to kill it",
        "OOM, then the job got killed by the scheduler because it hit the time limit",
        "我kill了进程，然后OOM",
        "OOM以后被我kill了",
    ],
)
def test_a_kill_the_poster_or_a_scheduler_sent_is_not_host_ram(text: str) -> None:
    assert not names_host_memory(text)
    assert diagnose_text(text).cause != "host_ram"


def test_a_kill_by_the_system_still_is_host_ram() -> None:
    for text in (
        "The training got killed after loading the dataset",
        "I keep getting killed during tokenization, out of memory",
        "Killed",
    ):
        assert names_host_memory(text), text

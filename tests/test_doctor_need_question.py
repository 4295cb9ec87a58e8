"""A question how much memory a model needs is not an OOM unless it states a failure
(diagnose/parse_need_question.py, read by parse_extra.parse_generic), and the Chinese report
grammar's negation reads only the words next to the memory noun and its predicate
(diagnose/parse_wordings_report_i18n.py, docfix22)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_report_i18n import i18n_match

CORPUS = Path(__file__).parent / "fixtures" / "oom_corpus"

# a need asked; the out-of-memory words are what the asker wants to avoid or asks about
NEED_QUESTIONS = [
    "How much VRAM do I need to avoid OOM with Llama 3 70B?",
    "How much VRAM is needed to run this model without running out of memory?",
    "Is 24GB enough or will it run out of memory?",
    "is 24GB enough to not OOM?",
    "How much VRAM is required? Is the model too large for a 12GB GPU?",
    "How much VRAM do I need for Flux? 12GB is not enough?",
    "How much RAM do I need to load the model? 16GB RAM not enough?",
    "What GPU memory is needed to fine-tune the model? Not enough memory?",
    "24G显存够不够跑这个模型",
    "请问跑这个模型需要多少显存，显存不够怎么办",
    "32G显存能跑吗，还是会显存不足",
]


@pytest.mark.parametrize("text", NEED_QUESTIONS)
def test_need_question_without_a_failure_is_not_an_oom(text: str) -> None:
    assert not diagnose_text(text).oom_found


# near-misses: the question states the failure (a clause of what happened, or a pasted message)
NEED_WITH_FAILURE = [
    "How much VRAM do I need? My 8GB card doesn't have enough memory for the 13B model.",
    "设置了batch=1还是会爆显存，请问需要多少显存",
    "How much VRAM is needed? RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB "
    "(GPU 0; 8.00 GiB total capacity)",
    "Is 24GB enough? torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.",
]


@pytest.mark.parametrize("text", NEED_WITH_FAILURE)
def test_need_question_stating_a_failure_stays_an_oom(text: str) -> None:
    assert diagnose_text(text).oom_found


def _record(rid: str) -> dict[str, object]:
    for path in sorted(CORPUS.glob("*.jsonl")):
        if path.name.startswith(("heldout56", "heldout57")):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if r["id"] == rid:
                return dict(r)
    raise AssertionError(rid)


# development records: a need question next to a failure that happened
@pytest.mark.parametrize(
    "rid",
    [
        "h31-UniCTokens-3",  # "CUDA Out of Memory Error on 32GB V100 – How Much VRAM is Required?"
        "h13-stable-diffusion-webui-839",  # "HighRes. Fix, out of memory, how much VRAM is needed"
        "h20-sd-webui-stablesr-7",  # "OOM error with 8GB Vram, what's the minimum Vram needed?"
        "h31-OmniGen-125",  # "... but still oom on 40g ,how much vram is needed to finetune?"
        "h34-qwen_audio_for_add-3",  # "请问微调需要多大显存呀，单卡60G还报CUDA out of memory呢"
        "h41-MiniCPM-193",  # "... 50g显存为什么都会报错out of memory ... 到底需要多少显存"
        "h54-RynnEC-10",  # "... 会出现cuda out of memory，请问一下这个模型推理大概需要多少显存呀？"
    ],
)
def test_corpus_need_question_with_its_failure_is_recognised(rid: str) -> None:
    assert diagnose_text(str(_record(rid)["text"])).oom_found


# ---- Chinese negation, scoped -----------------------------------------------------------------
CJK_REPORTS = [
    "没办法，显存又爆了",
    "不知道为什么显存爆了",
    "没开量化，显存直接爆了",
    # development records the sentence-wide veto lost (their 没/不 negates something else)
    "如上，显存基本没占用，但是运行依旧爆显存，重启也没用",  # h31-ailab-111
    "训练模型时，显存不断增长，经过几千次迭代后，显存溢出",  # h33-mmdetection-11525
    # h35-Chinese-Text-Classification-8
    "仔细看了一下不是内存溢出，是显存溢出了，有什么解决办法么？",
]
CJK_NEGATED = [
    "显存没有爆",
    "不会爆显存",
    "显存不会爆",
    "显存并没有占满",
    "不是显存不够的问题",
    "没有出现显存溢出",
    "显存爆了没",
    "如何避免显存占满",
    "这样是不会爆显存的",
]


@pytest.mark.parametrize("text", CJK_REPORTS)
def test_cjk_negation_elsewhere_in_the_sentence_keeps_the_report(text: str) -> None:
    assert i18n_match(text) is not None


@pytest.mark.parametrize("text", CJK_NEGATED)
def test_cjk_negation_next_to_the_noun_or_predicate_is_silent(text: str) -> None:
    assert i18n_match(text) is None


def test_cjk_corpus_records_read_before_stay() -> None:
    # h18-tango-6 ("不然" otherwise) and h35-verl-6768 ("是不是" is it that) matched before
    assert i18n_match("eval.py里可以加下torch.no_grad()，不然显存撑不住") is not None
    assert i18n_match("是不是显存不够导致训练失败？") is not None

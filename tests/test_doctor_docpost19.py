"""docpost19: what heldout39-40 (scored once, retired) taught, as mechanisms with near misses.

Recognition: Korean verbs whose ending is written into the stem's last syllable (모자란다,
모자랐다: ``parse_wordings_korean.KO_SHORT_PREDICATE``) and Korean negation after the predicate
(메모리가 부족하지 않습니다: ``negated_after``); Chinese memory growth told with a parenthesis
after the noun, the verb between 越…越 (越用越大), accumulation (累积增长) or per turn (每次对话…
增加) (``parse_wordings_titles_more.CJK_MEMORY_RISING``).
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize(
    "text",
    [
        "쿠다 메모리가 모자란다는 에러가 발생합니다.",
        "GPU 메모리가 모자랐습니다.",
        "학습 중에 VRAM이 넘쳤어요.",
        "CUDA 메모리가 부족합니다",
    ],
)
def test_korean_conjugated_shortage_is_recognised(text: str) -> None:
    assert diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "메모리가 부족하지 않습니다.",
        "메모리가 모자란 건 아닌 것 같습니다.",
        "GPU 메모리가 모자라지 않도록 배치 크기를 줄였습니다.",
        "메모리 부족은 아닌 것 같아요, 다른 에러입니다.",
        "VRAM이 넘치지 않게 설정했습니다.",
        "메모리가 충분해서 모자랄 일은 없습니다.",
    ],
)
def test_korean_negated_shortage_stays_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "显存（单个模型）越用越大，从初始的16G干到了30G",
        "在问答过程中显存累积增长，且每次问题结束后显存不降",
        "每次对话显存占用都会增加几百Mb，请问除了重启程序有别的解决办法吗？",
        "显存越来越大",
    ],
)
def test_chinese_growth_forms_are_recognised(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found


@pytest.mark.parametrize(
    "text",
    [
        "显存没有越用越大，一直稳定在16G。",
        "显存占用不会累积增长，每次推理后都会释放。",
        "每次对话显存占用都不会增加，很稳定。",
        "每次推理显存占用都一样，大约12G。",
        "模型越大，显存占用越大，这是正常的。",
        "显存累积到16G后就保持不变了。",
    ],
)
def test_chinese_growth_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "rid",
    [
        "h39-korean-wellness-chatbot-models-2",
        "h39-ChatGLM-6B-1397",
        "h39-ChatGLM3-108",
        "h39-ChatGLM-6B-71",
    ],
)
def test_heldout39_records_are_recognised(rid: str) -> None:
    assert diagnose_text(corpus_text(rid)).oom_found

"""The other-language OOM lexicon (diagnose/parse_wordings_report_i18n.py): a failed allocation
(memory noun + allocate verb + failure, each language's usual wording and glibc's translated
strerror(ENOMEM)), measure words between the noun and its predicate, swap and the paging file,
and the forms the first version missed; negatives first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_report_i18n import i18n_match

# memory named, no failure: its use, its size, how to allocate it, a setting
NEGATIVES = [
    "显存占用 10GB",
    "如何分配显存给两个进程",
    "交换空间设置为 16GB",
    "是否会出现内存分配失败",
    "如何避免显存申请失败",
    "메모리 사용량",
    "메모리 할당 방식",
    "メモリの確保方法について",
    "メモリを確保する方法",
    "объём памяти 24 ГБ",
    "выделить память под кэш можно флагом",
    "¿Cómo asignar memoria a la GPU?",
    "Como alocar memória para o container?",
    "sem memória compartilhada o modelo roda mais devagar",
    "Comment allouer de la mémoire au conteneur ?",
    "Speicherzuweisung konfigurieren",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_memory_named_without_a_failure_is_silent(text: str) -> None:
    assert i18n_match(text) is None
    assert not diagnose_text(text).oom_found


def test_the_negatives_are_in_the_prose_negative_set() -> None:
    path = Path(__file__).parent / "fixtures" / "prose_negatives.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    mine = [r for r in rows if r["source"].startswith("docrec28")]
    assert len(mine) >= 15
    assert not any(diagnose_text(r["text"]).oom_found for r in mine)


POSITIVES = [
    # Chinese: allocation failed, cannot allocate, swap short
    "训练到第二个 epoch 时内存分配失败",
    "加载模型时显存申请失败了",
    "无法分配足够的显存，请检查",
    "启动时分配显存时失败",
    "启动 24G 模型加一个什么交换空间不够",
    # Japanese: the long vowel, a measure word, a failed allocation
    "学習を始めるとメモリー不足で止まります",
    "メモリ リソースが不足しているため処理できません",
    "推論中にメモリの確保に失敗しました",
    "VRAMの割り当てに失敗しました",
    # Korean: a measure word, glibc's "ran to the bottom", a failed allocation
    "GPU 메모리 용량이 부족합니다",
    "학습 중 메모리가 바닥남",
    "메모리 할당 실패가 계속 납니다",
    "메모리를 할당할 수 없어요",
    # German, French, Spanish, Italian, Portuguese, Russian, Ukrainian
    "Der Speicher konnte nicht zugewiesen werden",
    "Beim Laden: Speicherzuweisung fehlgeschlagen",
    "Hauptspeicher erschöpft nach zwei Epochen",
    "impossible d'allouer de la mémoire pour le modèle",
    "error al asignar memoria en la GPU",
    "errore nell'allocare la memoria durante il training",
    "fiquei sem memória na GPU ao treinar",
    "erro ao alocar memória na placa",
    "не удалось выделить память на GPU",
    "ошибка выделения памяти CUDA при обучении",
    "Пам’ять вичерпано під час навчання",
]


@pytest.mark.parametrize("text", POSITIVES)
def test_other_language_oom_reports_are_recognised(text: str) -> None:
    assert i18n_match(text) is not None
    d = diagnose_text(text)
    assert d.oom_found


# non-native English (docrec28): "enough" misspelt, "out of memory" without its "of" after the
# device or the verb; negatives first (a page swapped out, a value read out)
@pytest.mark.parametrize(
    "text",
    ["we swap out memory pages to disk", "read out memory values from the register"],
)
def test_out_memory_as_a_phrasal_verb_is_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "Error when try to load model - no enaugh memory",
        "not enought memory on GPU",
        "请问一下为什么会out memory？",
        "CUDA out memory when training",
        "it ran out memory at step 3",
    ],
)
def test_non_native_spellings_of_the_oom_words(text: str) -> None:
    assert diagnose_text(text).oom_found

"""The C library's memory messages in the user's language (diagnose/normalize_locale.py) and a
terminal Markdown renderer's quote bar (diagnose/normalize.py): synthetic texts in the shape the
C library and the shell print, negatives first."""

from __future__ import annotations

import time

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.normalize import normalize_line
from oomkit.diagnose.normalize_locale import (
    ENOMEM_TRANSLATIONS,
    KILLED_TRANSLATIONS,
    delocalize,
)

# the words used in ordinary sentences: a process "morto" in prose, an allocation question, a
# word inside a CJK sentence, a status column: none is the shell's or the C library's line
NEGATIVES = [
    "o processo foi Morto ontem pelo administrador",
    "Morto ontem",
    "Ucciso il processo a mano, poi riavviato",
    "Getötet wurde nur der alte Container, der neue läuft",
    "进程状态: 已杀死的任务会显示在这里吗",
    "如何避免无法分配内存的问题",
    "강제로 죽었음을 확인했습니다",
    "Estado | Terminado (killed) | 3 veces",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_words_in_sentences_are_not_the_shells_line(text: str) -> None:
    assert delocalize(text) == text
    assert not diagnose_text(text).oom_found


ENOMEM_LINES = [
    "bash: fork: 无法分配内存",
    "bash: fork: 無法配置記憶體",
    "bash: fork: メモリを確保できません",
    "bash: fork: 메모리를 할당할 수 없습니다",
    "bash: fork: Невозможно выделить память",
    "bash: fork: No se pudo asignar memoria",
    "bash: fork: Não foi possível alocar memória",
    "bash: fork: Ne peut allouer de la mémoire",
    "bash: fork: Impossibile allocare memoria",
    "bash: fork: Nie można przydzielić pamięci",
    "OSError: 无法分配内存",
    "mmap failed: Kan inte allokera minne",
]


@pytest.mark.parametrize("line", ENOMEM_LINES)
def test_translated_enomem_reads_as_the_english_msgid(line: str) -> None:
    assert "Cannot allocate memory" in delocalize(line)
    d = diagnose_text(line)
    assert d.oom_found
    assert d.cause == diagnose_text("bash: fork: Cannot allocate memory").cause == "host_ram"


def test_every_translation_maps_back() -> None:
    for word in ENOMEM_TRANSLATIONS:
        assert delocalize(f"error: {word}") == "error: Cannot allocate memory", word
    for word in KILLED_TRANSLATIONS:
        assert delocalize(f"Loading weights\n{word}\n") == "Loading weights\nKilled\n", word


KILLED_PASTES = [
    "Loading checkpoint shards:  67%|██████▋   | 2/3 [00:41<00:20, 20.5s/it]\n已杀死\n",
    "Loading checkpoint shards: 100%|██████████| 3/3 [00:10<00:00, 3.3s/it]已杀死",
    "python convert.py --outtype f16 models/7B\nLoading model file models/7B\n強制終了\n",
    "./train.sh: línea 12: 31337 Terminado (killed)      python train.py --bs 64",
    "./train.sh: Zeile 12: 31337 Getötet                 python train.py --bs 64",
    "python train.py\nУбито\n",
]


@pytest.mark.parametrize("text", KILLED_PASTES)
def test_translated_killed_reads_as_the_shells_killed(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert d.cause == "host_ram"


def test_quote_bar_of_a_terminal_markdown_renderer_is_a_quote() -> None:
    # without the bar removed, the wrapped vLLM message is two unrelated lines
    assert normalize_line("▎ 23.25 GiB KV cache is needed") == "23.25 GiB KV cache is needed"
    assert normalize_line("▌ Killed") == "Killed"
    # a progress bar's glyph (no space after it) stays
    assert normalize_line("▎▎▎ 45%") == "▎▎▎ 45%"
    text = (
        "▎ ValueError: To serve at least one request with the model's max seq len (196608),\n"
        "▎ 23.25 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(22.5 GiB).\n"
        "▎ Based on the available memory, the estimated maximum model length is 190272."
    )
    d = diagnose_text(text)
    assert d.oom_found
    assert d.cause == "kv_cache_or_context"


def test_linear_on_hostile_input() -> None:
    for hostile in ("已杀" * 200_000, "1:" * 200_000 + " 1 ", "\n" * 100_000 + "Morto " * 50_000):
        t0 = time.process_time()
        delocalize(hostile)
        assert time.process_time() - t0 < 1.0


@pytest.mark.parametrize(
    "line",
    [
        "script/run.sh: 行 30: 23195 已杀死\x1b[0m",  # a coloured terminal closes the line
        "script/run.sh:\u00a0行\u00a030:\u00a023195\u00a0已杀死",  # a web page's no-break spaces
        "**script/run.sh: 行 30: 23195 已杀死**",  # an issue comment's bold
        "`script/run.sh: 行 30: 23195 已杀死`",  # an issue comment's inline code
        "\x1b[1;31m已杀死\x1b[0m",  # the bare word, coloured
        "**已杀死**",
    ],
)
def test_a_decorated_kill_line_is_read_back(line: str) -> None:
    # the whole-text pass runs before normalize_line strips a line's decorations, so bash's
    # translated "Killed" must be found through them (doctor_metamorphic's required transforms
    # lost h54-ERNIE-24 under ansi / nbsp / markdown_bold / inline_code)
    assert "Killed" in delocalize(line)
    assert "已杀死" not in delocalize(line)


@pytest.mark.parametrize("text", ["**已杀死的进程**", "`已杀死吗`", "a_已杀死"])
def test_the_word_inside_a_sentence_stays_under_markup(text: str) -> None:
    assert delocalize(text) == text
